package converter

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current encoder")

const goldenSep = "\n--- value\n"

// goldenRecords names one record per golden file: every type (an update,
// so before and after both carry values, plus NULL) and the special cases.
func goldenRecords() map[string]schema.Record {
	out := map[string]schema.Record{}
	for _, tc := range typeCases() {
		recs := typeRecords(tc)
		r := recs[len(recs)-3] // update: before = first value, after = NULL
		r.After = schema.Row{int64(1), tc.values[len(tc.values)-1]}
		out["type_"+tc.name] = r
	}
	ddl := schema.Record{Op: schema.OpSchemaChange, Table: schema.TableID{Database: "db"}, Source: testSource,
		Transaction: &schema.Transaction{ID: "0-1-43", TotalOrder: 1}, TsMs: 1700000000123,
		Change: structuredChange()}
	out["schema_change"] = ddl
	del := typeRecords(typeCases()[3])
	out["delete"] = del[len(del)-2]
	out["snapshot_read"] = del[len(del)-1]
	return out
}

func renderGolden(t *testing.T, key, value []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("--- key\n")
	if key == nil {
		b.WriteString("(none)")
	} else if err := json.Indent(&b, key, "", "  "); err != nil {
		t.Fatalf("key is not JSON: %v\n%s", err, key)
	}
	b.WriteString(goldenSep)
	if err := json.Indent(&b, value, "", "  "); err != nil {
		t.Fatalf("value is not JSON: %v\n%s", err, value)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// parseGolden returns the compact key (nil for none) and value of a golden file.
func parseGolden(b []byte) (key, value []byte, ok bool) {
	s := string(b)
	if !strings.HasPrefix(s, "--- key\n") {
		return nil, nil, false
	}
	k, v, found := strings.Cut(strings.TrimPrefix(s, "--- key\n"), goldenSep)
	if !found {
		return nil, nil, false
	}
	var kb, vb bytes.Buffer
	if k != "(none)" {
		if json.Compact(&kb, []byte(k)) != nil {
			return nil, nil, false
		}
		key = kb.Bytes()
	}
	if json.Compact(&vb, []byte(v)) != nil {
		return nil, nil, false
	}
	return key, vb.Bytes(), true
}

// TestGolden pins the bytes of the format: a change here is a change to
// the contract with every consumer, and says so in its commit.
func TestGolden(t *testing.T) {
	c := NewJSON(DefaultOptions())
	for name, r := range goldenRecords() {
		t.Run(name, func(t *testing.T) {
			key, value, err := c.Encode(&r)
			if err != nil {
				t.Fatal(err)
			}
			got := renderGolden(t, key, value)
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("output differs from %s (go test -update rewrites it):\n%s", path, got)
			}
			// The golden bytes read back to the record.
			k, v, ok := parseGolden(want)
			if !ok {
				t.Fatalf("%s is malformed", path)
			}
			dec, err := NewJSON(DefaultOptions()).Decode(k, v)
			if err != nil {
				t.Fatal(err)
			}
			if d := recordDiff(&r, &dec); d != "" {
				t.Fatal(d)
			}
		})
	}
}
