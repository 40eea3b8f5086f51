package sink

import (
	"context"
	"strconv"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// TestEnumErrorValue: a source in a non-strict sql_mode stores an invalid
// ENUM value as the error value, read as ” (issue 12, found 8). The
// default config lands it exactly on both targets, in a table the sink
// creates and in one created before with the source's own enum(…) type
// (auto_evolve gives it the ” label), and on_error: skip loses no row.
func TestEnumErrorValue(t *testing.T) {
	enum := lg(schema.String, schema.Enum, schema.ParamAllowed, "a,b c", schema.ParamSourceType, "enum('a','b c')")
	val := structOf(schema.Field{Name: "id", Schema: schema.Primitive(schema.Int64, false)}, schema.Field{Name: "e", Schema: enum})
	rows := func(table string) []schema.Record {
		var out []schema.Record
		for i, v := range []any{"a", "", "b c", nil, ""} {
			out = append(out, insertInto(table, val, int64(i+1), v))
		}
		return out
	}
	want := "1=a 2= 3=b c 4=<nil> 5="
	forEachTarget(t, func(t *testing.T, e *tenv) {
		read := func(table string) string {
			rs, err := e.db.Query("SELECT id, e FROM " + e.table(table) + " ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Close()
			got := ""
			for rs.Next() {
				var id int64
				var v *string
				if err := rs.Scan(&id, &v); err != nil {
					t.Fatal(err)
				}
				s := "<nil>"
				if v != nil {
					s = *v
				}
				if got != "" {
					got += " "
				}
				got += strconv.FormatInt(id, 10) + "=" + s
			}
			return got
		}
		ctx := context.Background()
		s := e.open(t, nil)
		if err := s.Write(ctx, rows("made")); err != nil {
			t.Fatalf("default config: %v", err)
		}
		if got := read("made"); got != want {
			t.Errorf("table the sink made: %s, want %s", got, want)
		}
		if e.dialect == DialectMySQL {
			if _, err := e.db.Exec("CREATE TABLE " + e.table("before") + " (id BIGINT NOT NULL PRIMARY KEY, e enum('a','b c'))"); err != nil {
				t.Fatal(err)
			}
			if err := s.Write(ctx, rows("before")); err != nil {
				t.Fatalf("table made before with the source's type: %v", err)
			}
			if got := read("before"); got != want {
				t.Errorf("table made before: %s, want %s", got, want)
			}
			if typ := e.columnType(t, "before", "e"); typ != "enum('','a','b c')" {
				t.Errorf("column made before is %s, want enum('','a','b c')", typ)
			}
		}
		if e.dialect == DialectPostgres {
			// enum_check's CHECK admits the error value too.
			if err := e.open(t, func(c *Config) { c.EnumCheck = true }).Write(ctx, rows("checked")); err != nil {
				t.Fatalf("enum_check: %v", err)
			}
			if got := read("checked"); got != want {
				t.Errorf("enum_check: %s, want %s", got, want)
			}
		}
		skip := e.open(t, func(c *Config) { c.OnError = OnErrorSkip })
		if err := skip.Write(ctx, rows("skipped")); err != nil {
			t.Fatalf("on_error skip: %v", err)
		}
		if got := read("skipped"); got != want {
			t.Errorf("on_error skip: %s, want %s (rows lost)", got, want)
		}
	})
}
