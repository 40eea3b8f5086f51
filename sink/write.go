package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// The write path. Write filters a batch against each queue's progress
// (undelivered) and cuts it into steps (steps): runs of data, schema
// changes, barriers. A run of data is applied in one transaction, in four
// steps:
//
//  1. reduce: the run becomes a plan, at most one change per key (applyOnce);
//  2. apply: the catalog makes the plan's tables ready, and inside the
//     transaction the fence checks that nothing moved behind the sink and
//     the applier writes the rows (applyWith);
//  3. record progress: the queues' progress rows move in the same
//     transaction (progress.record);
//  4. commit, after which the caches follow how it ended (settle).
//
// Each part owns its state and lock: progress (progress.go), catalog
// (tables.go), applier (apply.go). Sink orders their calls; it keeps only
// the guard against control tables (control.go), the barriers' wake-ups
// (barrier.go) and whether it is closed.

// Write applies recs in one database transaction and returns nil once it is
// committed. Records whose ID is at or below the last applied ID of their
// queue are skipped (as are replays inside recs); the progress table
// advances in the same transaction. On error nothing of recs is applied;
// errors that retrying cannot fix are classified fatal (schema.ClassOf),
// the others retriable.
func (s *Sink) Write(ctx context.Context, recs []schema.Record) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fatal(ErrClosed)
	}
	for attempt := 1; ; attempt++ {
		err := s.write(ctx, recs)
		var moved *progressMoved
		if !errors.As(err, &moved) || attempt == maxFenceRetries {
			return err
		}
		if moved.gone {
			s.log.Warn("the queue's progress row is gone (deleted by hand, or lost in a crash of the target): applying the batch as the queue's first", "queue", moved.k.String())
			continue
		}
		s.log.Warn("another writer applied this queue meanwhile; filtering the batch again", "queue", moved.k.String(), "progress", moved.id.String())
	}
}

// maxFenceRetries bounds how often one Write refilters after another writer
// moved a queue's progress (each time it waited for that writer's lock).
const maxFenceRetries = 5

func (s *Sink) write(ctx context.Context, recs []schema.Record) error {
	recs, err := s.routeColumns(recs)
	if err != nil {
		return err
	}
	// Before the relevance test: a batch of schema changes applies nothing
	// under schema_changes ignore, but its renames move route claims.
	if err := s.checkControl(recs); err != nil {
		return err
	}
	if s.cfg.SchemaChanges == SchemaChangesIgnore {
		s.catalog.warnIgnoredGenerated(recs)
	}
	if s.cfg.Transactional {
		return s.writeTransactional(ctx, recs)
	}
	if !s.relevant(recs) {
		return nil
	}
	recs, from, err := s.undelivered(ctx, recs)
	if err != nil {
		return err
	}
	for _, st := range s.steps(recs) {
		if err = s.applyStep(ctx, st, nil, from); err != nil {
			return err
		}
	}
	return nil
}

// applyStep applies st (with extra, for a data step) and moves from past
// it.
func (s *Sink) applyStep(ctx context.Context, st step, extra *txExtra, from filtered) error {
	switch {
	case st.barrier != nil:
		if err := s.passBarrier(ctx, st.barrier); err != nil {
			return err
		}
		from.advance(offsetsOf([]schema.Record{*st.barrier}))
	case st.ddl != nil:
		if err := s.applySchemaChange(ctx, st.ddl); err != nil {
			return err
		}
		from.advance(offsetsOf([]schema.Record{*st.ddl}))
	default:
		return s.applyData(ctx, st.recs, extra, from)
	}
	return nil
}

// filtered is the progress a Write filtered its records against, per queue
// (absent: none), moved on by each step it committed since: the progress
// the next step's transaction must find (progress.fence). Not the cache of
// applied IDs: another Write of the same queue in this Sink (two process
// queues of one queue after a rebalance) moves that, and a step filtered
// against less would then write its older records over what that Write
// applied, and move the queue's progress back (issue #27).
type filtered map[progressKey]schema.ID

// advance moves f to the IDs of maxOff, a step committed.
func (f filtered) advance(maxOff map[progressKey]schema.ID) {
	for k, id := range maxOff {
		if cur, ok := f[k]; !ok || id.Compare(cur) > 0 {
			f[k] = id
		}
	}
}

// undelivered drops the records already applied per the progress of their
// queues, which it returns, and refuses a schema change under SchemaChanges
// "fail".
func (s *Sink) undelivered(ctx context.Context, recs []schema.Record) ([]schema.Record, filtered, error) {
	last, err := s.progress.lastApplied(ctx, recs)
	if err != nil {
		return nil, nil, err
	}
	if recs, _, err = filterDelivered(recs, last); err != nil {
		return nil, nil, err
	}
	if s.cfg.SchemaChanges == SchemaChangesFail {
		for i := range recs {
			if r := &recs[i]; r.Op == schema.OpSchemaChange {
				return nil, nil, fatal(fmt.Errorf("%w: %s (set schema_changes: %s or %s in the sink config to go on)", ErrSchemaChange, describeDDL(r), SchemaChangesIgnore, SchemaChangesApply))
			}
		}
	}
	return recs, last, nil
}

// relevant reports whether recs hold anything to apply: data, or schema
// changes when they are not ignored.
func (s *Sink) relevant(recs []schema.Record) bool {
	for i := range recs {
		if recs[i].Op.IsData() || (recs[i].Op == schema.OpSchemaChange && s.cfg.SchemaChanges != SchemaChangesIgnore) {
			return true
		}
	}
	return false
}

// step is a run of data records applied in one transaction, one schema
// change, or one copy of a barrier (barrier.go).
type step struct {
	recs    []schema.Record
	ddl     *schema.Record
	barrier *schema.Record
}

// steps cuts recs at barriers, and at schema changes when they are applied:
// each is a step between the data before and after it. Otherwise recs is
// one step.
func (s *Sink) steps(recs []schema.Record) []step {
	var out []step
	start := 0
	for i := range recs {
		r := &recs[i]
		barrier := s.isBarrierStep(r)
		if !barrier && (r.Op != schema.OpSchemaChange || s.cfg.SchemaChanges != SchemaChangesApply) {
			continue
		}
		if i > start {
			out = append(out, step{recs: recs[start:i]})
		}
		if barrier {
			out = append(out, step{barrier: r})
		} else {
			out = append(out, step{ddl: r})
		}
		start = i + 1
	}
	if start < len(recs) || len(out) == 0 {
		out = append(out, step{recs: recs[start:]})
	}
	return out
}

// applyData reduces and applies a run of records in one transaction,
// retrying once with fresh metadata when the target changed behind the
// cache. Under OnError "skip" and "dlq", rows the target rejects for good
// are left out and the rest is applied again from scratch (the failed
// transaction applied nothing).
func (s *Sink) applyData(ctx context.Context, recs []schema.Record, extra *txExtra, from filtered) error {
	maxOff := offsetsOf(recs)
	if extra != nil {
		for k, off := range extra.offsets {
			if m, ok := maxOff[k]; !ok || off.Compare(m) > 0 {
				maxOff[k] = off
			}
		}
	}
	excluded := map[*schema.Record]bool{}
	opts := reduceOpts{keylessAppend: s.cfg.KeylessMode == KeylessAppend, keylessFail: s.cfg.KeylessMode == KeylessFail}
	if s.cfg.OnError != OnErrorFail {
		opts.skip = func(r *schema.Record) bool { return excluded[r] }
	}
	for {
		err := s.applyOnce(ctx, recs, maxOff, opts, extra, from)
		if err != nil && uniqueViolation(err) && ctx.Err() == nil {
			s.log.Info("unique violation applying the reduced batch; applying it in source order", "records", len(recs), "err", err)
			err = s.applyInOrder(ctx, recs, maxOff, opts, extra, from)
		}
		if err == nil {
			s.countLeftOut(len(excluded))
			from.advance(maxOff)
			return nil
		}
		var re *rowError
		if s.cfg.OnError == OnErrorFail || !errors.As(err, &re) || !isFatal(err) || ctx.Err() != nil {
			return err
		}
		for _, b := range re.rows {
			if excluded[b.rec] {
				return err // left out already and still failing: not a row problem
			}
			if len(excluded) >= maxRowErrors {
				return schema.Wrapf("sink", err, "more than %d rejected rows in one batch, giving up (check the target table)", maxRowErrors)
			}
			if err := s.leaveOut(ctx, b); err != nil {
				return err
			}
			excluded[b.rec] = true
		}
	}
}

// maxRowErrors bounds the rows one Write may leave out under OnError "skip"
// or "dlq"; more means something is wrong with the table, not with rows.
const maxRowErrors = 10000

// countLeftOut counts n rows left out of a batch that was then applied.
func (s *Sink) countLeftOut(n int) {
	switch {
	case n == 0:
	case s.cfg.OnError == OnErrorSkip:
		s.skipped.Add(int64(n))
	default:
		s.deadLettered.Add(int64(n))
	}
}

// LeftOut returns the rows the target rejected for good that were left out
// of applied batches: logged and skipped (OnError "skip"), or handed to
// DeadLetter (OnError "dlq"). A row of a batch that failed anyway counts
// when its redelivery is applied.
func (s *Sink) LeftOut() (skipped, deadLettered int64) {
	return s.skipped.Load(), s.deadLettered.Load()
}

// leaveOut logs a rejected row (OnError "skip") or hands it to DeadLetter
// (OnError "dlq").
func (s *Sink) leaveOut(ctx context.Context, b badRow) error {
	key := recKey(b.rec)
	if s.cfg.OnError == OnErrorSkip {
		s.log.Warn("row rejected by the target; skipped", "table", b.table.String(), "key", key, "op", b.rec.Op.String(), "err", b.err)
		return nil
	}
	if err := s.cfg.DeadLetter(ctx, *b.rec, b.err); err != nil {
		return fmt.Errorf("sink: dead-letter row of %s, key %s: %w", b.table, key, err)
	}
	s.log.Info("row rejected by the target; sent to the dead-letter callback", "table", b.table.String(), "key", key, "err", b.err)
	return nil
}

func (s *Sink) applyOnce(ctx context.Context, recs []schema.Record, maxOff map[progressKey]schema.ID, opts reduceOpts, extra *txExtra, from filtered) error {
	p, err := reduceWith(recs, s.cfg.target, opts)
	if err != nil {
		return err // ErrSchema and ErrValue say "sink:" already
	}
	for _, tp := range p.tables {
		if tp.keylessSkipped > 0 {
			s.log.Warn("table has no primary key: updates and deletes skipped (keyless_mode: append)", "table", tp.target.String(), "skipped", tp.keylessSkipped)
		}
	}
	if len(p.tables) == 0 && len(maxOff) == 0 && extra == nil {
		return nil
	}
	err = s.applyWith(ctx, p, maxOff, extra.fn(), from)
	if err != nil && staleMeta(err) && ctx.Err() == nil {
		// A table or column vanished behind the cached metadata (dropped or
		// altered by someone else): the failed transaction applied nothing,
		// so try once more with metadata read afresh.
		s.log.Warn("target table changed behind the sink; retrying with fresh metadata", "err", err)
		err = s.applyWith(ctx, p, maxOff, extra.fn(), from)
	}
	return err
}

// staleMeta reports errors that fresh table metadata may cure: undefined
// table or column.
func staleMeta(err error) bool {
	c := explainErr(err).Cond
	return c == dialect.CondUndefinedTable || c == dialect.CondUndefinedColumn
}

// applyWith applies a reduced plan and records its progress, maxOff, in
// one transaction: the plan's tables made ready first (their DDL runs
// outside the data transaction: MySQL commits implicitly on DDL), then
// inside the transaction the fence, the rows, extra (transactional mode's
// pending records), the progress, and the commit.
func (s *Sink) applyWith(ctx context.Context, p *plan, maxOff map[progressKey]schema.ID, extra func(tx *txn) error, from filtered) error {
	views, err := s.catalog.prepareTables(ctx, p)
	if err != nil {
		s.catalog.forgetTables(p)
		return err
	}
	committing := false
	err = s.inTx(ctx, func(tx *txn) error {
		fenced, err := s.fence(ctx, tx, p, views, maxOff, from)
		if err != nil {
			return err
		}
		if err := s.applier.apply(ctx, tx, p, views); err != nil {
			return err
		}
		if extra != nil {
			if err := extra(tx); err != nil {
				return err
			}
		}
		if s.testHook != nil {
			if err := s.testHook(ctx, "applied", tx); err != nil {
				return err
			}
		}
		if err := s.progress.record(ctx, tx, maxOff, fenced); err != nil {
			return err
		}
		committing = true
		return nil
	})
	return s.settle(ctx, p, maxOff, err, committing)
}

// fence checks, first in the transaction, that nothing moved behind the
// sink: the tables the plan writes are those it wrote before (the table
// registry), and no other writer applied the queues since this Sink read
// their progress, from (progress.fence, whose result goes to
// progress.record).
func (s *Sink) fence(ctx context.Context, tx *txn, p *plan, views []*tableView, maxOff map[progressKey]schema.ID, from filtered) (map[progressKey]schema.ID, error) {
	var written []target
	for i, tp := range p.tables {
		if views[i] != nil {
			written = append(written, tp.target)
		}
	}
	if err := s.catalog.checkIdentities(ctx, tx, written); err != nil {
		return nil, err
	}
	return s.progress.fence(ctx, tx, maxOff, from)
}

// settle brings the caches in line with how applyWith's transaction ended
// (err; committing: it failed at or after the commit, whose outcome is
// unknown) and returns the error to report.
func (s *Sink) settle(ctx context.Context, p *plan, maxOff map[progressKey]schema.ID, err error, committing bool) error {
	var moved *progressMoved
	if errors.As(err, &moved) {
		// Another writer applied this queue meanwhile: Write refilters the
		// batch from its progress.
		s.progress.moved(moved)
		return err
	}
	if err != nil && !committing {
		err = s.applier.diagnose(ctx, err)
	}
	if err != nil {
		if committing {
			// The commit may have happened: read the progress again next time.
			s.progress.forget(maxOff)
		}
		s.catalog.forgetTables(p)
		return err
	}
	s.progress.note(maxOff)
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.Debug("applied", "tables", len(p.tables), "queues", len(maxOff))
	}
	return nil
}

// txExtra is work a data step's transaction does besides the rows (the
// pending records of transactional mode) and the offsets it saves with them.
type txExtra struct {
	run     func(tx *txn) error
	offsets map[progressKey]schema.ID
}

func (x *txExtra) fn() func(tx *txn) error {
	if x == nil {
		return nil
	}
	return x.run
}

// offsetsOf returns the highest ID per queue of the delivered changes in
// recs: the progress their transaction saves.
func offsetsOf(recs []schema.Record) map[progressKey]schema.ID {
	out := map[progressKey]schema.ID{}
	// A queue's records come in runs: one map update a run.
	var (
		cur   progressKey
		top   schema.ID
		inRun bool
	)
	for i := range recs {
		r := &recs[i]
		if !counts(r) {
			continue
		}
		if k := deliveryKey(r.Delivery); !inRun || k != cur {
			if inRun {
				out[cur] = top
			}
			cur, inRun = k, true
			top = out[k] // zero when absent: below every ID
		}
		if r.ID.Compare(top) > 0 {
			top = r.ID
		}
	}
	if inRun {
		out[cur] = top
	}
	return out
}

// applySchemaChange applies one schema-change record (SchemaChanges
// "apply") that is not a barrier (one without a table: the transport did
// not copy it to every queue) and saves its progress in the same
// transaction.
func (s *Sink) applySchemaChange(ctx context.Context, r *schema.Record) error {
	maxOff := offsetsOf([]schema.Record{*r})
	var changed []target
	err := s.inTx(ctx, func(tx *txn) error {
		var err error
		if changed, err = s.catalog.schemaChangeIn(ctx, tx, r); err != nil {
			return err
		}
		return s.progress.save(ctx, tx, maxOff)
	})
	s.catalog.forgetTargets(changed)
	if err != nil {
		s.progress.forget(maxOff)
		return err
	}
	s.progress.note(maxOff)
	return nil
}
