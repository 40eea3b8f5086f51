package app

import (
	"bytes"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/sink"
)

const validBase = `name: v
source:
  type: mariadb
  host: 127.0.0.1
  user: u
  server_id: 7
  include: ["shop.*"]
  mask:
    - columns: shop.users.email
      kind: hash
      salt: pepper
transport:
  type: embedded
sink:
  type: postgres
  dsn: postgres://u@127.0.0.1:1/x
  schema: "$${db}_copy"
  table: "$${table}"
`

const rocketBase = `name: v
source:
  type: mariadb
  host: 127.0.0.1
  user: u
  server_id: 7
transport:
  type: rocketmq
  name_servers: ["127.0.0.1:1"]
  topics: [t]
sink:
  type: mysql
  dsn: u:p@tcp(127.0.0.1:1)/x
`

// goFieldNames are the Go names of the connectors' settings: a message
// for the operator names YAML keys, never these.
func goFieldNames() *regexp.Regexp {
	var names []string
	for _, v := range []any{binlog.Config{}, binlog.MaskRule{}, sink.Config{}, rocketmq.Config{}} {
		t := reflect.TypeOf(v)
		for i := 0; i < t.NumField(); i++ {
			if n := t.Field(i).Name; len(n) > 3 || n == "DSN" { // Host, Port, ... but not "Kind" in prose
				names = append(names, n)
			}
		}
	}
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b|Config\.`)
}

// validate refuses what run refuses before it connects, naming the YAML key
// and its line, with no Go field name in the message.
func TestValidateRunsRunsChecks(t *testing.T) {
	goNames := goFieldNames()
	cases := []struct {
		name, base, from, to, want string
	}{
		{"misspelled salt", validBase, "      salt: pepper", "      slat: pepper", "v.yaml:11: source.mask[0].slat: unknown key (known: columns, kind, length, salt, value)"},
		{"mask kind", validBase, "kind: hash", "kind: sha", "v.yaml:10: source.mask[0].kind: "},
		{"mask truncate length", validBase, "kind: hash", "kind: truncate", "v.yaml:9: source.mask[0].length: "},
		{"table pattern", validBase, `"shop.*"`, `"shop"`, "v.yaml:7: source.include[0]: "},
		{"snapshot", validBase, "  server_id: 7", "  server_id: 7\n  snapshot: sometimes", "v.yaml:7: source.snapshot: "},
		{"snapshot chunk", validBase, "  server_id: 7", "  server_id: 7\n  snapshot_chunk: -1", "v.yaml:7: source.snapshot_chunk: "},
		{"port", validBase, "  server_id: 7", "  server_id: 7\n  port: 70000", "v.yaml:7: source.port: "},
		{"flavor", validBase, "  server_id: 7", "  server_id: 7\n  flavor: oracle", "v.yaml:7: source.flavor: "},
		{"zero dates", validBase, "  server_id: 7", "  server_id: 7\n  zero_dates: now", "v.yaml:7: source.zero_dates: "},
		{"postgres dsn", validBase, "postgres://u@127.0.0.1:1/x", "host=127.0.0.1 port", "v.yaml:16: sink.dsn: "},
		{"mysql dsn", rocketBase, "u:p@tcp(127.0.0.1:1)/x", "u:p@127.0.0.1:1", "v.yaml:13: sink.dsn: "},
		{"mysql dsn without a database", rocketBase, "u:p@tcp(127.0.0.1:1)/x", "u:p@tcp(127.0.0.1:1)/", "v.yaml:13: sink.dsn: "},
		{"keyless mode", validBase, "  table:", "  keyless_mode: sometimes\n  table:", "v.yaml:18: sink.keyless_mode: "},
		{"schema changes", validBase, "  table:", "  schema_changes: maybe\n  table:", "v.yaml:18: sink.schema_changes: "},
		{"template", validBase, `"$${db}_copy"`, `"$${database}"`, "unknown placeholder ${database}"},
		{"on_error", validBase, "  table:", "  on_error: retry\n  table:", "v.yaml:18: sink.on_error: must be fail, skip or dlq"},
		{"topic mode", rocketBase, "  topics: [t]", "  topics: [t]\n  topic_mode: column", "v.yaml:11: transport.topic_mode: "},
		{"oversize policy", rocketBase, "  topics: [t]", "  topics: [t]\n  oversize_policy: shrink", "v.yaml:11: transport.oversize_policy: "},
		{"positions dsn", validBase, "  table: \"$${table}\"\n", "  table: \"$${table}\"\npositions:\n  type: postgres\n  dsn: \"host=x port\"\n", "v.yaml:21: positions.dsn: "},
		{"positions table", validBase, "  table: \"$${table}\"\n", "  table: \"$${table}\"\npositions:\n  type: postgres\n  dsn: postgres://u@127.0.0.1:1/x\n  table: \"a b\"\n", "v.yaml:22: positions.table: "},
		{"name", validBase, "name: v", "name: my pipeline", "v.yaml:1: name: "},
		{"bigint mode", rocketBase, "  server_id: 7", "  server_id: 7\n  bigint.unsigned.handling.mode: huge", "bigint.unsigned.handling.mode must be one of precise, long"},
		{"decimal mode", rocketBase, "  server_id: 7", "  server_id: 7\n  decimal.handling.mode: exact", "decimal.handling.mode must be one of precise, string, double"},
		{"time mode", rocketBase, "  server_id: 7", "  server_id: 7\n  time.precision.mode: adaptive", "time.precision.mode must be one of adaptive_time_microseconds, connect"},
		{"binary mode", rocketBase, "  server_id: 7", "  server_id: 7\n  binary.handling.mode: base32", "binary.handling.mode must be one of bytes, base64, base64-url-safe, hex"},
		{"skipped operations", rocketBase, "  server_id: 7", "  server_id: 7\n  skipped.operations: t,x", `skipped.operations "x"`},
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "v.yaml")
	for _, base := range []string{validBase, rocketBase} {
		writeFile(t, path, base)
		var out, errOut bytes.Buffer
		if code := Main([]string{"validate", "--config", path}, &out, &errOut); code != 0 {
			t.Fatalf("valid config: exit %d: %s", code, errOut.String())
		}
	}
	// Debezium's option names are keys of the source section.
	dbz, err := decodeAll(mustLoad(t, path, strings.Replace(rocketBase, "  server_id: 7", "  server_id: 7\n  bigint.unsigned.handling.mode: long\n  decimal.handling.mode: string\n"+
		"  time.precision.mode: connect\n  binary.handling.mode: hex\n  provide.transaction.metadata: false\n  include.schema.changes: false\n  skipped.operations: t", 1)), "")
	if err != nil || dbz.codec.BigintUnsignedMode != "long" || dbz.codec.DecimalMode != "string" || dbz.codec.TimePrecisionMode != "connect" ||
		dbz.codec.BinaryMode != "hex" || !dbz.codec.OmitTransaction || !dbz.source.SkipSchemaChanges || len(dbz.source.SkippedOperations) != 1 || dbz.rocketmq.Codec == nil {
		t.Fatalf("Debezium options: %v %+v", err, dbz)
	}
	cfgD, err := decodeAll(mustLoad(t, path, validBase), "")
	if err != nil || cfgD.sink.SchemaTemplate != "${db}_copy" || cfgD.sink.TableTemplate != "${table}" {
		t.Fatalf("$${ escape: %v %+v", err, cfgD)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(tc.base, tc.from, tc.to, 1)
			if text == tc.base {
				t.Fatalf("%q not in the base config", tc.from)
			}
			writeFile(t, path, text)
			var out, errOut bytes.Buffer
			code := Main([]string{"validate", "--config", path}, &out, &errOut)
			msg := errOut.String()
			if code != 2 || !strings.Contains(msg, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 and %q", code, msg, tc.want)
			}
			if m := goNames.FindString(msg); m != "" {
				t.Errorf("message names the Go field %q: %s", m, msg)
			}
			if strings.Contains(msg, "p@") {
				t.Errorf("message repeats the DSN: %s", msg)
			}
		})
	}
}

func mustLoad(t *testing.T, path, text string) *runtimeConfig {
	t.Helper()
	writeFile(t, path, text)
	c, err := loadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
