package sink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// Composite keys (row-value IN deletes, ON CONFLICT on two columns), a key
// change in one of the key columns, and byte-string keys (bytea array on
// PostgreSQL) with non-UTF-8 bytes.
func TestWriteCompositeAndBinaryKeys(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		key := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
			{Name: "tenant", Schema: schema.Primitive(schema.String, false)},
			{Name: "bin", Schema: schema.Primitive(schema.Bytes, false)},
		}}
		val := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
			{Name: "tenant", Schema: schema.Primitive(schema.String, false)},
			{Name: "bin", Schema: schema.Primitive(schema.Bytes, false)},
			{Name: "v", Schema: schema.Primitive(schema.String, true)},
		}}
		id := schema.TableID{Database: "src", Table: "ck"}
		row := func(tenant string, bin []byte, v string) schema.Row { return schema.Row{tenant, bin, v} }
		up := func(before, after schema.Row) schema.Record {
			op := schema.OpUpdate
			if before == nil {
				op = schema.OpCreate
			}
			return schema.Record{Op: op, Table: id, KeySchema: key, Key: after[:2], ValueSchema: val, Before: before, After: after}
		}
		dl := func(before schema.Row) schema.Record {
			return schema.Record{Op: schema.OpDelete, Table: id, KeySchema: key, Key: before[:2], ValueSchema: val, Before: before}
		}
		var recs []schema.Record
		for i := 0; i < 50; i++ {
			recs = append(recs, up(nil, row(fmt.Sprintf("t%d", i%3), []byte{0xff, byte(i), 0x00}, "v")))
		}
		write(t, s, recs...)
		recs = recs[:0]
		for i := 0; i < 50; i += 5 {
			recs = append(recs, dl(row(fmt.Sprintf("t%d", i%3), []byte{0xff, byte(i), 0x00}, "v")))
		}
		// Key change in the second key column.
		recs = append(recs, up(row("t1", []byte{0xff, 1, 0}, "v"), row("t1", []byte{0xfe}, "moved")))
		write(t, s, recs...)
		// Delete-only batch of the single-column-key PostgreSQL path with bytes.
		rs, err := e.db.Query("SELECT tenant, bin, v FROM " + e.table("ck"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rs.Next() {
			var tn, v string
			var b []byte
			if err := rs.Scan(&tn, &b, &v); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%s/%x/%s", tn, b, v))
		}
		rs.Close()
		var want []string
		for i := 0; i < 50; i++ {
			if i%5 == 0 || i == 1 {
				continue
			}
			want = append(want, fmt.Sprintf("t%d/ff%02x00/v", i%3, i))
		}
		want = append(want, "t1/fe/moved")
		sort.Strings(got)
		sort.Strings(want)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("got  %v\nwant %v", got, want)
		}
	})
}

func TestWriteBytesKeyDelete(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		key := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{{Name: "k", Schema: schema.Primitive(schema.Bytes, false)}}}
		val := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{{Name: "k", Schema: schema.Primitive(schema.Bytes, false)}}}
		id := schema.TableID{Database: "src", Table: "bk"}
		keys := [][]byte{{0}, {0xff, 0xfe}, []byte(`a"b{},\`), {0x80}}
		var recs []schema.Record
		for _, k := range keys {
			recs = append(recs, schema.Record{Op: schema.OpCreate, Table: id, KeySchema: key, Key: schema.Row{k}, ValueSchema: val, After: schema.Row{k}})
		}
		write(t, s, recs...)
		recs = recs[:0]
		for _, k := range keys[:3] {
			recs = append(recs, schema.Record{Op: schema.OpDelete, Table: id, KeySchema: key, Key: schema.Row{k}, ValueSchema: val, Before: schema.Row{k}})
		}
		write(t, s, recs...)
		rs, err := e.db.Query("SELECT k FROM " + e.table("bk"))
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for rs.Next() {
			var k []byte
			if err := rs.Scan(&k); err != nil {
				t.Fatal(err)
			}
			left = append(left, fmt.Sprintf("%x", k))
		}
		rs.Close()
		if strings.Join(left, ",") != "80" {
			t.Fatalf("after delete: keys %v, want only 80", left)
		}
	})
}

func TestWriteKeylessTableInserts(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		r := cIns("nokey", 1, "a")
		r.KeySchema, r.Key = nil, nil
		write(t, s, r, r)
		var n int
		if err := e.db.QueryRow("SELECT count(*) FROM " + e.table("nokey")).Scan(&n); err != nil || n != 2 {
			t.Fatalf("%d rows, %v; want 2 appended rows", n, err)
		}
		// The default keyless_mode (before_image): a delete removes one of
		// the two equal rows.
		d := keyless(rec(schema.OpDelete, "nokey", schema.Row{int64(1), "a"}, nil))
		write(t, s, d)
		if err := e.db.QueryRow("SELECT count(*) FROM " + e.table("nokey")).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d rows, %v; want 1 left after deleting one of two equal rows", n, err)
		}
	})
}

// 200 columns × 500 rows would be 100,000 parameters: statements must be cut
// below 65,535.
func TestWriteManyColumns(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, func(c *Config) { c.CopyThreshold = -1 })
		fields := []schema.Field{{Name: "id", Schema: schema.Primitive(schema.Int64, false)}}
		for i := 1; i < 200; i++ {
			fields = append(fields, schema.Field{Name: fmt.Sprintf("c%03d", i), Schema: schema.Primitive(schema.Int32, true)})
		}
		val := &schema.Schema{Type: schema.Struct, Fields: fields}
		var recs []schema.Record
		for i := 0; i < 1000; i++ {
			row := schema.Row{int64(i)}
			for j := 1; j < 200; j++ {
				row = append(row, int64(i+j))
			}
			recs = append(recs, schema.Record{Op: schema.OpRead, Table: schema.TableID{Database: "src", Table: "wide"}, KeySchema: tKey, Key: schema.Row{int64(i)}, ValueSchema: val, After: row})
		}
		write(t, s, recs...)
		var n, sum int64
		if err := e.db.QueryRow("SELECT count(*), sum(c199) FROM "+e.table("wide")).Scan(&n, &sum); err != nil || n != 1000 || sum != 1000*199+999*1000/2 {
			t.Fatalf("count %d sum %d err %v", n, sum, err)
		}
	})
}

// Writes for several queues run concurrently, each with its own progress.
func TestWriteConcurrentQueues(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		const queues, rounds, per = 4, 10, 50
		var wg sync.WaitGroup
		errs := make(chan error, queues)
		for q := 0; q < queues; q++ {
			wg.Add(1)
			go func(q int) {
				defer wg.Done()
				for r := 0; r < rounds; r++ {
					var recs []schema.Record
					for i := 0; i < per; i++ {
						rc := cIns(fmt.Sprintf("cq%d", q%2), int64(q*1000+i), fmt.Sprintf("r%d", r))
						rc.Delivery, rc.ID = deliveredAt("cq", q, int64(r*per+i))
						recs = append(recs, rc)
					}
					if err := s.Write(context.Background(), recs); err != nil {
						errs <- err
						return
					}
				}
			}(q)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for q := 0; q < queues; q++ {
			if off, ok := e.progress(t, "cq", q); !ok || off != rounds*per-1 {
				t.Fatalf("queue %d progress %d %v", q, off, ok)
			}
		}
		for tb := 0; tb < 2; tb++ {
			rows := e.rows(t, fmt.Sprintf("cq%d", tb))
			if len(rows) != 2*per {
				t.Fatalf("cq%d has %d rows", tb, len(rows))
			}
			for id, v := range rows {
				if v != fmt.Sprintf("r%d", rounds-1) {
					t.Fatalf("cq%d id %d = %q", tb, id, v)
				}
			}
		}
	})
}

func TestWriteCancelledContextAppliesNothing(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		write(t, s, cIns("cx", 1, "a"))
		ctx, cancel := context.WithCancel(context.Background())
		s.testHook = func(context.Context, string, *sqlxTx) error { cancel(); return nil }
		err := s.Write(ctx, []schema.Record{cUpd("cx", 1, 1, "a", "b"), cIns("cx", 2, "c")})
		if err == nil {
			t.Fatal("Write with a cancelled context succeeded")
		}
		s.testHook = nil
		wantRows(t, e, "cx", map[int64]string{1: "a"})
		_ = sql.ErrNoRows
	})
}

// A column removed behind the sink's cached metadata is re-added by the
// same Write. A table dropped behind the sink after it wrote rows there is
// not recreated empty: writes to it fail (fatal, ErrTargetChanged) with
// what to do, in this Sink and in a new one (a restart), for inserts and
// for deletes alone, and go on once the table is back.
func TestWriteRecoversFromChangedTable(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		write(t, s, cIns("chg", 1, "a"))
		if _, err := e.db.Exec("ALTER TABLE " + e.table("chg") + " DROP COLUMN v"); err != nil {
			t.Fatal(err)
		}
		write(t, s, cIns("chg", 2, "b"))
		wantRows(t, e, "chg", map[int64]string{1: "<NULL>", 2: "b"})
		if _, err := e.db.Exec("DROP TABLE " + e.table("chg")); err != nil {
			t.Fatal(err)
		}
		refused := func(s *Sink, recs ...schema.Record) {
			t.Helper()
			err := s.Write(context.Background(), recs)
			if !errors.Is(err, ErrTargetChanged) || !isFatal(err) || !strings.Contains(err.Error(), "dropped behind the sink") || !strings.Contains(err.Error(), "Restore the table") {
				t.Fatalf("write after the table was dropped by hand: %v; want a fatal ErrTargetChanged saying what to do", err)
			}
			var n int
			q := "SELECT count(*) FROM information_schema.tables WHERE table_schema = '" + e.schema + "' AND table_name = 'chg'"
			if err := e.db.QueryRow(q).Scan(&n); err != nil || n != 0 {
				t.Fatalf("the dropped table was recreated (%d, %v)", n, err)
			}
		}
		refused(s, cIns("chg", 3, "c"))
		refused(s, cDel("chg", 1))
		refused(e.open(t, nil), cIns("chg", 3, "c")) // a restart knows it too
		if _, err := e.db.Exec("CREATE TABLE " + e.table("chg") + " (id BIGINT PRIMARY KEY, v TEXT)"); err != nil {
			t.Fatal(err)
		}
		write(t, s, cIns("chg", 3, "c"))
		wantRows(t, e, "chg", map[int64]string{3: "c"})
	})
}

// A target table truncated behind the sink (by hand, not a replicated
// TRUNCATE) after it wrote rows there is not papered over: the next write
// fails (fatal, ErrTargetChanged) saying what to do, in this Sink and after
// a restart, and nothing is written into it. So is a table dropped and
// created again between two writes, and a rewrite that keeps the rows
// (VACUUM FULL, OPTIMIZE TABLE: the documented false alarm), until the
// table is accepted as it is (ident set to NULL in the registry). The
// sink's own TRUNCATE (a replicated one) is not refused.
func TestWriteRefusesTableTruncatedBehind(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		open := func() *Sink {
			s := e.open(t, nil)
			s.catalog.identityEvery = 0
			return s
		}
		s := open()
		write(t, s, cIns("trh", 1, "a"), cIns("trh", 2, "b"))
		own := schema.Record{Op: schema.OpTruncate, Table: schema.TableID{Database: "src", Table: "trh"}}
		write(t, s, own, cIns("trh", 3, "c"))
		write(t, s, cIns("trh", 4, "d"))
		wantRows(t, e, "trh", map[int64]string{3: "c", 4: "d"})
		refused := func(s *Sink, what string, want map[int64]string) {
			t.Helper()
			err := s.Write(context.Background(), []schema.Record{cIns("trh", 9, "z")})
			if !errors.Is(err, ErrTargetChanged) || !isFatal(err) || !strings.Contains(err.Error(), "truncated, or dropped and created again, behind the sink") || !strings.Contains(err.Error(), "accept it as it is") {
				t.Fatalf("write after %s: %v; want a fatal ErrTargetChanged saying what to do", what, err)
			}
			wantRows(t, e, "trh", want)
		}
		accept := func() {
			t.Helper()
			if _, err := e.db.Exec(e.rebind("UPDATE sluice_progress_tables SET ident = NULL WHERE pipeline = $1 AND tbl_name = 'trh'"), e.cfg.Pipeline); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.db.Exec("TRUNCATE TABLE " + e.table("trh")); err != nil {
			t.Fatal(err)
		}
		refused(s, "a TRUNCATE by hand", map[int64]string{})
		refused(open(), "a TRUNCATE by hand, after a restart", map[int64]string{})
		accept()
		write(t, s, cIns("trh", 5, "e"))
		wantRows(t, e, "trh", map[int64]string{5: "e"})

		if _, err := e.db.Exec("DROP TABLE " + e.table("trh")); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.Exec("CREATE TABLE " + e.table("trh") + " (id BIGINT PRIMARY KEY, v TEXT)"); err != nil {
			t.Fatal(err)
		}
		refused(s, "the table dropped and created again by hand", map[int64]string{})
		accept()
		write(t, s, cIns("trh", 6, "f"))

		rewrite := "OPTIMIZE TABLE " + e.table("trh")
		if e.dialect == DialectPostgres {
			rewrite = "VACUUM FULL " + e.table("trh")
		}
		if _, err := e.db.Exec(rewrite); err != nil {
			t.Fatal(err)
		}
		refused(s, rewrite, map[int64]string{6: "f"})
		accept()
		write(t, s, cIns("trh", 7, "g"))
		wantRows(t, e, "trh", map[int64]string{6: "f", 7: "g"})
	})
}

// A queue's progress row deleted while a Sink runs (by hand, or lost in a
// crash of a target without durable commits): the next Write applies the
// queue's records as its first and creates the row again, instead of
// fencing on the missing row until it gives up.
func TestWriteAfterProgressRowGone(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		write(t, s, at(cIns("pg", 1, "a"), 1))
		if _, err := e.db.Exec(e.rebind("DELETE FROM sluice_progress WHERE pipeline = $1"), e.cfg.Pipeline); err != nil {
			t.Fatal(err)
		}
		write(t, s, at(cIns("pg", 2, "b"), 2))
		wantRows(t, e, "pg", map[int64]string{1: "a", 2: "b"})
		if off, ok := e.progress(t, "ddl", 0); !ok || off != 2 {
			t.Fatalf("progress %d %v, want 2", off, ok)
		}
	})
}

// A table the sink drops itself (a DROP TABLE or RENAME TABLE applied from
// the source) is created again by the records after it, in this Sink and
// in a new one: only a drop behind the sink is refused.
func TestWriteRecreatesTableItDropped(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, func(c *Config) { c.SchemaChanges = SchemaChangesApply })
		write(t, s, at(cIns("own", 1, "a"), 1), at(cIns("mv", 1, "a"), 2))
		write(t, s, ddlRec("src", "DROP TABLE own", 3, schema.TableChange{Kind: schema.DropTable, Table: src("own")}),
			ddlRec("src", "RENAME TABLE mv TO mv2", 4, schema.TableChange{Kind: schema.RenameTable, Table: src("mv"), NewTable: src("mv2")}))
		write(t, s, at(cIns("own", 2, "b"), 5))
		wantRows(t, e, "own", map[int64]string{2: "b"})
		s2 := e.open(t, func(c *Config) { c.SchemaChanges = SchemaChangesApply })
		write(t, s2, at(cIns("mv", 2, "b"), 6))
		wantRows(t, e, "mv", map[int64]string{2: "b"})
		wantRows(t, e, "mv2", map[int64]string{1: "a"})
	})
}

// A bad value in the middle of a multi-row statement (or a COPY) is reported
// with the key of its row, as a fatal error, and nothing is applied.
func TestWriteNamesKeyOfBadRow(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		for _, copyThreshold := range []int{-1, 10} {
			if copyThreshold > 0 && e.dialect != DialectPostgres {
				continue
			}
			s := e.open(t, func(c *Config) { c.CopyThreshold = copyThreshold })
			table := fmt.Sprintf("bad_%d", max(copyThreshold, 0))
			val := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
				{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
				{Name: "doc", Schema: lg(schema.String, schema.Json)},
			}}
			var recs []schema.Record
			for i := int64(0); i < 100; i++ {
				doc := `{"n": 1}`
				if i == 37 {
					doc = `{not json`
				}
				recs = append(recs, schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "src", Table: table}, KeySchema: tKey, Key: schema.Row{i}, ValueSchema: val, After: schema.Row{i, doc}})
			}
			err := s.Write(context.Background(), recs)
			if err == nil || !strings.Contains(err.Error(), "id=37") || !isFatal(err) {
				t.Fatalf("copy %d: error %v; want a fatal error naming id=37", copyThreshold, err)
			}
			var n int
			if err := e.db.QueryRow("SELECT count(*) FROM " + e.table(table)).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d rows applied (%v), want none", n, err)
			}
		}
	})
}

// The default templates put a table into the schema (database) named after
// its source database, creating it when missing.
func TestWriteDefaultTemplatesCreateSchema(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, func(c *Config) { c.SchemaTemplate, c.TableTemplate = "", "" })
		db := e.schema + "_src"
		t.Cleanup(func() {
			if e.dialect == DialectPostgres {
				e.db.Exec(`DROP SCHEMA "` + db + `" CASCADE`)
			} else {
				e.admin.Exec("DROP DATABASE `" + db + "`")
			}
		})
		r := cIns("orders", 1, "a")
		r.Table.Database = db
		write(t, s, r)
		var v string
		if err := e.db.QueryRow("SELECT v FROM " + e.quote(db) + "." + e.quote("orders")).Scan(&v); err != nil || v != "a" {
			t.Fatalf("read %s.orders: %q %v", db, v, err)
		}
	})
}

// A hostile schema (database) name from the template, created by the sink.
func TestWriteHostileSchemaName(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		name := e.schema + "_s\"q`b 数 select"
		s := e.open(t, func(c *Config) { c.SchemaTemplate = name })
		t.Cleanup(func() {
			if e.dialect == DialectPostgres {
				e.db.Exec("DROP SCHEMA " + e.quote(name) + " CASCADE")
			} else {
				e.admin.Exec("DROP DATABASE " + e.quote(name))
			}
		})
		write(t, s, cIns("t", 1, "a"), cIns("t", 2, "b"))
		write(t, s, cDel("t", 1), cUpd("t", 2, 3, "b", "c"))
		var n int
		var v string
		if err := e.db.QueryRow("SELECT count(*), max(v) FROM "+e.quote(name)+"."+e.quote("t")).Scan(&n, &v); err != nil || n != 1 || v != "c" {
			t.Fatalf("got %d rows max %q (%v), want 1 row c", n, v, err)
		}
	})
}
