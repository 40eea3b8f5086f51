package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// Sink applies change records to PostgreSQL or MySQL/MariaDB. It is safe for
// concurrent use: the runtime may call Write for several queues at once.
type Sink struct {
	backend
	progress *progress // what is applied per queue, and the fence (progress.go)
	catalog  *catalog  // the target tables as the sink knows them, and their evolution (tables.go)
	applier  *applier  // writes a plan's rows inside a transaction (apply.go)

	bar barrierState // wakes copies of a barrier waiting here (barrier.go)

	mu     sync.Mutex
	closed bool

	// defaultSchema is the connection's default schema (PostgreSQL) or
	// database (MySQL): where the control tables are.
	defaultSchema string
	mapped        sync.Map // schema.TableID -> error (nil: maps onto no control table)

	// testHook, when set by tests, runs at named stages inside Write's
	// transaction ("applied": after the data statements, before progress).
	testHook func(ctx context.Context, stage string, tx *txn) error
}

// New connects to the target, verifies it and creates the progress table.
// For MySQL the DSN is adjusted so the session time zone is UTC: zoned
// timestamps are written as UTC wall clock.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Sink, error) {
	if err := cfg.normalize(); err != nil {
		return nil, fatal(err)
	}
	if err := CheckDSN(cfg.Dialect, cfg.DSN); err != nil {
		return nil, fatal(err)
	}
	if log == nil {
		log = slog.Default()
	}
	d, err := newDialect(&cfg)
	if err != nil {
		return nil, fatal(err)
	}
	db, err := connect(ctx, d, &cfg)
	if err != nil {
		return nil, err
	}
	b := backend{cfg: &cfg, db: db, d: d, log: log.With("component", "sink", "dialect", cfg.Dialect)}
	cat := newCatalog(b)
	s := &Sink{backend: b, progress: newProgress(b), catalog: cat, applier: newApplier(b, cat)}
	if s.defaultSchema, err = d.Verify(ctx, db.DB, cfg.ProgressTable); err != nil {
		db.Close()
		return nil, wrapDB(err)
	}
	if msg, err := d.Durability(ctx, db.DB); err != nil {
		s.log.Warn("sink: cannot tell whether the target's commits are durable", "err", err)
	} else if msg != "" {
		s.log.Warn("sink: the target's commits are not durable: " + msg)
	}
	if err := s.progress.create(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.createBarrierTables(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.catalog.createRegistry(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if s.d.TableIdentity(target{Table: "t"}) == "" {
		s.log.Warn("target tables' identities are unreadable (MySQL and MariaDB: grant the sink's user PROCESS): a table truncated behind the sink will not be noticed")
	}
	if err := s.progress.prepare(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Durability connects to cfg's target and says what makes its commits not
// durable when acknowledged ("" when they are, or when the sink makes them
// so: dialect.Conn.Durability), for `sluice check`. It creates nothing.
func Durability(ctx context.Context, cfg Config) (string, error) {
	if err := cfg.normalize(); err != nil {
		return "", fatal(err)
	}
	d, err := newDialect(&cfg)
	if err != nil {
		return "", fatal(err)
	}
	db, err := connect(ctx, d, &cfg)
	if err != nil {
		return "", err
	}
	defer db.Close()
	return d.Durability(ctx, db.DB)
}

// Close releases the connection pool. It is safe to call more than once.
func (s *Sink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	_ = s.progress.close() // the pool's close says what matters
	return s.db.Close()
}

// Write applies recs in one database transaction and returns nil once it is
// committed. Records whose ID is at or below the last applied ID of their
// queue are skipped (as are replays inside recs); the progress table
// advances in the same transaction. On error nothing of recs is applied; errors that retrying
// cannot fix expose Fatal() bool returning true.
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

// SplitsQueues reports whether Write applies each queue of a batch in a
// transaction of its own (runtime.QueueSplitter): in transactional mode it
// does, so the runtime does not join queues' batches into one Write.
func (s *Sink) SplitsQueues() bool { return s.cfg.Transactional }

// maxFenceRetries bounds how often one Write refilters after another writer
// moved a queue's progress (each time it waited for that writer's lock).
const maxFenceRetries = 5

func (s *Sink) write(ctx context.Context, recs []schema.Record) error {
	if s.cfg.SchemaChanges == SchemaChangesIgnore {
		s.catalog.warnIgnoredGenerated(recs)
	}
	if s.cfg.Transactional {
		return s.writeTransactional(ctx, recs)
	}
	if !s.relevant(recs) {
		return nil
	}
	recs, err := s.undelivered(ctx, recs)
	if err != nil {
		return err
	}
	for _, st := range s.steps(recs) {
		if st.barrier != nil {
			err = s.passBarrier(ctx, st.barrier)
		} else if st.ddl != nil {
			err = s.applySchemaChange(ctx, st.ddl)
		} else {
			err = s.applyData(ctx, st.recs, nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// undelivered drops the records already applied per the progress of their
// queues, and refuses a schema change under SchemaChanges "fail".
func (s *Sink) undelivered(ctx context.Context, recs []schema.Record) ([]schema.Record, error) {
	if err := s.checkControl(recs); err != nil {
		return nil, err
	}
	last, err := s.progress.lastApplied(ctx, recs)
	if err != nil {
		return nil, err
	}
	if recs, _, err = filterDelivered(recs, last); err != nil {
		return nil, err
	}
	if s.cfg.SchemaChanges == SchemaChangesFail {
		for i := range recs {
			if r := &recs[i]; r.Op == schema.OpSchemaChange {
				return nil, fatal(fmt.Errorf("%w: %s (set schema_changes: %s or %s in the sink config to go on)", ErrSchemaChange, describeDDL(r), SchemaChangesIgnore, SchemaChangesApply))
			}
		}
	}
	return recs, nil
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

// maxRowErrors bounds the rows one Write may leave out under OnError "skip"
// or "dlq"; more means something is wrong with the table, not with rows.
const maxRowErrors = 10000

// applyData reduces and applies a run of records in one transaction,
// retrying once with fresh metadata when the target changed behind the
// cache. Under OnError "skip" and "dlq", rows the target rejects for good
// are left out and the rest is applied again from scratch (the failed
// transaction applied nothing).
func (s *Sink) applyData(ctx context.Context, recs []schema.Record, extra *txExtra) error {
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
		err := s.applyOnce(ctx, recs, maxOff, opts, extra)
		if err != nil && uniqueViolation(err) && ctx.Err() == nil {
			s.log.Info("unique violation applying the reduced batch; applying it in source order", "records", len(recs), "err", err)
			err = s.applyInOrder(ctx, recs, maxOff, opts, extra)
		}
		var re *rowError
		if err == nil || s.cfg.OnError == OnErrorFail || !errors.As(err, &re) || !isFatal(err) || ctx.Err() != nil {
			return err
		}
		for _, b := range re.rows {
			if excluded[b.rec] {
				return err // left out already and still failing: not a row problem
			}
			if len(excluded) >= maxRowErrors {
				return fmt.Errorf("sink: more than %d rejected rows in one batch, giving up (check the target table): %w", maxRowErrors, err)
			}
			if err := s.leaveOut(ctx, b); err != nil {
				return err
			}
			excluded[b.rec] = true
		}
	}
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

func (s *Sink) applyOnce(ctx context.Context, recs []schema.Record, maxOff map[progressKey]schema.ID, opts reduceOpts, extra *txExtra) error {
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
	err = s.applyWith(ctx, p, maxOff, extra.fn())
	if err != nil && staleMeta(err) && ctx.Err() == nil {
		// A table or column vanished behind the cached metadata (dropped or
		// altered by someone else): the failed transaction applied nothing,
		// so try once more with metadata read afresh.
		s.log.Warn("target table changed behind the sink; retrying with fresh metadata", "err", err)
		err = s.applyWith(ctx, p, maxOff, extra.fn())
	}
	return err
}

// staleMeta reports errors that fresh table metadata may cure: undefined
// table or column.
func staleMeta(err error) bool {
	c := explainErr(err).Cond
	return c == dialect.CondUndefinedTable || c == dialect.CondUndefinedColumn
}

// apply runs a reduced plan: DDL first, then one transaction.
func (s *Sink) apply(ctx context.Context, p *plan, maxOff map[progressKey]schema.ID) error {
	return s.applyWith(ctx, p, maxOff, nil)
}

// applyWith is apply with extra work done inside the transaction, before
// the progress rows.
func (s *Sink) applyWith(ctx context.Context, p *plan, maxOff map[progressKey]schema.ID, extra func(tx *txn) error) error {
	views, err := s.catalog.prepareTables(ctx, p)
	if err != nil {
		s.catalog.forgetTables(p)
		return err
	}
	committing := false
	err = s.inTx(ctx, func(tx *txn) error {
		var written []target
		for i, tp := range p.tables {
			if views[i] != nil {
				written = append(written, tp.target)
			}
		}
		if err := s.catalog.checkIdentities(ctx, tx, written); err != nil {
			return err
		}
		fenced, err := s.progress.lock(ctx, tx, maxOff)
		if err != nil {
			return err
		}
		for i, tp := range p.tables {
			if views[i] == nil || p.inOrder != nil {
				continue // table absent and nothing to write into it, or applied record by record below
			}
			if err := s.applier.applyTable(ctx, tx, tp, views[i]); err != nil {
				return err
			}
		}
		if err := s.applier.applyInOrderIn(ctx, tx, p, views); err != nil {
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
		if err := s.progress.saveFenced(ctx, tx, maxOff, fenced); err != nil {
			return err
		}
		committing = true
		return nil
	})
	var moved *progressMoved
	if errors.As(err, &moved) {
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

func isFatal(err error) bool {
	var f interface{ Fatal() bool }
	return errors.As(err, &f) && f.Fatal()
}

// ---- errors from the database ----

// dbError carries a driver error with the sink's verdict on retrying. It
// stops errors.As at this level: lib/pq's *Error has its own Fatal method
// meaning "severity FATAL" (a terminated connection, which is retriable).
type dbError struct {
	err      error
	terminal bool
}

func (e dbError) Error() string { return e.err.Error() }
func (e dbError) Unwrap() error { return e.err }
func (e dbError) Fatal() bool   { return e.terminal }

func wrapDB(err error) error {
	if err == nil {
		return nil
	}
	var f fatalError
	if errors.As(err, &f) {
		return err
	}
	return dbError{err: err, terminal: permanentDBError(err)}
}

// permanentDBError reports errors that the same statement would hit again:
// bad data, constraint violations, syntax, missing privileges.
func permanentDBError(err error) bool {
	return explainErr(err).Class == schema.ClassFatal
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
