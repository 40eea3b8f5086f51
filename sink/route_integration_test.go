package sink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// in is e with another schema (PostgreSQL) or database (MySQL), dropped
// at the end of the test.
func (e *tenv) in(t *testing.T, name string) *tenv {
	o := *e
	o.schema = name
	t.Cleanup(func() {
		if e.dialect == DialectPostgres {
			e.db.Exec(`DROP SCHEMA IF EXISTS "` + name + `" CASCADE`)
		} else {
			e.admin.Exec("DROP DATABASE IF EXISTS `" + name + "`")
		}
	})
	return &o
}

func deleteRec(table string, cols []string, row ...any) schema.Record {
	r := upsertRec(table, cols, row...)
	r.Op, r.Before, r.After = schema.OpDelete, r.After, nil
	return r
}

// TestRoutesAndColumnRules: a table routed by a pattern with captures into
// another schema and name, with a column renamed and one dropped, lands
// exactly: rows, a delete, an ALTER … ADD COLUMN applied after start (the
// renamed column added under its new name, the dropped one never
// created) and a TRUNCATE all act on the routed table; the templates'
// schema gets nothing. A renamed key column keys the table it creates
// (an upsert of a key replaces its row, a delete finds it). Both with and
// without transactional mode.
func TestRoutesAndColumnRules(t *testing.T) {
	for _, tx := range []bool{false, true} {
		t.Run(fmt.Sprintf("transactional=%v", tx), func(t *testing.T) { testRoutesAndColumnRules(t, tx) })
	}
}

func testRoutesAndColumnRules(t *testing.T, transactional bool) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		r := e.in(t, e.schema+"_r")
		s := e.open(t, func(c *Config) {
			c.Transactional = transactional
			c.SchemaChanges = SchemaChangesApply
			c.Routes = []Route{{Match: `src\.shard_(\d+)_(\w+)`, Schema: r.schema, Table: "$2_s$1"}}
			c.Columns = []ColumnRule{
				{Match: `src\.kr`, Rename: map[string]string{"id": "pk", "v": "w"}},
				{Match: `src\.shard_.*`, Rename: map[string]string{"v": "val", "c": "cc"}, Drop: []string{"secret", "secret2"}}}
		})
		kr := []string{"id", "v"}
		onKR := func(r schema.Record, off int64) schema.Record {
			r.Delivery, r.ID = deliveredAt("kr", 0, off)
			return r
		}
		write(t, s, onKR(upsertRec("kr", kr, int64(1), "a"), 1), onKR(upsertRec("kr", kr, int64(2), "b"), 2))
		write(t, s, onKR(upsertRec("kr", kr, int64(1), "a1"), 3), onKR(deleteRec("kr", kr, int64(2), "b"), 4))
		if got, want := e.columns(t, "kr"), map[string]bool{"pk": true, "w": true}; !maps.Equal(got, want) {
			t.Fatalf("renamed key: columns %v, want %v", got, want)
		}
		if got, want := e.idText(t, "SELECT pk, w FROM "+e.table("kr")), map[int64]string{1: "a1"}; !maps.Equal(got, want) {
			t.Fatalf("renamed key: rows %v, want %v", got, want)
		}
		cols := []string{"id", "v", "secret"}
		write(t, s,
			at(upsertRec("shard_7_orders", cols, int64(1), "a", "s1"), 1),
			at(upsertRec("shard_7_orders", cols, int64(2), "b", "s2"), 2),
			at(upsertRec("shard_7_orders", cols, int64(3), "c", "s3"), 3),
			at(upsertRec("shard_8_items", cols, int64(1), "i", "s"), 4))
		if got, want := r.columns(t, "orders_s7"), map[string]bool{"id": true, "val": true}; !maps.Equal(got, want) {
			t.Fatalf("routed table's columns %v, want %v", got, want)
		}
		str := schema.Primitive(schema.String, true)
		write(t, s, ddlRec("src", "ALTER TABLE shard_7_orders ADD c TEXT, ADD secret2 TEXT", 5, alter("shard_7_orders",
			schema.ColumnChange{Kind: schema.AddColumn, Name: "c", Column: &schema.ColumnDef{Name: "c", Type: str}},
			schema.ColumnChange{Kind: schema.AddColumn, Name: "secret2", Column: &schema.ColumnDef{Name: "secret2", Type: str}, After: "secret"})))
		if got, want := r.columns(t, "orders_s7"), map[string]bool{"id": true, "val": true, "cc": true}; !maps.Equal(got, want) {
			t.Fatalf("after ADD COLUMN: columns %v, want %v", got, want)
		}
		cols = append(cols, "c", "secret2")
		write(t, s,
			at(upsertRec("shard_7_orders", cols, int64(4), "d", "s4", "c4", "x4"), 6),
			at(upsertRec("shard_7_orders", cols, int64(1), "a1", "s1", "c1", "x1"), 7),
			at(deleteRec("shard_7_orders", cols, int64(2), "b", "s2", "", ""), 8),
			at(schema.Record{Op: schema.OpTruncate, Table: src("shard_8_items")}, 9))
		if got, want := r.tableText(t, "orders_s7", "val", "cc"), map[int64]string{1: "|a1|c1", 3: "|c|-", 4: "|d|c4"}; !maps.Equal(got, want) {
			t.Fatalf("routed rows %v, want %v", got, want)
		}
		if got, want := r.columns(t, "orders_s7"), map[string]bool{"id": true, "val": true, "cc": true}; !maps.Equal(got, want) {
			t.Fatalf("columns %v, want %v", got, want)
		}
		if got := r.tableText(t, "items_s8", "val"); len(got) != 0 {
			t.Fatalf("routed TRUNCATE left %v", got)
		}
		if got := e.columns(t, "shard_7_orders"); len(got) != 0 {
			t.Fatalf("the template's table was created: %v", got)
		}
	})
}

// TestRoutesRefuse: two source tables routed to one target table, a route
// onto the progress table and a rule dropping a key column are refused,
// fatal, before anything of theirs is written (the key check at start,
// through CheckShapes, and by sluice check: target_columns, target_routes).
func TestRoutesRefuse(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		var def string
		q := "SELECT current_schema()"
		if e.dialect == DialectMySQL {
			q = "SELECT DATABASE()"
		}
		if err := e.db.QueryRow(q).Scan(&def); err != nil {
			t.Fatal(err)
		}
		mod := func(c *Config) {
			c.Routes = []Route{{Match: `src\.m_\d+`, Table: "merged"}, {Match: `src\.evil`, Schema: def, Table: c.ProgressTable}}
			c.Columns = []ColumnRule{{Match: `src\.kd`, Drop: []string{"id"}}}
		}
		s := e.open(t, mod)
		cols := []string{"id", "v"}
		write(t, s, upsertRec("m_1", cols, int64(1), "one"))
		refused := func(what string, recs ...schema.Record) {
			t.Helper()
			err := s.Write(context.Background(), recs)
			if !errors.Is(err, ErrConfig) || !isFatal(err) {
				t.Fatalf("%s: %v, want a fatal ErrConfig", what, err)
			}
			t.Logf("%s: %v", what, err)
		}
		refused("merge", upsertRec("m_2", cols, int64(2), "two"))
		refused("progress table", upsertRec("evil", cols, int64(9), "x"))
		refused("key dropped", upsertRec("kd", cols, int64(1), "k"))
		if err := s.CheckTables([]schema.TableID{src("m_1"), src("m_2")}); !errors.Is(err, ErrConfig) {
			t.Fatalf("CheckTables of two merged tables: %v", err)
		}
		shape := schema.Table{ID: src("kd"), Columns: []schema.Column{{Name: "id", Schema: schema.Primitive(schema.Int64, false)}}, PrimaryKey: []string{"id"}}
		if err := s.CheckShapes(context.Background(), []schema.Table{shape}); !errors.Is(err, ErrConfig) || !isFatal(err) || !s.WantsShapes() {
			t.Fatalf("CheckShapes of a dropped key column: %v (wants shapes %v)", err, s.WantsShapes())
		}
		cfg := e.cfg
		mod(&cfg)
		if ps := Check(context.Background(), cfg, []schema.Table{shape}); len(ps) != 1 || ps[0].Check != "target_columns" {
			t.Fatalf("check of a dropped key column: %+v", ps)
		}
		if ps := Check(context.Background(), cfg, []schema.Table{{ID: src("m_1")}, {ID: src("m_2")}}); len(ps) != 1 || ps[0].Check != "target_routes" {
			t.Fatalf("check of two tables routed to one: %+v", ps)
		}
		wantRows(t, e, "merged", map[int64]string{1: "one"})
		if got := e.columns(t, "kd"); len(got) != 0 {
			t.Fatalf("table kd created: %v", got)
		}
	})
}

// TestRouteClaimFollowsRename: a source table renamed gives the target
// table its route chose to its new name (here both names route to one
// table: the new name's rows land there, not refused as a second table);
// a table created under the old name is refused while the renamed one
// holds the target; a dropped table releases it for the next. Under
// schema_changes ignore, where a batch of only a schema change applies
// nothing, and apply.
func TestRouteClaimFollowsRename(t *testing.T) {
	for _, mode := range []string{SchemaChangesIgnore, SchemaChangesApply} {
		t.Run(mode, func(t *testing.T) {
			forEachTarget(t, func(t *testing.T, e *tenv) {
				s := e.open(t, func(c *Config) {
					c.SchemaChanges = mode
					c.Routes = []Route{{Match: `src\.orders(_old)?`, Table: "orders_all"}}
				})
				cols := []string{"id", "v"}
				change := func(q string, off int64, kind string, table, to string) schema.Record {
					tc := schema.TableChange{Kind: kind, Table: src(table)}
					if to != "" {
						tc.NewTable = src(to)
					}
					return ddlRec("src", q, off, tc)
				}
				refused := func(what string, r schema.Record) {
					t.Helper()
					if err := s.Write(context.Background(), []schema.Record{r}); !errors.Is(err, ErrConfig) || !isFatal(err) {
						t.Fatalf("%s: %v, want a fatal ErrConfig", what, err)
					}
				}
				write(t, s, at(upsertRec("orders", cols, int64(1), "a"), 1))
				write(t, s, change("RENAME TABLE orders TO orders_old", 2, schema.RenameTable, "orders", "orders_old"))
				write(t, s, at(upsertRec("orders_old", cols, int64(2), "b"), 3))
				wantRows(t, e, "orders_all", map[int64]string{1: "a", 2: "b"})

				write(t, s, change("DROP TABLE orders_old", 4, schema.DropTable, "orders_old", ""),
					change("CREATE TABLE orders (id INT PRIMARY KEY, v TEXT)", 5, schema.CreateTable, "orders", ""))
				write(t, s, at(upsertRec("orders", cols, int64(3), "c"), 6))
				want := map[int64]string{1: "a", 2: "b", 3: "c"}
				if mode == SchemaChangesApply { // the DROP dropped the target table
					want = map[int64]string{3: "c"}
				}
				wantRows(t, e, "orders_all", want)

				write(t, s, change("CREATE TABLE orders_old (id INT PRIMARY KEY, v TEXT)", 7, schema.CreateTable, "orders_old", ""))
				refused("a second table onto the held target", at(upsertRec("orders_old", cols, int64(4), "d"), 8))
				wantRows(t, e, "orders_all", want)
			})
		})
	}
}

// TestRoutedBarrier: a TRUNCATE copied to two queues (a barrier) acts on
// the routed table, after the rows before it on both queues and before the
// rows after it; the template's table is never created.
func TestRoutedBarrier(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		r := e.in(t, e.schema+"_rb")
		s := e.open(t, func(c *Config) { c.Routes = []Route{{Match: `src\.bt`, Schema: r.schema, Table: "bt_routed"}} })
		tr := truncRec("bt", 25)
		writeAll(t, s,
			[]schema.Record{on(cIns("bt", 1, "a"), 0, 1), on(cIns("bt", 2, "a"), 0, 2), barrierOf(tr, 2, 0, 3), on(cIns("bt", 10, "after"), 0, 4)},
			[]schema.Record{on(cIns("bt", 3, "b"), 1, 1), barrierOf(tr, 2, 1, 2), on(cIns("bt", 11, "after"), 1, 3)})
		wantRows(t, r, "bt_routed", map[int64]string{10: "after", 11: "after"})
		if got := e.columns(t, "bt"); len(got) != 0 {
			t.Fatalf("the template's table was created: %v", got)
		}
	})
}
