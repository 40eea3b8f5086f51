package sink

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// Barriers: TRUNCATE and schema changes of a table (schema.Record.IsBarrier).
//
// The transport delivers a copy of a barrier to every queue of its table's
// topic, each carrying the number of copies (schema.HeaderBarrierCopies).
// Rows of one table are spread over those queues, so the barrier may take
// effect only once every queue has applied the rows before it, and no
// queue may apply rows after it before it took effect. A copy reaching a
// sink (what precedes it on its queue is committed by then) records its
// arrival in the arrivals table, in the target, and waits. The copy that
// finds all arrivals there applies the TRUNCATE or DDL and marks the
// barrier applied, in one transaction that holds the barrier's row lock;
// then every copy moves its queue's progress past itself and its queue goes
// on. Waiting holds no lock: copies poll the tables (sooner when a copy in
// this process moved), so the copies may be spread over sink processes
// sharing a consumer group, and a restart anywhere resumes the protocol
// from the tables. An applied barrier stays marked, so a copy redelivered
// after it was applied passes without applying it again.

// barrierState wakes the copies waiting in this Sink when one of them moved.
type barrierState struct {
	mu    sync.Mutex
	moved chan struct{}
}

func (b *barrierState) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.moved == nil {
		b.moved = make(chan struct{})
	}
	return b.moved
}

func (b *barrierState) kick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.moved != nil {
		close(b.moved)
		b.moved = nil
	}
}

// Polling of a waiting copy: from barrierPollMin, doubling to barrierPollMax.
const (
	barrierPollMin = 2 * time.Millisecond
	barrierPollMax = 200 * time.Millisecond
	// barrierWarnEvery: a copy waiting this long says so, and again after
	// each such stretch.
	barrierWarnEvery = 30 * time.Second
)

// barrierTables names the control tables of barriers, beside the progress
// table.
func (s *Sink) barrierTables() (barriers, arrivals string) {
	return s.cfg.ProgressTable + "_barriers", s.cfg.ProgressTable + "_barrier_arrivals"
}

func (s *Sink) barrierDDL() []string {
	b, a := s.barrierTables()
	return s.d.BarrierDDL(b, a)
}

// createBarrierTables makes the control tables (at New).
func (s *Sink) createBarrierTables(ctx context.Context) error {
	b, a := s.barrierTables()
	for i, q := range s.barrierDDL() {
		name := []string{b, a}[min(i, 1)]
		if err := createTable(ctx, s.db.DB, q, s.d.Quote(name)); err != nil {
			return fmt.Errorf("sink: create barrier table %s: %w", name, wrapDB(err))
		}
	}
	return nil
}

// isBarrierStep reports whether r is applied as a barrier: a TRUNCATE
// always, a table's schema change when schema changes are applied.
func (s *Sink) isBarrierStep(r *schema.Record) bool {
	return r.IsBarrier() && (r.Op == schema.OpTruncate || s.cfg.SchemaChanges == SchemaChangesApply)
}

// barrierCopies is the number of copies of r the transport made; 1 when it
// says nothing (a direct caller): the barrier is then complete at once.
func barrierCopies(r *schema.Record) (int, error) {
	h, ok := r.Headers[schema.HeaderBarrierCopies]
	if !ok {
		return 1, nil
	}
	n, err := strconv.Atoi(h)
	if err != nil || n < 1 {
		return 0, fatal(fmt.Errorf("%w: %s record of %s has header %s=%q, not a positive count: the transport that wrote it is not sluice's", ErrSchema, r.Op, r.Table, schema.HeaderBarrierCopies, h))
	}
	return n, nil
}

// passBarrier handles one copy of a barrier: records its arrival, waits for
// the others, applies the barrier when it completes the set, and moves the
// queue's progress past the copy. Everything before it on its queue is
// committed already. It returns once the barrier has taken effect, or with
// ctx's error (the copy is redelivered and waits again).
func (s *Sink) passBarrier(ctx context.Context, r *schema.Record) error {
	copies, err := barrierCopies(r)
	if err != nil {
		return err
	}
	key := schema.BarrierKey(r)
	sum := sha256.Sum256([]byte(key))
	id := hex.EncodeToString(sum[:])
	var topic, broker string
	queue := -1
	if d := r.Delivery; d != nil {
		topic, broker, queue = d.Topic, d.Broker, d.Queue
	}
	b, a := s.barrierTables()
	qb, qa := s.d.Quote(b), s.d.Quote(a)
	p := s.d.Placeholder
	// The barrier's row exists before any transaction locks it: two first
	// inserters of one key inside transactions deadlock on MySQL.
	if _, err := s.db.ExecContext(ctx, s.d.InsertIgnore(b, []string{"pipeline", "barrier", "description", "copies"}),
		s.cfg.Pipeline, id, key, copies); err != nil {
		return fmt.Errorf("sink: record barrier %s: %w", key, wrapDB(err))
	}
	maxOff := offsetsOf([]schema.Record{*r})
	lock := "SELECT applied FROM " + qb + " WHERE pipeline = " + p(1) + " AND barrier = " + p(2) + " FOR UPDATE"
	arrive := s.d.InsertIgnore(a, []string{"pipeline", "barrier", "topic", "broker", "queue"})
	count := "SELECT count(*) FROM " + qa + " WHERE pipeline = " + p(1) + " AND barrier = " + p(2)
	now := s.d.CurrentTimestamp("TIMESTAMP(6)")
	mark := "UPDATE " + qb + " SET applied = true, applied_at = " + now + " WHERE pipeline = " + p(1) + " AND barrier = " + p(2)
	drop := "DELETE FROM " + qa + " WHERE pipeline = " + p(1) + " AND barrier = " + p(2)

	// pass moves the queue's progress past the copy.
	pass := func(tx *txn) error {
		if s.testHook != nil {
			if err := s.testHook(ctx, "barrier passed", tx); err != nil {
				return err
			}
		}
		return s.progress.save(ctx, tx, maxOff)
	}
	delay := barrierPollMin
	began, warned := time.Now(), time.Now()
	// Once waiting, a copy looks without the lock (so that the copies of an
	// applied barrier pass at once, not one after the other) and takes it
	// only to pass an applied barrier or to apply a complete one.
	peek := "SELECT b.applied, (SELECT count(*) FROM " + qa + " a WHERE a.pipeline = " + p(1) + " AND a.barrier = " + p(2) + ") FROM " + qb +
		" b WHERE b.pipeline = " + p(3) + " AND b.barrier = " + p(4)
	for waited := false; ; waited = true {
		moved := s.bar.wait()
		passed := false // applied already: no lock needed to pass
		if waited {
			var done bool
			var n int
			err := s.db.QueryRowContext(ctx, peek, s.cfg.Pipeline, id, s.cfg.Pipeline, id).Scan(&done, &n)
			if err == nil && !done && n < copies {
				if time.Since(warned) >= barrierWarnEvery {
					warned = time.Now()
					s.log.Warn("barrier still waiting for copies from other queues: every queue of the topics of the tables it names must be consumed by a sink of this group (transport.topics), and a killed sink's queues are handed over only once the broker expires its lock",
						"barrier", key, "arrived", n, "copies", copies, "waited", time.Since(began).Round(time.Second))
				}
				if err := barrierSleep(ctx, moved, &delay); err != nil {
					return fmt.Errorf("sink: stopped waiting for the other copies of barrier %s (%d copies): %w", key, copies, err)
				}
				continue
			}
			passed = err == nil && done
		}
		var changed []target
		applied, appliedHere := false, false
		err := s.inTx(ctx, func(tx *txn) error {
			if passed {
				applied = true
				return pass(tx)
			}
			var done bool
			if err := tx.QueryRowContext(ctx, lock, s.cfg.Pipeline, id).Scan(&done); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return fatal(fmt.Errorf("sink: barrier %s vanished from %s while in use: was the table cleared by hand? Restart to record it again", key, b))
				}
				return fmt.Errorf("sink: lock barrier %s: %w", key, wrapDB(err))
			}
			if !done {
				if _, err := tx.ExecContext(ctx, arrive, s.cfg.Pipeline, id, topic, broker, queue); err != nil {
					return fmt.Errorf("sink: record arrival of barrier %s from %s/%s/%d: %w", key, topic, broker, queue, wrapDB(err))
				}
				var n int
				if err := tx.QueryRowContext(ctx, count, s.cfg.Pipeline, id).Scan(&n); err != nil {
					return fmt.Errorf("sink: count arrivals of barrier %s: %w", key, wrapDB(err))
				}
				if n < copies {
					return nil // the others are still to come: commit the arrival, wait
				}
				var err error
				if changed, err = s.catalog.schemaChangeIn(ctx, tx, r); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, mark, s.cfg.Pipeline, id); err != nil {
					return fmt.Errorf("sink: mark barrier %s applied: %w", key, wrapDB(err))
				}
				if _, err := tx.ExecContext(ctx, drop, s.cfg.Pipeline, id); err != nil {
					return fmt.Errorf("sink: clear arrivals of barrier %s: %w", key, wrapDB(err))
				}
				appliedHere = true
			}
			applied = true
			return pass(tx)
		})
		s.catalog.forgetTargets(changed)
		if err != nil {
			s.progress.forget(maxOff)
			return err
		}
		if applied {
			s.progress.note(maxOff)
			s.bar.kick()
			if appliedHere {
				s.log.Debug("barrier applied", "barrier", key, "copies", copies)
			}
			if waited && r.Op == schema.OpSchemaChange {
				s.catalog.forgetAllTables() // another process may have changed the tables
			}
			return nil
		}
		if err := barrierSleep(ctx, moved, &delay); err != nil {
			return fmt.Errorf("sink: stopped waiting for the other copies of barrier %s (%d copies): %w", key, copies, err)
		}
	}
}

// barrierSleep waits for a copy here to move, or *delay (which grows), or
// ctx.
func barrierSleep(ctx context.Context, moved <-chan struct{}, delay *time.Duration) error {
	t := time.NewTimer(*delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-moved:
	case <-t.C:
		*delay = min(2**delay, barrierPollMax)
	}
	return nil
}
