package sink

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// TestAddedColumnsReadTheDefault (d10, #28 item 7): a column added to a
// table with rows gives those rows what the source reads there, under
// schema_changes apply (from the schema change) and ignore (AutoEvolve,
// from the first record that has the column): the DEFAULT, or for NOT
// NULL without one the implicit value (0, ”, an ENUM's first label). A
// generated column of integer arithmetic is computed in older rows under
// both (under ignore once AutoEvolve adds it); another stays NULL there,
// with a warning.
func TestAddedColumnsReadTheDefault(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		intCol := func(optional bool) *schema.Schema {
			return withParams(schema.Primitive(schema.Int32, optional), schema.ParamSourceType, "int")
		}
		enumCol := withParams(&schema.Schema{Type: schema.String, Logical: schema.Enum}, schema.ParamSourceType, "enum('p','q')", schema.ParamAllowed, "p,q")
		strCol := func(optional bool) *schema.Schema {
			return withParams(&schema.Schema{Type: schema.String, Optional: optional}, schema.ParamSourceType, "varchar(5)", schema.ParamLength, "5", schema.ParamCharset, "utf8mb4")
		}
		read := func(table, cols string) string {
			q := fmt.Sprintf("SELECT %s FROM %s WHERE id = 1", cols, e.table(table))
			got, err := e.db.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			names, _ := got.Columns()
			vals := make([]any, len(names))
			for i := range vals {
				vals[i] = new(*string)
			}
			if !got.Next() {
				t.Fatalf("%s: no row 1", table)
			}
			if err := got.Scan(vals...); err != nil {
				t.Fatal(err)
			}
			out := ""
			for i, v := range vals {
				p := *(v.(**string))
				s := "NULL"
				if p != nil {
					s = "'" + *p + "'"
				}
				out += names[i] + "=" + s + " "
			}
			return out
		}
		cols := "k2, en, s, d, f"
		if e.dialect == DialectPostgres {
			cols = "k2::text, en, s, d::text, f::text"
		}
		want := "k2='0' en='p' s='' d='7' f=NULL "
		t.Run("apply", func(t *testing.T) {
			s, logs := e.openCaptured(t, func(c *Config) { c.SchemaChanges = SchemaChangesApply })
			write(t, s, at(cIns("ap", 1, "a"), 1))
			add := func(name string, typ *schema.Schema, def *schema.Default, generated bool) schema.ColumnChange {
				return schema.ColumnChange{Kind: schema.AddColumn, Name: name, Column: &schema.ColumnDef{Name: name, Type: typ, SourceType: typ.Param(schema.ParamSourceType), Default: def, Generated: generated}}
			}
			gen := func(name, expr string) schema.ColumnChange {
				c := add(name, intCol(true), nil, true)
				c.Column.Expression = expr
				return c
			}
			write(t, s, ddlRec("src", "ALTER TABLE ap ADD …", 2, alter("ap",
				add("k2", intCol(false), nil, false),                       // NOT NULL: 0
				add("en", enumCol, nil, false),                             // ENUM NOT NULL: the first label
				add("s", strCol(false), nil, false),                        // NOT NULL: ''
				add("d", intCol(true), &schema.Default{Value: "7"}, false), // DEFAULT 7
				gen("f", "(`id` + 1) * 2 - `id`"),                          // generated, integer arithmetic: computed in older rows
				gen("g", "length(`v`)"),                                    // generated, a function: not computed
				add("t2", withParams(&schema.Schema{Type: schema.String}, schema.ParamSourceType, "text"), nil, false), // TEXT NOT NULL: '' (MySQL: as an expression)
			)))
			wantAp := strings.Replace(want, "f=NULL", "f='3'", 1) + "g=NULL t2='' "
			if got := read("ap", cols+", g, t2"); got != wantAp {
				t.Errorf("row 1 reads %s, want %s", got, wantAp)
			}
			if w := logs.find(slog.LevelWarn, "generated column added as a plain column"); len(w) != 1 || w[0].attrs["column"] != "g" {
				t.Errorf("warnings about the generated column: %+v", w)
			}
		})
		t.Run("ignore", func(t *testing.T) {
			s, logs := e.openCaptured(t, nil)
			v1 := structOf(schema.Field{Name: "id", Schema: schema.Primitive(schema.Int64, false)})
			write(t, s, insertInto("ig", v1, int64(1)))
			gen := schema.ColumnChange{Kind: schema.AddColumn, Name: "f", Column: &schema.ColumnDef{Name: "f", Type: intCol(true), Generated: true}}
			// integer arithmetic: computed in older rows once AutoEvolve adds it
			genH := schema.ColumnChange{Kind: schema.AddColumn, Name: "h", Column: &schema.ColumnDef{Name: "h", Type: intCol(true), Generated: true, Expression: "(`id` + 1) * 2 - `id`"}}
			write(t, s, ddlRec("src", "ALTER TABLE ig ADD f …, ADD h …", 2, alter("ig", gen, genH)))
			if w := logs.find(slog.LevelWarn, "generated column added as a plain column"); len(w) != 1 || w[0].attrs["column"] != "f" {
				t.Errorf("warnings about the generated column: %+v", w)
			}
			withDefault := func(s *schema.Schema, v any) *schema.Schema {
				c := *s
				c.Default = v
				return &c
			}
			v2 := structOf(v1.Fields[0],
				schema.Field{Name: "k2", Schema: intCol(false)},
				schema.Field{Name: "en", Schema: enumCol},
				schema.Field{Name: "s", Schema: strCol(false)},
				schema.Field{Name: "d", Schema: withDefault(intCol(true), int32(7))},
				schema.Field{Name: "f", Schema: intCol(true)},
				schema.Field{Name: "h", Schema: intCol(true)},
				// MySQL takes a TEXT default only as an expression
				schema.Field{Name: "tx", Schema: withDefault(withParams(&schema.Schema{Type: schema.String, Optional: true}, schema.ParamSourceType, "text"), "t")},
				// a default PostgreSQL and MySQL refuse (MariaDB's JSON is
				// text that takes it): added without it, with a warning
				schema.Field{Name: "jx", Schema: withDefault(&schema.Schema{Type: schema.String, Logical: schema.Json, Optional: true}, "not json")})
			write(t, s, insertInto("ig", v2, int64(2), int32(5), "q", "x", int32(8), int32(9), int32(4), "u", `{"a":1}`))
			wantJx, refused := "jx=NULL ", 1
			if e.flavor == "mariadb" {
				wantJx, refused = "jx='not json' ", 0
			}
			if w := logs.find(slog.LevelWarn, "column added without the default"); len(w) != refused || refused == 1 && w[0].attrs["column"] != "jx" {
				t.Errorf("warnings about the refused default: %+v", w)
			}
			jx, h := "jx", "h"
			if e.dialect == DialectPostgres {
				jx, h = "jx::text", "h::text"
			}
			if got, want := read("ig", cols+", "+h+", tx, "+jx), want+"h='3' tx='t' "+wantJx; got != want {
				t.Errorf("row 1 reads %s, want %s", got, want)
			}
		})
	})
}
