package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

var sqlIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// ErrFenced is returned by a position store's Save when another run of the
// same pipeline claimed it after this one: the older run must stop, or it
// would overwrite the newer run's positions.
var ErrFenced = errors.New("runtime: another run of this pipeline took over its positions")

// Errors of the database are marked retriable where they are made: a
// server down, a lost connection or a lock is worth another try. (lib/pq's
// *Error says "severity FATAL" for a terminated connection; schema.ClassOf
// does not read it.)

// SQLStore keeps positions in a table of a PostgreSQL or MySQL/MariaDB
// database (typically the sink's target, so no local disk is needed), one
// row per pipeline: position, and the epoch of the run that claimed it.
// Save writes only while the row still carries this store's epoch, so two
// processes running one pipeline (a worker believed dead, a restart on a
// second machine) cannot both advance it.
type SQLStore struct {
	db      *sql.DB
	table   string
	dialect string // "postgres" or "mysql"
}

var (
	_ runtime.PositionStore = (*SQLStore)(nil)
	_ runtime.Claimer       = (*SQLStore)(nil)
	_ runtime.Holder        = (*claimedStore)(nil)
)

// CheckSQLStoreTable reports whether NewSQLStore accepts table ("" is the
// default, sluice_positions), without connecting.
func CheckSQLStoreTable(table string) error {
	if table == "" {
		return nil
	}
	for _, part := range strings.Split(table, ".") {
		if !sqlIdent.MatchString(part) {
			return fmt.Errorf("position store: table %q: use letters, digits and _ (with one dot before the table): %w", table, runtime.ErrConfig)
		}
	}
	return nil
}

// NewSQLStore opens the database (driver "postgres" or "mysql") and creates
// the table if needed. table may be qualified by a schema (PostgreSQL) or a
// database (MySQL) with a dot.
func NewSQLStore(ctx context.Context, driver, dsn, table string) (*SQLStore, error) {
	if driver != "postgres" && driver != "mysql" {
		return nil, fmt.Errorf("position store: driver %q: use postgres or mysql: %w", driver, runtime.ErrConfig)
	}
	if table == "" {
		table = "sluice_positions"
	}
	if err := CheckSQLStoreTable(table); err != nil {
		return nil, err
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("position store: %w: %w", err, runtime.ErrConfig)
	}
	db.SetMaxOpenConns(2)
	s := &SQLStore{db: db, table: table, dialect: driver}
	ddl := "CREATE TABLE IF NOT EXISTS " + table + " (pipeline VARCHAR(255) PRIMARY KEY, position TEXT, epoch BIGINT NOT NULL, updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"
	if err := createTable(ctx, db, ddl, table); err != nil {
		db.Close()
		return nil, schema.Wrapf("position store", err, "create table %s (check the DSN and that the user may create tables)", table)
	}
	return s, nil
}

// createTable runs CREATE TABLE IF NOT EXISTS. Two first starts racing on
// PostgreSQL can make one fail although the table now exists (a duplicate
// in pg_type): an error is ignored when the table can be read afterwards.
func createTable(ctx context.Context, db *sql.DB, ddl, table string) error {
	_, err := db.ExecContext(ctx, ddl)
	if err == nil {
		return nil
	}
	for range 3 {
		var one int
		perr := db.QueryRowContext(ctx, "SELECT 1 FROM "+table+" WHERE 1 = 0").Scan(&one)
		if errors.Is(perr, sql.ErrNoRows) {
			return nil // the table is there: another run created it
		}
		if _, err = db.ExecContext(ctx, ddl); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return schema.Retriable(fmt.Errorf("position store: create table %s: %w (the store needs a user that may create it, or create it beforehand: %s)", table, err, ddl))
}

// pgDurableTx begins a PostgreSQL transaction whose commit must be on disk
// when it returns: it raises synchronous_commit from off (a server default
// that acknowledges commits before their WAL is flushed) to on, for the
// transaction only, and keeps any stronger value (as the sink's
// transactions do).
const pgDurableTx = "SELECT set_config('synchronous_commit', 'on', true) WHERE current_setting('synchronous_commit') = 'off'"

// BeginDurable begins a transaction of db (driver dialect, "postgres" or
// "mysql") whose commit is durable when it returns (see pgDurableTx; MySQL
// has no such setting per transaction): for positions, schema history and
// leases.
func BeginDurable(ctx context.Context, db *sql.DB, dialect string) (*sql.Tx, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil || dialect != "postgres" {
		return tx, err
	}
	if _, err := tx.ExecContext(ctx, pgDurableTx); err != nil {
		_ = tx.Rollback() // the error that matters is err
		return nil, err
	}
	return tx, nil
}

// execDurable runs one statement and returns once its effect is durable:
// a saved position must not be lost in a crash of the database after the
// pipeline went on from it.
func (s *SQLStore) execDurable(ctx context.Context, q string, args ...any) (sql.Result, error) {
	tx, err := BeginDurable(ctx, s.db, s.dialect)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return res, tx.Commit()
}

// Close closes the database handle.
func (s *SQLStore) Close() error { return s.db.Close() }

// Where names the table the positions are kept in (not the DSN: it may
// hold a password).
func (s *SQLStore) Where() string { return s.dialect + " table " + s.table }

// q turns a PostgreSQL statement into MySQL's placeholders; statements
// number their placeholders in the order of their arguments.
func (s *SQLStore) q(pg string) string {
	if s.dialect == "postgres" {
		return pg
	}
	for i := 9; i >= 1; i-- {
		pg = strings.ReplaceAll(pg, fmt.Sprintf("$%d", i), "?")
	}
	return pg
}

// Claim takes the pipeline's row with a new epoch (one more than any
// before) and returns the store of this run, bound to that epoch.
func (s *SQLStore) Claim(ctx context.Context, pipeline string) (runtime.PositionStore, error) {
	tx, err := BeginDurable(ctx, s.db, s.dialect)
	if err != nil {
		return nil, schema.Retriable(fmt.Errorf("position store: claim %s: %w", pipeline, err))
	}
	defer tx.Rollback()
	var epoch int64
	err = tx.QueryRowContext(ctx, s.q("SELECT epoch FROM "+s.table+" WHERE pipeline = $1 FOR UPDATE"), pipeline).Scan(&epoch)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		epoch = 1
		_, err = tx.ExecContext(ctx, s.q("INSERT INTO "+s.table+" (pipeline, position, epoch) VALUES ($1, NULL, $2)"), pipeline, epoch)
	case err == nil:
		epoch++
		_, err = tx.ExecContext(ctx, s.q("UPDATE "+s.table+" SET epoch = $1 WHERE pipeline = $2"), epoch, pipeline)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return nil, schema.Retriable(fmt.Errorf("position store: claim %s: %w", pipeline, err))
	}
	return &claimedStore{SQLStore: s, pipeline: pipeline, epoch: epoch}, nil
}

// claimedStore is one run's view of an SQLStore: it saves only while the
// row still carries the epoch it claimed.
type claimedStore struct {
	*SQLStore
	pipeline string
	epoch    int64
}

// Save stores pos while this run holds the claim; else a fatal ErrFenced.
func (c *claimedStore) Save(ctx context.Context, pipeline string, pos []byte) error {
	if pipeline != c.pipeline {
		return c.SQLStore.Save(ctx, pipeline, pos)
	}
	var val any
	if pos != nil {
		val = string(pos)
	}
	res, err := c.execDurable(ctx, c.q("UPDATE "+c.table+" SET position = $1, updated_at = CURRENT_TIMESTAMP(6) WHERE pipeline = $2 AND epoch = $3"), val, pipeline, c.epoch)
	if err != nil {
		return schema.Retriable(fmt.Errorf("position store: save %s: %w", pipeline, err))
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		// MySQL counts changed rows only: an unchanged position also gives
		// 0. Tell the two apart by the epoch.
		return c.Held(ctx, pipeline)
	}
	return nil
}

// Held returns a fatal ErrFenced when a later run claimed the pipeline.
func (c *claimedStore) Held(ctx context.Context, pipeline string) error {
	var cur int64
	if err := c.db.QueryRowContext(ctx, c.q("SELECT epoch FROM "+c.table+" WHERE pipeline = $1"), pipeline).Scan(&cur); err != nil {
		return schema.Retriable(fmt.Errorf("position store: check the claim on %s: %w", pipeline, err))
	}
	if cur != c.epoch {
		return schema.Fatal(fmt.Errorf("%w: %s (epoch %d, now %d): stop this process; the other run continues from its own positions", ErrFenced, pipeline, c.epoch, cur))
	}
	return nil
}

// Load returns the saved position, or nil when there is none. It claims
// nothing: reading a running pipeline's position is harmless.
func (s *SQLStore) Load(ctx context.Context, pipeline string) ([]byte, error) {
	var pos sql.NullString
	err := s.db.QueryRowContext(ctx, s.q("SELECT position FROM "+s.table+" WHERE pipeline = $1"), pipeline).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !pos.Valid) {
		return nil, nil
	}
	if err != nil {
		return nil, schema.Retriable(fmt.Errorf("position store: read %s: %w", pipeline, err))
	}
	return []byte(pos.String), nil
}

// Save stores pos unconditionally: a stopped pipeline's position set by
// hand (a running pipeline saves through the store its Claim returned). A
// nil pos deletes the saved position.
func (s *SQLStore) Save(ctx context.Context, pipeline string, pos []byte) error {
	var val any
	if pos != nil {
		val = string(pos)
	}
	q := "INSERT INTO " + s.table + " (pipeline, position, epoch) VALUES ($1, $2, 0) ON CONFLICT (pipeline) DO UPDATE SET position = EXCLUDED.position, updated_at = CURRENT_TIMESTAMP(6)"
	if s.dialect == "mysql" {
		q = "INSERT INTO " + s.table + " (pipeline, position, epoch) VALUES (?, ?, 0) ON DUPLICATE KEY UPDATE position = VALUES(position), updated_at = CURRENT_TIMESTAMP(6)"
	}
	if _, err := s.execDurable(ctx, q, pipeline, val); err != nil {
		return schema.Retriable(fmt.Errorf("position store: save %s: %w", pipeline, err))
	}
	return nil
}

// Reset deletes the saved position (sluice positions reset, the REST
// offsets API); the pipeline must be stopped.
func (s *SQLStore) Reset(ctx context.Context, pipeline string) error {
	if _, err := s.execDurable(ctx, s.q("UPDATE "+s.table+" SET position = NULL, updated_at = CURRENT_TIMESTAMP(6) WHERE pipeline = $1"), pipeline); err != nil {
		return schema.Retriable(fmt.Errorf("position store: reset %s: %w", pipeline, err))
	}
	return nil
}
