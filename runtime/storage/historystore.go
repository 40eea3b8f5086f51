package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// DefaultHistoryTable is the table SQLHistory keeps schema histories in.
const DefaultHistoryTable = "sluice_schema_history"

// SQLHistory keeps one pipeline's schema history (the source's DDL log, see
// binlog.HistoryStore) in a table of a PostgreSQL or MySQL/MariaDB
// database, one row per entry:
//
//	pipeline    VARCHAR(255)  -- the pipeline (connector) name
//	seq         BIGINT        -- 1, 2, ... in the order appended
//	position    TEXT          -- the entry's position as text, for people
//	entry       TEXT          -- the entry itself (JSON), opaque here
//	recorded_at TIMESTAMP(6)  -- the database's clock
//	PRIMARY KEY (pipeline, seq)
//
// Every append is one INSERT … SELECT … WHERE <the lease's Condition>, so
// once another worker holds the source task or its lease expired the
// database refuses it and Append returns a fatal error matching ErrFenced:
// a paused or partitioned worker adds nothing to the history after it
// wakes. A zero Lease appends unfenced (`sluice run`). Two writers without
// a lease collide on the primary key instead of interleaving.
type SQLHistory struct {
	db       *sql.DB
	table    string
	dialect  string // "postgres" or "mysql"
	pipeline string
	lease    Lease

	mu   sync.Mutex
	next int64 // the seq of the next append; 0: not read yet
}

// HistoryRow is one stored entry.
type HistoryRow struct {
	Seq      int64  // set by Load; Append numbers rows itself
	Position string // the entry's position, for people reading the table
	Entry    []byte
}

// CheckHistoryTable reports whether NewSQLHistory accepts table ("" is
// DefaultHistoryTable), without connecting.
func CheckHistoryTable(table string) error {
	if err := CheckSQLStoreTable(table); err != nil {
		return fmt.Errorf("schema history: table %q: use letters, digits and _ (with one dot before the table): %w", table, runtime.ErrConfig)
	}
	return nil
}

// NewSQLHistory returns the history of pipeline in table (""
// DefaultHistoryTable; it may be qualified by a schema or database with a
// dot) of db, whose driver is dialect ("postgres" or "mysql"), creating the
// table if needed. Appends carry lease's fence. db stays the caller's to
// close.
func NewSQLHistory(ctx context.Context, db *sql.DB, dialect, table, pipeline string, lease Lease) (*SQLHistory, error) {
	if dialect != "postgres" && dialect != "mysql" {
		return nil, fmt.Errorf("schema history: dialect %q: use postgres or mysql: %w", dialect, runtime.ErrConfig)
	}
	if table == "" {
		table = DefaultHistoryTable
	}
	if err := CheckHistoryTable(table); err != nil {
		return nil, err
	}
	if pipeline == "" {
		return nil, fmt.Errorf("schema history: the pipeline name is empty (it keys the rows): %w", runtime.ErrConfig)
	}
	text := "TEXT"
	if dialect == "mysql" {
		text = "MEDIUMTEXT" // a CREATE TABLE of a wide table passes 64 KiB
	}
	ddl := "CREATE TABLE IF NOT EXISTS " + table + " (pipeline VARCHAR(255) NOT NULL, seq BIGINT NOT NULL, position TEXT NOT NULL, entry " + text +
		" NOT NULL, recorded_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (pipeline, seq))"
	if err := createTable(ctx, db, ddl, table); err != nil {
		return nil, fmt.Errorf("schema history: create table %s (check the DSN and that the user may create tables): %w", table, err)
	}
	return &SQLHistory{db: db, table: table, dialect: dialect, pipeline: pipeline, lease: lease}, nil
}

// String names the store in messages.
func (h *SQLHistory) String() string {
	return fmt.Sprintf("table %s (pipeline %s)", h.table, h.pipeline)
}

// ph is the i-th placeholder (from 1) of the dialect.
func (h *SQLHistory) ph(i int) string {
	if h.dialect == "postgres" {
		return fmt.Sprintf("$%d", i)
	}
	return "?"
}

// Load returns the pipeline's rows in order. It is not fenced: reading is
// harmless.
func (h *SQLHistory) Load(ctx context.Context) ([]HistoryRow, error) {
	rows, err := h.db.QueryContext(ctx, "SELECT seq, position, entry FROM "+h.table+" WHERE pipeline = "+h.ph(1)+" ORDER BY seq", h.pipeline)
	if err != nil {
		return nil, schema.Retriable(fmt.Errorf("schema history: read %s: %w", h, err))
	}
	defer rows.Close()
	var out []HistoryRow
	for rows.Next() {
		var r HistoryRow
		var entry string
		if err := rows.Scan(&r.Seq, &r.Position, &entry); err != nil {
			return nil, schema.Retriable(fmt.Errorf("schema history: read %s: %w", h, err))
		}
		r.Entry = []byte(entry)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, schema.Retriable(fmt.Errorf("schema history: read %s: %w", h, err))
	}
	h.mu.Lock()
	h.next = 1
	if n := len(out); n > 0 {
		h.next = out[n-1].Seq + 1
	}
	h.mu.Unlock()
	return out, nil
}

// Append adds rows after the others in one transaction, each INSERT
// carrying the lease's fence: all or none. A refused row is a fatal error
// matching ErrFenced that names the task; a database error is retriable.
func (h *SQLHistory) Append(ctx context.Context, rows ...HistoryRow) error {
	if len(rows) == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.next == 0 {
		var last sql.NullInt64
		if err := h.db.QueryRowContext(ctx, "SELECT MAX(seq) FROM "+h.table+" WHERE pipeline = "+h.ph(1), h.pipeline).Scan(&last); err != nil {
			return schema.Retriable(fmt.Errorf("schema history: read %s: %w", h, err))
		}
		h.next = last.Int64 + 1
	}
	cond, cargs := h.lease.Condition(h.dialect, 5)
	sel := "SELECT " + h.ph(1) + ", " + h.ph(2) + ", " + h.ph(3) + ", " + h.ph(4) + " FROM DUAL"
	if h.dialect == "postgres" {
		// parameters of a SELECT are text unless cast
		sel = "SELECT $1::text, $2::bigint, $3::text, $4::text"
	}
	q := "INSERT INTO " + h.table + " (pipeline, seq, position, entry) " + sel + " WHERE " + cond
	tx, err := BeginDurable(ctx, h.db, h.dialect)
	if err != nil {
		return schema.Retriable(fmt.Errorf("schema history: append to %s: %w", h, err))
	}
	defer tx.Rollback()
	for i, r := range rows {
		args := append([]any{h.pipeline, h.next + int64(i), r.Position, string(r.Entry)}, cargs...)
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			tx.Rollback()
			return h.appendFailed(ctx, rows, err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return schema.Fatal(h.fenced(ctx))
		}
	}
	if err := tx.Commit(); err != nil {
		return schema.Retriable(fmt.Errorf("schema history: append to %s: %w", h, err))
	}
	h.next += int64(len(rows))
	return nil
}

// fencedError is an append the lease's fence refused; it matches ErrFenced.
type fencedError struct{ msg string }

func (e *fencedError) Error() string        { return e.msg }
func (e *fencedError) Is(target error) bool { return target == ErrFenced }

// fenced explains a refused append with what the lease row says now.
func (h *SQLHistory) fenced(ctx context.Context) error {
	l := h.lease
	now := "the lease row is gone"
	var holder string
	var epoch int64
	var expired bool
	q := "SELECT holder, epoch, expires_at <= CURRENT_TIMESTAMP(6) FROM " + l.Table + " WHERE task = " + h.ph(1)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	switch err := h.db.QueryRowContext(ctx, q, l.Task).Scan(&holder, &epoch, &expired); {
	case err == nil && (holder != l.Holder || epoch != l.Epoch):
		now = fmt.Sprintf("worker %s holds it at epoch %d", holder, epoch)
	case err == nil && expired:
		now = "the lease expired before this worker renewed it"
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		now = "the lease row could not be read: " + err.Error()
	}
	return &fencedError{msg: fmt.Sprintf("runtime: schema history: task %s lost its lease (worker %s, epoch %d; %s): the database refused its append to %s; stop this worker; the new holder continues",
		l.Task, l.Holder, l.Epoch, now, h)}
}

// appendFailed explains a failed append: done after all when the rows are
// there already (an earlier attempt committed, its answer was lost);
// another writer's rows at those numbers are fatal; anything else is
// retriable.
func (h *SQLHistory) appendFailed(ctx context.Context, rows []HistoryRow, cause error) error {
	stored, err := h.db.QueryContext(ctx, "SELECT seq, entry FROM "+h.table+" WHERE pipeline = "+h.ph(1)+" AND seq >= "+h.ph(2)+" ORDER BY seq", h.pipeline, h.next)
	if err != nil {
		return schema.Retriable(fmt.Errorf("schema history: append to %s (seq %d): %w", h, h.next, cause))
	}
	defer stored.Close()
	i := 0
	for stored.Next() {
		var seq int64
		var entry string
		if err := stored.Scan(&seq, &entry); err != nil {
			break
		}
		if i >= len(rows) || seq != h.next+int64(i) || entry != string(rows[i].Entry) {
			return schema.Fatal(fmt.Errorf("schema history: %s has another writer's entry at seq %d: another process runs this pipeline's source (give each pipeline one source, or run it in a cluster under a lease): %w", h, seq, cause))
		}
		i++
	}
	if i == len(rows) && stored.Err() == nil {
		h.next += int64(len(rows)) // an earlier attempt appended them
		return nil
	}
	return schema.Retriable(fmt.Errorf("schema history: append to %s (seq %d): %w", h, h.next, cause))
}
