package app

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/plugin"
)

// ValidateConnector checks one connector's section, or a whole document,
// as validate does, and names the key, its value (never a secret's) and
// the line.
func TestValidateConnector(t *testing.T) {
	for _, tc := range []struct {
		name, plugin, doc, path, value, msg string
	}{
		{"valid section", "mysql", "host: 127.0.0.1\nuser: u\nserver_id: 7\n", "", "", ""},
		{"valid JSON section", "jdbc", `{"type": "mysql", "dsn": "u:p@tcp(127.0.0.1:1)/x"}`, "", "", ""},
		{"required", "mysql", "host: 127.0.0.1\nuser: u\n", "source.server_id", "", "is required"},
		{"nested unknown key", "mysql", `{"host": "h", "user": "u", "server_id": 7,
 "mask": [{"columns": "a.b.c", "slat": "x"}]}`, "source.mask[0].slat", "x", "line 2: unknown key (known: columns, kind, length, salt, value)"},
		{"connector check", "mariadb", "host: h\nuser: u\nserver_id: 7\nsnapshot: sometimes\n", "source.snapshot", "sometimes", "line 4: "},
		{"secret value not repeated", "postgres", "dsn: \"host=x password=hunter2 port\"\n", "sink.dsn", "", "line 1: "},
		{"transport", "rocketmq", "name_servers: [\"127.0.0.1:1\"]\ntopic_mode: column\n", "transport.topic_mode", "column", "line 2: "},
		{"embedded", "embedded", "linger: -1s\n", "transport.linger", "-1s", "is negative"},
		{"type of another plugin", "jdbc", "type: embedded\n", "sink.type", "embedded", "not one of plugin jdbc's"},
		{"whole document", "jdbc", "name: p\ntransport:\n  type: rocketmq\n  name_servers: [\"127.0.0.1:1\"]\n  topics: [t]\nsink:\n  type: postgres\n  dsn: postgres://u@127.0.0.1/x\n  keyless_mode: sometimes\n",
			"sink.keyless_mode", "sometimes", "line 9: "},
		{"whole document, across sections", "jdbc", "name: p\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: postgres://u@127.0.0.1/x\n",
			"transport.type", "embedded", "line 3: the embedded transport needs both a source and a sink section"},
		{"whole document, valid", "mysql", `{"name": "p", "source": {"type": "mariadb", "host": "h", "user": "u", "server_id": 7}, "transport": {"type": "embedded"}, "sink": {"type": "postgres", "dsn": "postgres://u@127.0.0.1/x"}}`, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fes, err := ValidateConnector(tc.plugin, []byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if tc.path == "" {
				if len(fes) != 0 {
					t.Fatalf("valid config refused: %+v", fes)
				}
				return
			}
			if len(fes) != 1 || fes[0].Path != tc.path || fes[0].Value != tc.value || len(fes[0].Errors) != 1 || !strings.Contains(fes[0].Errors[0], tc.msg) {
				t.Fatalf("got %+v, want path %q value %q and %q", fes, tc.path, tc.value, tc.msg)
			}
			if strings.Contains(fes[0].Errors[0], "hunter2") {
				t.Errorf("a secret in the message: %s", fes[0].Errors[0])
			}
		})
	}
	// Every decoding problem of a section comes back at once, each with
	// its key and line, as Kafka Connect's validate lists every config.
	fes, err := ValidateConnector("mysql", []byte("host: h\nport: abc\nsrever_id: 7\nuser: u\nuser: v\nheartbeat: soon\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, fe := range fes {
		got = append(got, fe.Path+"="+fe.Value+" "+strings.Join(fe.Errors, "|"))
	}
	want := []string{
		`source.port=abc line 2: expected an integer, got "abc"`,
		"source.srever_id=7 line 3: unknown key",
		"source.user=v line 5: is given twice",
		"source.heartbeat=soon line 6: expected a duration",
		"source.server_id= line 1: is required",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d: got %q, want it to begin %q", i, got[i], want[i])
		}
	}
	if _, err := ValidateConnector("oracle", []byte("a: 1")); err == nil || !strings.Contains(err.Error(), "known: mysql, rocketmq-replicator, jdbc, embedded, kafka, rocketmq") {
		t.Errorf("unknown plugin: %v", err)
	}
	if _, err := ValidateConnector("mysql", []byte("- a\n")); err == nil {
		t.Error("a list is no config")
	}
	var names []string
	for _, p := range Plugins() {
		names = append(names, p.Kind+":"+p.Name)
	}
	if got := strings.Join(names, " "); got != "source:mysql source:rocketmq-replicator sink:jdbc transport:embedded transport:kafka transport:rocketmq" {
		t.Errorf("plugins: %s", got)
	}
}

// history_store: database keeps the schema history in the positions
// database, which must then be one, and makes its table a control table of
// a sink writing there.
func TestHistoryStoreConfig(t *testing.T) {
	const base = "name: p\nsource:\n  type: mariadb\n  host: h\n  user: u\n  server_id: 7\n%s\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: postgres://u@127.0.0.1/x\n%s"
	const pgPositions = "positions:\n  type: postgres\n  dsn: postgres://u@127.0.0.1/x\n"
	for _, tc := range []struct{ name, src, positions, want string }{
		{"database", "  history_store: database", pgPositions, ""},
		{"own table", "  history_store: database\n  history_table: app.hist", pgPositions, ""},
		{"file positions", "  history_store: database", "", "p.yaml:7: source.history_store: database keeps the schema history in the positions database"},
		{"unknown store", "  history_store: etcd", pgPositions, "p.yaml:7: source.history_store: "},
		{"with a file", "  history_store: database\n  history_file: h.jsonl", pgPositions, "source.history_file: "},
		{"bad table", "  history_store: database\n  history_table: \"a b\"", pgPositions, "source.history_table: "},
		{"table for a file", "  history_table: x", pgPositions, "source.history_table: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := plugin.ParseConfig([]byte(fmt.Sprintf(base, tc.src, tc.positions)), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "file positions" {
				// in a cluster the coordinator keeps it (TaskOptions.HistoryDB)
				if _, err := decodeTask(cfg, "", true); err != nil {
					t.Fatalf("coordinated: %v", err)
				}
			}
			d, err := decodeAll(cfg, "")
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			table := "sluice_schema_history"
			if strings.Contains(tc.src, "app.hist") {
				table = "app.hist"
			}
			if got := strings.Join(d.sink.ControlTables, ","); got != "sluice_positions,"+table {
				t.Errorf("control tables %s", got)
			}
		})
	}
}

// findConfig is the entry of v for the key path name.
func findConfig(v admin.Validation, name string) *admin.ConfigInfo {
	for i := range v.Configs {
		if v.Configs[i].Value.Name == name {
			return &v.Configs[i]
		}
	}
	return nil
}

// Validate answers as Kafka Connect's does: every key of the plugin's
// section, each with its definition, the value given (secrets masked by
// the API) and its errors; a list element's problem has its own entry
// with its key's definition.
func TestValidateCarriesDefinitions(t *testing.T) {
	v, err := validateForCluster("jdbc", []byte(`{"type": "postgres", "dsn": "postgres://u@127.0.0.1/x", "on_error": "maybe", "batch_size": 7}`))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := connectors.Plugin("jdbc")
	keys, _ := p.ConfigKeys()
	if v.Name != "jdbc" || len(v.Groups) != 1 || v.Groups[0] != "sink" || len(v.Configs) != len(keys) {
		t.Fatalf("validation %+v: want one entry per key (%d)", v, len(keys))
	}
	for _, c := range v.Configs {
		if c.Definition == nil || c.Definition.Name != c.Value.Name || c.Definition.Documentation == "" || !c.Value.Visible {
			t.Errorf("entry %+v", c)
		}
	}
	oe := findConfig(v, "sink.on_error")
	if oe == nil || oe.Value.Value != "maybe" || len(oe.Value.Errors) != 1 || strings.Join(oe.Value.RecommendedValues, ",") != "fail,skip,dlq" || v.ErrorCount != 1 {
		t.Errorf("on_error: %+v (errors %d)", oe, v.ErrorCount)
	}
	if bs := findConfig(v, "sink.batch_size"); bs == nil || bs.Value.Value != "7" || len(bs.Value.Errors) != 0 || *bs.Definition.DefaultValue != "500" {
		t.Errorf("batch_size: %+v", bs)
	}
	v, err = validateForCluster("mysql", []byte(`{"host": "h", "user": "u", "server_id": 9, "mask": [{"columns": "d.t.c", "kind": "blur"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if m := findConfig(v, "source.mask[0].kind"); m == nil || m.Definition == nil || m.Definition.Name != "source.mask[].kind" || len(m.Value.Errors) == 0 {
		t.Errorf("mask[0].kind: %+v in %+v", m, v)
	}
}

// The cluster's validate endpoint answers with the registry's checks, key
// by key, and names an unknown plugin as not found.
func TestValidateForCluster(t *testing.T) {
	v, err := validateForCluster("mysql", []byte(`{"host": "127.0.0.1", "user": "u"}`))
	if err != nil {
		t.Fatal(err)
	}
	var wrong []string
	for _, c := range v.Configs {
		if len(c.Value.Errors) > 0 {
			wrong = append(wrong, c.Value.Name)
		}
	}
	sid := findConfig(v, "source.server_id")
	if v.ErrorCount != 1 || len(wrong) != 1 || sid == nil || !strings.Contains(sid.Value.Errors[0], "is required") {
		t.Fatalf("missing server_id: %+v", v)
	}
	if v, err := validateForCluster("postgres", []byte(`{"dsn": "postgres://u@127.0.0.1/x"}`)); err != nil || v.ErrorCount != 0 {
		t.Fatalf("valid sink section: %+v, %v", v, err)
	}
	if _, err := validateForCluster("oracle", []byte(`{}`)); !errors.Is(err, admin.ErrNotFound) {
		t.Fatalf("unknown plugin: %v, want admin.ErrNotFound", err)
	}
	if _, err := validateForCluster("mysql", []byte(`[1]`)); !errors.Is(err, admin.ErrInvalid) {
		t.Fatalf("not an object: %v, want admin.ErrInvalid", err)
	}
	types := map[string]string{}
	for _, p := range clusterPlugins() {
		if _, dup := types[p.Class]; dup || p.Version == "" {
			t.Errorf("plugin %+v: listed twice or without a version", p)
		}
		types[p.Class] = p.Type
	}
	for class, typ := range map[string]string{"mysql": "source", "jdbc": "sink", "embedded": "transport", "rocketmq": "transport"} {
		if types[class] != typ {
			t.Errorf("plugin %s: type %q, want %q (got %v)", class, types[class], typ, types)
		}
	}
	// a section type is accepted where a plugin's name is
	if _, err := validateForCluster("postgresql", []byte(`{"dsn": "postgres://u@127.0.0.1/x"}`)); err != nil {
		t.Errorf("section type postgresql: %v", err)
	}
}
