package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
)

// Acquire takes task for holder when its lease is expired, missing or
// already holder's (a restarted worker of the same id), in one
// transaction, and returns the lease with its new epoch (one more than any
// before: every acquisition is a new incarnation). ok is false when
// another worker holds an unexpired lease.
func (s *Store) Acquire(ctx context.Context, task, holder string, ttl time.Duration) (l storage.Lease, ok bool, err error) {
	// Durable when it returns: an epoch raise lost in a crash of the
	// coordinator would let two incarnations share one epoch.
	tx, err := storage.BeginDurable(ctx, s.db, s.dialect)
	if err != nil {
		return l, false, retriable("acquire "+task, err)
	}
	defer tx.Rollback()
	var cur string
	var epoch int64
	var expired bool
	err = tx.QueryRowContext(ctx, s.q("SELECT holder, epoch, expires_at <= CURRENT_TIMESTAMP(6) FROM "+s.Table("leases")+" WHERE task = ? FOR UPDATE"), task).Scan(&cur, &epoch, &expired)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		epoch = 1
		_, err = tx.ExecContext(ctx, s.q("INSERT INTO "+s.Table("leases")+" (task, holder, epoch, expires_at) VALUES (?, ?, 1, "+s.later()+")"), task, holder, micros(ttl))
		if err != nil {
			return l, false, nil // another worker inserted it first
		}
	case err != nil:
		return l, false, retriable("acquire "+task, err)
	case cur != holder && !expired:
		return l, false, nil
	default:
		epoch++
		if _, err = tx.ExecContext(ctx, s.q("UPDATE "+s.Table("leases")+" SET holder = ?, epoch = ?, expires_at = "+s.later()+" WHERE task = ?"), holder, epoch, micros(ttl), task); err != nil {
			return l, false, retriable("acquire "+task, err)
		}
	}
	// The task's positions row exists from now on, so a fenced save is one
	// UPDATE.
	ins := "INSERT INTO " + s.Table("positions") + " (pipeline, position, epoch) VALUES (?, NULL, 0) ON CONFLICT (pipeline) DO NOTHING"
	if s.dialect == "mysql" {
		ins = "INSERT IGNORE INTO " + s.Table("positions") + " (pipeline, position, epoch) VALUES (?, NULL, 0)"
	}
	if _, err := tx.ExecContext(ctx, s.q(ins), positionRow(task)); err != nil {
		return l, false, retriable("acquire "+task, err)
	}
	if err := tx.Commit(); err != nil {
		return l, false, retriable("acquire "+task, err)
	}
	return storage.Lease{Table: s.Table("leases"), Task: task, Holder: holder, Epoch: epoch}, true, nil
}

// Renew extends l by ttl from the database's now, only while l is current
// and unexpired: an expired lease is never revived (another worker may be
// about to take it). ok false means l is lost.
func (s *Store) Renew(ctx context.Context, l storage.Lease, ttl time.Duration) (ok bool, err error) {
	res, err := s.db.ExecContext(ctx, s.q("UPDATE "+s.Table("leases")+" SET expires_at = "+s.later()+" WHERE task = ? AND holder = ? AND epoch = ? AND expires_at > CURRENT_TIMESTAMP(6)"), micros(ttl), l.Task, l.Holder, l.Epoch)
	if err != nil {
		return false, retriable("renew "+l.Task, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, retriable("renew "+l.Task, err)
	}
	return n == 1, nil
}

// Release ends l at once (expires it, keeping the row and its epoch), so
// another worker can take the task without waiting out the TTL.
func (s *Store) Release(ctx context.Context, l storage.Lease) error {
	if _, err := s.db.ExecContext(ctx, s.q("UPDATE "+s.Table("leases")+" SET expires_at = CURRENT_TIMESTAMP(6) WHERE task = ? AND holder = ? AND epoch = ?"), l.Task, l.Holder, l.Epoch); err != nil {
		return retriable("release "+l.Task, err)
	}
	return nil
}

// LeaseRow is one row of the lease table as the database sees it now.
type LeaseRow struct {
	Task, Holder string
	Epoch        int64
	Live         bool // unexpired by the database's clock
}

// Leases reads the lease table.
func (s *Store) Leases(ctx context.Context) (map[string]LeaseRow, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT task, holder, epoch, expires_at > CURRENT_TIMESTAMP(6) FROM "+s.Table("leases"))
	if err != nil {
		return nil, retriable("read leases", err)
	}
	defer rows.Close()
	out := map[string]LeaseRow{}
	for rows.Next() {
		var r LeaseRow
		if err := rows.Scan(&r.Task, &r.Holder, &r.Epoch, &r.Live); err != nil {
			return nil, retriable("read leases", err)
		}
		out[r.Task] = r
	}
	return out, rows.Err()
}

// connectorOf is the connector part of a task name ("<connector>/<role>").
func connectorOf(task string) string {
	for i := len(task) - 1; i >= 0; i-- {
		if task[i] == '/' {
			return task[:i]
		}
	}
	return task
}

// FencedPositions is a source task's position store: positions live in
// the coordinator's positions table, and every save carries the task's
// lease condition in the same UPDATE, so the database refuses it once the
// lease is lost (ErrFenced, fatal). The row's epoch column says which
// lease epoch wrote it last.
type FencedPositions struct {
	s     *Store
	lease storage.Lease
	// valid reports whether the holder still believes it holds the lease
	// (its monotonic clock since the last renewal); checked by Held.
	valid  func() bool
	fenced chan struct{}
	once   sync.Once
}

// NewFencedPositions returns the store a task holding l saves through.
func (s *Store) NewFencedPositions(l storage.Lease, valid func() bool) *FencedPositions {
	return &FencedPositions{s: s, lease: l, valid: valid, fenced: make(chan struct{})}
}

// Fenced is closed once a save was refused or the lease found lost.
func (f *FencedPositions) Fenced() <-chan struct{} { return f.fenced }

func (f *FencedPositions) fence(why string) error {
	f.once.Do(func() { close(f.fenced) })
	return schema.Fatal(fmt.Errorf("%w: task %s (lease epoch %d of %s): %s; this worker drops the task, its new holder continues from the saved positions", storage.ErrFenced, f.lease.Task, f.lease.Epoch, f.lease.Holder, why))
}

// row is the positions row the pipeline's position lives in: the task's
// own for a source task past the first of a split source (its pipeline
// is named after the connector, as every task of it).
func (f *FencedPositions) row(pipeline string) string {
	if pipeline == connectorOf(f.lease.Task) {
		return positionRow(f.lease.Task)
	}
	return pipeline
}

// Load reads the saved position (nil when none).
func (f *FencedPositions) Load(ctx context.Context, pipeline string) ([]byte, error) {
	pipeline = f.row(pipeline)
	var pos sql.NullString
	err := f.s.db.QueryRowContext(ctx, f.s.q("SELECT position FROM "+f.s.Table("positions")+" WHERE pipeline = ?"), pipeline).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !pos.Valid {
		return nil, nil
	}
	if err != nil {
		return nil, retriable("read the position of "+pipeline, err)
	}
	return []byte(pos.String), nil
}

// Save stores pos only while the lease is current and unexpired by the
// database's clock.
func (f *FencedPositions) Save(ctx context.Context, pipeline string, pos []byte) error {
	if !f.valid() {
		return f.fence("its lease ran out on this worker's clock")
	}
	pipeline = f.row(pipeline)
	var val any
	if pos != nil {
		val = string(pos)
	}
	// The condition in the coordinator's own dialect (its row lock differs:
	// FOR SHARE, LOCK IN SHARE MODE), placeholders after the three ? that q
	// numbers on PostgreSQL.
	cond, args := f.lease.Condition(f.s.dialect, 4)
	// On PostgreSQL in a transaction that commits durably, so that a saved
	// position survives a crash of the coordinator. On MySQL one autocommit
	// statement, whose durability is the server's (there is no per
	// transaction setting): a transaction would hold the lease row's shared
	// lock until its commit, and a worker cut off between the two would
	// block the next holder's acquisition until the server noticed
	// (TestClockSkew).
	var ex interface {
		ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	} = f.s.db
	var tx *sql.Tx
	if f.s.dialect == "postgres" {
		var err error
		if tx, err = storage.BeginDurable(ctx, f.s.db, f.s.dialect); err != nil {
			return retriable("save the position of "+pipeline, err)
		}
		defer tx.Rollback()
		ex = tx
	}
	res, err := ex.ExecContext(ctx, f.s.q("UPDATE "+f.s.Table("positions")+" SET position = ?, epoch = ?, updated_at = CURRENT_TIMESTAMP(6) WHERE pipeline = ? AND "+cond),
		append([]any{val, f.lease.Epoch, pipeline}, args...)...)
	if err != nil {
		return retriable("save the position of "+pipeline, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return retriable("save the position of "+pipeline, err)
	}
	if n == 0 { // updated_at always changes, so 0 rows is the fence on both dialects
		return f.fence("the database refused the save: the lease expired or another worker took the task")
	}
	if tx != nil {
		if err := tx.Commit(); err != nil {
			return retriable("save the position of "+pipeline, err)
		}
	}
	return nil
}

// Held is the pipeline's periodic check of an idle run: the lease as this
// worker's monotonic clock sees it.
func (f *FencedPositions) Held(ctx context.Context, pipeline string) error {
	if !f.valid() {
		return f.fence("its lease ran out on this worker's clock")
	}
	return nil
}
