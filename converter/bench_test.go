package converter

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// benchRecord is an update of a typical 10-column table.
func benchRecord() schema.Record {
	tab := &schema.Table{ID: schema.TableID{Database: "shop", Table: "customers"}, PrimaryKey: []string{"id"}, Columns: []schema.Column{
		{Name: "id", Schema: col(schema.Int64, schema.None, false, "bigint")},
		{Name: "name", Schema: col(schema.String, schema.None, false, "varchar(64)", schema.ParamLength, "64", schema.ParamCharset, "utf8mb4")},
		{Name: "email", Schema: col(schema.String, schema.None, true, "varchar(128)", schema.ParamLength, "128", schema.ParamCharset, "utf8mb4")},
		{Name: "balance", Schema: decCol(12, 2, false)},
		{Name: "created", Schema: col(schema.Int64, schema.Timestamp, false, "datetime(6)")},
		{Name: "updated", Schema: col(schema.Int64, schema.ZonedTimestamp, false, "timestamp(6)")},
		{Name: "active", Schema: col(schema.Bool, schema.None, false, "tinyint(1)")},
		{Name: "score", Schema: col(schema.Float64, schema.None, true, "double")},
		{Name: "data", Schema: col(schema.String, schema.Json, true, "json")},
		{Name: "token", Schema: col(schema.Bytes, schema.None, true, "varbinary(16)")},
	}}
	vs, ks := tab.ValueSchema("srv.shop.customers.Value"), tab.KeySchema("srv.shop.customers.Key")
	row := func(bal string, upd int64) schema.Row {
		return schema.Row{int64(1234567), "Anne Kretchmar", "annek@noanswer.org", schema.MustDec(bal), int64(1529476623123456),
			upd, true, 0.75, `{"tags":["a","b"],"n":1}`, []byte("0123456789abcdef")}
	}
	return schema.Record{Op: schema.OpUpdate, Table: tab.ID, KeySchema: ks, Key: schema.Row{int64(1234567)}, ValueSchema: vs,
		Before: row("1000.50", 1529501823000000), After: row("975.25", 1529501824500000), Source: testSource,
		Transaction: &schema.Transaction{ID: "0-1-42", TotalOrder: 3, DataCollectionOrder: 2}, TsMs: 1700000000123}
}

func BenchmarkEncode(b *testing.B) {
	c := NewJSON(DefaultOptions())
	r := benchRecord()
	b.ReportAllocs()
	var n int
	for b.Loop() {
		k, v, err := c.Encode(&r)
		if err != nil {
			b.Fatal(err)
		}
		n = len(k) + len(v)
	}
	b.SetBytes(int64(n))
}

// stdSchema is a Connect schema for encoding/json (the baseline).
type stdSchema struct {
	Type       string            `json:"type"`
	Fields     []stdSchema       `json:"fields,omitempty"`
	Optional   bool              `json:"optional"`
	Name       string            `json:"name,omitempty"`
	Version    int               `json:"version,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	Default    any               `json:"default,omitempty"`
	Field      string            `json:"field,omitempty"`
}

type stdSource struct {
	Version   string  `json:"version"`
	Connector string  `json:"connector"`
	Name      string  `json:"name"`
	TsMs      int64   `json:"ts_ms"`
	Snapshot  *string `json:"snapshot"`
	DB        string  `json:"db"`
	Sequence  *string `json:"sequence"`
	TsUs      int64   `json:"ts_us"`
	TsNs      int64   `json:"ts_ns"`
	Table     *string `json:"table"`
	ServerID  uint32  `json:"server_id"`
	GTID      *string `json:"gtid"`
	File      string  `json:"file"`
	Pos       uint64  `json:"pos"`
	Row       int     `json:"row"`
	Thread    uint64  `json:"thread"`
	Query     *string `json:"query"`
}

type stdTx struct {
	ID                  string `json:"id"`
	TotalOrder          int64  `json:"total_order"`
	DataCollectionOrder int64  `json:"data_collection_order"`
}

type stdPayload struct {
	Before      map[string]any `json:"before"`
	After       map[string]any `json:"after"`
	Source      stdSource      `json:"source"`
	Transaction *stdTx         `json:"transaction"`
	Op          string         `json:"op"`
	TsMs        int64          `json:"ts_ms"`
	TsUs        int64          `json:"ts_us"`
	TsNs        int64          `json:"ts_ns"`
}

type stdEnvelope struct {
	Schema  *stdSchema `json:"schema"`
	Payload any        `json:"payload"`
}

// stdSchemas builds the baseline's schemas once (a fair baseline caches
// them too), from the same Connect form the converter writes.
func stdSchemas(b *testing.B, c *JSON, r *schema.Record) (key, value *stdSchema) {
	k, v, err := c.Encode(r)
	if err != nil {
		b.Fatal(err)
	}
	var ke, ve struct {
		Schema *stdSchema `json:"schema"`
	}
	if json.Unmarshal(k, &ke) != nil || json.Unmarshal(v, &ve) != nil {
		b.Fatal("bad json")
	}
	return ke.Schema, ve.Schema
}

// stdRow converts a row to JSON-ready Go values, as a stdlib encoder must.
func stdRow(p *plan, row schema.Row) map[string]any {
	if row == nil {
		return nil
	}
	m := make(map[string]any, len(row))
	for i, v := range row {
		switch p.fields[i].kind {
		case kDecBytes:
			d := v.(schema.Dec)
			m[p.names[i]] = twosComplement(d.Unscaled) // []byte: base64 by encoding/json
		case kZoned:
			m[p.names[i]] = string(appendZoned(nil, v.(int64)))
		default:
			m[p.names[i]] = v
		}
	}
	return m
}

func optStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func BenchmarkEncodeStdlib(b *testing.B) {
	c := NewJSON(DefaultOptions())
	r := benchRecord()
	ks, vs := stdSchemas(b, c, &r)
	vp, _ := planFor(r.ValueSchema, &defaultModes)
	kp, _ := planFor(r.KeySchema, &defaultModes)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		k, err := json.Marshal(stdEnvelope{Schema: ks, Payload: stdRow(kp, r.Key)})
		if err != nil {
			b.Fatal(err)
		}
		s := &r.Source
		p := stdPayload{Before: stdRow(vp, r.Before), After: stdRow(vp, r.After),
			Source: stdSource{Version: s.Version, Connector: s.Connector, Name: s.Name, TsMs: s.TsMs, Snapshot: optStr(s.Snapshot),
				DB: r.Table.Database, TsUs: s.TsMs * 1000, TsNs: s.TsMs * 1000000, Table: optStr(r.Table.Table), ServerID: s.ServerID,
				GTID: optStr(s.GTID), File: s.File, Pos: s.Pos, Row: s.Row, Thread: s.Thread, Query: optStr(s.Query)},
			Op: r.Op.String(), TsMs: r.TsMs, TsUs: r.TsMs * 1000, TsNs: r.TsMs * 1000000}
		if t := r.Transaction; t != nil {
			p.Transaction = &stdTx{t.ID, t.TotalOrder, t.DataCollectionOrder}
		}
		v, err := json.Marshal(stdEnvelope{Schema: vs, Payload: p})
		if err != nil {
			b.Fatal(err)
		}
		n = len(k) + len(v)
	}
	b.SetBytes(int64(n))
}

func BenchmarkDecode(b *testing.B) {
	c := NewJSON(DefaultOptions())
	r := benchRecord()
	k, v, err := c.Encode(&r)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(k) + len(v)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Decode(k, v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeStdlib unmarshals the same bytes with encoding/json into
// typed envelope structs and then converts the row maps to the record's Go
// values (the least a stdlib decoder must do).
func BenchmarkDecodeStdlib(b *testing.B) {
	c := NewJSON(DefaultOptions())
	r := benchRecord()
	k, v, err := c.Encode(&r)
	if err != nil {
		b.Fatal(err)
	}
	vp, _ := planFor(r.ValueSchema, &defaultModes)
	b.SetBytes(int64(len(k) + len(v)))
	b.ReportAllocs()
	for b.Loop() {
		var ke struct {
			Schema  stdSchema      `json:"schema"`
			Payload map[string]any `json:"payload"`
		}
		var ve struct {
			Schema  stdSchema `json:"schema"`
			Payload struct {
				Before      map[string]any `json:"before"`
				After       map[string]any `json:"after"`
				Source      stdSource      `json:"source"`
				Transaction *stdTx         `json:"transaction"`
				Op          string         `json:"op"`
				TsMs        int64          `json:"ts_ms"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(k, &ke); err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal(v, &ve); err != nil {
			b.Fatal(err)
		}
		for _, m := range []map[string]any{ve.Payload.Before, ve.Payload.After} {
			row := make(schema.Row, len(vp.fields))
			for i, fp := range vp.fields {
				x := m[vp.names[i]]
				switch fp.kind {
				case kInt:
					x = int64(x.(float64))
				case kDecBytes:
					raw, _ := base64.StdEncoding.DecodeString(x.(string))
					x = schema.Dec{Unscaled: fromTwosComplement(raw), Scale: fp.scale}
				case kZoned:
					x, _ = parseZoned([]byte(x.(string)))
				case kBytes:
					if s, ok := x.(string); ok {
						x, _ = base64.StdEncoding.DecodeString(s)
					}
				}
				row[i] = x
			}
			_ = row
		}
	}
}

// BenchmarkDecodeManyTables cycles through more tables than the recent
// ring holds: the schema member is scanned and looked up every time.
func BenchmarkDecodeManyTables(b *testing.B) {
	c := NewJSON(DefaultOptions())
	var keys, values [][]byte
	for i := 0; i < 3*recentLen; i++ {
		r := benchRecord()
		vs := *r.ValueSchema
		vs.Name = "srv.shop.t" + string(rune('a'+i)) + ".Value"
		r.ValueSchema = &vs
		k, v, err := c.Encode(&r)
		if err != nil {
			b.Fatal(err)
		}
		keys, values = append(keys, k), append(values, v)
	}
	b.SetBytes(int64(len(keys[0]) + len(values[0])))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := c.Decode(keys[i], values[i]); err != nil {
			b.Fatal(err)
		}
		i = (i + 1) % len(keys)
	}
}
