package sink

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// progress is the sink's record of what it applied: per queue, the last
// applied record ID in the progress table, and in transactional mode the
// held-back records of an unfinished source transaction in the pending
// table. It reads them, fences a stale writer of a queue (fence, record),
// records them inside the transaction that applies the records, and caches
// what was committed. Its lock guards only the caches.
type progress struct {
	backend
	cas *sql.Stmt // progressCASSQL, prepared on each connection once

	mu      sync.Mutex
	applied map[progressKey]schema.ID       // last applied IDs per queue, as read or written by this Sink
	held    map[progressKey][]schema.Record // Transactional: held records per queue, as committed
}

func newProgress(b backend) *progress {
	return &progress{backend: b, applied: map[progressKey]schema.ID{}, held: map[progressKey][]schema.Record{}}
}

// prepare readies what writing needs once the control tables exist: the
// fenced update's statement, and in transactional mode the pending table.
func (pr *progress) prepare(ctx context.Context) error {
	var err error
	if pr.cas, err = pr.db.PrepareContext(ctx, progressCASSQL(pr.d, pr.cfg.ProgressTable)); err != nil {
		return fmt.Errorf("sink: prepare the progress update: %w", wrapDB(err))
	}
	if pr.cfg.Transactional {
		if err := createTable(ctx, pr.db.DB, pr.pendingDDL(), pr.d.Quote(pr.cfg.PendingTable)); err != nil {
			_ = pr.cas.Close() // err says what matters
			return fmt.Errorf("sink: create pending table %s: %w", pr.cfg.PendingTable, wrapDB(err))
		}
	}
	return nil
}

// close releases the prepared statement.
func (pr *progress) close() error { return pr.cas.Close() }

// moved takes in what a *progressMoved found: another writer applied
// queue m.k meanwhile (what it applied must not be written again over it:
// the batch is filtered again from its progress), or the row is gone
// (believing it at nothing applied would fence on a row that is not
// there, and every retry would fail the same way).
func (pr *progress) moved(m *progressMoved) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if m.gone {
		delete(pr.applied, m.k)
	} else {
		pr.applied[m.k] = m.id
	}
	delete(pr.held, m.k)
}

// hold caches the records of queue k held back in the pending table, as
// committed.
func (pr *progress) hold(k progressKey, recs []schema.Record) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.held[k] = recs
}

// dropHeld forgets the cached held records of queue k after a failure: the
// pending table is the truth.
func (pr *progress) dropHeld(k progressKey) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	delete(pr.held, k)
}

// The progress table keys a queue by (pipeline, topic, queue). A queue of
// a transport with several brokers stores its topic as "topic@broker"
// (RocketMQ topic names cannot hold '@'), so queues with the same number on
// two brokers keep apart.
func (k progressKey) stored() string {
	if k.Broker == "" {
		return k.Topic
	}
	return k.Topic + "@" + k.Broker
}

// create creates the progress table, or brings one of the shape
// before record IDs (an int last_offset per queue) to the current one: such
// offsets cannot be turned into IDs, so its queues start with nothing
// applied and the records after the source's saved position are applied
// again (at least once).
func (pr *progress) create(ctx context.Context) error {
	t := pr.cfg.ProgressTable
	if err := createTable(ctx, pr.db.DB, pr.d.ProgressDDL(t), pr.d.Quote(t)); err != nil {
		return fmt.Errorf("sink: create progress table %s: %w", t, wrapDB(err))
	}
	cols, err := pr.controlColumns(ctx, t)
	if err != nil {
		return fmt.Errorf("sink: read the columns of progress table %s: %w", t, err)
	}
	hasID, hasOffset := cols["last_id"], cols["last_offset"]
	if hasID || !hasOffset {
		return nil
	}
	if _, err := pr.db.ExecContext(ctx, pr.d.ProgressMigrate(t)); err != nil {
		return fmt.Errorf("sink: progress table %s has the shape of an older version (last_offset) and adding last_id failed (grant ALTER on it, or drop it): %w", t, wrapDB(err))
	}
	pr.log.Warn("progress table of an older version migrated: its offsets are not record IDs, so records after the source's saved position are applied again", "table", t)
	return nil
}

// parse reads a stored last applied ID (empty: nothing applied).
func (pr *progress) parse(k progressKey, text string) (schema.ID, error) {
	if text == "" {
		return schema.ID{}, nil
	}
	id, err := schema.ParseID(text)
	if err != nil {
		return schema.ID{}, fatal(fmt.Errorf("%w: progress table %s, pipeline %q, queue %s holds last_id %q: %v; delete that row to apply the queue from the source's saved position again", ErrConfig, pr.cfg.ProgressTable, pr.cfg.Pipeline, k, text, err))
	}
	return id, nil
}

// progressMoved reports that a queue's progress in the target is not what
// this Sink filtered the batch against: another writer (a second consumer
// of the queue during a rebalance, a process the runtime believes dead)
// applied records of it meanwhile, or the progress was reset by hand.
type progressMoved struct {
	k  progressKey
	id schema.ID
	// gone: the queue's progress row is missing (deleted by hand, or lost
	// with commits a crash of a target without durable commits dropped):
	// the queue is read as new, and fence creates the row again.
	gone bool
}

func (e *progressMoved) Error() string {
	return fmt.Sprintf("sink: progress of %s moved to %s under this writer (another writer applied the queue meanwhile); the batch is filtered again", e.k, e.id)
}

// fence stops a stale writer of the queues a transaction writes:
// without the fence a writer that read the progress before another
// applied newer records would write its older versions over them. For a
// queue with a progress in from (what the batch was filtered against, not
// the cache, which another Write of this Sink moves), the fence is the
// transaction's last statement (record: the progress row moves only from
// that ID, in one statement that also takes the row's lock, and the whole
// transaction rolls back when it moved); fence returns those queues with
// that ID. It locks the rows of the other queues now, in a fixed order,
// creating missing ones, and checks that they hold nothing applied.
func (pr *progress) fence(ctx context.Context, tx *txn, queues map[progressKey]schema.ID, from filtered) (map[progressKey]schema.ID, error) {
	var fenced map[progressKey]schema.ID
	var keys []progressKey
	for k := range queues {
		if believed, known := from[k]; known {
			if fenced == nil {
				fenced = map[progressKey]schema.ID{}
			}
			fenced[k] = believed
		} else {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b progressKey) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), strings.Compare(a.Broker, b.Broker), cmp.Compare(a.Queue, b.Queue))
	})
	sel := pr.d.ProgressSelect(pr.cfg.ProgressTable) + " FOR UPDATE"
	for _, k := range keys {
		var believed schema.ID // not in from: nothing applied when the batch was filtered
		// A queue without a progress row gets one first ('': nothing
		// applied), so the lock is on a row: locking a missing row takes a
		// gap lock on MySQL, and two first writers then deadlock.
		var text string
		_, err := tx.ExecContext(ctx, pr.d.ProgressUpsert(pr.cfg.ProgressTable), pr.cfg.Pipeline, k.stored(), k.Queue, "")
		if err == nil {
			err = tx.QueryRowContext(ctx, sel, pr.cfg.Pipeline, k.stored(), k.Queue).Scan(&text)
		}
		if err != nil {
			return nil, fmt.Errorf("sink: lock progress of %s: %w", k, wrapDB(err))
		}
		id, err := pr.parse(k, text)
		if err != nil {
			return nil, err
		}
		if id != believed {
			return nil, &progressMoved{k: k, id: id}
		}
	}
	return fenced, nil
}

// record saves the progress of maxOff; a queue in fenced moves only
// from the ID given there (see fence), else the transaction fails
// with *progressMoved. One prepared statement a queue: a round trip, where
// locking first and saving last took four with the driver's unnamed
// statements.
func (pr *progress) record(ctx context.Context, tx *txn, maxOff, fenced map[progressKey]schema.ID) error {
	if len(fenced) == 0 {
		return pr.save(ctx, tx, maxOff)
	}
	rest := map[progressKey]schema.ID{}
	for k, id := range maxOff {
		believed, ok := fenced[k]
		if !ok {
			rest[k] = id
			continue
		}
		res, err := tx.StmtContext(ctx, pr.cas).ExecContext(ctx, id.String(), pr.cfg.Pipeline, k.stored(), k.Queue, believed.String())
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return fmt.Errorf("sink: save progress of %s: %w", k, wrapDB(err))
		}
		if n == 1 {
			continue
		}
		// Not moved from believed: read what the row holds (with its lock).
		// The same ID in another spelling (a new row's '') is no move.
		var text string
		err = tx.QueryRowContext(ctx, pr.d.ProgressSelect(pr.cfg.ProgressTable)+" FOR UPDATE", pr.cfg.Pipeline, k.stored(), k.Queue).Scan(&text)
		if errors.Is(err, sql.ErrNoRows) {
			return &progressMoved{k: k, gone: true} // reset by hand meanwhile
		}
		if err != nil {
			return fmt.Errorf("sink: lock progress of %s: %w", k, wrapDB(err))
		}
		cur, err := pr.parse(k, text)
		if err != nil {
			return err
		}
		if cur != believed {
			return &progressMoved{k: k, id: cur}
		}
		rest[k] = id
	}
	return pr.save(ctx, tx, rest)
}

// progressCASSQL moves a queue's progress row ($4 ... in the order new ID,
// pipeline, topic, queue, believed ID) only from the believed ID.
func progressCASSQL(d dialect.Dialect, table string) string {
	return "UPDATE " + d.Quote(table) + " SET last_id = " + d.Placeholder(1) + ", updated_at = CURRENT_TIMESTAMP(6) WHERE pipeline = " +
		d.Placeholder(2) + " AND topic = " + d.Placeholder(3) + " AND queue = " + d.Placeholder(4) + " AND last_id = " + d.Placeholder(5)
}

func (pr *progress) save(ctx context.Context, tx *txn, maxOff map[progressKey]schema.ID) error {
	for k, id := range maxOff {
		if _, err := tx.ExecContext(ctx, pr.d.ProgressUpsert(pr.cfg.ProgressTable), pr.cfg.Pipeline, k.stored(), k.Queue, id.String()); err != nil {
			return fmt.Errorf("sink: save progress of %s: %w", k, wrapDB(err))
		}
	}
	return nil
}

// note records committed offsets in the cache.
func (pr *progress) note(maxOff map[progressKey]schema.ID) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for k, off := range maxOff {
		if cur, ok := pr.applied[k]; !ok || off.Compare(cur) > 0 {
			pr.applied[k] = off
		}
	}
}

// forget drops cached offsets after a commit of unknown outcome.
func (pr *progress) forget(maxOff map[progressKey]schema.ID) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for k := range maxOff {
		delete(pr.applied, k)
	}
}

// lastApplied returns the committed offsets of the queues recs come from,
// reading those not yet cached.
func (pr *progress) lastApplied(ctx context.Context, recs []schema.Record) (map[progressKey]schema.ID, error) {
	out := map[progressKey]schema.ID{}
	var missing []progressKey
	pr.mu.Lock()
	for i := range recs {
		d := recs[i].Delivery
		if d == nil {
			continue
		}
		k := deliveryKey(d)
		if i > 0 && recs[i-1].Delivery != nil && deliveryKey(recs[i-1].Delivery) == k {
			continue // a run of one queue: looked up at its first record
		}
		if _, seen := out[k]; seen {
			continue
		}
		if off, ok := pr.applied[k]; ok {
			out[k] = off
		} else if !containsKey(missing, k) {
			missing = append(missing, k)
		}
	}
	pr.mu.Unlock()
	for _, k := range missing {
		var text string
		err := pr.db.QueryRowContext(ctx, pr.d.ProgressSelect(pr.cfg.ProgressTable), pr.cfg.Pipeline, k.stored(), k.Queue).Scan(&text)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue // nothing applied yet from this queue
		case err != nil:
			return nil, fmt.Errorf("sink: read progress of %s: %w", k, wrapDB(err))
		}
		off, err := pr.parse(k, text)
		if err != nil {
			return nil, err
		}
		out[k] = off
		pr.mu.Lock()
		if cur, ok := pr.applied[k]; !ok || off.Compare(cur) > 0 {
			pr.applied[k] = off
		}
		pr.mu.Unlock()
	}
	return out, nil
}

func containsKey(ks []progressKey, k progressKey) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func (pr *progress) pendingDDL() string {
	return pr.d.PendingDDL(pr.cfg.PendingTable)
}

func (pr *progress) pendingSQL(op string) string {
	q := pr.d.Quote(pr.cfg.PendingTable)
	p := pr.d.Placeholder
	where := " WHERE pipeline = " + p(1) + " AND topic = " + p(2) + " AND queue = " + p(3)
	switch op {
	case "select":
		return "SELECT data FROM " + q + where
	case "delete":
		return "DELETE FROM " + q + where
	}
	return pr.d.PendingUpsert(pr.cfg.PendingTable)
}

// loadPending returns the held-back records of queue k, from the cache or
// the pending table.
func (pr *progress) loadPending(ctx context.Context, k progressKey) ([]schema.Record, error) {
	pr.mu.Lock()
	recs, ok := pr.held[k]
	pr.mu.Unlock()
	if ok {
		return recs, nil
	}
	var data []byte
	err := pr.db.QueryRowContext(ctx, pr.pendingSQL("select"), pr.cfg.Pipeline, k.stored(), k.Queue).Scan(&data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("sink: read pending records of %s: %w", k, wrapDB(err))
	default:
		if recs, err = decodePending(data); err != nil {
			return nil, err
		}
	}
	pr.mu.Lock()
	pr.held[k] = recs
	pr.mu.Unlock()
	return recs, nil
}
