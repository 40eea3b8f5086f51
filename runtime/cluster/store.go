// Package cluster is sluice's distributed runtime (`sluice worker`):
// workers share connectors and their tasks through control tables in a
// coordinator database (PostgreSQL or MySQL/MariaDB). The database is the
// only coordinator: it gives compare-and-set on connector configs, the
// durability of everything, and the clock that judges heartbeats and lease
// expiry. There is no leader: every worker heartbeats, takes unowned or
// expired tasks up to its fair share and hands tasks off by draining them
// and releasing their lease.
//
// Control tables (prefix configurable, default sluice_):
//
//	<p>connectors  name, config (JSON), version (compare-and-set), target (running|paused), restarts
//	<p>workers     id, url, heartbeat_at (the database's CURRENT_TIMESTAMP)
//	<p>leases      task, holder, epoch, expires_at (storage.Lease's table)
//	<p>status      task, connector, worker, state, epoch, generation, trace, detail (the task's engine.TaskStatus as JSON)
//	<p>positions   pipeline, position, epoch (the writer's lease epoch)
//
// Clocks: no worker's wall clock decides anything, so workers whose clocks
// are off by any amount neither steal a live lease nor keep a lapsed one.
// Every timestamp stored (heartbeat_at, expires_at, updated_at) is the
// database's CURRENT_TIMESTAMP(6) plus a duration sent as a number of
// microseconds, and every expiry is compared there. A worker reads its own
// clock only through Config.clock and only subtracts two readings (Go's
// monotonic clock): the time since its last renewal, deadlines of waits.
// TestClockSkew checks both with workers skewed by an hour, and
// TestClockUse that nothing else in the package reads the time.
package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/secure"
)

var prefixRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,40}$`)

// Store is the control tables of one cluster in the coordinator database.
type Store struct {
	db      *sql.DB
	dialect string // "postgres" or "mysql"
	prefix  string
}

// Open connects to the coordinator (driver "postgres" or "mysql") and
// creates the control tables if needed.
func Open(ctx context.Context, driver, dsn, prefix string) (*Store, error) {
	if driver != "postgres" && driver != "mysql" {
		return nil, fmt.Errorf("coordinator: driver %q: use postgres or mysql: %w", driver, runtime.ErrConfig)
	}
	if prefix == "" {
		prefix = "sluice_"
	}
	if !prefixRe.MatchString(prefix) {
		return nil, fmt.Errorf("coordinator: table prefix %q: use letters, digits and _: %w", prefix, runtime.ErrConfig)
	}
	db, err := openCoordinator(driver, dsn)
	if err != nil {
		return nil, secure.RedactDSNError(fmt.Errorf("coordinator: %w: %w", err, runtime.ErrConfig), dsn)
	}
	db.SetMaxOpenConns(8)
	db.SetConnMaxIdleTime(time.Minute)
	s := &Store{db: db, dialect: driver, prefix: prefix}
	// The first connection under a deadline: go-sql-driver's timeout
	// bounds only the dial, its handshake only the context.
	pctx, cancel := context.WithTimeout(ctx, connectTimeout)
	err = db.PingContext(pctx)
	cancel()
	if err != nil && ctx.Err() == nil && pctx.Err() != nil {
		err = fmt.Errorf("no answer within %s: check the host and port of coordinator.dsn and that the database server is up: %w", connectTimeout, err)
	}
	if err != nil {
		db.Close()
		return nil, secure.RedactDSNError(fmt.Errorf("coordinator: %w", err), dsn)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, secure.RedactDSNError(err, dsn)
	}
	return s, nil
}

// openCoordinator opens the coordinator's pool. On MySQL/MariaDB every
// session runs in UTC: TIMESTAMP columns are compared with
// CURRENT_TIMESTAMP in the session's time zone, and in a zone with
// daylight saving the hour the clocks go back repeats, so an expiry could
// be misjudged by that hour. PostgreSQL's TIMESTAMPTZ compares instants.
//
// Connecting is bounded by connectTimeout unless the DSN sets its own: a
// coordinator address that accepts connections but never answers would
// otherwise hang `sluice worker` at start, silently, since neither driver
// gives up on its handshake when only the context is cancelled (lib/pq's
// connect_timeout and go-sql-driver's timeout bound the whole connect).
func openCoordinator(driver, dsn string) (*sql.DB, error) {
	secs := strconv.Itoa(max(1, int(connectTimeout.Round(time.Second)/time.Second)))
	if driver != "mysql" {
		return sql.Open(driver, pqWithParam(dsn, "connect_timeout", secs))
	}
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if c.Params == nil {
		c.Params = map[string]string{}
	}
	if c.Timeout == 0 {
		c.Timeout = connectTimeout
	}
	c.Params["time_zone"] = "'+00:00'"
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// connectTimeout bounds each connection's set-up to the coordinator.
var connectTimeout = 10 * time.Second

// pqWithParam adds key=value to a lib/pq DSN (URL or key=value form)
// unless it sets key already.
func pqWithParam(dsn, key, value string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return dsn // sql.Open's first use reports it
		}
		q := u.Query()
		if q.Get(key) == "" {
			q.Set(key, value)
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	for _, f := range strings.Fields(dsn) {
		if strings.HasPrefix(f, key+"=") {
			return dsn
		}
	}
	return strings.TrimSpace(dsn + " " + key + "=" + value)
}

// Close closes the database handle.
func (s *Store) Close() error { return s.db.Close() }

// DB is the coordinator's handle, e.g. for a schema history kept beside
// the lease table (its fenced appends read the lease row).
func (s *Store) DB() *sql.DB { return s.db }

// Dialect is "postgres" or "mysql".
func (s *Store) Dialect() string { return s.dialect }

// Table names a control table: t is connectors, workers, leases, status or
// positions.
func (s *Store) Table(t string) string { return s.prefix + t }

// Tables names every control table, as created (unqualified, in the
// connection's default schema or database).
func (s *Store) Tables() []string {
	return []string{s.Table("connectors"), s.Table("workers"), s.Table("leases"), s.Table("status"), s.Table("positions"), s.Table("topics")}
}

func (s *Store) ts() string {
	if s.dialect == "postgres" {
		return "TIMESTAMPTZ(6)"
	}
	return "TIMESTAMP(6)"
}

func (s *Store) migrate(ctx context.Context) error {
	ts := s.ts()
	ddl := []string{
		"CREATE TABLE IF NOT EXISTS " + s.Table("connectors") + " (name VARCHAR(255) PRIMARY KEY, config TEXT NOT NULL, version BIGINT NOT NULL, target VARCHAR(16) NOT NULL, restarts BIGINT NOT NULL DEFAULT 0, updated_at " + ts + " NOT NULL DEFAULT CURRENT_TIMESTAMP(6))",
		"CREATE TABLE IF NOT EXISTS " + s.Table("workers") + " (id VARCHAR(255) PRIMARY KEY, url VARCHAR(1024) NOT NULL, heartbeat_at " + ts + " NOT NULL DEFAULT CURRENT_TIMESTAMP(6))",
		"CREATE TABLE IF NOT EXISTS " + s.Table("leases") + " (task VARCHAR(255) PRIMARY KEY, holder VARCHAR(255) NOT NULL, epoch BIGINT NOT NULL, expires_at " + ts + " NOT NULL DEFAULT CURRENT_TIMESTAMP(6))",
		"CREATE TABLE IF NOT EXISTS " + s.Table("status") + " (task VARCHAR(255) PRIMARY KEY, connector VARCHAR(255) NOT NULL, worker VARCHAR(255) NOT NULL, state VARCHAR(32) NOT NULL, epoch BIGINT NOT NULL, generation BIGINT NOT NULL, trace TEXT, detail TEXT, updated_at " + ts + " NOT NULL DEFAULT CURRENT_TIMESTAMP(6))",
		"CREATE TABLE IF NOT EXISTS " + s.Table("positions") + " (pipeline VARCHAR(255) PRIMARY KEY, position TEXT, epoch BIGINT NOT NULL, updated_at " + ts + " NOT NULL DEFAULT CURRENT_TIMESTAMP(6))",
		// The topics each connector's tasks used (GET /connectors/{name}/topics);
		// the row with topic '' counts the connector's resets, and a topic
		// row counts only under the count it was written with.
		"CREATE TABLE IF NOT EXISTS " + s.Table("topics") + " (connector VARCHAR(255) NOT NULL, topic VARCHAR(255) NOT NULL, resets BIGINT NOT NULL, PRIMARY KEY (connector, topic))",
	}
	for _, q := range ddl {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			// Two workers starting together on PostgreSQL can race on
			// pg_type; the table then exists.
			name := strings.Fields(q)[5]
			var one int
			if perr := s.db.QueryRowContext(ctx, "SELECT 1 FROM "+name+" WHERE 1 = 0").Scan(&one); errors.Is(perr, sql.ErrNoRows) {
				continue
			}
			return schema.Retriable(fmt.Errorf("coordinator: create control table %s (check the DSN and that the user may create tables): %w", name, err))
		}
	}
	// Columns added since a table's first release, for tables created
	// before (MySQL has no ADD COLUMN IF NOT EXISTS): each is looked for,
	// added, and looked for again when two workers added it together.
	for _, c := range []struct{ table, column, def string }{{"status", "detail", "TEXT"}} {
		name := s.Table(c.table)
		has := func() bool {
			var one int
			return errors.Is(s.db.QueryRowContext(ctx, "SELECT 1 FROM "+name+" WHERE "+c.column+" IS NULL AND 1 = 0").Scan(&one), sql.ErrNoRows)
		}
		if has() {
			continue
		}
		if _, err := s.db.ExecContext(ctx, "ALTER TABLE "+name+" ADD COLUMN "+c.column+" "+c.def); err != nil && !has() {
			return schema.Retriable(fmt.Errorf("coordinator: add column %s to control table %s (check that the user may alter it): %w", c.column, name, err))
		}
	}
	return nil
}

// q turns ? placeholders into PostgreSQL's $n.
func (s *Store) q(query string) string {
	if s.dialect != "postgres" {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// later is an SQL expression: the database's now plus a duration given as
// one bound parameter in microseconds.
func (s *Store) later() string {
	if s.dialect == "postgres" {
		return "(CURRENT_TIMESTAMP(6) + CAST(? AS BIGINT) * INTERVAL '1 microsecond')"
	}
	return "(CURRENT_TIMESTAMP(6) + INTERVAL ? MICROSECOND)"
}

func micros(d time.Duration) int64 { return d.Microseconds() }

func retriable(what string, err error) error {
	return schema.Retriable(fmt.Errorf("coordinator: %s: %w (is the coordinator database reachable?)", what, err))
}
