package converter

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// afterField encodes r and returns the JSON of after.<field> and of its
// field schema.
func afterField(t *testing.T, c *JSON, r *schema.Record, field string) (value, fieldSchema string) {
	t.Helper()
	_, v, err := c.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Schema struct {
			Fields []struct {
				Field  string            `json:"field"`
				Fields []json.RawMessage `json:"fields"`
			} `json:"fields"`
		} `json:"schema"`
		Payload struct {
			After map[string]json.RawMessage `json:"after"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(v, &ev); err != nil {
		t.Fatal(err)
	}
	for _, f := range ev.Schema.Fields {
		if f.Field != "after" {
			continue
		}
		for _, fs := range f.Fields {
			if strings.Contains(string(fs), `"field":"`+field+`"`) {
				fieldSchema = string(fs)
			}
		}
	}
	return string(ev.Payload.After[field]), fieldSchema
}

// Each option writes Debezium's form, and Decode gives the exact value back.
func TestOptionForms(t *testing.T) {
	wkbPoint := []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x40} // POINT(1 2)
	cases := []struct {
		name   string
		opts   func(*Options)
		schema *schema.Schema
		value  any
		wire   string // the after value's JSON
		inType string // must appear in the field schema
	}{
		{"tinyint", nil, col(schema.Int8, schema.None, true, "tinyint"), int64(-128), `-128`, `"type":"int16"`},
		{"bigint unsigned precise", nil, col(schema.Uint64, schema.None, true, "bigint unsigned"), uint64(math.MaxUint64), `"AP//////////"`, `"org.apache.kafka.connect.data.Decimal"`},
		{"bigint unsigned long", func(o *Options) { o.BigintUnsignedMode = BigintLong }, col(schema.Uint64, schema.None, true, "bigint unsigned"), uint64(math.MaxUint64), `-1`, `"type":"int64"`},
		{"float(m,d)", nil, col(schema.Float32, schema.None, true, "float(7,3)"), float32(9999.999), `9999.9990234375`, `"type":"double"`},
		{"float", nil, col(schema.Float32, schema.None, true, "float"), float32(1.5), `1.5`, `"type":"float"`},
		{"datetime(3)", nil, col(schema.Int64, schema.Timestamp, true, "datetime(3)"), int64(-1000), `-1`, `"io.debezium.time.Timestamp"`},
		{"datetime(6)", nil, col(schema.Int64, schema.Timestamp, true, "datetime(6)"), int64(-1), `-1`, `"io.debezium.time.MicroTimestamp"`},
		{"datetime connect", func(o *Options) { o.TimePrecisionMode = TimeConnect }, col(schema.Int64, schema.Timestamp, true, "datetime(6)"), int64(1500000), `1500`, `"org.apache.kafka.connect.data.Timestamp"`},
		{"time connect", func(o *Options) { o.TimePrecisionMode = TimeConnect }, col(schema.Int64, schema.Time, true, "time"), int64(-3723000000), `-3723000`, `"org.apache.kafka.connect.data.Time"`},
		{"date connect", func(o *Options) { o.TimePrecisionMode = TimeConnect }, col(schema.Int32, schema.Date, true, "date"), int32(-354285), `-354285`, `"org.apache.kafka.connect.data.Date"`},
		{"timestamp(3)", nil, col(schema.Int64, schema.ZonedTimestamp, true, "timestamp(3)"), int64(1709210096100000), `"2024-02-29T12:34:56.100Z"`, `ZonedTimestamp`},
		{"timestamp(0)", nil, col(schema.Int64, schema.ZonedTimestamp, true, "timestamp"), int64(1000000), `"1970-01-01T00:00:01Z"`, `ZonedTimestamp`},
		{"binary hex", func(o *Options) { o.BinaryMode = BinaryHex }, col(schema.Bytes, schema.None, true, "varbinary(4)"), []byte{0, 0xff}, `"00ff"`, `"type":"string"`},
		{"binary base64", func(o *Options) { o.BinaryMode = BinaryBase64 }, col(schema.Bytes, schema.None, true, "blob"), []byte{0xfb, 0xff}, `"+/8="`, `"type":"string"`},
		{"binary base64-url-safe", func(o *Options) { o.BinaryMode = BinaryBase64URLSafe }, col(schema.Bytes, schema.None, true, "blob"), []byte{0xfb, 0xff}, `"-_8="`, `"type":"string"`},
		{"point", nil, col(schema.Bytes, schema.Geometry, true, "point"), schema.Geom{WKB: wkbPoint}, `{"x":1,"y":2,"wkb":"AQEAAAAAAAAAAADwPwAAAAAAAABA","srid":null}`, `"io.debezium.data.geometry.Point"`},
		{"point srid", nil, col(schema.Bytes, schema.Geometry, true, "point"), schema.Geom{WKB: wkbPoint, SRID: 4326}, `{"x":1,"y":2,"wkb":"AQEAAAAAAAAAAADwPwAAAAAAAABA","srid":4326}`, `"io.debezium.data.geometry.Point"`},
		{"uuid", nil, &schema.Schema{Type: schema.String, Name: nameUUID, Optional: true}, "123e4567-e89b-12d3-a456-426614174000", `"123e4567-e89b-12d3-a456-426614174000"`, `"name":"io.debezium.data.Uuid","version":1`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			if tc.opts != nil {
				tc.opts(&o)
			}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			c := NewJSON(o)
			recs := typeRecords(typeCase{name: "x", schema: tc.schema, values: []any{tc.value}})
			r := recs[0]
			got, fs := afterField(t, c, &r, "v")
			if got != tc.wire || !strings.Contains(fs, tc.inType) {
				t.Fatalf("after.v = %s, schema %s; want %s with %s", got, fs, tc.wire, tc.inType)
			}
			k, v, err := c.Encode(&r)
			if err != nil {
				t.Fatal(err)
			}
			back, err := NewJSON(DefaultOptions()).Decode(k, v)
			if err != nil {
				t.Fatal(err)
			}
			if d := recordDiff(&r, &back); d != "" {
				t.Fatalf("round trip: %s\n%s", d, v)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{BigintUnsignedMode: "huge"}, {TimePrecisionMode: "adaptive"}, {BinaryMode: "base32"}, {DecimalMode: "exact"}} {
		if err := o.Validate(); !errors.Is(err, ErrConfig) || schema.ClassOf(err) != schema.ClassFatal {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatal(err)
	}
}

// Options.OmitTransaction is provide.transaction.metadata=false.
func TestOmitTransaction(t *testing.T) {
	recs := typeRecords(typeCase{name: "x", schema: col(schema.Int32, schema.None, true, "int"), values: []any{int64(1)}})
	_, v, err := NewJSON(Options{Schemas: true, OmitTransaction: true}).Encode(&recs[0])
	if err != nil || !strings.Contains(string(v), `"transaction":null`) {
		t.Fatalf("%v %s", err, v)
	}
}
