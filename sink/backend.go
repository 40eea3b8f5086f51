package sink

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/sluicecdc/sluice/sink/dialect"
)

// backend is what every part of the sink works against: the configuration,
// the target's connection pool and dialect, and the logger. It is set once
// at New and never changed, so the parts share it without a lock.
type backend struct {
	cfg *Config
	db  *sqlx.DB
	d   dialect.Dialect
	log *slog.Logger
}

func (b *backend) inTx(ctx context.Context, f func(tx *txn) error) error {
	tx, err := b.begin(ctx)
	if err != nil {
		return fmt.Errorf("sink: begin transaction: %w", wrapDB(err))
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback() // the error that matters is err; a dead connection fails both
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sink: commit: %w", wrapDB(err))
	}
	return nil
}

// txn is a transaction pinned to one connection: the embedded Tx runs
// statements, and conn reaches the driver itself for streaming COPY data
// (copy.go) without database/sql's per-row work.
type txn struct {
	*sqlx.Tx
	conn *sqlx.Conn
}

func (b *backend) begin(ctx context.Context) (*txn, error) {
	conn, err := b.db.Connx(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	// Its commit acknowledges records (the progress row moves with it):
	// it must be on disk when Commit returns.
	if q := b.d.DurableTx(); q != "" {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			_ = tx.Rollback() // the error that matters is err
			conn.Close()
			return nil, err
		}
	}
	return &txn{Tx: tx, conn: conn}, nil
}

// Commit commits and returns the connection to the pool.
func (t *txn) Commit() error {
	defer t.conn.Close()
	return t.Tx.Commit()
}

// Rollback rolls back (a no-op after Commit) and returns the connection.
func (t *txn) Rollback() error {
	defer t.conn.Close()
	return t.Tx.Rollback()
}

// controlColumns reads the column names (lower case) of a control table
// of the default schema.
func (b *backend) controlColumns(ctx context.Context, table string) (map[string]bool, error) {
	rows, err := b.db.QueryContext(ctx, b.d.TableColumns(), table)
	if err != nil {
		return nil, wrapDB(err)
	}
	defer rows.Close()
	cols := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, wrapDB(err)
		}
		cols[strings.ToLower(c)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, wrapDB(err)
	}
	return cols, nil
}

func (b *backend) fold(name string) string {
	if b.d.FoldCase() {
		return strings.ToLower(name)
	}
	return name
}
