package sink

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// txBatch numbers records of source transactions: each spec is (tx id, row
// id, value); offsets continue from off.
func txBatch(table string, off int64, specs ...[3]string) []schema.Record {
	var out []schema.Record
	for i, sp := range specs {
		var id int64
		fmt.Sscan(sp[1], &id)
		r := cIns(table, id, sp[2])
		r.Op = schema.OpUpdate
		r.Before = schema.Row{id, "?"}
		r.Transaction = &schema.Transaction{ID: sp[0], TotalOrder: int64(i + 1)}
		r.Delivery, r.ID = deliveredAt("tx", 0, int64(off+int64(i)))
		out = append(out, r)
	}
	return out
}

// A source transaction cut by the transport's batches reaches the target in
// one commit: its first part waits in the pending table (durably: a fresh
// Sink after a "crash" picks it up) and nothing of it is visible before its
// last record arrives.
func TestWriteTransactional(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		open := func() *Sink { return e.open(t, func(c *Config) { c.Transactional = true }) }
		s := open()
		if e.dialect == DialectPostgres { // MySQL's pending table goes with the test database
			t.Cleanup(func() { e.db.Exec("DELETE FROM sluice_pending WHERE pipeline = $1", e.cfg.Pipeline) })
		}
		b1 := txBatch("tx", 0, [3]string{"A", "1", "a"}, [3]string{"A", "2", "a"}, [3]string{"B", "1", "b"}, [3]string{"B", "3", "b"})
		write(t, s, b1...)
		// A is complete (B follows it); B may go on in the next batch.
		wantRows(t, e, "tx", map[int64]string{1: "a", 2: "a"})
		if off, ok := e.progress(t, "tx", 0); !ok || off != 3 {
			t.Fatalf("progress %d %v, want 3 (the pending records are accepted)", off, ok)
		}
		// Crash: a fresh Sink, the transport redelivers b1 (already
		// accepted) and the rest of B plus the start of C.
		s = open()
		b2 := txBatch("tx", 4, [3]string{"B", "4", "b"}, [3]string{"C", "1", "c"})
		write(t, s, append(append([]schema.Record{}, b1...), b2...)...)
		wantRows(t, e, "tx", map[int64]string{1: "b", 2: "a", 3: "b", 4: "b"})
		// C continues over two more batches, then a record carrying a
		// Position (a transaction boundary) closes it.
		write(t, s, txBatch("tx", 6, [3]string{"C", "5", "c"})...)
		wantRows(t, e, "tx", map[int64]string{1: "b", 2: "a", 3: "b", 4: "b"})
		last := txBatch("tx", 7, [3]string{"C", "2", "c"})
		last[0].Position = []byte("end of C")
		write(t, s, last...)
		wantRows(t, e, "tx", map[int64]string{1: "c", 2: "c", 3: "b", 4: "b", 5: "c"})
		var n int
		if err := e.db.QueryRow("SELECT count(*) FROM sluice_pending WHERE pipeline = "+map[string]string{DialectPostgres: "$1", DialectMySQL: "?"}[e.dialect], e.cfg.Pipeline).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d pending rows left (%v), want 0", n, err)
		}
		// Records without transaction ids are applied at once.
		write(t, s, cIns("tx", 9, "plain"))
		if got := e.rows(t, "tx"); got[9] != "plain" {
			t.Fatalf("plain record not applied: %v", got)
		}
		// A failure after the pending part was consumed applies nothing and
		// keeps it: the retry gives the same result.
		write(t, s, txBatch("tx", 8, [3]string{"D", "1", "d"})...)
		s.testHook = func(context.Context, string, *sqlxTx) error { return fmt.Errorf("injected") }
		b3 := txBatch("tx", 9, [3]string{"D", "2", "d"}, [3]string{"E", "3", "e"})
		if err := s.Write(context.Background(), b3); err == nil {
			t.Fatal("injected failure ignored")
		}
		wantRows(t, e, "tx", map[int64]string{1: "c", 2: "c", 3: "b", 4: "b", 5: "c", 9: "plain"})
		s.testHook = nil
		write(t, s, b3...)
		wantRows(t, e, "tx", map[int64]string{1: "d", 2: "d", 3: "b", 4: "b", 5: "c", 9: "plain"})
	})
}

// Random transactions cut by random batch boundaries: after every Write the
// target equals the state after the source transactions that ended before
// the batch's open tail, exactly; never a state inside a transaction.
func TestWriteTransactionalRandomCuts(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		if e.dialect == DialectPostgres {
			t.Cleanup(func() { e.db.Exec("DELETE FROM sluice_pending WHERE pipeline = $1", e.cfg.Pipeline) })
		}
		rng := rand.New(rand.NewPCG(42, uint64(len(e.dialect))))
		s := e.open(t, func(c *Config) { c.Transactional = true })
		// Build the stream and, after each whole transaction, the state.
		var stream []schema.Record
		var states []map[int64]string // states[i]: after the first i transactions
		state := map[int64]string{}
		states = append(states, maps.Clone(state))
		var txEnd []int // txEnd[i]: stream length after transaction i+1
		for tx := 0; tx < 60; tx++ {
			size := 1 + rng.IntN(6)
			for j := 0; j < size; j++ {
				k := int64(rng.IntN(15))
				v := fmt.Sprintf("t%d.%d", tx, j)
				var r schema.Record
				if _, ok := state[k]; ok && rng.IntN(4) == 0 {
					r = cDel("rc", k)
					delete(state, k)
				} else {
					r = cUpd("rc", k, k, "?", v)
					state[k] = v
				}
				r.Transaction = &schema.Transaction{ID: fmt.Sprintf("tx%d", tx), TotalOrder: int64(j + 1)}
				r.Delivery, r.ID = deliveredAt("rc", 0, int64(len(stream)))
				stream = append(stream, r)
			}
			states = append(states, maps.Clone(state))
			txEnd = append(txEnd, len(stream))
		}
		for pos := 0; pos < len(stream); {
			n := 1 + rng.IntN(9)
			end := min(pos+n, len(stream))
			write(t, s, stream[pos:end]...)
			// Whole transactions done: those that end at or before end and
			// are followed by a record of another transaction in what was
			// written (the last one written stays open).
			done := 0
			for i, te := range txEnd {
				if te < end {
					done = i + 1
				}
			}
			if done == 0 {
				pos = end
				continue // nothing applied yet: the table may not exist
			}
			if got := e.rows(t, "rc"); !maps.Equal(got, states[done]) {
				t.Fatalf("after records [0,%d): target %v\nwant the state after %d transactions %v", end, got, done, states[done])
			}
			pos = end
		}
	})
}
