package converter

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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

// TestDecodeHostile: sizes and depths taken from the input are checked
// before use.
func TestDecodeHostile(t *testing.T) {
	env := func(field string) []byte {
		return []byte(`{"schema":{"type":"struct","fields":[{"type":"struct","fields":[` + field +
			`],"optional":true,"field":"after"}]},"payload":{"after":{"v":"AQ=="},"op":"c"}}`)
	}
	deep := bytes.Repeat([]byte(`{"a":`), 10000)
	for name, in := range map[string][]byte{
		"huge decimal scale": env(`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"999999999"},"field":"v"}`),
		"huge bits length":   env(`{"type":"bytes","name":"io.debezium.data.Bits","parameters":{"length":"100000"},"field":"v"}`),
		"unknown type":       env(`{"type":"int128","field":"v"}`),
		"deep payload":       append(append([]byte(`{"op":"c","after":`), deep...), '1'),
		"deep schema":        []byte(`{"schema":` + strings.Repeat(`{"type":"array","items":`, 200) + `{"type":"int8"}` + strings.Repeat(`}`, 200) + `,"payload":{}}`),
		"truncated":          []byte(`{"schema":{"type":"struct"`),
		"not json":           []byte(`hello`),
		"empty":              nil,
	} {
		if _, err := NewJSON(DefaultOptions()).Decode(nil, in); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}
