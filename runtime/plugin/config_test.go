package plugin

import (
	"errors"
	"fmt"
	"github.com/sluicecdc/sluice/runtime"
	"strings"
	"testing"
	"time"
)

type testSource struct {
	Host    string        `yaml:"host" sluice:"required"`
	Port    int           `yaml:"port"`
	Tables  []string      `yaml:"tables"`
	Timeout time.Duration `yaml:"timeout"`
	TLS     struct {
		Enabled bool `yaml:"enabled"`
	} `yaml:"tls"`
}

const goodConfig = `name: demo
source:
  type: mysql
  host: ${SLUICE_TEST_HOST}
  port: ${SLUICE_TEST_PORT:-3306}
  tables: [shop.orders, "shop.items"]
  timeout: 2s
  tls:
    enabled: true
transport:
  type: embedded
sink:
  type: postgres
`

func TestParseConfigExpandsEnvAndDecodes(t *testing.T) {
	t.Setenv("SLUICE_TEST_HOST", "127.0.0.1")
	c, err := ParseConfig([]byte(goodConfig), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "demo" || c.Source.Type != "mysql" || c.Transport.Type != "embedded" || c.Sink.Type != "postgres" {
		t.Fatalf("sections: %+v", c)
	}
	var s testSource
	if err := c.Source.Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.Host != "127.0.0.1" || s.Port != 3306 || len(s.Tables) != 2 || s.Tables[1] != "shop.items" || s.Timeout != 2*time.Second || !s.TLS.Enabled {
		t.Fatalf("decoded %+v", s)
	}
}

func TestConfigErrorsNameKeyAndLine(t *testing.T) {
	t.Setenv("SLUICE_TEST_HOST", "h")
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown top key", strings.Replace(goodConfig, "sink:", "sinks:", 1), "x.yaml:12: sinks: unknown top-level key"},
		{"unknown section key", strings.Replace(goodConfig, "  port:", "  prot:", 1), "x.yaml:5: source.prot: unknown key"},
		{"missing required", strings.Replace(goodConfig, "  host: ${SLUICE_TEST_HOST}\n", "", 1), "source.host: is required"},
		{"wrong type", strings.Replace(goodConfig, "${SLUICE_TEST_PORT:-3306}", "abc", 1), "x.yaml:5: source.port: expected an integer, got \"abc\""},
		{"bad duration", strings.Replace(goodConfig, "2s", "soon", 1), "x.yaml:7: source.timeout: expected a duration"},
		{"nested unknown", strings.Replace(goodConfig, "enabled:", "enable:", 1), "x.yaml:9: source.tls.enable: unknown key"},
		{"unset env", strings.Replace(goodConfig, "SLUICE_TEST_HOST", "SLUICE_TEST_UNSET_VAR", 1), "x.yaml:4: ${SLUICE_TEST_UNSET_VAR}: environment variable is not set"},
		{"sink placeholder", goodConfig + "  table: src_${table}\n", "x.yaml:14: ${table}: environment variable is not set: a sink placeholder is written $${table} in a config file"},
		{"missing name", strings.Replace(goodConfig, "name: demo\n", "", 1), "name: is required"},
		{"missing type", strings.Replace(goodConfig, "  type: postgres\n", "  dsn: x\n", 1), "sink.type: is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.yaml), "x.yaml")
			if err == nil {
				var s testSource
				err = c.Source.Decode(&s)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if !errors.Is(err, runtime.ErrConfig) {
				t.Fatalf("error %v is not ErrConfig", err)
			}
		})
	}
}

type testRule struct {
	Columns string `yaml:"columns"`
	Salt    string `yaml:"salt"`
}

type testNested struct {
	Host  string                `yaml:"host"`
	Mask  []testRule            `yaml:"mask"`
	ByKey map[string]testRule   `yaml:"by_key"`
	Opt   *testRule             `yaml:"opt"`
	Waits []time.Duration       `yaml:"waits"`
	Extra map[string][]testRule `yaml:"extra"`
}

func TestConfigStrictAtEveryDepth(t *testing.T) {
	const base = `name: demo
source:
  type: mysql
  host: h
  mask:
    - columns: db.t.email
      salt: s1
  by_key:
    a: {columns: x}
  opt: {columns: y}
  waits: [1s, 2ms]
  extra:
    k: [{salt: z}]
transport: {type: embedded}
`
	c, err := ParseConfig([]byte(base), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ok testNested
	if err := c.Source.Decode(&ok); err != nil {
		t.Fatal(err)
	}
	if ok.Mask[0].Salt != "s1" || ok.ByKey["a"].Columns != "x" || ok.Opt.Columns != "y" || ok.Waits[1] != 2*time.Millisecond || ok.Extra["k"][0].Salt != "z" {
		t.Fatalf("decoded %+v", ok)
	}
	cases := []struct{ name, from, to, want string }{
		{"list entry", "      salt: s1", "      slat: s1", "x.yaml:7: source.mask[0].slat: unknown key (known: columns, salt)"},
		{"map value", "a: {columns: x}", "a: {colums: x}", "x.yaml:9: source.by_key.a.colums: unknown key"},
		{"pointer", "opt: {columns: y}", "opt: {column: y}", "x.yaml:10: source.opt.column: unknown key"},
		{"list in map", "k: [{salt: z}]", "k: [{sal: z}]", "x.yaml:13: source.extra.k[0].sal: unknown key"},
		{"duration in list", "[1s, 2ms]", "[1s, soon]", "x.yaml:11: source.waits[1]: expected a duration"},
		{"twice", "      salt: s1", "      salt: s1\n      salt: s2", "x.yaml:8: source.mask[0].salt: is given twice"},
		{"list expected", "  waits: [1s, 2ms]", "  waits: 1s", "x.yaml:11: source.waits: expected a list"},
		{"scalar expected", "  host: h", "  host: [h]", "x.yaml:4: source.host: expected a string, got a list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(strings.Replace(base, tc.from, tc.to, 1)), "x.yaml")
			if err == nil {
				var s testNested
				err = c.Source.Decode(&s)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, runtime.ErrConfig) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestEnvExpansionKeepsWordsAndEscapes(t *testing.T) {
	for _, word := range []string{"null", "~", "Null", "NULL"} {
		t.Run(word, func(t *testing.T) {
			t.Setenv("SLUICE_TEST_WORD", word)
			c, err := ParseConfig([]byte("name: demo\nsource:\n  type: mysql\n  host: ${SLUICE_TEST_WORD}\n  tables:\n    - ${SLUICE_TEST_WORD}\ntransport: {type: embedded}\n"), "x.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var s testSource
			if err := c.Source.Decode(&s); err != nil {
				t.Fatal(err)
			}
			if s.Host != word || len(s.Tables) != 1 || s.Tables[0] != word {
				t.Fatalf("host %q tables %q, want %q", s.Host, s.Tables, word)
			}
		})
	}
	t.Setenv("SLUICE_TEST_PORT", "3307")
	t.Setenv("db", "must-not-be-used")
	c, err := ParseConfig([]byte(`name: demo
source:
  type: mysql
  host: "$${db}.$${table}"
  port: ${SLUICE_TEST_PORT}
  tables: [pa$word, "$${x}${SLUICE_TEST_PORT}", "${SLUICE_TEST_UNSET:-}"]
transport: {type: embedded}
`), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var s testSource
	if err := c.Source.Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.Host != "${db}.${table}" || s.Port != 3307 || s.Tables[0] != "pa$word" || s.Tables[1] != "${x}3307" || s.Tables[2] != "" {
		t.Fatalf("decoded %+v", s)
	}
}

type testLib struct {
	Port int        `yaml:"port"`
	Mask []testRule `yaml:"mask"`
}

func TestExplainNamesYAMLKeysAndLines(t *testing.T) {
	c, err := ParseConfig([]byte("name: demo\nsource:\n  type: mysql\n  port: 99999\n  mask:\n    - columns: a.b.c\n    - columns: a.b.d\n      salt: \"Port\"\ntransport: {type: embedded}\n"), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lib := errors.New("lib: invalid config")
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: Port 99999 is out of range", lib), `x.yaml:4: source.port: lib: invalid config: port 99999 is out of range: invalid configuration`},
		{fmt.Errorf("%w: Mask[1] (a.b.d): Salt %q is weak", lib, "Port"), `x.yaml:8: source.mask[1].salt: lib: invalid config: mask[1] (a.b.d): salt "Port" is weak`},
		{fmt.Errorf("%w: Mask[1]: Columns too wide", lib), `x.yaml:7: source.mask[1].columns:`},
		{fmt.Errorf("%w: Host, User must be set", lib), `x.yaml:3: source: lib: invalid config: Host, User must be set`},
	}
	for _, tc := range cases {
		got := c.Source.Explain(tc.err, &testLib{})
		if !strings.Contains(got.Error(), tc.want) || !errors.Is(got, runtime.ErrConfig) || !errors.Is(got, lib) {
			t.Errorf("Explain(%v) = %v, want it to contain %q", tc.err, got, tc.want)
		}
	}
}

// start_retries (issue 28, problem 5) is how many restarts a pipeline that
// never reached RUNNING gets: unset is the small default, 0 none, -1 no
// bound; Worker.MaxStartRetries takes it as MaxStartRetries says.
func TestStartRetries(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int
	}{{"", DefaultStartRetries}, {"start_retries: 0\n", -1}, {"start_retries: -1\n", 0}, {"start_retries: 5\n", 5}} {
		c, err := ParseConfig([]byte(tc.line+"name: p\ntransport:\n  type: embedded\nsink:\n  type: postgres\n"), "p.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if got := c.MaxStartRetries(); got != tc.want {
			t.Errorf("%q: MaxStartRetries %d, want %d", tc.line, got, tc.want)
		}
	}
	if _, err := ParseConfig([]byte("start_retries: often\nname: p\ntransport:\n  type: embedded\nsink:\n  type: postgres\n"), "p.yaml"); !errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), "start_retries") {
		t.Errorf("start_retries: often: %v, want a config error naming the key", err)
	}
}

// Every top-level key ParseConfig reads has a doc, and every doc a key.
func TestTopLevelKeysDocumented(t *testing.T) {
	var names []string
	for _, k := range TopLevelDocs {
		names = append(names, k.Name)
		if k.Doc == "" || k.Type == "" {
			t.Errorf("%s: no doc or type", k.Name)
		}
	}
	if strings.Join(names, ",") != strings.Join(TopLevelKeys, ",") {
		t.Errorf("documented %v, ParseConfig reads %v", names, TopLevelKeys)
	}
}

func TestConfigMemoryLimit(t *testing.T) {
	base := "name: p\ntransport: {type: embedded}\nsink: {type: postgres}\n"
	c, err := ParseConfig([]byte(base+"memory_limit: 300MiB\n"), "x.yaml")
	if err != nil || c.MemoryLimit != 300<<20 {
		t.Fatalf("memory_limit 300MiB: %v %v", c, err)
	}
	if _, err := ParseConfig([]byte(base+"memory_limit: lots\n"), "x.yaml"); err == nil {
		t.Fatal("memory_limit: lots accepted")
	}
	if _, err := ParseConfig([]byte(base+"memory_limit: 0\n"), "x.yaml"); err == nil {
		t.Fatal("memory_limit: 0 accepted")
	}
}
