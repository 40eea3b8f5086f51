package app

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime/plugin"
)

// Every key of every registered connector's config struct, and of the
// positions section, has a doc in its plugin's spec, and every doc names a
// key: a key added to a config struct without a doc, or a doc left behind
// by a removed key, fails here.
func TestSpecDocumentsEveryKey(t *testing.T) {
	plugins := append(Plugins(), positionsSpec())
	for _, p := range plugins {
		keys, err := p.ConfigKeys()
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
		if len(keys) < 2 {
			t.Errorf("%s: %d keys", p.Name, len(keys))
		}
	}
	if _, err := plugin.DescribeKeys(&clusterFile{}, clusterKeys); err != nil {
		t.Errorf("sluice worker's cluster file: %v", err)
	}
	// the keys the issue found undocumented are among them, with their doc
	want := map[string][]string{"mysql": {"mask[].columns", "mask[].kind", "mask[].salt", "mask[].value", "mask[].length", "server_name", "snapshot_chunk", "flavor"},
		"jdbc": {"progress_table"}, "rocketmq": {"cluster"}, "embedded": {"depth"}}
	for name, ks := range want {
		p, _ := connectors.Plugin(name)
		keys, _ := p.ConfigKeys()
		for _, k := range ks {
			if c := findKey(keys, k); c == nil || c.Doc == "" {
				t.Errorf("%s: key %s missing or undocumented", name, k)
			}
		}
	}
}

func findKey(keys []plugin.ConfigKey, name string) *plugin.ConfigKey {
	for i := range keys {
		if keys[i].Name == name {
			return &keys[i]
		}
	}
	return nil
}

// The check fails both ways: a struct key without a doc, and a doc
// without a key.
func TestSpecDriftFails(t *testing.T) {
	type shape struct {
		A int    `yaml:"a"`
		B string `yaml:"b"`
	}
	if _, err := plugin.DescribeKeys(&shape{}, plugin.KeyDocs{"a": {Doc: "x"}}); err == nil || !strings.Contains(err.Error(), "b has no doc") {
		t.Errorf("undocumented key: %v", err)
	}
	if _, err := plugin.DescribeKeys(&shape{}, plugin.KeyDocs{"a": {Doc: "x"}, "b": {Doc: "y"}, "c": {Doc: "z"}}); err == nil || !strings.Contains(err.Error(), "c is documented but is no key") {
		t.Errorf("stale doc: %v", err)
	}
}

// Types, required flags, defaults and allowed values come from the
// struct, its tags and the fresh config New returns.
func TestSpecDerivedFromStruct(t *testing.T) {
	p, _ := connectors.Plugin("jdbc")
	keys, _ := p.ConfigKeys()
	for name, want := range map[string]plugin.ConfigKey{
		"type":         {Type: "STRING", Required: true},
		"dsn":          {Type: "PASSWORD", Required: true},
		"auto_create":  {Type: "BOOLEAN", Default: "true"},
		"lock_timeout": {Type: "DURATION", Default: "30s"},
		"batch_size":   {Type: "INT", Default: "500"},
	} {
		k := findKey(keys, name)
		if k == nil || k.Type != want.Type || k.Required != want.Required || k.Default != want.Default {
			t.Errorf("%s: %+v, want %+v", name, k, want)
		}
	}
	if k := findKey(keys, "on_error"); k == nil || strings.Join(k.Values, ",") != "fail,skip,dlq" {
		t.Errorf("on_error: %+v", k)
	}
	if k := findKey(keys, "type"); k == nil || strings.Join(k.Values, ",") != "postgres,mysql,postgresql,mariadb" {
		t.Errorf("type (the aliases too): %+v", k)
	}
	r, _ := connectors.Plugin("rocketmq")
	rkeys, _ := r.ConfigKeys()
	if k := findKey(rkeys, "max_in_flight_bytes"); k == nil || k.Type != "SIZE" {
		t.Errorf("max_in_flight_bytes: %+v", k)
	}
	if k := findKey(rkeys, "secret_key"); k == nil || k.Type != "PASSWORD" {
		t.Errorf("secret_key: %+v", k)
	}
}

// docs/configuration.md is what `sluice config-reference` prints now:
// a key added, removed or re-documented without regenerating it fails here.
func TestConfigReferenceCurrent(t *testing.T) {
	var b strings.Builder
	if code := Main([]string{"config-reference"}, &b, io.Discard); code != 0 {
		t.Fatalf("config-reference exited %d", code)
	}
	committed, err := os.ReadFile("../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != b.String() {
		t.Fatal("docs/configuration.md is stale: run go run ./cmd/sluice config-reference > docs/configuration.md")
	}
	for _, k := range []string{"`mask[].salt`", "`server_name`", "`progress_table`", "`depth`", "`cluster`", "`dir`", "`memory_limit`", "postgresql, mariadb"} {
		if !strings.Contains(b.String(), k) {
			t.Errorf("the reference lacks %s", k)
		}
	}
}
