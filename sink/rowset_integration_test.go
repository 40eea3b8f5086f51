package sink

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// The merge of updates keeps no state on a connection (no staging table,
// no prepared statement): these tests pin that it lands exactly what the
// source holds when the table's shape changes between merges, when a
// column changes behind the sink's cached metadata, and after the pool's
// connections die. On PostgreSQL the merges go through the rowset path
// (CopyThreshold 1, every group merged by json_populate_recordset; the
// tests check the path was taken); on MySQL through multi-row upserts.

// upsertRec is an update (an upsert) of table with the given columns and row.
func upsertRec(table string, cols []string, row ...any) schema.Record {
	fields := make([]schema.Field, len(cols))
	for i, c := range cols {
		s := schema.Primitive(schema.String, true)
		switch row[i].(type) {
		case int64:
			s = schema.Primitive(schema.Int64, i != 0)
		case schema.Dec:
			s = schema.DecimalSchema(10, 4, true)
		}
		fields[i] = schema.Field{Name: c, Schema: s}
	}
	return schema.Record{Op: schema.OpUpdate, Table: src(table), KeySchema: tKey, Key: schema.Row{row[0]},
		ValueSchema: &schema.Schema{Type: schema.Struct, Fields: fields}, After: schema.Row(row)}
}

// table reads rows of table as id -> the listed columns' text (NULL as "-").
func (e *tenv) tableText(t *testing.T, table string, cols ...string) map[int64]string {
	t.Helper()
	expr := "''"
	for _, c := range cols {
		cast := "CAST(" + e.quote(c) + " AS CHAR)"
		if e.dialect == DialectPostgres {
			cast = e.quote(c) + "::text"
		}
		expr = "CONCAT(" + expr + ", '|', COALESCE(" + cast + ", '-'))"
	}
	return e.idText(t, "SELECT id, "+expr+" FROM "+e.table(table))
}

// idText reads q's rows (id, text) as id -> text.
func (e *tenv) idText(t *testing.T, q string) map[int64]string {
	t.Helper()
	rows, err := e.db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var v string
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		out[id] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func wantText(t *testing.T, e *tenv, table string, want map[int64]string, cols ...string) {
	t.Helper()
	if got := e.tableText(t, table, cols...); !maps.Equal(got, want) {
		t.Fatalf("%s: got %v, want %v", table, got, want)
	}
}

// wantRowset checks that s merged through the rowset path since before
// (PostgreSQL), and returns the new count.
func wantRowset(t *testing.T, e *tenv, s *Sink, before int64) int64 {
	t.Helper()
	n := s.applier.rowsetMerges.Load()
	if e.dialect == DialectPostgres && n <= before {
		t.Fatalf("no rowset merge ran (%d statements before, %d after)", before, n)
	}
	return n
}

func TestMergeAcrossSchemaChanges(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, func(c *Config) { c.SchemaChanges, c.CopyThreshold = SchemaChangesApply, 1 })
		off := int64(0)
		next := func(r schema.Record) schema.Record { off++; return at(r, off) }
		var n int64
		// One Sink, one table, several shapes; each batch merges over rows
		// of the shape before.
		b := []schema.Record{}
		for id := int64(1); id <= 4; id++ {
			b = append(b, next(upsertRec("sh", []string{"id", "v", "extra"}, id, fmt.Sprint("v", id), fmt.Sprint("e", id))))
		}
		write(t, s, b...)
		n = wantRowset(t, e, s, n)
		write(t, s, next(upsertRec("sh", []string{"id", "v", "extra"}, int64(1), "v1b", "e1b")), next(upsertRec("sh", []string{"id", "v", "extra"}, int64(5), "v5", "e5")))
		n = wantRowset(t, e, s, n)
		wantText(t, e, "sh", map[int64]string{1: "|v1b|e1b", 2: "|v2|e2", 3: "|v3|e3", 4: "|v4|e4", 5: "|v5|e5"}, "v", "extra")

		// DROP, RENAME and ADD in one ALTER, then merges of the new shape
		// in the same batch and the next.
		dec := schema.DecimalSchema(10, 4, false)
		dec.Params[schema.ParamSourceType] = "decimal(10,4)"
		write(t, s,
			next(upsertRec("sh", []string{"id", "v", "extra"}, int64(2), "v2b", "e2b")),
			ddlRecAt("ALTER TABLE sh DROP COLUMN extra, RENAME COLUMN v TO w, ADD COLUMN d DECIMAL(10,4) NOT NULL DEFAULT 1.5", &off,
				alter("sh", schema.ColumnChange{Kind: schema.DropColumn, Name: "extra"},
					schema.ColumnChange{Kind: schema.RenameColumn, Name: "v", NewName: "w"},
					schema.ColumnChange{Kind: schema.AddColumn, Name: "d", Column: &schema.ColumnDef{Name: "d", Type: dec, Default: &schema.Default{Value: "1.5"}}})),
			next(upsertRec("sh", []string{"id", "w", "d"}, int64(3), "w3", schema.MustDec("3.1234"))),
			next(upsertRec("sh", []string{"id", "w", "d"}, int64(4), "w4", schema.MustDec("-4.0001"))),
		)
		n = wantRowset(t, e, s, n)
		if cols := e.columns(t, "sh"); !maps.Equal(cols, map[string]bool{"id": true, "w": true, "d": true}) {
			t.Fatalf("columns %v, want id, w, d", cols)
		}
		write(t, s, next(upsertRec("sh", []string{"id", "w", "d"}, int64(1), "w1", schema.MustDec("0.0001"))), next(upsertRec("sh", []string{"id", "w", "d"}, int64(6), "w6", schema.MustDec("6.5"))))
		n = wantRowset(t, e, s, n)
		wantText(t, e, "sh", map[int64]string{1: "|w1|0.0001", 2: "|v2b|1.5000", 3: "|w3|3.1234", 4: "|w4|-4.0001", 5: "|v5|1.5000", 6: "|w6|6.5000"}, "w", "d")

		// Renamed back and forth: the old name's column again, and the
		// merge writes into it, not into the one of the shape before.
		write(t, s,
			ddlRecAt("ALTER TABLE sh RENAME COLUMN w TO v", &off, alter("sh", schema.ColumnChange{Kind: schema.RenameColumn, Name: "w", NewName: "v"})),
			next(upsertRec("sh", []string{"id", "v", "d"}, int64(2), "v2c", schema.MustDec("2.2"))),
			next(upsertRec("sh", []string{"id", "v", "d"}, int64(7), "v7", schema.MustDec("7"))),
		)
		wantRowset(t, e, s, n)
		wantText(t, e, "sh", map[int64]string{1: "|w1|0.0001", 2: "|v2c|2.2000", 3: "|w3|3.1234", 4: "|w4|-4.0001", 5: "|v5|1.5000", 6: "|w6|6.5000", 7: "|v7|7.0000"}, "v", "d")
	})
}

// ddlRecAt is ddlRec at the next offset of *off.
func ddlRecAt(q string, off *int64, changes ...schema.TableChange) schema.Record {
	*off++
	r := ddlRec("src", q, *off, changes...)
	r.Delivery, r.ID = deliveredAt("ddl", 0, *off)
	return r
}

// AutoEvolve adds a column a record carries and widens one between merges:
// the merges after it write the new column and the wider values exactly.
func TestMergeAfterAutoEvolve(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, func(c *Config) { c.AutoEvolve, c.CopyThreshold = true, 1 })
		narrow := schema.DecimalSchema(5, 2, true)
		wide := schema.DecimalSchema(12, 6, true)
		mk := func(id int64, d *schema.Schema, v string, extra any) schema.Record {
			r := upsertRec("ev", []string{"id", "v"}, id, "x")
			r.ValueSchema = &schema.Schema{Type: schema.Struct, Fields: []schema.Field{r.ValueSchema.Fields[0], {Name: "d", Schema: d}}}
			r.After = schema.Row{id, schema.MustDec(v)}
			if extra != nil {
				r.ValueSchema.Fields = append(r.ValueSchema.Fields, schema.Field{Name: "n", Schema: schema.Primitive(schema.Int64, true)})
				r.After = append(r.After, extra)
			}
			return r
		}
		var n int64
		write(t, s, mk(1, narrow, "1.25", nil), mk(2, narrow, "2.50", nil))
		n = wantRowset(t, e, s, n)
		// Wider decimal and a new column in one batch.
		write(t, s, mk(1, wide, "123456.123456", int64(10)), mk(3, wide, "-0.000001", int64(30)))
		n = wantRowset(t, e, s, n)
		write(t, s, mk(2, wide, "2.000001", int64(20)), mk(4, wide, "4", nil))
		wantRowset(t, e, s, n)
		wantText(t, e, "ev", map[int64]string{1: "|123456.123456|10", 2: "|2.000001|20", 3: "|-0.000001|30", 4: "|4.000000|-"}, "d", "n")
	})
}

// A column altered behind the sink (by hand, while it runs) is written by
// the live table's type, not the sink's cached picture of it: a text column
// turned jsonb gets JSON objects, not JSON strings (json_populate_recordset
// would copy a JSON string into it as a string).
func TestMergeColumnChangedBehindSink(t *testing.T) {
	e := pgEnv(t)
	s := e.open(t, func(c *Config) { c.CopyThreshold = 1 })
	row := func(id int64, d, doc string) schema.Record {
		return schema.Record{Op: schema.OpUpdate, Table: src("behind"), KeySchema: tKey, Key: schema.Row{id},
			ValueSchema: &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
				{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
				{Name: "d", Schema: schema.DecimalSchema(5, 2, true)},
				{Name: "doc", Schema: schema.Primitive(schema.String, true)}}},
			After: schema.Row{id, schema.MustDec(d), doc}}
	}
	write(t, s, row(1, "1.25", `"one"`), row(2, "2.50", `{"two": 2}`))
	wantRowset(t, e, s, 0)
	if _, err := e.db.Exec("ALTER TABLE " + e.table("behind") + " ALTER COLUMN doc TYPE jsonb USING doc::jsonb"); err != nil {
		t.Fatal(err)
	}
	write(t, s, row(1, "1.5", `{"a": [1, "x"]}`), row(3, "3", `[3]`))
	var kinds string
	if err := e.db.QueryRow("SELECT string_agg(id || ':' || jsonb_typeof(doc) || ':' || doc::text, ' ' ORDER BY id) FROM " + e.table("behind")).Scan(&kinds); err != nil {
		t.Fatal(err)
	}
	if want := `1:object:{"a": [1, "x"]} 2:object:{"two": 2} 3:array:[3]`; kinds != want {
		t.Fatalf("after doc became jsonb behind the sink: %s, want %s", kinds, want)
	}
	// The rows of both shapes, merged in one batch after the change, came
	// in through the retry with fresh metadata (the statement's catalog
	// look refused the stale picture), then through COPY into a staging
	// table shaped like the live table.
}

// After every connection of the pool died (a database restart, a proxy
// cutting idle connections), the next merges run on new connections and
// land exactly.
func TestMergeAfterReconnect(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		name := "sluice_reconnect_" + e.schema
		s := e.open(t, func(c *Config) {
			c.CopyThreshold = 1
			if e.dialect == DialectPostgres {
				sep := "?"
				if strings.Contains(c.DSN, "?") {
					sep = "&"
				}
				c.DSN += sep + "application_name=" + name
			}
		})
		ctx := context.Background()
		var n int64
		for round := 1; round <= 3; round++ {
			recs := []schema.Record{}
			for id := int64(1); id <= 5; id++ {
				recs = append(recs, upsertRec("rc", []string{"id", "v"}, id, fmt.Sprintf("r%d-%d", round, id)))
			}
			// The first Write after the kill may fail as retriable (the
			// runtime retries it); it must not fail for good, and must
			// apply everything once it succeeds.
			var err error
			for try := 0; try < 5; try++ {
				if err = s.Write(ctx, recs); err == nil || isFatal(err) {
					break
				}
			}
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			n = wantRowset(t, e, s, n)
			want := map[int64]string{}
			for id := int64(1); id <= 5; id++ {
				want[id] = fmt.Sprintf("|r%d-%d", round, id)
			}
			wantText(t, e, "rc", want, "v")
			if killed := e.killSinkConns(t, name); killed == 0 {
				t.Fatalf("round %d: no connection of the sink to kill", round)
			}
		}
	})
}

// killSinkConns ends the target's connections of the sink under test: on
// PostgreSQL those with application_name name, on MySQL those whose default
// database is the test's. It returns how many.
func (e *tenv) killSinkConns(t *testing.T, name string) int {
	t.Helper()
	var ids []int64
	var q string
	var arg any
	if e.dialect == DialectPostgres {
		q, arg = "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()", name
	} else {
		q, arg = "SELECT id FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID()", e.schema
	}
	rows, err := e.admin.Query(q, arg)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		var err error
		if e.dialect == DialectPostgres {
			_, err = e.admin.Exec("SELECT pg_terminate_backend($1)", id)
		} else {
			_, err = e.admin.Exec(fmt.Sprintf("KILL %d", id))
		}
		if err != nil && err != sql.ErrNoRows {
			t.Logf("kill %d: %v", id, err)
		}
	}
	return len(ids)
}

// A row the target refuses inside a rowset merge (a CHECK it breaks, bytes
// that are not UTF-8) fails the merge as COPY's would: fatal, naming
// its key, nothing applied; under on_error skip only that row is left out.
func TestMergeRowsetBadRow(t *testing.T) {
	e := pgEnv(t)
	if _, err := e.db.Exec("CREATE TABLE " + e.table("bad") + " (id BIGINT PRIMARY KEY, v TEXT CHECK (v <> 'refused'))"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"refused", "a\xffb"} {
		recs := []schema.Record{}
		for id := int64(1); id <= 20; id++ {
			v := "ok"
			if id == 13 {
				v = bad
			}
			recs = append(recs, upsertRec("bad", []string{"id", "v"}, id, v))
		}
		s := e.open(t, func(c *Config) { c.CopyThreshold = 1 })
		err := s.Write(context.Background(), recs)
		if err == nil || !strings.Contains(err.Error(), "id=13") || !isFatal(err) {
			t.Fatalf("%q: error %v; want a fatal error naming id=13", bad, err)
		}
		if s.applier.rowsetMerges.Load() != 0 {
			t.Fatalf("%q: a failed rowset merge counted", bad)
		}
		wantText(t, e, "bad", map[int64]string{}, "v")
		skip := e.open(t, func(c *Config) { c.CopyThreshold, c.OnError = 1, OnErrorSkip })
		write(t, skip, recs...)
		want := map[int64]string{}
		for id := int64(1); id <= 20; id++ {
			if id != 13 {
				want[id] = "|ok"
			}
		}
		wantText(t, e, "bad", want, "v")
		wantRowset(t, e, skip, 0)
		e.truncate(t, "bad")
	}
}

// Quotes, backslashes and other characters in the schema, table and column
// names reach the rowset statement's identifiers, its catalog look and its
// JSON keys intact.
func TestMergeRowsetHostileNames(t *testing.T) {
	e := pgEnv(t)
	name := e.schema + `_s"q'b\ 数`
	s := e.open(t, func(c *Config) { c.SchemaTemplate, c.CopyThreshold = name, 1 })
	t.Cleanup(func() { e.db.Exec("DROP SCHEMA " + e.quote(name) + " CASCADE") })
	table, col := `t'a"b\`, `c'o"l\ 数`
	mk := func(id int64, v string) schema.Record { return upsertRec(table, []string{"id", col}, id, v) }
	write(t, s, mk(1, "a"), mk(2, "b"))
	write(t, s, mk(2, `b'"\2`), mk(3, "c"))
	wantRowset(t, e, s, 0)
	got := e.idText(t, "SELECT id, "+e.quote(col)+" FROM "+e.quote(name)+"."+e.quote(table))
	if want := map[int64]string{1: "a", 2: `b'"\2`, 3: "c"}; !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A column the source does not have, of a domain that refuses NULL, takes
// its default: json_populate_recordset would run the missing value through
// the domain as NULL and fail, so the statement refuses the table and the
// sink merges it through COPY (in the same Write, and from then on).
func TestMergeRowsetRefusesDomainColumns(t *testing.T) {
	e := pgEnv(t)
	for _, q := range []string{
		"CREATE DOMAIN " + e.table("nn_int") + " AS INT NOT NULL",
		"CREATE TABLE " + e.table("dom") + " (id BIGINT PRIMARY KEY, v TEXT, extra " + e.table("nn_int") + " DEFAULT 7)",
	} {
		if _, err := e.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s := e.open(t, func(c *Config) { c.CopyThreshold = 1 })
	write(t, s, upsertRec("dom", []string{"id", "v"}, int64(1), "a"), upsertRec("dom", []string{"id", "v"}, int64(2), "b"))
	write(t, s, upsertRec("dom", []string{"id", "v"}, int64(2), "b2"), upsertRec("dom", []string{"id", "v"}, int64(3), "c"))
	wantText(t, e, "dom", map[int64]string{1: "|a|7", 2: "|b2|7", 3: "|c|7"}, "v", "extra")
	if n := s.applier.rowsetMerges.Load(); n != 0 {
		t.Fatalf("%d rowset merges into a table with a NOT NULL domain column outside the rows", n)
	}
	if !s.applier.noRowset[s.cfg.target(src("dom"))] {
		t.Fatal("the table is not marked for COPY merges")
	}
}
