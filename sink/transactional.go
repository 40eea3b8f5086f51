package sink

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"

	"github.com/sluicecdc/sluice/schema"
)

// Transaction-consistent mode (Config.Transactional).
//
// A source transaction must reach the target tables in one target
// transaction. Within one Write that is the normal behaviour; what this
// mode adds is a transaction that a transport batch cuts in two. The
// records of such a tail cannot be applied yet (the rest of their
// transaction is still to come), and they cannot be kept only in memory
// either: Write returning nil acknowledges them, and a crash would lose
// them. So the tail is stored in the target, in the pending table, in the
// same transaction that applies the complete part of the batch and moves
// the queue's progress past the tail. The next Write of that queue (or a new
// Sink after a crash) reads it back and applies it together with the rest
// of its transaction, deleting the pending row in that same transaction.

func init() {
	gob.Register(schema.Dec{})
}

// maxPendingRecords bounds a held-back tail: a transaction longer than
// this is applied in parts (and a warning says so) rather than growing
// memory and the pending row without bound.
const maxPendingRecords = 200_000

// noQueue keys records without Delivery (direct callers, tests).
var noQueue = progressKey{Topic: "", Queue: -1}

func queueOf(r *schema.Record) progressKey {
	if r.Delivery == nil {
		return noQueue
	}
	return deliveryKey(r.Delivery)
}

func encodePending(recs []schema.Record) ([]byte, error) {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(recs); err != nil {
		return nil, fatal(fmt.Errorf("%w: cannot store the records of an open transaction (%v): set transactional: false for this pipeline", ErrValue, err))
	}
	return b.Bytes(), nil
}

func decodePending(data []byte) ([]schema.Record, error) {
	var recs []schema.Record
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&recs); err != nil {
		return nil, fatal(fmt.Errorf("sink: pending records unreadable (%v): delete the row of the pending table to drop them, or restore it", err))
	}
	return recs, nil
}

// txID is the source transaction of a record; "" when it has none.
func txID(r *schema.Record) string {
	if r.Transaction == nil {
		return ""
	}
	return r.Transaction.ID
}

// openTail returns where the possibly unfinished last transaction of recs
// starts (len(recs) when none is open). A transaction is known finished
// when a record of another transaction or a commit marker follows it, when
// its last record carries a Position (sources set one only at transaction
// boundaries) or the transport's schema.HeaderTxEnd mark, or when it is a
// schema change.
func openTail(recs []schema.Record) int {
	n := len(recs)
	end := n - 1
	for end >= 0 && recs[end].Op.IsMarker() {
		if recs[end].Op == schema.OpCommit {
			return n
		}
		end--
	}
	if end < 0 {
		return n
	}
	last := &recs[end]
	id := txID(last)
	if id == "" || last.Position != nil || last.Op == schema.OpSchemaChange || last.Headers[schema.HeaderTxEnd] != "" {
		return n
	}
	start := end
	for start > 0 {
		p := &recs[start-1]
		if p.Op.IsMarker() {
			if p.Op == schema.OpCommit {
				break
			}
			start--
			continue
		}
		if txID(p) != id {
			break
		}
		start--
	}
	return start
}

// writeTransactional is Write in transactional mode: per queue, the held
// records first, then the new ones; everything up to the last finished
// transaction is applied, the open tail is stored in the pending table, in
// the same transaction as the progress that covers it.
func (s *Sink) writeTransactional(ctx context.Context, recs []schema.Record) error {
	recs, from, err := s.undelivered(ctx, recs)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return nil
	}
	// Split by queue, keeping order (a batch normally holds one queue: then
	// without copying).
	first := queueOf(&recs[0])
	single := true
	for i := range recs {
		if queueOf(&recs[i]) != first {
			single = false
			break
		}
	}
	if single {
		if err := s.writeQueueTx(ctx, first, recs, from); err != nil {
			s.progress.dropHeld(first)
			return err
		}
		return nil
	}
	var order []progressKey
	byQueue := map[progressKey][]schema.Record{}
	for i := range recs {
		k := queueOf(&recs[i])
		if _, ok := byQueue[k]; !ok {
			order = append(order, k)
		}
		byQueue[k] = append(byQueue[k], recs[i])
	}
	for _, k := range order {
		if err := s.writeQueueTx(ctx, k, byQueue[k], from); err != nil {
			s.progress.dropHeld(k)
			return err
		}
	}
	return nil
}

func (s *Sink) writeQueueTx(ctx context.Context, k progressKey, recs []schema.Record, from filtered) error {
	held, err := s.progress.loadPending(ctx, k)
	if err != nil {
		return err
	}
	all := recs
	if len(held) > 0 {
		all = make([]schema.Record, 0, len(held)+len(recs))
		all = append(append(all, held...), recs...)
	}
	cut := openTail(all)
	if len(all)-cut > maxPendingRecords {
		s.log.Warn("source transaction longer than the pending limit: applied in parts", "queue", k.Topic, "records", len(all)-cut, "limit", maxPendingRecords)
		cut = len(all)
	}
	ready, tail := all[:cut], all[cut:]
	if !s.relevant(ready) && len(held) == 0 && len(tail) == 0 {
		return nil
	}
	// Offsets of the tail are saved with the pending row, in the last
	// transaction of this Write.
	tailOff := offsetsOf(tail)
	var data []byte
	if len(tail) > 0 {
		if data, err = encodePending(tail); err != nil {
			return err
		}
	}
	hadPending := len(held) > 0
	storeTail := func(tx *txn) error {
		if len(tail) > 0 {
			_, err := tx.ExecContext(ctx, s.progress.pendingSQL("upsert"), s.cfg.Pipeline, k.stored(), k.Queue, txID(&tail[len(tail)-1]), len(tail), data)
			if err != nil {
				return fmt.Errorf("sink: store pending records of %s: %w", k, wrapDB(err))
			}
		} else if hadPending {
			if _, err := tx.ExecContext(ctx, s.progress.pendingSQL("delete"), s.cfg.Pipeline, k.stored(), k.Queue); err != nil {
				return fmt.Errorf("sink: clear pending records of %s: %w", k, wrapDB(err))
			}
		}
		return nil
	}
	steps := s.steps(ready)
	if !s.relevant(ready) {
		steps = nil
	}
	// The held records lead the first step: its transaction consumes the
	// pending row (deleting it, or replacing it when that step is also the
	// last), so a failure later in this Write can never apply them twice.
	lastData := -1
	for i, st := range steps {
		if st.ddl == nil && st.barrier == nil {
			lastData = i
		}
	}
	doneTail := false
	for i, st := range steps {
		var extra *txExtra
		switch {
		case st.ddl != nil || st.barrier != nil: // no pending rows ride with them
		case i == lastData && i == len(steps)-1:
			extra = &txExtra{run: storeTail, offsets: tailOff}
			doneTail = true
		case i == 0 && hadPending:
			extra = &txExtra{run: func(tx *txn) error {
				_, err := tx.ExecContext(ctx, s.progress.pendingSQL("delete"), s.cfg.Pipeline, k.stored(), k.Queue)
				return wrapDB(err)
			}}
			hadPending = false
		}
		if err := s.applyStep(ctx, st, extra, from); err != nil {
			return err
		}
	}
	if !doneTail && (len(tail) > 0 || hadPending) {
		err := s.inTx(ctx, func(tx *txn) error {
			if err := storeTail(tx); err != nil {
				return err
			}
			return s.progress.save(ctx, tx, tailOff)
		})
		if err != nil {
			s.progress.forget(tailOff)
			return err
		}
		s.progress.note(tailOff)
	}
	s.progress.hold(k, append([]schema.Record(nil), tail...)) // the caller may reuse its slice
	return nil
}
