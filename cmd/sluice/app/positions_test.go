package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/plugin"
)

// The positions section: file (default), or a database table with a dsn.
func TestPositionsConfig(t *testing.T) {
	const base = "name: p\nsource:\n  type: mariadb\n  host: 127.0.0.1\n  user: u\n  server_id: 7\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: postgres://x@127.0.0.1/x\n"
	decode := func(section string) (*decoded, error) {
		cfg, err := plugin.ParseConfig([]byte(base+section), "p.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return decodeAll(cfg, "")
	}
	d, err := decode("")
	if err != nil || d.positions.typ != "file" || d.positions.Dir != "positions" {
		t.Fatalf("default: %+v, %v", d.positions, err)
	}
	d, err = decode("positions:\n  type: postgres\n  dsn: postgres://x@127.0.0.1/x\n  table: app.positions\n")
	if err != nil || d.positions.typ != "postgres" || d.positions.Table != "app.positions" {
		t.Fatalf("postgres: %+v, %v", d.positions, err)
	}
	// kept in the target: the sink refuses source tables that map there
	if len(d.sink.ControlTables) != 1 || d.sink.ControlTables[0] != "app.positions" {
		t.Fatalf("positions in the target are no control table of the sink: %v", d.sink.ControlTables)
	}
	if d, err = decode("positions:\n  type: postgres\n  dsn: postgres://x@127.0.0.1/other\n"); err != nil || len(d.sink.ControlTables) != 0 {
		t.Fatalf("positions elsewhere: %v, %v", d.sink.ControlTables, err)
	}
	for section, want := range map[string]string{
		"positions:\n  type: mysql\n":                          "need a dsn",
		"positions:\n  type: file\n  dsn: x\n":                 "type file takes dir",
		"positions:\n  type: etcd\n  dsn: x\n":                 "unknown positions type",
		"positions:\n  type: postgres\n  dsn: x\n  bogus: 1\n": "bogus",
	} {
		_, err := decode(section)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, runtime.ErrConfig) {
			t.Errorf("%q: %v, want a config error containing %q", section, err, want)
		}
	}
}
