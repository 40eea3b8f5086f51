package converter

import (
	"math"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// col builds a column schema the way the binlog source does: a non-nil
// Params map carrying source.type.
func col(t schema.Type, l schema.Logical, optional bool, srcType string, kv ...string) *schema.Schema {
	p := map[string]string{schema.ParamSourceType: srcType}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return &schema.Schema{Type: t, Logical: l, Optional: optional, Params: p}
}

func decCol(prec, scale int, optional bool) *schema.Schema {
	s := schema.DecimalSchema(prec, scale, optional)
	s.Params[schema.ParamSourceType] = "decimal"
	return s
}

// typeCase is one column type with the values that must survive a round trip.
type typeCase struct {
	name   string
	schema *schema.Schema
	values []any
}

func typeCases() []typeCase {
	return []typeCase{
		{"int8", col(schema.Int8, schema.None, true, "tinyint"), []any{int64(0), int64(-128), int64(127)}},
		{"int16", col(schema.Int16, schema.None, true, "smallint"), []any{int64(-32768), int64(32767)}},
		{"int32", col(schema.Int32, schema.None, true, "int"), []any{int64(math.MinInt32), int64(math.MaxInt32)}},
		{"int64", col(schema.Int64, schema.None, true, "bigint"), []any{int64(math.MinInt64), int64(math.MaxInt64), int64(-1)}},
		{"uint64", col(schema.Uint64, schema.None, true, "bigint unsigned"), []any{uint64(0), uint64(127), uint64(128), uint64(1 << 63), uint64(math.MaxUint64)}},
		{"float32", col(schema.Float32, schema.None, true, "float"), []any{float32(0.1), float32(-3.4028235e38), float32(1.0e-45), float32(16777217), float32(math.Inf(1))}},
		{"float64", col(schema.Float64, schema.None, true, "double"), []any{0.1, -1.7976931348623157e308, 5e-324, 1e21, math.Inf(-1)}},
		{"bool", col(schema.Bool, schema.None, true, "tinyint(1)"), []any{true, false}},
		{"string", col(schema.String, schema.None, true, "varchar(20)", schema.ParamLength, "20", schema.ParamCharset, "utf8mb4"),
			[]any{"", "héllo wörld ✓ 😀", "quote\" back\\ nl\n tab\t ctl\x01 <&> \u2028", strings.Repeat("x", 300)}},
		{"bytes", col(schema.Bytes, schema.None, true, "varbinary(16)", schema.ParamLength, "16"), []any{[]byte{}, []byte{0xff, 0xfe, 0x00, 0x80}, []byte("plain")}},
		{"decimal", decCol(10, 2, true), []any{schema.MustDec("0.00"), schema.MustDec("-12345678.90"), schema.MustDec("0.01"), schema.MustDec("-0.01")}},
		{"decimal65", decCol(65, 30, true), []any{
			schema.MustDec("99999999999999999999999999999999999.999999999999999999999999999999"),
			schema.MustDec("-99999999999999999999999999999999999.999999999999999999999999999999"),
			schema.MustDec("-0.000000000000000000000000000001"),
			schema.MustDec("-9223372036854775808.000000000000000000000000000000"),
		}},
		{"decimal0", decCol(20, 0, true), []any{schema.MustDec("-128"), schema.MustDec("255"), schema.MustDec("-9223372036854775808")}},
		{"date", col(schema.Int32, schema.Date, true, "date"), []any{int32(0), int32(-719528), int32(2932896), int32(19000)}},
		{"time", col(schema.Int64, schema.Time, true, "time(6)"), []any{int64(0), int64(-3020399000000), int64(3020399000000), int64(-1)}},
		{"datetime", col(schema.Int64, schema.Timestamp, true, "datetime(6)"), []any{int64(0), int64(1529476623123456), int64(-62135596800000000), int64(253402300799999999)}},
		{"timestamp", col(schema.Int64, schema.ZonedTimestamp, true, "timestamp(6)"), []any{int64(0), int64(1529501823000000), int64(1529501823500000), int64(1529501823000001), int64(-1), int64(2147483647999999)}},
		{"json", col(schema.String, schema.Json, true, "json"), []any{`{"a":[1,2,{"b":null}]}`, `"x"`}},
		{"enum", col(schema.String, schema.Enum, true, "enum('a','b,c')", schema.ParamAllowed, "a,b,c"), []any{"a", ""}},
		{"set", col(schema.String, schema.Set, true, "set('x','y')", schema.ParamAllowed, "x,y"), []any{"x,y", ""}},
		{"bit1", col(schema.Uint64, schema.Bits, true, "bit(1)", schema.ParamLength, "1"), []any{uint64(0), uint64(1)}},
		{"bit12", col(schema.Uint64, schema.Bits, true, "bit(12)", schema.ParamLength, "12"), []any{uint64(0), uint64(0xABC), uint64(1)}},
		{"bit64", col(schema.Uint64, schema.Bits, true, "bit(64)", schema.ParamLength, "64"), []any{uint64(math.MaxUint64), uint64(1 << 63)}},
		{"year", col(schema.Int32, schema.Year, true, "year"), []any{int64(1901), int64(2155), int64(0)}},
		{"geometry", col(schema.Bytes, schema.Geometry, true, "geometry"), []any{schema.Geom{WKB: []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 240, 63, 0, 0, 0, 0, 0, 0, 0, 64}, SRID: 4326}, schema.Geom{WKB: []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 240, 63, 0, 0, 0, 0, 0, 0, 0, 64}}}},
		{"text", col(schema.String, schema.None, true, "text", schema.ParamCharset, "latin1"), []any{"caf\u00e9"}},
		{"blob", col(schema.Bytes, schema.None, true, "blob"), []any{[]byte{0xc3, 0x28, 0xa0, 0xa1}}},
	}
}

var testSource = schema.Source{Version: "sluice-0.1", Connector: "mariadb", Name: "srv", TsMs: 1700000000000,
	ServerID: 1, GTID: "0-1-42", File: "mysql-bin.000003", Pos: 154, Row: 0, Thread: 7}

// typeRecords returns, for one type case, a table (id, v) and records
// exercising every value, NULL, insert/update/delete.
func typeRecords(tc typeCase) []schema.Record {
	tab := &schema.Table{ID: schema.TableID{Database: "db", Table: "t_" + tc.name}, PrimaryKey: []string{"id"}, Columns: []schema.Column{
		{Name: "id", Schema: col(schema.Int32, schema.None, false, "int")},
		{Name: "v", Schema: tc.schema},
	}}
	prefix := "srv.db.t_" + tc.name
	vs, ks := tab.ValueSchema(prefix+".Value"), tab.KeySchema(prefix+".Key")
	var recs []schema.Record
	mk := func(op schema.Op, id int64, before, after schema.Row) schema.Record {
		return schema.Record{Op: op, Table: tab.ID, KeySchema: ks, Key: schema.Row{id}, ValueSchema: vs,
			Before: before, After: after, Source: testSource,
			Transaction: &schema.Transaction{ID: "0-1-42", TotalOrder: id + 1, DataCollectionOrder: id + 1},
			TsMs:        1700000000123}
	}
	for i, v := range tc.values {
		id := int64(i + 1)
		recs = append(recs, mk(schema.OpCreate, id, nil, schema.Row{id, v}))
	}
	recs = append(recs,
		mk(schema.OpUpdate, 1, schema.Row{int64(1), tc.values[0]}, schema.Row{int64(1), nil}),
		mk(schema.OpDelete, 1, schema.Row{int64(1), nil}, nil),
	)
	r := mk(schema.OpRead, 9, nil, schema.Row{int64(9), tc.values[len(tc.values)-1]})
	r.Source.Snapshot, r.Source.GTID, r.Transaction = "last", "", nil
	recs = append(recs, r)
	return recs
}

// structuredChange is a schema change with table and column changes, as
// the binlog source gives them.
func structuredChange() *schema.SchemaChange {
	dec := schema.DecimalSchema(3, 1, true)
	dec.Params[schema.ParamSourceType] = "decimal(3,1)"
	id := schema.Primitive(schema.Int32, false)
	id.Params = map[string]string{schema.ParamSourceType: "int"}
	d := schema.ColumnDef{Name: "d", Type: dec, SourceType: "decimal(3,1)", Default: &schema.Default{Value: "1.5"}}
	return &schema.SchemaChange{DDL: "ALTER TABLE t RENAME COLUMN a TO b, ADD COLUMN d DECIMAL(3,1) DEFAULT 1.5", Kind: "ALTER",
		Tables: []schema.TableChange{{Kind: schema.AlterTable, Table: schema.TableID{Database: "db", Table: "t"},
			Columns: []schema.ColumnChange{{Kind: schema.RenameColumn, Name: "a", NewName: "b"}, {Kind: schema.AddColumn, Name: "d", Column: &d}},
			Shape: &schema.TableShape{PrimaryKey: []string{"id"}, Columns: []schema.ColumnDef{
				{Name: "id", Type: id, SourceType: "int", AutoIncrement: true}, d}}}}}
}
