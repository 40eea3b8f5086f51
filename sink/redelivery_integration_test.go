package sink

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// Several queues updating the same keys at once (a key that moved between
// queues after a rebalance): Writes may collide (deadlocks, lock waits), but
// only with retriable errors, which succeed on retry like the runtime does;
// each queue's progress ends at its last offset and every key holds the
// value of the final round.
func TestWriteConcurrentSameKeysFromSeveralQueues(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		const queues, rounds, keys = 4, 8, 200
		var retries atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, queues)
		for q := 0; q < queues; q++ {
			wg.Add(1)
			go func(q int) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(q), 7))
				for r := 0; r < rounds; r++ {
					var recs []schema.Record
					for j, k := range rng.Perm(keys) { // a different key order per queue and round
						v := fmt.Sprintf("q%d r%d", q, r)
						if r == rounds-1 {
							v = "final"
						}
						rc := cUpd("same", int64(k), int64(k), "?", v)
						rc.Delivery, rc.ID = deliveredAt("same", q, int64(r*keys+j))
						recs = append(recs, rc)
					}
					for attempt := 0; ; attempt++ {
						err := s.Write(context.Background(), recs)
						if err == nil {
							break
						}
						if isFatal(err) || attempt == 20 {
							errs <- fmt.Errorf("queue %d round %d attempt %d: %w", q, r, attempt, err)
							return
						}
						retries.Add(1)
					}
				}
			}(q)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		got := e.rows(t, "same")
		if len(got) != keys {
			t.Fatalf("%d rows, want %d", len(got), keys)
		}
		for k, v := range got {
			if v != "final" {
				t.Fatalf("key %d = %q, want final", k, v)
			}
		}
		for q := 0; q < queues; q++ {
			if off, ok := e.progress(t, "same", q); !ok || off != rounds*keys-1 {
				t.Fatalf("queue %d progress %d %v, want %d", q, off, ok, rounds*keys-1)
			}
		}
		t.Logf("%d retried Writes (deadlocks or lock timeouts between queues)", retries.Load())
	})
}

// A crash between the sink's commit and the transport's ack: the batch is
// applied, the Sink is gone (a fresh instance stands for the restarted
// process), and the transport redelivers the same batch, alone and with
// newer records. After every step each key holds its newest version, never
// an older one. Runs in normal and in transactional mode.
func TestWriteCrashBetweenApplyAndAck(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		for _, transactional := range []bool{false, true} {
			table := fmt.Sprintf("crash_%v", transactional)
			topic := "crash-" + table
			open := func() *Sink { return e.open(t, func(c *Config) { c.Transactional = transactional }) }
			if transactional && e.dialect == DialectPostgres {
				t.Cleanup(func() { e.db.Exec("DELETE FROM sluice_pending WHERE pipeline = $1", e.cfg.Pipeline) })
			}
			// Versions 1..n of keys 1..3, each key updated in every source
			// transaction; offsets count up.
			off := int64(0)
			version := 0
			batch := func(txs int) []schema.Record {
				var recs []schema.Record
				for i := 0; i < txs; i++ {
					version++
					for k := int64(1); k <= 3; k++ {
						r := cUpd(table, k, k, "?", fmt.Sprintf("v%02d", version))
						r.Delivery, r.ID = deliveredAt(topic, 0, int64(off))
						r.Transaction = &schema.Transaction{ID: fmt.Sprintf("t%d", version)}
						if k == 3 {
							r.Position = []byte(fmt.Sprintf("after t%d", version)) // transaction boundary
						}
						off++
						recs = append(recs, r)
					}
				}
				return recs
			}
			want := func(v int) {
				t.Helper()
				w := fmt.Sprintf("v%02d", v)
				if got := e.rows(t, table); len(got) != 3 || got[1] != w || got[2] != w || got[3] != w {
					t.Fatalf("transactional=%v: rows %v, want all %s", transactional, got, w)
				}
			}
			b1 := batch(5)
			write(t, open(), b1...)
			want(5)
			// Crash: redelivery of b1 alone to a fresh Sink.
			write(t, open(), b1...)
			want(5)
			// Crash again: b1's second half plus newer records.
			b2 := batch(3)
			write(t, open(), append(append([]schema.Record{}, b1[6:]...), b2...)...)
			want(8)
			// Redelivery out of any order the transport would make: old
			// records after the new ones are still skipped.
			s := open()
			write(t, s, b2...)
			write(t, s, b1...)
			want(8)
		}
	})
}

// Two writers of one queue, as during a rebalance or with a consumer the
// runtime believes dead: B read the queue's progress, then A applied newer
// records, then B writes an older run of the same offsets. B must not
// write its older versions over A's: it finds the progress moved under its
// lock, filters its batch again and applies nothing of it.
func TestWriteStaleWriterIsFenced(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		a, b := e.open(t, nil), e.open(t, nil)
		at := func(off int64, v string) schema.Record {
			r := cUpd("fence", 1, 1, "?", v)
			r.Delivery, r.ID = deliveredAt("fence", 0, int64(off))
			return r
		}
		write(t, b, at(0, "v0")) // B knows the progress: 0
		if _, ok := b.progress.applied[progressKey{"fence", "", 0}]; !ok {
			t.Fatal("B did not keep the progress it committed: it would not be stale")
		}
		var newer []schema.Record
		for off := int64(1); off <= 10; off++ {
			newer = append(newer, at(off, fmt.Sprintf("v%d", off)))
		}
		write(t, a, newer...)
		write(t, b, newer[:5]...) // B, stale, with offsets 1..5 only
		if got := e.rows(t, "fence")[1]; got != "v10" {
			t.Fatalf("row 1 = %q after the stale writer, want v10: an older version was written over a newer one", got)
		}
		if off, ok := e.progress(t, "fence", 0); !ok || off != 10 {
			t.Fatalf("progress %d %v, want 10", off, ok)
		}
		write(t, b, at(11, "v11")) // B goes on from the real progress
		if got := e.rows(t, "fence")[1]; got != "v11" {
			t.Fatalf("row 1 = %q, want v11", got)
		}
	})
}
