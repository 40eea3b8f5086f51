package sink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

func rec(op schema.Op, table string, before, after schema.Row) schema.Record {
	r := schema.Record{Op: op, Table: schema.TableID{Database: "src", Table: table}, KeySchema: tKey, ValueSchema: tValue, Before: before, After: after}
	switch {
	case after != nil:
		r.Key = schema.Row{after[0]}
	case before != nil:
		r.Key = schema.Row{before[0]}
	}
	return r
}

func cIns(table string, id int64, v string) schema.Record {
	return rec(schema.OpCreate, table, nil, schema.Row{id, v})
}
func cUpd(table string, oldID, id int64, oldV, v string) schema.Record {
	return rec(schema.OpUpdate, table, schema.Row{oldID, oldV}, schema.Row{id, v})
}
func cDel(table string, id int64) schema.Record {
	return rec(schema.OpDelete, table, schema.Row{id, "x"}, nil)
}

func write(t *testing.T, s *Sink, recs ...schema.Record) {
	t.Helper()
	if err := s.Write(context.Background(), recs); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func wantRows(t *testing.T, e *tenv, table string, want map[int64]string) {
	t.Helper()
	got := e.rows(t, table)
	if !maps.Equal(got, want) {
		if len(got) > 20 || len(want) > 20 {
			diff := 0
			for k, v := range want {
				if got[k] != v {
					if diff < 5 {
						t.Errorf("id %d: got %q want %q", k, got[k], v)
					}
					diff++
				}
			}
			t.Fatalf("%s: %d rows, want %d; %d differ", table, len(got), len(want), diff)
		}
		t.Fatalf("%s:\n got %v\nwant %v", table, got, want)
	}
}

func TestWriteRoundTrip(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		for _, mode := range []string{"values", "copy"} {
			if mode == "copy" && e.dialect != DialectPostgres {
				continue
			}
			t.Run(mode, func(t *testing.T) {
				s := e.open(t, func(c *Config) {
					c.BatchSize = 333
					c.CopyThreshold = -1
					if mode == "copy" {
						c.CopyThreshold = 100
					}
				})
				table := "rt_" + mode
				const n = 5000
				want := map[int64]string{}
				var recs []schema.Record
				for i := int64(0); i < n; i++ {
					v := fmt.Sprintf("row %d ✓ 'q' \"d\" \\ `b`", i)
					recs = append(recs, cIns(table, i, v))
					want[i] = v
				}
				write(t, s, recs...)
				wantRows(t, e, table, want)

				recs = recs[:0]
				for i := int64(0); i < n; i += 2 {
					recs = append(recs, cUpd(table, i, i, want[i], "updated"))
					want[i] = "updated"
				}
				for i := int64(0); i < n; i += 3 {
					recs = append(recs, cDel(table, i))
					delete(want, i)
				}
				write(t, s, recs...)
				wantRows(t, e, table, want)
			})
		}
	})
}

func TestWriteReducesAndChangesKeys(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		write(t, s, cIns("k", 1, "a"), cIns("k", 2, "b"), cIns("k", 3, "c"))
		write(t, s,
			cUpd("k", 1, 10, "a", "a moved"),                         // key change: 1 -> 10
			cIns("k", 4, "d"), cDel("k", 4), cIns("k", 4, "d again"), // insert-delete-insert
			cDel("k", 2), cIns("k", 2, "b back"), // delete then insert = upsert
			cUpd("k", 3, 3, "c", "c1"), cUpd("k", 3, 3, "c1", "c2"), // last write wins
			cIns("k", 5, "gone"), cDel("k", 5), // insert then delete
			cUpd("k", 10, 11, "a moved", "a moved twice"),
		)
		wantRows(t, e, "k", map[int64]string{11: "a moved twice", 2: "b back", 3: "c2", 4: "d again"})
	})
}

func TestWriteTruncateAndMarkers(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		write(t, s, cIns("tr", 1, "a"), cIns("tr", 2, "b"))
		tr := schema.Record{Op: schema.OpTruncate, Table: schema.TableID{Database: "src", Table: "tr"}}
		write(t, s, schema.Record{Op: schema.OpBegin}, cIns("tr", 3, "c"), tr, cIns("tr", 4, "d"), schema.Record{Op: schema.OpCommit})
		wantRows(t, e, "tr", map[int64]string{4: "d"})
		// A truncate or delete of a table that does not exist is a no-op.
		missing := tr
		missing.Table.Table = "never_created"
		write(t, s, missing, cDel("never_created_either", 1))
	})
}

func TestWriteSkipsRedelivered(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		at := func(r schema.Record, q int, off int64) schema.Record {
			r.Delivery, r.ID = deliveredAt("topic-a", q, int64(off))
			return r
		}
		batch := []schema.Record{at(cIns("rd", 1, "v1"), 0, 10), at(cIns("rd", 2, "v1"), 0, 11), at(cIns("rd", 3, "v1"), 1, 5)}
		write(t, s, batch...)
		newer := []schema.Record{at(cUpd("rd", 1, 1, "v1", "v2"), 0, 12), at(cUpd("rd", 3, 3, "v1", "v2"), 1, 6)}
		write(t, s, newer...)
		want := map[int64]string{1: "v2", 2: "v1", 3: "v2"}
		wantRows(t, e, "rd", want)

		// Redelivery of the first batch must not bring back older versions,
		// neither through the cache nor through the table (a fresh Sink).
		write(t, s, batch...)
		wantRows(t, e, "rd", want)
		s2 := e.open(t, nil)
		write(t, s2, batch...)
		write(t, s2, newer[0])
		wantRows(t, e, "rd", want)
		// A partly redelivered batch applies only its new records.
		write(t, s2, at(cUpd("rd", 2, 2, "v1", "stale"), 0, 11), at(cUpd("rd", 2, 2, "v1", "v3"), 0, 13))
		want[2] = "v3"
		wantRows(t, e, "rd", want)
		if off, ok := e.progress(t, "topic-a", 0); !ok || off != 13 {
			t.Fatalf("progress of queue 0 = %d, %v; want 13", off, ok)
		}
		if off, ok := e.progress(t, "topic-a", 1); !ok || off != 6 {
			t.Fatalf("progress of queue 1 = %d, %v; want 6", off, ok)
		}
		// Records without Delivery are always applied.
		write(t, s2, cUpd("rd", 2, 2, "v3", "no delivery"))
		want[2] = "no delivery"
		wantRows(t, e, "rd", want)
	})
}

func TestWriteRollsBackOnLostConnection(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		write(t, s, cIns("lc", 1, "before"))
		s.testHook = func(ctx context.Context, stage string, tx *txn) error {
			if e.dialect == DialectPostgres {
				var pid int
				if err := tx.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
					return err
				}
				_, err := e.admin.Exec("SELECT pg_terminate_backend($1)", pid)
				return err
			}
			var id int64
			if err := tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
				return err
			}
			_, err := e.admin.Exec(fmt.Sprintf("KILL %d", id))
			return err
		}
		batch := []schema.Record{cUpd("lc", 1, 1, "before", "after"), cIns("lc", 2, "new")}
		batch[0].Delivery, batch[0].ID = deliveredAt("t", 0, int64(1))
		err := s.Write(context.Background(), batch)
		if err == nil {
			t.Fatal("Write succeeded although its connection was killed")
		}
		if isFatal(err) {
			t.Fatalf("lost connection classified as fatal: %v", err)
		}
		wantRows(t, e, "lc", map[int64]string{1: "before"})
		if _, ok := e.progress(t, "t", 0); ok {
			t.Fatal("progress saved although the transaction was lost")
		}
		s.testHook = nil
		write(t, s, batch...)
		wantRows(t, e, "lc", map[int64]string{1: "after", 2: "new"})
	})
}

func TestWriteHostileIdentifiers(t *testing.T) {
	names := []string{`we"ird`, "back`tick", "select", "with space", "zähler_数", `a"; DROP TABLE x; --`}
	forEachTarget(t, func(t *testing.T, e *tenv) {
		for i, name := range names {
			s := e.open(t, func(c *Config) { c.TableTemplate = "${table}" })
			id := schema.TableID{Database: "src", Table: name}
			key := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{{Name: name + "_k", Schema: schema.Primitive(schema.String, false)}}}
			val := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
				{Name: name + "_k", Schema: schema.Primitive(schema.String, false)},
				{Name: "order", Schema: schema.Primitive(schema.String, true)},
				{Name: names[(i+1)%len(names)], Schema: schema.Primitive(schema.Int64, true)},
			}}
			mk := func(op schema.Op, k, v string, n int64) schema.Record {
				r := schema.Record{Op: op, Table: id, KeySchema: key, Key: schema.Row{k}, ValueSchema: val}
				if op == schema.OpDelete {
					r.Before = schema.Row{k, v, n}
				} else {
					r.After = schema.Row{k, v, n}
				}
				return r
			}
			write(t, s, mk(schema.OpCreate, "k'1`\"", "v1", 1), mk(schema.OpCreate, "k2", "v2", 2))
			write(t, s, mk(schema.OpUpdate, "k'1`\"", "v1b", 3), mk(schema.OpDelete, "k2", "", 0))
			// AutoEvolve with a hostile column name.
			val2 := &schema.Schema{Type: schema.Struct, Fields: append(append([]schema.Field{}, val.Fields...),
				schema.Field{Name: `new "col"` + "`", Schema: schema.Primitive(schema.String, true)})}
			r := schema.Record{Op: schema.OpCreate, Table: id, KeySchema: key, Key: schema.Row{"k3"}, ValueSchema: val2, After: schema.Row{"k3", "v3", int64(4), "evolved"}}
			write(t, s, r)
			rows, err := e.db.Query(fmt.Sprintf("SELECT %s, %s, %s FROM %s ORDER BY 1",
				e.quote(name+"_k"), e.quote("order"), e.quote(`new "col"`+"`"), e.table(name)))
			if err != nil {
				t.Fatalf("%q: %v", name, err)
			}
			var got []string
			for rows.Next() {
				var k, v string
				var nc *string
				if err := rows.Scan(&k, &v, &nc); err != nil {
					t.Fatal(err)
				}
				s := "<nil>"
				if nc != nil {
					s = *nc
				}
				got = append(got, k+"="+v+"/"+s)
			}
			rows.Close()
			want := []string{"k'1`\"=v1b/<nil>", "k3=v3/evolved"}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("table %q: got %v want %v", name, got, want)
			}
		}
	})
}

func TestWriteAfterClose(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if err := s.Write(context.Background(), []schema.Record{cIns("closed", 1, "a")}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Write after Close: %v, want ErrClosed", err)
		}
	})
}

func TestWriteWithoutAutoEvolveFails(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, func(c *Config) { c.AutoEvolve = false })
		write(t, s, cIns("ne", 1, "a"))
		val2 := &schema.Schema{Type: schema.Struct, Fields: append(append([]schema.Field{}, tValue.Fields...), schema.Field{Name: "extra", Schema: schema.Primitive(schema.String, true)})}
		r := cIns("ne", 2, "b")
		r.ValueSchema, r.After = val2, schema.Row{int64(2), "b", "x"}
		err := s.Write(context.Background(), []schema.Record{r})
		if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), `"extra"`) {
			t.Fatalf("error %v, want ErrSchema naming the column", err)
		}
		wantRows(t, e, "ne", map[int64]string{1: "a"})
	})
}
