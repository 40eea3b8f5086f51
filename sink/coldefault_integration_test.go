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

// TestCreatedTableKeepsTheDefaults: a table AutoCreate makes from a record
// of a newer schema (its queue was applied first) has the columns'
// defaults, so that a row reaching it later with an older schema, which
// lacks the columns added since, reads there what it reads on the source.
// Under load the integration test TestDDLUnderIgnore saw rows 1 and 2 keep
// NULL where the source has the added column's DEFAULT 1.5, when row 3's
// queue created the table.
func TestCreatedTableKeepsTheDefaults(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s, logs := e.openCaptured(t, nil)
		withDefault := func(s *schema.Schema, v any) *schema.Schema {
			c := *s
			c.Default = v
			return &c
		}
		dec := withParams(schema.DecimalSchema(3, 1, true), schema.ParamSourceType, "decimal(3,1)")
		id := schema.Field{Name: "id", Schema: schema.Primitive(schema.Int64, false)}
		fields := []schema.Field{id,
			{Name: "d", Schema: withDefault(dec, schema.MustDec("1.5"))},
			{Name: "n", Schema: withDefault(schema.Primitive(schema.Int32, true), int32(7))},
			{Name: "tx", Schema: withDefault(withParams(&schema.Schema{Type: schema.String, Optional: true}, schema.ParamSourceType, "text"), "t")}}
		row := []any{int64(3), schema.MustDec("2.5"), int32(8), "u"}
		pg := e.dialect == DialectPostgres
		if pg {
			// a default PostgreSQL refuses at CREATE TABLE: that column
			// alone goes without, with a warning (MySQL and MariaDB take
			// it there and refuse the rows that would read it, as their
			// sources would refuse the default)
			fields = append(fields, schema.Field{Name: "jx", Schema: withDefault(&schema.Schema{Type: schema.String, Logical: schema.Json, Optional: true}, "not json")})
			row = append(row, `{"a":1}`)
		}
		write(t, s, insertInto("cd", structOf(fields...), row...))
		older := structOf(id)
		write(t, s, insertInto("cd", older, int64(1)))
		d, jx := "d", "NULL"
		if pg {
			d, jx = "d::text", "jx::text"
		}
		var gotD, gotN, gotTx, gotJx *string
		q := fmt.Sprintf("SELECT %s, n, tx, %s FROM %s WHERE id = 1", d, jx, e.table("cd"))
		if err := e.db.QueryRow(q).Scan(&gotD, &gotN, &gotTx, &gotJx); err != nil {
			t.Fatal(err)
		}
		str := func(p *string) string {
			if p == nil {
				return "NULL"
			}
			return *p
		}
		got := str(gotD) + " " + str(gotN) + " " + str(gotTx) + " " + str(gotJx)
		want, warned := "1.5 7 t NULL", 0
		if pg {
			warned = 1
		}
		if got != want {
			t.Errorf("the older row reads d, n, tx, jx = %s, want %s", got, want)
		}
		if w := logs.find(slog.LevelWarn, "column created without the default"); len(w) != warned || warned == 1 && w[0].attrs["column"] != "jx" {
			t.Errorf("warnings about refused defaults: %+v", w)
		}
		// n widened to BIGINT (on MySQL, MODIFY COLUMN restates its
		// numeric default): an older row still reads the default.
		wide := structOf(id, schema.Field{Name: "n", Schema: withDefault(withParams(schema.Primitive(schema.Int64, true), schema.ParamSourceType, "bigint"), int64(7))})
		write(t, s, insertInto("cd", wide, int64(4), int64(1)<<40))
		write(t, s, insertInto("cd", older, int64(2)))
		if got := e.readText(t, "cd", "n", 4); got.String != fmt.Sprint(int64(1)<<40) {
			t.Errorf("n of row 4 reads %q: not widened", got.String)
		}
		if got := e.readText(t, "cd", "n", 2); got.String != "7" {
			t.Errorf("n of the older row 2 reads %q after widening, want the default 7", got.String)
		}
	})
}
