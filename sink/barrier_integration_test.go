package sink

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// on places r on queue q of topic "bt" at offset off, with the ID
// 10*off+q unless it has one (a barrier's copies share theirs).
func on(r schema.Record, q int, off int64) schema.Record {
	r.Delivery = &schema.Delivery{Topic: "bt", Queue: q, Offset: off}
	if r.ID.IsZero() {
		r.ID = schema.ID{Epoch: 1, File: 1, Pos: uint64(10*off + int64(q))}
	}
	return r
}

// barrierOf is copy q of a barrier r made for copies queues.
func barrierOf(r schema.Record, copies, q int, off int64) schema.Record {
	r.Headers = map[string]string{schema.HeaderBarrierCopies: strconv.Itoa(copies), schema.HeaderTxEnd: "true"}
	return on(r, q, off)
}

// truncRec is a TRUNCATE with ID pos (see on).
func truncRec(table string, pos uint64) schema.Record {
	return schema.Record{Op: schema.OpTruncate, Table: schema.TableID{Database: "src", Table: table}, KeySchema: tKey, ValueSchema: tValue,
		Source: schema.Source{File: "mysql-bin.000001", Pos: pos}, ID: schema.ID{Epoch: 1, File: 1, Pos: pos}}
}

// writeAll runs one Write per batch at once (the queues of a transport) and
// fails on any error.
func writeAll(t *testing.T, s *Sink, batches ...[]schema.Record) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(batches))
	for i, b := range batches {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errs[i] = s.Write(ctx, b)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
}

// A TRUNCATE reaching two queues takes effect after the rows before it on
// both and before the rows after it on both, even when one copy waited in a
// Sink that stopped (the process died in the middle of the barrier) and a
// new Sink takes over; a copy seen again after the barrier was applied
// passes without truncating again.
func TestBarrierTruncateAcrossQueuesAndRestart(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s1 := e.open(t, nil)
		tr := truncRec("bt", 25) // after the rows at offsets 1, 2 (queue 0) and 1 (queue 1), before 4 and 3
		// Queue 0 reaches the barrier; queue 1 is not there yet: the copy
		// waits until its Write is given up (a crash, in effect).
		// It is given up once the rows before it are committed: a fixed
		// timeout raced the commit on a loaded machine.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- s1.Write(ctx, []schema.Record{on(cIns("bt", 1, "a"), 0, 1), on(cIns("bt", 2, "a"), 0, 2), barrierOf(tr, 2, 0, 3)})
		}()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			var n int
			if e.db.QueryRow("SELECT COUNT(*) FROM "+e.table("bt")).Scan(&n) == nil && n == 2 {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("the first copy of a barrier returned before the second arrived: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("the rows before the barrier were not committed within a minute")
			}
		}
		time.Sleep(100 * time.Millisecond) // the copy is waiting, not about to return
		select {
		case err := <-done:
			t.Fatalf("the first copy of a barrier returned before the second arrived: %v", err)
		default:
		}
		cancel()
		if err := <-done; err == nil {
			t.Fatal("the first copy of a barrier returned nil when given up")
		}
		wantRows(t, e, "bt", map[int64]string{1: "a", 2: "a"})
		s1.Close()

		s2 := e.open(t, nil)
		writeAll(t, s2,
			[]schema.Record{barrierOf(tr, 2, 0, 3), on(cIns("bt", 10, "after"), 0, 4)}, // redelivered after the restart
			[]schema.Record{on(cIns("bt", 3, "b"), 1, 1), barrierOf(tr, 2, 1, 2), on(cIns("bt", 11, "after"), 1, 3)},
		)
		want := map[int64]string{10: "after", 11: "after"}
		wantRows(t, e, "bt", want)

		// Queue 1's progress lost (restored from an old backup, say): its
		// records come again; the applied barrier is not applied again.
		if _, err := e.db.Exec(e.rebind("DELETE FROM sluice_progress WHERE pipeline = $1 AND topic = 'bt' AND queue = 1"), e.cfg.Pipeline); err != nil {
			t.Fatal(err)
		}
		s3 := e.open(t, nil)
		writeAll(t, s3, []schema.Record{on(cIns("bt", 3, "b"), 1, 1), barrierOf(tr, 2, 1, 2), on(cIns("bt", 11, "after"), 1, 3)})
		want[3] = "b" // re-applied before the barrier's place; the barrier itself is not
		wantRows(t, e, "bt", want)
	})
}

// A dropped column does not come back: rows written before the DROP COLUMN
// on another queue (carrying the column) are applied before it, with
// AutoEvolve on, so the column is gone at the end.
func TestBarrierDropColumnAcrossQueues(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, func(c *Config) { c.SchemaChanges = SchemaChangesApply })
		wide := &schema.Schema{Type: schema.Struct, Fields: append(append([]schema.Field(nil), tValue.Fields...),
			schema.Field{Name: "extra", Schema: schema.Primitive(schema.String, true)})}
		withExtra := func(id int64) schema.Record {
			r := cIns("dc", id, "old")
			r.ValueSchema, r.After = wide, schema.Row{id, "old", "x"}
			return r
		}
		for round := range 5 {
			base := int64(round * 100)
			ddl := schema.Record{Op: schema.OpSchemaChange, Table: schema.TableID{Database: e.schema, Table: "dc"},
				Change: &schema.SchemaChange{DDL: "ALTER TABLE " + e.schema + ".dc DROP COLUMN extra", Kind: "ALTER",
					Tables: []schema.TableChange{alter("dc", schema.ColumnChange{Kind: schema.DropColumn, Name: "extra"})}},
				Source: schema.Source{File: "mysql-bin.000001", Pos: uint64(5000 + round)},
				ID:     schema.ID{Epoch: 1, File: 1, Pos: uint64(10*(base+3) + 5)}} // between the rows around it (see on)
			if round > 0 { // the column comes back by an ADD COLUMN (AutoEvolve)
				write(t, s, on(withExtra(base+50), 0, base+1))
			}
			writeAll(t, s,
				[]schema.Record{on(withExtra(base+1), 0, base+2), barrierOf(ddl, 2, 0, base+3), on(cIns("dc", base+2, "new"), 0, base+4)},
				[]schema.Record{on(withExtra(base+3), 1, base+2), on(withExtra(base+4), 1, base+3), barrierOf(ddl, 2, 1, base+4), on(cIns("dc", base+5, "new"), 1, base+5)},
			)
			if cols := e.columns(t, "dc"); cols["extra"] {
				t.Fatalf("round %d: the dropped column came back: %v", round, cols)
			}
		}
	})
}

func (e *tenv) rebind(q string) string {
	if e.dialect == DialectMySQL {
		return strings.NewReplacer("$1", "?", "$2", "?", "$3", "?").Replace(q)
	}
	return q
}

// stale marks the context of the stale writer in
// TestBarrierStaleWriterOfAQueue.
type stale struct{}

// Two Writes of one queue in one Sink (the consumer dropped the queue's
// process queue and made a new one while the old one's batch was waiting
// at a barrier): the new one passes the barrier and applies the rows after
// it; the old one then passes the barrier too, with records after it that
// are older than what the new one applied. They must be filtered again,
// not written over the newer rows with the queue's progress moved back to
// them: issue #27, where rows the source deleted came back in the target.
func TestBarrierStaleWriterOfAQueue(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		tr := truncRec("bt", 25)
		newDone := make(chan struct{})
		s.testHook = func(ctx context.Context, stage string, _ *txn) error {
			if stage == "barrier passed" && ctx.Value(stale{}) != nil {
				select { // the old writer passes once the new one is done
				case <-newDone:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), stale{}, true), time.Minute)
		defer cancel()
		old := make(chan error, 1)
		go func() {
			old <- s.Write(ctx, []schema.Record{on(cIns("bt", 1, "a"), 0, 1), barrierOf(tr, 2, 0, 2), on(cIns("bt", 2, "b"), 0, 4)})
		}()
		// The old writer filtered its batch once the row before the barrier
		// is committed.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			var n int
			if e.db.QueryRow("SELECT COUNT(*) FROM "+e.table("bt")).Scan(&n) == nil && n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the row before the barrier was not committed within a minute")
			}
		}
		writeAll(t, s,
			[]schema.Record{barrierOf(tr, 2, 0, 2), on(cIns("bt", 2, "b"), 0, 4), on(cDel("bt", 2), 0, 5)}, // the new writer of queue 0
			[]schema.Record{barrierOf(tr, 2, 1, 2)},
		)
		close(newDone)
		if err := <-old; err != nil {
			t.Fatalf("old writer: %v", err)
		}
		wantRows(t, e, "bt", map[int64]string{}) // row 2 deleted after the barrier
		var last string
		if err := e.db.QueryRow(e.rebind("SELECT last_id FROM sluice_progress WHERE pipeline = $1 AND topic = 'bt' AND queue = 0"), e.cfg.Pipeline).Scan(&last); err != nil {
			t.Fatal(err)
		}
		if want := (schema.ID{Epoch: 1, File: 1, Pos: 50}).String(); last != want {
			t.Fatalf("progress of queue 0 is %s, want %s (the delete's): it moved back", last, want)
		}
	})
}
