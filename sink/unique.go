package sink

import (
	"context"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// Unique constraints besides the key. A batch is applied reduced (the last
// image of each key) and sorted by key, which is the same final state as
// the source's order for the key but not for other unique columns: a
// transaction that swaps two rows' values of a UNIQUE column through a
// temporary value, which the source accepted, violates the constraint when
// the final images are written in key order. So when the reduced form
// fails with a unique violation, the batch is applied again, in one
// transaction, record by record in source order (a queue's order is the
// source's order); only if that fails too is the violation the target's
// own (a constraint the source does not have) and reported.

// uniqueViolation reports a unique-constraint violation of the target
// (PostgreSQL 23505, MySQL 1062).
func uniqueViolation(err error) bool {
	return errIs(err, dialect.CondUniqueViolation)
}

// applyInOrder is applyOnce without reduction: one change after the other
// in the order of recs, in one transaction with the progress.
func (s *Sink) applyInOrder(ctx context.Context, recs []schema.Record, maxOff map[progressKey]schema.ID, opts reduceOpts, extra *txExtra, from filtered) error {
	p, err := reduceWith(recs, s.cfg.target, opts) // the tables to prepare, with their newest schemas
	if err != nil {
		return err
	}
	for i := range recs {
		one, err := reduceWith(recs[i:i+1], s.cfg.target, opts)
		if err != nil {
			return err
		}
		p.inOrder = append(p.inOrder, one.tables...)
	}
	return s.applyWith(ctx, p, maxOff, extra.fn(), from)
}
