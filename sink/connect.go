package sink

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/sluicecdc/sluice/schema/secure"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// TLS modes (Config.TLSMode): MySQL's ssl-mode values, for both dialects
// (secure.ParseSSLMode).
const (
	TLSDisabled       = secure.SSLDisabled
	TLSPreferred      = secure.SSLPreferred
	TLSRequired       = secure.SSLRequired
	TLSVerifyCA       = secure.SSLVerifyCA
	TLSVerifyIdentity = secure.SSLVerifyIdentity
)

// Defaults of Config.LockTimeout and Config.StatementTimeout.
const (
	DefaultLockTimeout      = 30 * time.Second
	DefaultStatementTimeout = 10 * time.Minute
)

// normalizeTLSMode accepts MySQL's spellings; unset stays unset (TLS as
// the DSN says).
func normalizeTLSMode(m string) (string, error) {
	v, err := secure.ParseSSLMode(m)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return v, nil
}

// connect opens and checks the pool of c's target through its dialect.
func connect(ctx context.Context, d dialect.Dialect, c *Config) (*sqlx.DB, error) {
	db, err := d.Open(ctx, dialect.ConnConfig{DSN: c.DSN, TLSMode: c.TLSMode, TLS: c.TLS, LockTimeout: c.LockTimeout, StatementTimeout: c.StatementTimeout,
		Ping: func(ctx context.Context, db *sql.DB) error { return ping(ctx, db, c) }})
	if err != nil {
		return nil, wrapDB(err)
	}
	// Keep a connection per concurrent writer: database/sql keeps 2 idle by
	// default, so with more queues applying at once (one Write per queue)
	// every transaction past the second closed its connection at commit
	// and the next one opened a new one (a new server process on
	// PostgreSQL, its start-up and authentication), within each Write.
	// Idle connections close after a while, so a pool grown by a burst
	// shrinks again.
	db.SetMaxIdleConns(maxIdleConns)
	db.SetConnMaxIdleTime(connMaxIdle)
	return sqlx.NewDb(db, d.Name()), nil
}

// maxIdleConns bounds the target connections kept open between
// transactions: more than the queues one process applies at once (the
// default is 4 per broker); connMaxIdle closes those unused that long.
const (
	maxIdleConns = 64
	connMaxIdle  = 2 * time.Minute
)

// ping checks a new pool; its error says what to fix.
func ping(ctx context.Context, db *sql.DB, c *Config) error {
	if err := db.PingContext(ctx); err != nil {
		if msg := tlsProblem(err); msg != "" {
			return fatal(fmt.Errorf("sink: TLS (ssl_mode %s) with the %s target: %s: %w", c.TLSMode, c.Dialect, msg, err))
		}
		return connectError(c.Dialect, err)
	}
	return nil
}

// tlsProblem says what is wrong when err is a failed certificate check,
// which retrying cannot fix; "" otherwise.
func tlsProblem(err error) string {
	if msg := secure.CertificateProblem(err, "the DSN's host"); msg != "" {
		return msg
	}
	switch {
	case strings.Contains(err.Error(), "SSL is not enabled on the server"), strings.Contains(err.Error(), "server does not support TLS"):
		return "the server offers no TLS: enable it on the server, or set ssl_mode preferred or disabled"
	}
	return ""
}
