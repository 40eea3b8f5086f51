package sink

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// ddlRec is a schema-change record with its structure; q is only text
// for logs: the sink never reads it.
func ddlRec(db, q string, off int64, changes ...schema.TableChange) schema.Record {
	return schema.Record{Op: schema.OpSchemaChange, Table: schema.TableID{Database: db}, Change: &schema.SchemaChange{DDL: q, Kind: "ALTER", Tables: changes},
		Delivery: &schema.Delivery{Topic: "ddl", Queue: 0, Offset: off}, ID: testID(int64(off))}
}

func src(table string) schema.TableID { return schema.TableID{Database: "src", Table: table} }

func alter(table string, cols ...schema.ColumnChange) schema.TableChange {
	return schema.TableChange{Kind: schema.AlterTable, Table: src(table), Columns: cols}
}

func ddlTruncRec(table string, off int64) schema.Record {
	return schema.Record{Op: schema.OpTruncate, Table: src(table), Delivery: &schema.Delivery{Topic: "ddl", Queue: 0, Offset: off}, ID: testID(off)}
}

func at(r schema.Record, off int64) schema.Record {
	r.Delivery, r.ID = deliveredAt("ddl", 0, int64(off))
	return r
}

// columns returns the target table's column names.
func (e *tenv) columns(t *testing.T, table string) map[string]bool {
	t.Helper()
	q := "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2"
	if e.dialect == DialectMySQL {
		q = "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"
	}
	rs, err := e.db.Query(q, e.schema, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[string]bool{}
	for rs.Next() {
		var c string
		if err := rs.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out[c] = true
	}
	return out
}

// With SchemaChanges "apply": TRUNCATE and DROP TABLE act on the target in
// order with the data around them, DROP COLUMN and RENAME COLUMN alter it,
// unsupported DDL is ignored, and redelivering the whole batch to a fresh
// Sink changes nothing.
func TestWriteSchemaChangesApply(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		open := func() *Sink { return e.open(t, func(c *Config) { c.SchemaChanges = SchemaChangesApply }) }
		s := open()
		// Source database "src" maps to the test schema by the template; DDL
		// names tables unqualified (session database "src") or qualified.
		val3 := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
			{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
			{Name: "v", Schema: schema.Primitive(schema.String, true)},
			{Name: "extra", Schema: schema.Primitive(schema.String, true)},
		}}
		wide := func(table string, id int64, v, x string) schema.Record {
			r := cIns(table, id, v)
			r.ValueSchema, r.After = val3, schema.Row{id, v, x}
			return r
		}
		dec := schema.DecimalSchema(3, 1, false)
		dec.Params[schema.ParamSourceType] = "decimal(3,1)"
		batch := []schema.Record{
			at(cIns("tr", 1, "a"), 1), at(cIns("tr", 2, "b"), 2),
			ddlTruncRec("tr", 3),
			at(cIns("tr", 3, "after truncate"), 4),
			at(cIns("gone", 1, "x"), 5),
			ddlRec("other", "DROP TABLE `src`.`gone`", 6, schema.TableChange{Kind: schema.DropTable, Table: src("gone")}),
			at(wide("alt", 1, "a", "e1"), 7), at(wide("alt", 2, "b", "e2"), 8),
			ddlRec("src", "ALTER TABLE alt DROP COLUMN extra, RENAME COLUMN v TO w, ADD COLUMN d DECIMAL(3,1) NOT NULL DEFAULT 1.5", 9,
				alter("alt", schema.ColumnChange{Kind: schema.DropColumn, Name: "extra"},
					schema.ColumnChange{Kind: schema.RenameColumn, Name: "v", NewName: "w"},
					schema.ColumnChange{Kind: schema.AddColumn, Name: "d", Column: &schema.ColumnDef{Name: "d", Type: dec, Default: &schema.Default{Value: "1.5"}}})),
			ddlRec("src", "CREATE INDEX i ON alt (w)", 10), // no table change: ignored
			at(cIns("ren", 1, "r"), 11),
			ddlRec("src", "RENAME TABLE ren TO ren2", 12, schema.TableChange{Kind: schema.RenameTable, Table: src("ren"), NewTable: src("ren2")}),
			ddlRec("src", "ALTER TABLE never_created DROP x", 13, alter("never_created", schema.ColumnChange{Kind: schema.DropColumn, Name: "x"})), // no table: no-op
		}
		check := func() {
			t.Helper()
			wantRows(t, e, "tr", map[int64]string{3: "after truncate"})
			if cols := e.columns(t, "gone"); len(cols) != 0 {
				t.Fatalf("dropped table still has columns %v", cols)
			}
			if cols := e.columns(t, "alt"); !maps.Equal(cols, map[string]bool{"id": true, "w": true, "d": true}) {
				t.Fatalf("alt has columns %v, want id, w, d", cols)
			}
			// the renamed column keeps its values; the added one has the
			// default in the rows from before it, as in the source
			var n int
			if err := e.db.QueryRow("SELECT COUNT(*) FROM " + e.table("alt") + " WHERE d = 1.5 AND w IN ('a', 'b')").Scan(&n); err != nil || n != 2 {
				t.Fatalf("%d rows of alt have d = 1.5 and their renamed w (%v), want 2", n, err)
			}
			if cols := e.columns(t, "ren"); len(cols) != 0 {
				t.Fatalf("renamed table still there: %v", cols)
			}
			wantRows(t, e, "ren2", map[int64]string{1: "r"})
			if off, ok := e.progress(t, "ddl", 0); !ok || off != 13 {
				t.Fatalf("progress %d %v, want 13", off, ok)
			}
		}
		write(t, s, batch...)
		check()
		// Redelivery of everything to a fresh Sink (a crash before the
		// transport's ack): all skipped by offset.
		write(t, open(), batch...)
		check()
		// Redelivery without offsets re-runs the DDL: harmless by design.
		var bare []schema.Record
		for _, r := range batch[2:] { // from the truncate on
			r.Delivery = nil
			if r.Op == schema.OpSchemaChange || r.Table.Table != "alt" && r.Table.Table != "ren" {
				bare = append(bare, r)
			}
		}
		write(t, open(), bare...)
		check()
		// The renamed column gets data again; the dropped one comes back
		// through AutoEvolve when a record carries it.
		r := wide("alt", 3, "c", "e3")
		write(t, s, r)
		if cols := e.columns(t, "alt"); !cols["extra"] || !cols["v"] || !cols["w"] {
			t.Fatalf("alt has columns %v after a record with v and extra", cols)
		}
	})
}

func TestWriteSchemaChangesFailAndIgnore(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		fail := e.open(t, func(c *Config) { c.SchemaChanges = SchemaChangesFail })
		write(t, fail, at(cIns("f", 1, "a"), 1))
		err := fail.Write(context.Background(), []schema.Record{at(cIns("f", 2, "b"), 2), ddlRec("src", "TRUNCATE f", 3)})
		if !errors.Is(err, ErrSchemaChange) || !isFatal(err) {
			t.Fatalf("SchemaChanges fail: %v, want fatal ErrSchemaChange", err)
		}
		wantRows(t, e, "f", map[int64]string{1: "a"}) // nothing of the batch applied
		ign := e.open(t, nil)
		write(t, ign, at(cIns("f", 2, "b"), 2), ddlRec("src", "TRUNCATE f", 3), ddlRec("src", "DROP TABLE f", 4))
		wantRows(t, e, "f", map[int64]string{1: "a", 2: "b"})
		if _, err := New(context.Background(), Config{Dialect: e.dialect, DSN: e.cfg.DSN, Pipeline: "p", SchemaChanges: "sometimes"}, nil); !errors.Is(err, ErrConfig) {
			t.Fatalf("bad policy: %v, want ErrConfig", err)
		}
	})
}

// TestSchemaChangeAddColumnDefaults: columns added NOT NULL with a default
// of each kind land on both targets, and rows already there read it.
func TestSchemaChangeAddColumnDefaults(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, func(c *Config) { c.SchemaChanges = SchemaChangesApply })
		write(t, s, at(cIns("defs", 1, "a"), 1))
		col := func(name string, typ *schema.Schema, src string, def schema.Default) schema.ColumnChange {
			typ.Params = map[string]string{schema.ParamSourceType: src}
			return schema.ColumnChange{Kind: schema.AddColumn, Name: name, Column: &schema.ColumnDef{Name: name, Type: typ, SourceType: src, Default: &def}}
		}
		write(t, s, ddlRec("src", "ALTER TABLE defs ADD …", 2, alter("defs",
			col("ts", &schema.Schema{Type: schema.Int64, Logical: schema.ZonedTimestamp}, "timestamp", schema.Default{Value: "current_timestamp()", Expr: true}),
			col("dt", &schema.Schema{Type: schema.Int64, Logical: schema.Timestamp}, "datetime", schema.Default{Value: "2024-01-02 03:04:05"}),
			col("n", schema.Primitive(schema.Int32, false), "int", schema.Default{Value: "-3"}),
			col("s", &schema.Schema{Type: schema.String}, "varchar(5)", schema.Default{Value: `o'k\`}),
			col("u", &schema.Schema{Type: schema.Bytes, Optional: true}, "varbinary(3)", schema.Default{Value: "x"}), // no default carried
		)))
		var n int
		// s holds o'k and a backslash: compared without writing a backslash in SQL
		q := "SELECT COUNT(*) FROM " + e.table("defs") + " WHERE ts IS NOT NULL AND dt = '2024-01-02 03:04:05' AND n = -3 AND s LIKE 'o''k_' AND LENGTH(s) = 4 AND u IS NULL"
		if err := e.db.QueryRow(q).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d rows read the defaults (%v), want 1", n, err)
		}
	})
}
