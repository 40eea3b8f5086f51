package app

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// The sink's routes and columns keys decode through the jdbc plugin's spec
// and validate refuses a bad pattern, a capture the pattern lacks and a
// column both renamed and dropped, naming the key and its line.
func TestValidateRouting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.yaml")
	base := "name: x\nsource:\n  type: mysql\n  host: h\n  user: u\n  server_id: 7\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: postgres://u@127.0.0.1:1/x\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"good", "  routes:\n    - match: 'shop\\.shard_(\\d+)_(\\w+)'\n      schema: archive\n      table: $2_s$1\n    - match: 'crm\\..*'\n      schema: crm_copy\n      table: c_$${table}\n  columns:\n    - match: 'shop\\..*'\n      rename: {email: contact}\n      drop: [password_hash]\n", ""},
		{"bad regex", "  routes:\n    - match: 'shop\\.(orders'\n      table: o\n", "r.yaml:13: sink.routes[0].match: sink: invalid configuration: routes[0].match \"shop\\\\.(orders\": error parsing regexp: missing closing )"},
		{"capture", "  routes:\n    - match: 'shop\\.orders'\n      table: o_$1\n", "r.yaml:14: sink.routes[0].table: sink: invalid configuration: routes[0].table \"o_$1\" refers to $1, but the pattern"},
		{"renamed and dropped", "  columns:\n    - match: 'shop\\..*'\n      rename: {a: b}\n      drop: [a]\n", `r.yaml:15: sink.columns[0].drop: sink: invalid configuration: columns[0].drop: column "a" is both renamed and dropped`},
		{"unknown key", "  columns:\n    - match: 'shop\\..*'\n      drops: [a]\n", "sink.columns[0].drops: unknown key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, path, base+tc.yaml)
			var out, errOut bytes.Buffer
			code := Main([]string{"validate", "--config", path}, &out, &errOut)
			if tc.want == "" {
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errOut.String())
				}
				return
			}
			if code != 2 || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q, want %q", code, errOut.String(), tc.want)
			}
		})
	}
}
