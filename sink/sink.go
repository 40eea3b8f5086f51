package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// Sink applies change records to PostgreSQL or MySQL/MariaDB. It is safe for
// concurrent use: the runtime may call Write for several queues at once.
type Sink struct {
	backend
	progress *progress // what is applied per queue, and the fence (progress.go)
	catalog  *catalog  // the target tables as the sink knows them, and their evolution (tables.go)

	bar barrierState // wakes copies of a barrier waiting here (barrier.go)

	mu     sync.Mutex
	closed bool

	// defaultSchema is the connection's default schema (PostgreSQL) or
	// database (MySQL): where the control tables are.
	defaultSchema string
	mapped        sync.Map // schema.TableID -> error (nil: maps onto no control table)

	stmts        sync.Map        // stmtKey -> statement text
	noDirectCopy map[target]bool // tables where a direct COPY met existing keys (under mu)
	noRowset     map[target]bool // tables whose rowset merge statement refused them (under mu)

	// stagingMerge, set by tests and benchmarks, merges through a staging
	// table even where the dialect has a RowsetMerger (copy.go).
	stagingMerge bool
	rowsetMerges atomic.Int64 // statements of the rowset merge run, for tests

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
	s := &Sink{backend: b, progress: newProgress(b), catalog: newCatalog(b)}
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
			if err := s.applyTable(ctx, tx, tp, views[i]); err != nil {
				return err
			}
		}
		if err := s.applyInOrderIn(ctx, tx, p, views); err != nil {
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
		err = s.diagnose(ctx, err)
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

// ---- applying ----

// rowGroup is a set of rows with the same columns, written by one statement
// shape.
type rowGroup struct {
	cols           []string
	keyCols        []string
	recs           []*schema.Record
	colSig, keySig string     // joined names, for the statement cache
	view           *tableView // the target's columns, for converting values
}

func groupRows(recs []*schema.Record, keyed bool, view *tableView) []*rowGroup {
	var groups []*rowGroup
	by := map[string]*rowGroup{}
	var lastSchema *schema.Schema
	var last *rowGroup
	for _, r := range recs {
		// Records decoded from a transport carry a schema each: compare
		// names, not pointers, before building a signature.
		if last != nil && (r.ValueSchema == lastSchema || sameNames(r.ValueSchema, last.cols)) && (!keyed || sameNames(r.KeySchema, last.keyCols)) {
			last.recs = append(last.recs, r)
			continue
		}
		var sig strings.Builder
		for _, f := range r.ValueSchema.Fields {
			sig.WriteString(strconv.Quote(f.Name))
		}
		if keyed {
			sig.WriteByte('|')
			for _, f := range r.KeySchema.Fields {
				sig.WriteString(strconv.Quote(f.Name))
			}
		}
		g, ok := by[sig.String()]
		if !ok {
			g = &rowGroup{cols: make([]string, len(r.ValueSchema.Fields)), view: view}
			for i, f := range r.ValueSchema.Fields {
				g.cols[i] = f.Name
			}
			if keyed {
				g.keyCols = keyColumns(r)
			}
			by[sig.String()] = g
			groups = append(groups, g)
		}
		g.recs = append(g.recs, r)
		last, lastSchema = g, r.ValueSchema
	}
	return groups
}

func sameNames(s *schema.Schema, names []string) bool {
	if len(s.Fields) != len(names) {
		return false
	}
	for i, f := range s.Fields {
		if f.Name != names[i] {
			return false
		}
	}
	return true
}

const maxStatementBytes = 8 << 20 // cut statements well below max_allowed_packet

// value converts v for column f of a table whose columns view describes:
// the dialect's conversion, and for a SET written into an array column
// (PostgreSQL TEXT[]) the array literal instead of the joined labels.
// Columns of older tables that hold SETs as text keep the joined labels.
func (s *Sink) value(view *tableView, f schema.Field, v any) (any, error) {
	out, err := s.d.Convert(f.Name, f.Schema, v)
	if err != nil || f.Schema.Logical != schema.Set || out == nil || !view.array(s.fold(f.Name)) {
		return out, err
	}
	str, ok := out.(string)
	if !ok {
		return nil, valueErr(f.Name, f.Schema, v, "want string")
	}
	return s.d.ArrayValue(str), nil
}

func (s *Sink) applyTable(ctx context.Context, tx *txn, tp *tablePlan, view *tableView) error {
	if tp.truncate != nil {
		if _, err := tx.ExecContext(ctx, s.d.Truncate(tp.target)); err != nil {
			return fmt.Errorf("sink: truncate %s: %w", tp.target, wrapDB(err))
		}
		if err := s.catalog.recordIdentity(ctx, tx, tp.target, false); err != nil {
			return err
		}
	}
	// Deletes, grouped by key columns.
	var dels []*change
	var ups []*schema.Record
	for _, c := range tp.sortedChanges() {
		if c.del {
			dels = append(dels, c)
		} else {
			ups = append(ups, c.rec)
		}
	}
	if err := s.applyDeletes(ctx, tx, tp.target, dels, view); err != nil {
		return err
	}
	for _, g := range groupRows(ups, true, view) {
		if err := s.writeRows(ctx, tx, tp.target, g, true); err != nil {
			return err
		}
	}
	return s.applyKeyless(ctx, tx, tp.target, tp.inserts, view)
}

// applyKeyless applies the rows of a table without key in source order:
// runs of inserts as multi-row INSERTs, each update and delete on one row
// equal to its before image (reduce checked it is complete).
func (s *Sink) applyKeyless(ctx context.Context, tx *txn, t target, recs []*schema.Record, view *tableView) error {
	for len(recs) > 0 {
		n := 0
		for n < len(recs) && recs[n].Op != schema.OpUpdate && recs[n].Op != schema.OpDelete {
			n++
		}
		for _, g := range groupRows(recs[:n], false, view) {
			if err := s.writeRows(ctx, tx, t, g, false); err != nil {
				return err
			}
		}
		if n == len(recs) {
			return nil
		}
		if err := s.applyByBeforeImage(ctx, tx, t, recs[n], view); err != nil {
			return err
		}
		recs = recs[n+1:]
	}
	return nil
}

// applyByBeforeImage updates or deletes one row of a table without key
// whose every column equals r's before image. A row not found (the target
// diverged from the source) is logged, not an error: there is nothing to
// change, and under redelivery the progress check has skipped r already.
func (s *Sink) applyByBeforeImage(ctx context.Context, tx *txn, t target, r *schema.Record, view *tableView) error {
	fields := r.ValueSchema.Fields
	match := make([]dialect.Match, len(fields))
	var set []string
	var args []any
	if r.Op == schema.OpUpdate {
		set = make([]string, len(fields))
		args = make([]any, 0, 2*len(fields))
		for j, f := range fields {
			set[j] = f.Name
			v, err := s.value(view, f, r.After[j])
			if err != nil {
				return newRowError(r, t, err, fmt.Sprintf("sink: update of %s (table without key)", t))
			}
			args = append(args, v)
		}
	}
	for j, f := range fields {
		match[j] = dialect.Match{Col: f.Name, Type: view.colType(s.fold(f.Name))}
		v, err := s.value(view, f, r.Before[j])
		if err != nil {
			return newRowError(r, t, err, fmt.Sprintf("sink: %s of %s (table without key), before image", r.Op, t))
		}
		args = append(args, v)
	}
	q := s.d.DeleteOne(t, match)
	if r.Op == schema.OpUpdate {
		q = s.d.UpdateOne(t, set, match)
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		werr := wrapDB(err)
		msg := fmt.Sprintf("sink: %s of %s (table without key)", r.Op, t)
		if isFatal(werr) {
			return newRowError(r, t, werr, msg)
		}
		return fmt.Errorf("%s: %w", msg, werr)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 && r.Op == schema.OpDelete {
		s.log.Warn("table without key: no target row equals the before image of a delete; nothing deleted (the target differs from the source)", "table", t.String())
	}
	return nil
}

func (s *Sink) writeRows(ctx context.Context, tx *txn, t target, g *rowGroup, upsert bool) error {
	if upsert && s.cfg.CopyThreshold > 0 && len(g.recs) >= s.cfg.CopyThreshold {
		if cp, ok := s.d.(dialect.Copier); ok {
			return s.copyUpsert(ctx, tx, cp, t, g)
		}
	}
	n := len(g.cols)
	per := s.cfg.BatchSize
	if m := s.d.MaxParams() / n; per > m {
		per = m
	}
	args := make([]any, 0, per*n)
	rows, size, first := 0, 0, 0
	flush := func() error {
		if rows == 0 {
			return nil
		}
		q := s.statement(t, g, rows, rows == per, upsert)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return s.rowsError(ctx, err, t, g, g.recs[first:first+rows], upsert)
		}
		args, rows, size = args[:0], 0, 0
		return nil
	}
	for i, r := range g.recs {
		if rows == 0 {
			first = i
		}
		for j, f := range r.ValueSchema.Fields {
			v, err := s.value(g.view, f, r.After[j])
			if err != nil {
				return newRowError(r, t, err, fmt.Sprintf("sink: table %s, key %s", t, recKey(r)))
			}
			size += approxSize(v)
			args = append(args, v)
		}
		rows++
		if rows >= per || size >= maxStatementBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

type stmtKey struct {
	t          target
	cols, keys string
	rows       int
	upsert     bool
}

// statement returns the INSERT or upsert text for rows rows of g, cached
// for full chunks only (the last chunk of a batch has any size).
func (s *Sink) statement(t target, g *rowGroup, rows int, full, upsert bool) string {
	if !full {
		if upsert {
			return s.d.Upsert(t, g.cols, g.keyCols, rows)
		}
		return insertSQL(s.d, t, g.cols, rows)
	}
	if g.colSig == "" {
		g.colSig = strings.Join(g.cols, "\x00")
		g.keySig = strings.Join(g.keyCols, "\x00")
	}
	k := stmtKey{t, g.colSig, g.keySig, rows, upsert}
	if q, ok := s.stmts.Load(k); ok {
		return q.(string)
	}
	var q string
	if upsert {
		q = s.d.Upsert(t, g.cols, g.keyCols, rows)
	} else {
		q = insertSQL(s.d, t, g.cols, rows)
	}
	s.stmts.Store(k, q)
	return q
}

// rowsError describes a failed multi-row statement. When the error is
// permanent (bad data, a constraint) it returns a *diagError: once the
// transaction is rolled back (its locks would block the replay), apply finds
// the offending rows by trying them one by one in a separate transaction
// that is rolled back too, so the error names the first one's key and
// carries them all (*rowError) for OnError "skip" and "dlq".
func (s *Sink) rowsError(ctx context.Context, err error, t target, g *rowGroup, recs []*schema.Record, upsert bool) error {
	werr := wrapDB(err)
	if !isFatal(werr) || ctx.Err() != nil {
		return fmt.Errorf("sink: write %d rows into %s (first key %s): %w", len(recs), t, recKey(recs[0]), werr)
	}
	return &diagError{t: t, g: g, recs: recs, upsert: upsert, err: werr}
}

// diagError is a permanent error of a multi-row statement whose offending
// row is still to be found.
type diagError struct {
	t      target
	g      *rowGroup
	recs   []*schema.Record
	upsert bool
	err    error
}

func (e *diagError) Error() string {
	return fmt.Sprintf("sink: write %d rows into %s (first key %s): %v", len(e.recs), e.t, recKey(e.recs[0]), e.err)
}
func (e *diagError) Unwrap() error { return e.err }

// diagnose replaces a *diagError (after its transaction is gone) by the
// error naming the offending rows.
func (s *Sink) diagnose(ctx context.Context, err error) error {
	var d *diagError
	if !errors.As(err, &d) || ctx.Err() != nil {
		return err
	}
	limit := 1
	if s.cfg.OnError != OnErrorFail {
		limit = maxDiagnoseRows
	}
	if bad := s.offendingRows(ctx, d.t, d.g, d.recs, d.upsert, limit); len(bad) > 0 {
		return &rowError{rows: bad, err: fmt.Errorf("sink: write into %s, key %s: %w", d.t, recKey(bad[0].rec), d.err)}
	}
	return fmt.Errorf("sink: write %d rows into %s (first key %s; no single row fails alone): %w", len(d.recs), d.t, recKey(d.recs[0]), d.err)
}

const maxDiagnoseRows = 5000

// offendingRows replays recs one row a statement in a transaction that is
// rolled back, each under a savepoint, and returns up to limit rows that
// fail with a permanent error, each with its own error.
func (s *Sink) offendingRows(ctx context.Context, t target, g *rowGroup, recs []*schema.Record, upsert bool, limit int) []badRow {
	if len(recs) > maxDiagnoseRows {
		recs = recs[:maxDiagnoseRows]
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return nil
	}
	defer tx.Rollback() // diagnosis only: never commit
	q := s.statement(t, g, 1, true, upsert)
	args := make([]any, len(g.cols))
	var bad []badRow
	for _, r := range recs {
		var cerr error
		for j, f := range r.ValueSchema.Fields {
			if args[j], cerr = s.value(g.view, f, r.After[j]); cerr != nil {
				break
			}
		}
		if cerr != nil {
			bad = append(bad, badRow{rec: r, table: t, err: cerr})
		} else {
			if _, err := tx.ExecContext(ctx, "SAVEPOINT sluice_row"); err != nil {
				return bad
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				werr := wrapDB(err)
				if !isFatal(werr) {
					return nil // a lost connection or the like: no verdict
				}
				bad = append(bad, badRow{rec: r, table: t, err: werr})
				if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT sluice_row"); err != nil {
					return bad
				}
			}
		}
		if len(bad) >= limit {
			break
		}
	}
	return bad
}

// badRow is a row the target rejects for good, with the reason.
type badRow struct {
	rec   *schema.Record
	table target
	err   error
}

// rowError is a permanent error caused by particular rows; OnError "skip"
// and "dlq" leave them out and apply the rest.
type rowError struct {
	rows []badRow
	err  error
}

func (e *rowError) Error() string { return e.err.Error() }
func (e *rowError) Unwrap() error { return e.err }

func newRowError(r *schema.Record, t target, err error, msg string) error {
	werr := fmt.Errorf("%s: %w", msg, err)
	return &rowError{rows: []badRow{{rec: r, table: t, err: err}}, err: werr}
}

func isFatal(err error) bool {
	var f interface{ Fatal() bool }
	return errors.As(err, &f) && f.Fatal()
}

func approxSize(v any) int {
	switch x := v.(type) {
	case string:
		return len(x) + 4
	case []byte:
		return 2*len(x) + 4
	}
	return 8
}

func recKey(r *schema.Record) string {
	if r.KeySchema == nil {
		return "(table without key)"
	}
	row := r.After
	if row == nil {
		row = r.Before
	}
	if row != nil && r.ValueSchema != nil {
		if cols, key, err := keyFromRow(r, row); err == nil {
			return describeKey(cols, key)
		}
	}
	return r.KeyString()
}

const deleteChunk = 1000

func (s *Sink) applyDeletes(ctx context.Context, tx *txn, t target, dels []*change, view *tableView) error {
	if len(dels) == 0 {
		return nil
	}
	groups := map[string][]*change{}
	var order []string
	for _, c := range dels {
		sig := strings.Join(c.keyCols, "\x00")
		if _, ok := groups[sig]; !ok {
			order = append(order, sig)
		}
		groups[sig] = append(groups[sig], c)
	}
	for _, sig := range order {
		g := groups[sig]
		cols := g[0].keyCols
		// Key values, converted with the schema of each key column.
		conv := make([][]any, len(g))
		for i, c := range g {
			conv[i] = make([]any, len(cols))
			for j, col := range cols {
				v, err := s.value(view, schema.Field{Name: col, Schema: c.rec.KeySchema.Fields[j].Schema}, c.key[j])
				if err != nil {
					return newRowError(c.rec, t, err, fmt.Sprintf("sink: delete from %s, key %s", t, describeKey(cols, c.key)))
				}
				conv[i][j] = v
			}
		}
		// One array parameter for a one-column key, unless the key is an
		// array itself (a SET as TEXT[]): then the generic IN list.
		if len(cols) == 1 && !view.array(s.fold(cols[0])) {
			if done, err := s.deleteAny(ctx, tx, t, cols[0], g, conv); err != nil || done {
				if err != nil {
					return err
				}
				continue
			}
		}
		per := deleteChunk
		if m := s.d.MaxParams() / len(cols); per > m {
			per = m
		}
		for start := 0; start < len(conv); start += per {
			end := min(start+per, len(conv))
			args := make([]any, 0, (end-start)*len(cols))
			for _, row := range conv[start:end] {
				args = append(args, row...)
			}
			if _, err := tx.ExecContext(ctx, deleteSQL(s.d, t, cols, end-start), args...); err != nil {
				return fmt.Errorf("sink: delete %d rows from %s (first key %s): %w", end-start, t, describeKey(cols, g[start].key), wrapDB(err))
			}
		}
	}
	return nil
}

// deleteAny deletes by a single-column key with one array parameter
// (the dialect's DeleteAny), ok false when the dialect has none.
func (s *Sink) deleteAny(ctx context.Context, tx *txn, t target, col string, g []*change, conv [][]any) (bool, error) {
	const per = 10000
	for start := 0; start < len(conv); start += per {
		end := min(start+per, len(conv))
		vals := make([]any, 0, end-start)
		for _, row := range conv[start:end] {
			vals = append(vals, row[0])
		}
		q, arg, ok := s.d.DeleteAny(t, col, vals)
		if !ok {
			return false, nil
		}
		if _, err := tx.ExecContext(ctx, q, arg); err != nil {
			return true, fmt.Errorf("sink: delete %d rows from %s (first key %s): %w", end-start, t, describeKey([]string{col}, g[start].key), wrapDB(err))
		}
	}
	return true, nil
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
