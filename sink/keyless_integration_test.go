package sink

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

func keyless(r schema.Record) schema.Record {
	r.KeySchema, r.Key = nil, nil
	return r
}

func TestWriteKeylessModes(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		// fail: an update names the table and the option.
		s := e.open(t, func(c *Config) { c.KeylessMode = KeylessFail })
		write(t, s, keyless(cIns("kl", 1, "a")))
		err := s.Write(context.Background(), []schema.Record{keyless(cIns("kl", 2, "b")), keyless(cUpd("kl", 1, 1, "a", "a2"))})
		if !errors.Is(err, ErrSchema) || !isFatal(err) || !strings.Contains(err.Error(), "kl") || !strings.Contains(err.Error(), "keyless_mode") {
			t.Fatalf("keyless update: %v, want a fatal ErrSchema naming the table and keyless_mode", err)
		}
		// OnError skip does not turn that into a skipped row.
		s2 := e.open(t, func(c *Config) { c.OnError = OnErrorSkip; c.KeylessMode = KeylessFail })
		if err := s2.Write(context.Background(), []schema.Record{keyless(cDel("kl", 1))}); !errors.Is(err, ErrSchema) {
			t.Fatalf("keyless delete with OnError skip: %v, want ErrSchema", err)
		}
		// append: inserts appended, updates and deletes skipped, the rest
		// of the batch applied.
		a := e.open(t, func(c *Config) { c.KeylessMode = KeylessAppend })
		write(t, a, keyless(cIns("kl", 2, "b")), keyless(cUpd("kl", 1, 1, "a", "a2")), keyless(cDel("kl", 1)), keyless(cIns("kl", 2, "b")), cIns("keyed", 1, "x"))
		var n, ones, twos int
		if err := e.db.QueryRow("SELECT count(*), sum(CASE WHEN id = 1 THEN 1 ELSE 0 END), sum(CASE WHEN id = 2 THEN 1 ELSE 0 END) FROM "+e.table("kl")).Scan(&n, &ones, &twos); err != nil {
			t.Fatal(err)
		}
		if n != 3 || ones != 1 || twos != 2 {
			t.Fatalf("kl has %d rows (%d of id 1, %d of id 2), want 3: 1 untouched, 2 appended", n, ones, twos)
		}
		wantRows(t, e, "keyed", map[int64]string{1: "x"})
		if _, err := New(context.Background(), Config{Dialect: e.dialect, DSN: e.cfg.DSN, Pipeline: "p", KeylessMode: "upsert"}, nil); !errors.Is(err, ErrConfig) {
			t.Fatalf("bad KeylessMode: %v, want ErrConfig", err)
		}
	})
}

// klValue is a table without key whose rows differ only in ways a loose
// comparison misses: letter case and trailing spaces (MySQL collations),
// JSON numbers' scale (PostgreSQL jsonb equality), NULLs, a float, bytes
// ending in 0x00, and exact duplicates.
var klValue = &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
	{Name: "n", Schema: schema.Primitive(schema.Int64, true)},
	{Name: "s", Schema: schema.Primitive(schema.String, true)},
	{Name: "f", Schema: schema.Primitive(schema.Float32, true)},
	{Name: "b", Schema: schema.Primitive(schema.Bytes, true)},
	{Name: "j", Schema: &schema.Schema{Type: schema.String, Optional: true, Logical: schema.Json}},
}}

func klRow(n any, s any, j any) schema.Row {
	if n == nil {
		return schema.Row{nil, s, nil, nil, j}
	}
	return schema.Row{n, s, float32(1.1), []byte{1, 0}, j}
}

func klRec(op schema.Op, before, after schema.Row) schema.Record {
	return schema.Record{Op: op, Table: schema.TableID{Database: "src", Table: "klb"}, ValueSchema: klValue, Before: before, After: after}
}

// klRows reads the table as sorted "n|s|j" lines.
func (e *tenv) klRows(t *testing.T) []string {
	t.Helper()
	q := "SELECT COALESCE(CAST(n AS CHAR), 'NULL'), COALESCE(s, 'NULL'), COALESCE(CAST(j AS CHAR), 'NULL') FROM " + e.table("klb")
	if e.dialect == DialectPostgres {
		q = "SELECT COALESCE(n::text, 'NULL'), COALESCE(s, 'NULL'), COALESCE(j::text, 'NULL') FROM " + e.table("klb")
	}
	rs, err := e.db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var n, s, j string
		if err := rs.Scan(&n, &s, &j); err != nil {
			t.Fatal(err)
		}
		out = append(out, n+"|"+s+"|"+j)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestWriteKeylessBeforeImage: by default an update or delete of a table
// without key changes exactly one row equal to its before image in every
// column, in source order, also where rows differ only by case, trailing
// space, a JSON number's scale or NULLs, and among exact duplicates.
func TestWriteKeylessBeforeImage(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		if e.flavor == "mysql" {
			// MySQL's binary JSON compares by value, so the sink refuses a
			// JSON column in a table without key there
			// (TestWriteKeylessRefusedColumn); the column as text keeps
			// the rest of this test.
			if _, err := e.db.Exec("CREATE TABLE " + e.table("klb") + " (n BIGINT, s LONGTEXT, f FLOAT, b LONGBLOB, j LONGTEXT) DEFAULT CHARSET=utf8mb4"); err != nil {
				t.Fatal(err)
			}
		}
		s := e.open(t, nil)
		ins := func(r schema.Row) schema.Record { return klRec(schema.OpCreate, nil, r) }
		a, upA, sp, null := klRow(int64(1), "a", `{"x":1.0}`), klRow(int64(1), "A", `{"x":1.0}`), klRow(int64(1), "a ", `{"x":1.0}`), klRow(nil, nil, nil)
		scale := klRow(int64(1), "a", `{"x":1.00}`)
		dup := klRow(int64(0), "dup", nil)
		write(t, s, ins(a), ins(upA), ins(sp), ins(dup), ins(null), ins(null), ins(scale), ins(dup))
		// One batch: the ops in order, with a row inserted and changed in it.
		write(t, s,
			klRec(schema.OpUpdate, upA, klRow(int64(2), "B", `{"x":1.0}`)),
			klRec(schema.OpUpdate, sp, klRow(int64(3), "c", `{"x":1.0}`)),
			klRec(schema.OpDelete, dup, nil),
			klRec(schema.OpUpdate, null, klRow(int64(4), "was null", nil)),
			klRec(schema.OpUpdate, scale, klRow(int64(5), "scale", `{"x":1.00}`)),
			ins(klRow(int64(6), "new", nil)),
			klRec(schema.OpUpdate, klRow(int64(6), "new", nil), klRow(int64(7), "newer", nil)),
		)
		// One record a batch.
		write(t, s, klRec(schema.OpDelete, null, nil))
		write(t, s, klRec(schema.OpUpdate, klRow(int64(4), "was null", nil), klRow(int64(4), "again", nil)))
		got := e.klRows(t)
		j1, j100 := `{"x":1.0}`, `{"x":1.00}`
		if e.dialect == DialectPostgres {
			j1, j100 = `{"x": 1.0}`, `{"x": 1.00}` // jsonb's text form
		}
		want := []string{"0|dup|NULL", "1|a|" + j1, "2|B|" + j1, "3|c|" + j1, "4|again|NULL", "5|scale|" + j100, "7|newer|NULL"}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		// A delete whose row is not there changes nothing.
		write(t, s, klRec(schema.OpDelete, klRow(int64(9), "absent", nil), nil))
		if got := e.klRows(t); !slices.Equal(got, want) {
			t.Fatalf("after deleting an absent row:\n%s", strings.Join(got, "\n"))
		}
		// An update without its before image cannot find its row.
		err := s.Write(context.Background(), []schema.Record{klRec(schema.OpUpdate, nil, klRow(int64(8), "x", nil))})
		if !errors.Is(err, ErrSchema) || !isFatal(err) || !strings.Contains(err.Error(), "binlog_row_image") {
			t.Fatalf("update without before image: %v, want a fatal ErrSchema naming binlog_row_image", err)
		}
	})
}

// TestWriteKeylessRefusedColumn: a table without key with a column the
// target cannot compare exactly is refused at its first row (an insert),
// before anything of it is written, naming the table, the column and
// keyless_mode; keyless_mode: append takes it.
func TestWriteKeylessRefusedColumn(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		typ := "money" // PostgreSQL: its text form follows lc_monetary
		if e.dialect == DialectMySQL {
			typ = "geometry" // a spatial column compares by its internal form
		}
		if _, err := e.db.Exec("CREATE TABLE " + e.table("klr") + " (n BIGINT, m " + typ + ")"); err != nil {
			t.Fatal(err)
		}
		val := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
			{Name: "n", Schema: schema.Primitive(schema.Int64, true)},
			{Name: "m", Schema: schema.Primitive(schema.String, true)},
		}}
		r := schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "src", Table: "klr"}, ValueSchema: val, After: schema.Row{int64(1), nil}}
		s := e.open(t, func(c *Config) { c.AutoEvolve = false })
		err := s.Write(context.Background(), []schema.Record{r})
		if !errors.Is(err, ErrSchema) || !isFatal(err) {
			t.Fatalf("insert into a keyless table with a %s column: %v, want a fatal ErrSchema", typ, err)
		}
		for _, w := range []string{"klr", `m (` + typ, "keyless_mode"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not name %q", err, w)
			}
		}
		var n int
		if err := e.db.QueryRow("SELECT count(*) FROM " + e.table("klr")).Scan(&n); err != nil || n != 0 {
			t.Fatalf("klr has %d rows (%v), want none", n, err)
		}
		a := e.open(t, func(c *Config) { c.AutoEvolve = false; c.KeylessMode = KeylessAppend })
		write(t, a, r)
	})
}

// TestCheckShapesKeylessAtStart: CheckShapes, given the source's shapes at
// start, refuses a table without key whose target table has a column the
// target cannot compare exactly, with checkKeyless's fatal error, and
// passes a table with a key, a keyless table the sink would create, and
// keyless_mode append or fail. Nothing is created.
func TestCheckShapesKeylessAtStart(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		typ := "money"
		if e.dialect == DialectMySQL {
			typ = "geometry"
		}
		for _, n := range []string{"cs_bad", "cs_keyed"} {
			if _, err := e.db.Exec("CREATE TABLE " + e.table(n) + " (n BIGINT, m " + typ + ")"); err != nil {
				t.Fatal(err)
			}
		}
		cols := []schema.Column{{Name: "n", Schema: schema.Primitive(schema.Int64, true)}, {Name: "m", Schema: schema.Primitive(schema.String, true)}}
		shape := func(name string, key ...string) schema.Table {
			return schema.Table{ID: schema.TableID{Database: "src", Table: name}, Columns: cols, PrimaryKey: key}
		}
		shapes := []schema.Table{shape("cs_keyed", "n"), shape("cs_new"), shape("cs_bad")}
		s := e.open(t, nil)
		err := s.CheckShapes(context.Background(), shapes)
		if !errors.Is(err, ErrSchema) || !isFatal(err) {
			t.Fatalf("CheckShapes: %v, want a fatal ErrSchema", err)
		}
		for _, w := range []string{"cs_bad", "m (" + typ, "keyless_mode: append", "fail"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not name %q", err, w)
			}
		}
		for _, w := range []string{"cs_keyed", "cs_new"} {
			if strings.Contains(err.Error(), w) {
				t.Errorf("error %q names %s, which it can take", err, w)
			}
		}
		if err := s.CheckShapes(context.Background(), shapes[:2]); err != nil {
			t.Errorf("CheckShapes of a keyed table and a new one: %v", err)
		}
		var n int
		if err := e.db.QueryRow("SELECT count(*) FROM " + e.table("cs_new")).Scan(&n); err == nil {
			t.Errorf("CheckShapes created %s", e.table("cs_new"))
		}
		for _, mode := range []string{KeylessAppend, KeylessFail} {
			a := e.open(t, func(c *Config) { c.KeylessMode = mode })
			if err := a.CheckShapes(context.Background(), shapes); err != nil {
				t.Errorf("CheckShapes under keyless_mode %s: %v", mode, err)
			}
		}
	})
}
