package converter

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// recordDiff reports how got differs from want in what the envelope carries.
func recordDiff(want, got *schema.Record) string {
	switch {
	case want.Op != got.Op:
		return fmt.Sprintf("op %s != %s", got.Op, want.Op)
	case want.Table != got.Table:
		return fmt.Sprintf("table %v != %v", got.Table, want.Table)
	case !want.KeySchema.Equal(got.KeySchema):
		return fmt.Sprintf("key schema\n got %s\nwant %s", got.KeySchema, want.KeySchema)
	case !want.ValueSchema.Equal(got.ValueSchema):
		return fmt.Sprintf("value schema\n got %s %v\nwant %s %v", got.ValueSchema, paramsOf(got.ValueSchema), want.ValueSchema, paramsOf(want.ValueSchema))
	case want.Source != got.Source:
		return fmt.Sprintf("source\n got %+v\nwant %+v", got.Source, want.Source)
	case !reflect.DeepEqual(want.Transaction, got.Transaction):
		return fmt.Sprintf("transaction %+v != %+v", got.Transaction, want.Transaction)
	case want.TsMs != got.TsMs:
		return fmt.Sprintf("ts_ms %d != %d", got.TsMs, want.TsMs)
	case !reflect.DeepEqual(want.Change, got.Change):
		return fmt.Sprintf("change %+v != %+v", got.Change, want.Change)
	}
	for _, im := range []struct {
		name      string
		want, got schema.Row
	}{{"key", want.Key, got.Key}, {"before", want.Before, got.Before}, {"after", want.After, got.After}} {
		if d := rowDiff(im.want, im.got); d != "" {
			return im.name + ": " + d
		}
	}
	return ""
}

func paramsOf(s *schema.Schema) []map[string]string {
	if s == nil {
		return nil
	}
	var out []map[string]string
	for _, f := range s.Fields {
		out = append(out, f.Schema.Params)
	}
	return out
}

func rowDiff(want, got schema.Row) string {
	if (want == nil) != (got == nil) {
		return fmt.Sprintf("nil-ness: got %v, want %v", got, want)
	}
	if len(want) != len(got) {
		return fmt.Sprintf("len %d != %d", len(got), len(want))
	}
	for i := range want {
		if !valueEqual(want[i], got[i]) {
			return fmt.Sprintf("[%d] got %#v (%T), want %#v (%T)", i, got[i], got[i], want[i], want[i])
		}
	}
	return ""
}

func valueEqual(a, b any) bool {
	switch x := a.(type) {
	case schema.Dec:
		y, ok := b.(schema.Dec)
		return ok && x.Equal(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case float64:
		y, ok := b.(float64)
		return ok && (x == y && math.Signbit(x) == math.Signbit(y) || math.IsNaN(x) && math.IsNaN(y))
	case float32:
		y, ok := b.(float32)
		return ok && (x == y && math.Signbit(float64(x)) == math.Signbit(float64(y)) || x != x && y != y)
	}
	return reflect.DeepEqual(a, b)
}

func TestRoundTripEveryType(t *testing.T) {
	c := NewJSON(DefaultOptions())
	for _, tc := range typeCases() {
		t.Run(tc.name, func(t *testing.T) {
			for i, r := range typeRecords(tc) {
				k, v, err := c.Encode(&r)
				if err != nil {
					t.Fatalf("record %d: encode: %v", i, err)
				}
				got, err := c.Decode(k, v)
				if err != nil {
					t.Fatalf("record %d: decode: %v\n%s", i, err, v)
				}
				if d := recordDiff(&r, &got); d != "" {
					t.Fatalf("record %d: %s\nvalue: %s", i, d, v)
				}
				// A second converter (cold caches) decodes the same.
				got2, err := NewJSON(DefaultOptions()).Decode(k, v)
				if err != nil || recordDiff(&r, &got2) != "" {
					t.Fatalf("record %d: cold decode differs: %v", i, err)
				}
			}
		})
	}
}

func TestRoundTripEdgeRecords(t *testing.T) {
	c := NewJSON(DefaultOptions())
	tc := typeCases()[8] // string
	base := typeRecords(tc)[0]
	noKey := base
	noKey.KeySchema, noKey.Key = nil, nil
	emptyVsNull := base
	emptyVsNull.After = schema.Row{int64(1), ""}
	nullBoth := base
	nullBoth.Op, nullBoth.Before, nullBoth.After = schema.OpTruncate, nil, nil
	noValueSchema := nullBoth
	noValueSchema.ValueSchema, noValueSchema.KeySchema, noValueSchema.Key = nil, nil, nil
	named := base
	vs := *base.ValueSchema
	vs.Name = "custom"
	vs.Fields = append([]schema.Field(nil), vs.Fields...)
	vs.Fields[1].Schema = &schema.Schema{Type: schema.Int32, Logical: schema.Date, Name: "my.date", Optional: true, Default: int32(5)}
	named.ValueSchema, named.After = &vs, schema.Row{int64(1), int32(7)}
	unknownLogical := base
	vs2 := *base.ValueSchema
	vs2.Fields = append([]schema.Field(nil), vs2.Fields...)
	vs2.Fields[1].Schema = &schema.Schema{Type: schema.String, Logical: "uuid", Optional: false, Default: "d\"q"}
	unknownLogical.ValueSchema, unknownLogical.After = &vs2, schema.Row{int64(1), "x"}
	ddl := schema.Record{Op: schema.OpSchemaChange, Table: schema.TableID{Database: "db"}, Source: testSource,
		Transaction: &schema.Transaction{ID: "0-1-43"}, TsMs: 5, Change: structuredChange()}
	nested := base
	vs3 := *base.ValueSchema
	vs3.Fields = append([]schema.Field(nil), vs3.Fields...)
	vs3.Fields[1].Schema = &schema.Schema{Type: schema.Array, Optional: true, Elem: &schema.Schema{Type: schema.Map,
		Key: schema.Primitive(schema.String, false), Elem: schema.DecimalSchema(5, 1, true)}}
	nested.ValueSchema, nested.After = &vs3, schema.Row{int64(1), []any{map[string]any{"a": schema.MustDec("1.5"), "b": nil}, map[string]any{}}}

	for name, r := range map[string]schema.Record{"noKey": noKey, "emptyString": emptyVsNull, "truncate": nullBoth,
		"noValueSchema": noValueSchema, "namedLogical": named, "unknownLogical": unknownLogical, "schemaChange": ddl, "nested": nested} {
		t.Run(name, func(t *testing.T) {
			k, v, err := c.Encode(&r)
			if err != nil {
				t.Fatal(err)
			}
			want := r
			if r.Op == schema.OpTruncate {
				// Debezium's truncate event has a null key (a struct key
				// with a null payload is invalid for JsonConverter).
				if k != nil {
					t.Fatalf("truncate key %q, want none", k)
				}
				want.KeySchema, want.Key = nil, nil
			} else if (r.KeySchema == nil) != (k == nil) && r.Op != schema.OpSchemaChange {
				t.Fatalf("key %q for key schema %v", k, r.KeySchema)
			}
			got, err := c.Decode(k, v)
			if err != nil {
				t.Fatalf("decode: %v\n%s", err, v)
			}
			if d := recordDiff(&want, &got); d != "" {
				t.Fatalf("%s\n%s", d, v)
			}
		})
	}
}

func TestMarkersAreNotData(t *testing.T) {
	c := NewJSON(DefaultOptions())
	for _, op := range []schema.Op{schema.OpBegin, schema.OpCommit, schema.OpHeartbeat} {
		r := schema.Record{Op: op}
		if _, _, err := c.Encode(&r); !errors.Is(err, ErrNotData) {
			t.Errorf("%s: err %v, want ErrNotData", op, err)
		}
	}
	r := schema.Record{Op: schema.OpUnknown}
	if _, _, err := c.Encode(&r); err == nil || errors.Is(err, ErrNotData) {
		t.Errorf("unknown op: err %v, want a value error", err)
	}
}

func TestEncodeRejectsWrongGoTypes(t *testing.T) {
	c := NewJSON(DefaultOptions())
	for _, tc := range []struct {
		name string
		v    any
	}{{"int64", "1"}, {"uint64", int64(1)}, {"decimal", 1.5}, {"bytes", "s"}, {"bit12", uint64(1 << 12)}, {"bit1", uint64(2)}, {"timestamp", "2020-01-01"}, {"decimal", schema.MustDec("1.234")}} {
		var tcase typeCase
		for _, x := range typeCases() {
			if x.name == tc.name {
				tcase = x
			}
		}
		r := typeRecords(tcase)[0]
		r.After = schema.Row{int64(1), tc.v}
		if _, err := c.EncodeValue(&r); !errors.Is(err, ErrValue) {
			t.Errorf("%s with %T %v: err %v, want ErrValue", tc.name, tc.v, tc.v, err)
		}
	}
}

func TestDecimalModes(t *testing.T) {
	tc := typeCases()[10] // decimal(10,2)
	r := typeRecords(tc)[1]
	for _, m := range []struct {
		mode DecimalMode
		want string
	}{{DecimalPrecise, `"v":"tmn9Lg=="`}, {DecimalString, `"v":"-12345678.90"`}, {DecimalDouble, `"v":-1.23456789e+07`}} {
		c := NewJSON(Options{Schemas: true, DecimalMode: m.mode})
		k, v, err := c.Encode(&r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(v, []byte(m.want)) {
			t.Errorf("%s: %s lacks %s", m.mode, v, m.want)
		}
		got, err := c.Decode(k, v)
		if err != nil {
			t.Fatalf("%s: %v", m.mode, err)
		}
		// Schemas survive in every mode; values too (double only when the
		// digits fit a float64, as here).
		if d := recordDiff(&r, &got); d != "" {
			t.Errorf("%s: %s", m.mode, d)
		}
	}
}

func TestSchemaless(t *testing.T) {
	c := NewJSON(Options{Schemas: false})
	recs := typeRecords(typeCases()[8])
	r := recs[len(recs)-3] // the update
	k, v, err := c.Encode(&r)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(v, []byte(`"schema"`)) || bytes.Contains(k, []byte(`"schema"`)) {
		t.Fatalf("schemaless output has a schema: %s %s", k, v)
	}
	if string(k) != `{"id":1}` {
		t.Fatalf("key %s", k)
	}
	got, err := c.Decode(k, v)
	if err != nil {
		t.Fatal(err)
	}
	if got.Op != r.Op || got.Table != r.Table || got.Source != r.Source || len(got.After) != 2 || got.After[0] != int64(1) || got.After[1] != nil || got.Before[1] != r.Before[1] {
		t.Fatalf("schemaless decode: %+v", got)
	}
	if got.KeySchema == nil || len(got.Key) != 1 || got.Key[0] != int64(1) {
		t.Fatalf("schemaless key: %v %v", got.KeySchema, got.Key)
	}
}

// TestRecentSchemaProbe covers the prefix match of recently seen schemas:
// only a complete member matches; anything else is scanned as usual.
func TestRecentSchemaProbe(t *testing.T) {
	c := NewJSON(DefaultOptions())
	r := typeRecords(typeCases()[3])[0]
	k, v, err := c.Encode(&r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decode(k, v); err != nil { // caches the schemas
		t.Fatal(err)
	}
	i := bytes.Index(v, []byte(`,"payload":`))
	junk := append(append(append([]byte(nil), v[:i]...), ` x`...), v[i:]...)
	if _, err := c.Decode(k, junk); !errors.Is(err, ErrSyntax) {
		t.Fatalf("schema followed by junk: err %v, want ErrSyntax", err)
	}
	// A second "schema" member replaces the first (like encoding/json):
	// here a schema of a different table.
	other := typeRecords(typeCases()[0])[0]
	_, ov, err := c.Encode(&other)
	if err != nil {
		t.Fatal(err)
	}
	j := bytes.Index(ov, []byte(`,"payload":`))
	dup := append(append(append(append([]byte(nil), v[:i]...), ','), ov[1:j]...), `,"payload":`...)
	dup = append(dup, ov[j+len(`,"payload":`):]...)
	got, err := c.Decode(nil, dup)
	if err != nil {
		t.Fatal(err)
	}
	if !got.ValueSchema.Equal(other.ValueSchema) {
		t.Fatalf("duplicate schema member: got %s", got.ValueSchema)
	}
}

// TestSchemaChangeStructureRoundTrip: the structured changes come back
// exactly, with and without schemas in the envelope, and the key is
// Debezium's {databaseName}.
func TestSchemaChangeStructureRoundTrip(t *testing.T) {
	for _, schemas := range []bool{true, false} {
		opts := DefaultOptions()
		opts.Schemas = schemas
		c := NewJSON(opts)
		r := schema.Record{Op: schema.OpSchemaChange, Table: schema.TableID{Database: "db"}, Source: testSource, Change: structuredChange()}
		k, v, err := c.Encode(&r)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"databaseName":"db"}`; !strings.Contains(string(k), want) {
			t.Fatalf("schemas=%v: key %s, want it to hold %s", schemas, k, want)
		}
		got, err := c.Decode(k, v)
		if err != nil {
			t.Fatalf("schemas=%v: %v\n%s", schemas, err, v)
		}
		if got.Change == nil || !reflect.DeepEqual(got.Change.Tables, r.Change.Tables) {
			t.Fatalf("schemas=%v: changes\n got %+v\nwant %+v", schemas, got.Change, r.Change)
		}
	}
}

// TestCachedEnvelopeAsScanned: an envelope whose schema was decoded lately
// is read without scanning the schema and the payload first (Decode's
// recentEnvelope). Whatever the text after the schema, a converter that
// has those schemas cached returns the record or the error of one that
// has not and scans the text member by member.
func TestCachedEnvelopeAsScanned(t *testing.T) {
	r := typeRecords(typeCases()[3])[0]
	k, v, err := NewJSON(DefaultOptions()).Encode(&r)
	if err != nil {
		t.Fatal(err)
	}
	cut := func(b []byte) (head, payload []byte) {
		i := bytes.Index(b, []byte(`,"payload":`)) + len(`,"payload":`)
		return b[:i], b[i : len(b)-1]
	}
	vh, vp := cut(v)
	kh, kp := cut(k)
	join := func(parts ...string) []byte { return []byte(strings.Join(parts, "")) }
	cases := map[string][2][]byte{ // key, value
		"as written":              {k, v},
		"no key":                  {nil, v},
		"space before the end":    {join(string(kh), string(kp), " }"), join(string(vh), string(vp), " }")},
		"space after the end":     {join(string(k), " "), join(string(v), " ")},
		"member after payload":    {join(string(kh), string(kp), `,"x":1}`), join(string(vh), string(vp), `,"x":1}`)},
		"schema after payload":    {join(string(kh), string(kp), `,"schema":null}`), join(string(vh), string(vp), `,"schema":null}`)},
		"payload twice":           {join(string(kh), string(kp), `,"payload":`, string(kp), "}"), join(string(vh), string(vp), `,"payload":`, string(vp), "}")},
		"two payloads in one":     {join(string(kh), string(kp), string(kp), "}"), join(string(vh), string(vp), string(vp), "}")},
		"brace after the end":     {join(string(k), "}"), join(string(v), "}")},
		"null payload":            {join(string(kh), "null}"), join(string(vh), "null}")},
		"empty payload object":    {join(string(kh), "{}}"), join(string(vh), "{}}")},
		"payload cut short":       {join(string(kh), string(kp[:len(kp)/2]), "}"), join(string(vh), string(vp[:len(vp)/2]), "}")},
		"no payload":              {join(string(kh[:len(kh)-len(`,"payload":`)]), "}"), join(string(vh[:len(vh)-len(`,"payload":`)]), "}")},
		"payload of another kind": {join(string(kh), `[1]}`), join(string(vh), `"x"}`)},
	}
	for name, kv := range cases {
		cached := NewJSON(DefaultOptions())
		if _, err := cached.Decode(k, v); err != nil { // caches both schemas
			t.Fatal(err)
		}
		if _, _, ok := recentEnvelope(&cached.recentValue, v); !ok {
			t.Fatal("the value's schema is not taken from the cache")
		}
		if _, _, ok := recentEnvelope(&cached.recentKey, k); !ok {
			t.Fatal("the key's schema is not taken from the cache")
		}
		got, gotErr := cached.Decode(kv[0], kv[1])
		want, wantErr := NewJSON(DefaultOptions()).Decode(kv[0], kv[1])
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%s: error %v, scanned %v", name, gotErr, wantErr)
			continue
		}
		if d := recordDiff(&got, &want); d != "" {
			t.Errorf("%s: %s", name, d)
		}
	}
}
