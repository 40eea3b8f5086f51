package converter

import (
	"bytes"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluicecdc/sluice/schema"
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
	for _, ev := range debeziumRealEvents(f) { // written by Debezium itself
		f.Add(ev[0], ev[1])
	}
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

// FuzzRoundTrip encodes records built from arbitrary values of every type
// and requires them back exactly.
func FuzzRoundTrip(f *testing.F) {
	f.Add(int64(0), uint64(0), 0.0, "", []byte(nil), uint8(0))
	f.Add(int64(math.MinInt64), uint64(math.MaxUint64), -1.5e-300, "é\u2028\"\\", []byte{0xff}, uint8(30))
	f.Fuzz(func(t *testing.T, i int64, u uint64, fl float64, s string, b []byte, scale uint8) {
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		sc := int(scale % 31)
		d := schema.Dec{Unscaled: new(big.Int).Mul(big.NewInt(i), new(big.Int).SetUint64(u|1)), Scale: int32(sc)}
		cols := []struct {
			s *schema.Schema
			v any
		}{
			{col(schema.Int64, schema.None, true, "bigint"), i},
			{col(schema.Uint64, schema.None, true, "bigint unsigned"), u},
			{col(schema.Float64, schema.None, true, "double"), fl},
			{col(schema.Float32, schema.None, true, "float"), float32(fl)},
			{col(schema.String, schema.None, true, "text"), s},
			{col(schema.Bytes, schema.None, true, "blob"), append([]byte{}, b...)},
			{decCol(65, sc, true), d},
			{col(schema.Int64, schema.ZonedTimestamp, true, "timestamp"), i},
			{col(schema.Int64, schema.Time, true, "time"), i},
			{col(schema.Uint64, schema.Bits, true, "bit(64)", schema.ParamLength, "64"), u},
			{col(schema.Int32, schema.Date, true, "date"), int32(i)},
		}
		tab := &schema.Table{ID: schema.TableID{Database: "d", Table: "t"}}
		row := schema.Row{}
		for n, c := range cols {
			tab.Columns = append(tab.Columns, schema.Column{Name: string(rune('a' + n)), Schema: c.s})
			row = append(row, c.v)
		}
		r := schema.Record{Op: schema.OpCreate, Table: tab.ID, ValueSchema: tab.ValueSchema("s.d.t.Value"), After: row,
			Source: schema.Source{Name: "s", Query: s, Pos: u}, TsMs: i}
		c := NewJSON(DefaultOptions())
		k, v, err := c.Encode(&r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decode(k, v)
		if err != nil {
			t.Fatalf("%v\n%s", err, v)
		}
		if diff := recordDiff(&r, &got); diff != "" {
			t.Fatalf("%s\n%s", diff, v)
		}
	})
}
