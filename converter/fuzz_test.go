package converter

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds hostile bytes to Decode: it must return an error or a
// record, never panic, and never allocate far beyond the input's size
// (bounded nesting, no size taken from the input without checking it).
// Whatever decodes must encode again and decode to the same record.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.golden"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if k, v, ok := parseGolden(b); ok {
			f.Add(k, v)
		}
	}
	f.Add([]byte(debeziumKey), []byte(debeziumValue))
	f.Add([]byte(nil), []byte(`{"op":"c","after":{"a":1,"b":"x","c":1.5,"d":[1]}}`))
	f.Add([]byte(`{"id":1}`), []byte(`{"before":null,"after":null,"op":"d"}`))
	f.Add([]byte(nil), []byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c := NewJSON(DefaultOptions())
		r, err := c.Decode(key, value)
		if err != nil {
			return
		}
		if r.ValueSchema == nil || r.Op.String() == "ddl" {
			return
		}
		k2, v2, err := c.Encode(&r)
		if err != nil {
			return // e.g. a decoded decimal wider than its foreign schema says
		}
		r2, err := c.Decode(k2, v2)
		if err != nil {
			t.Fatalf("re-encoded event does not decode: %v\n%s", err, v2)
		}
		if d := recordDiff(&r, &r2); d != "" {
			t.Fatalf("re-encoded event differs: %s\n%s", d, v2)
		}
	})
}
