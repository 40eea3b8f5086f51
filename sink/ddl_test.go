package sink

import (
	"testing"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/mysql"
	"github.com/sluicecdc/sluice/sink/postgres"
)

// TestDefaultLiteral: defaults are rendered by the sink from structure,
// never copied from the source's SQL: numbers only when they are numbers,
// text quoted for each dialect, expressions only CURRENT_TIMESTAMP.
func TestDefaultLiteral(t *testing.T) {
	dec := schema.DecimalSchema(3, 1, true)
	str := schema.Primitive(schema.String, true)
	ts := &schema.Schema{Type: schema.Int64, Logical: schema.Timestamp, Optional: true}
	bin := schema.Primitive(schema.Bytes, true)
	ts0 := &schema.Schema{Type: schema.Int64, Logical: schema.ZonedTimestamp, Params: map[string]string{schema.ParamSourceType: "timestamp"}}
	for _, tc := range []struct {
		typ       *schema.Schema
		def       *schema.Default
		pg, mysql string // "-" = none
	}{
		{dec, &schema.Default{Value: "1.5"}, "1.5", "1.5"},
		{dec, &schema.Default{Value: "1.5); DROP TABLE x; --"}, "-", "-"},
		{schema.Primitive(schema.Int32, true), &schema.Default{Value: "-3"}, "-3", "-3"},
		{str, &schema.Default{Value: `it's \ here`}, `'it''s \ here'`, `'it''s \\ here'`},
		{str, &schema.Default{Value: "a\x00b"}, "-", "-"},
		{ts, &schema.Default{Value: "CURRENT_TIMESTAMP(3)", Expr: true}, "CURRENT_TIMESTAMP", "CURRENT_TIMESTAMP(6)"},
		{ts0, &schema.Default{Value: "current_timestamp()", Expr: true}, "CURRENT_TIMESTAMP", "CURRENT_TIMESTAMP"}, // MySQL: the column's precision
		{ts, &schema.Default{Value: "2024-01-02 03:04:05"}, "'2024-01-02 03:04:05'", "'2024-01-02 03:04:05'"},
		{ts, &schema.Default{Value: "0000-00-00 00:00:00"}, "-", "-"},
		{str, &schema.Default{Value: "uuid()", Expr: true}, "-", "-"},
		{bin, &schema.Default{Value: "x"}, "-", "-"},
		{str, nil, "-", "-"},
	} {
		for _, d := range []struct {
			s    *catalog
			want string
		}{{newCatalog(backend{d: postgres.Dialect{}}), tc.pg}, {newCatalog(backend{d: mysql.Dialect{}}), tc.mysql}} {
			typ, err := d.s.d.ColumnType("c", tc.typ, false)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := d.s.defaultLiteral(schema.ColumnDef{Name: "c", Type: tc.typ, Default: tc.def}, typ)
			if !ok {
				got = "-"
			}
			if got != d.want {
				t.Errorf("%T %v %+v: %s, want %s", d.s.d, tc.typ, tc.def, got, d.want)
			}
		}
	}
}

// TestPortableExpr: a generated column's expression is computed on the
// target only when it is integer arithmetic on the table's integer
// columns, written again with the target's quoting.
func TestPortableExpr(t *testing.T) {
	tt := &targetTable{cols: map[string]colInfo{"a": {Type: "int"}, "id": {Type: "bigint"}, "v": {Type: "varchar(10)"}}}
	for _, tc := range []struct {
		expr, mysql, pg string // "-" = refused
	}{
		{"`a`+1", "`a`+1", `"a"+1`},
		{"(`id` + 1) * 2 - `a`", "(`id`+1)*2-`a`", `("id"+1)*2-"a"`},
		{"a-id", "`a`-`id`", `"a"-"id"`},
		{"`a`/2", "-", "-"},
		{"`a`+1.5", "-", "-"},
		{"length(`v`)", "-", "-"},
		{"`v`+1", "-", "-"},
		{"`x`+1", "-", "-"},
		{"`a`+'1'", "-", "-"},
		{"`a` + 1e3", "-", "-"},
		{"", "-", "-"},
	} {
		for _, d := range []struct {
			s    *catalog
			want string
		}{{newCatalog(backend{d: mysql.Dialect{}}), tc.mysql}, {newCatalog(backend{d: postgres.Dialect{}}), tc.pg}} {
			got, ok := d.s.portableExpr(tc.expr, tt)
			if !ok {
				got = "-"
			}
			if got != d.want {
				t.Errorf("%T %q: %q, want %q", d.s.d, tc.expr, got, d.want)
			}
		}
	}
}
