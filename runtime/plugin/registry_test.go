package plugin

import (
	"errors"
	"github.com/sluicecdc/sluice/runtime"
	"strings"
	"testing"
)

type fakeConfig struct {
	Host  string `yaml:"host" sluice:"required"`
	Count int    `yaml:"count"`
}

// One Register makes a connector type known: its section decodes strictly
// into its own config, its Validate runs with Go names retold as keys, and
// a second plugin for the same type is refused.
func TestRegistryOneRegistration(t *testing.T) {
	r := NewRegistry()
	r.Register(Plugin{Kind: KindSource, Name: "fake", Types: []string{"fake"}, Aliases: []string{"fakedb"},
		New: func() any { return &fakeConfig{Count: 3} },
		Validate: func(v any, _ *Section, _ *Config) error {
			if c := v.(*fakeConfig); c.Count < 0 {
				return errors.New("Count must not be negative")
			}
			return nil
		}})
	parse := func(src string) *Config {
		t.Helper()
		c, err := ParseConfig([]byte("name: p\ntransport:\n  type: embedded\nsource:\n"+src), "p.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	v, err := r.Decode(KindSource, parse("  type: fakedb\n  host: h\n").Source, nil)
	if err != nil || v.(*fakeConfig).Host != "h" || v.(*fakeConfig).Count != 3 {
		t.Fatalf("decode: %+v, %v", v, err)
	}
	for src, want := range map[string]string{
		"  type: fake\n  host: h\n  cuont: 1\n":  "p.yaml:7: source.cuont: unknown key (known: count, host)",
		"  type: fake\n  count: 1\n":             "p.yaml:5: source.host: is required",
		"  type: fake\n  host: h\n  count: -1\n": "p.yaml:7: source.count: count must not be negative",
		"  type: other\n":                        `p.yaml:5: source.type: unknown source type "other" (known: fake)`,
	} {
		if _, err := r.Decode(KindSource, parse(src).Source, nil); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, runtime.ErrConfig) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
	if p, ok := r.Plugin("fakedb"); !ok || p.Name != "fake" {
		t.Errorf("Plugin by type: %v %v", p, ok)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second plugin for type fake was registered")
		}
	}()
	r.Register(Plugin{Kind: KindSource, Name: "fake2", Types: []string{"fake"}, New: func() any { return &fakeConfig{} }})
}

// An unknown key close to a known one is answered with "did you mean";
// one far from every known key is not.
func TestUnknownKeySuggests(t *testing.T) {
	r := NewRegistry()
	r.Register(Plugin{Kind: KindSource, Name: "fake", Types: []string{"fake"}, New: func() any { return &fakeConfig{} }})
	for src, want := range map[string]string{
		"  type: fake\n  host: h\n  cuont: 1\n":  "source.cuont: unknown key (known: count, host): did you mean count?",
		"  type: fake\n  host: h\n  zzzzzz: 1\n": "source.zzzzzz: unknown key (known: count, host): invalid",
		"  type: fkae\n":                         `source.type: unknown source type "fkae" (known: fake): did you mean fake?`,
	} {
		c, err := ParseConfig([]byte("name: p\ntransport:\n  type: embedded\nsource:\n"+src), "p.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Decode(KindSource, c.Source, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
	if _, err := ParseConfig([]byte("name: p\ntransport:\n  type: embedded\nsinks:\n  type: x\n"), "p.yaml"); err == nil ||
		!strings.Contains(err.Error(), "sinks: unknown top-level key (known: name, memory_limit, start_retries, source, transport, sink, positions): did you mean sink?") {
		t.Errorf("top-level: %v", err)
	}
}
