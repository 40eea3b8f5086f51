package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// CheckDSN parses go-sql-driver's form.
func (d Dialect) CheckDSN(dsn string) error {
	mc, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		return dialect.CheckDSNError("mysql", dsn, d.DSNExample(), err)
	}
	// The driver takes any text as the address and fails only when it
	// dials: a port that is no number is a config error now.
	if mc.Net == "tcp" {
		if _, port, err := net.SplitHostPort(mc.Addr); err == nil {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("%w: DSN: port %q of address %q is not a number from 1 to 65535 (a mysql DSN looks like %s)", dialect.ErrConfig, port, mc.Addr, d.DSNExample())
			}
		}
	}
	return nil
}

// CheckTargetDSN wants a database named: it holds the progress table.
func (d Dialect) CheckTargetDSN(dsn, progressTable string) error {
	if err := d.CheckDSN(dsn); err != nil {
		return err
	}
	if mc, _ := mysqldrv.ParseDSN(dsn); mc.DBName == "" {
		return fmt.Errorf("%w: the MySQL DSN must name a database (%s): it holds the progress table %s", dialect.ErrConfig, d.DSNExample(), progressTable)
	}
	return nil
}

func (Dialect) DSNExample() string { return "user:password@tcp(127.0.0.1:3306)/db" }

// config parses the DSN and applies the session settings, the TLS mode
// and the timeouts of c (mariadb: the server is MariaDB, which has
// max_statement_time). The session time zone is UTC: zoned timestamps are
// written as UTC wall clock.
func config(c dialect.ConnConfig, mariadb bool) (*mysqldrv.Config, error) {
	mc, err := mysqldrv.ParseDSN(c.DSN)
	if err != nil {
		return nil, dialect.DSNError("MySQL", c.DSN, err)
	}
	if mc.Params == nil {
		mc.Params = map[string]string{}
	}
	mc.Params["time_zone"] = "'+00:00'"
	mc.Loc = time.UTC
	seconds := func(d time.Duration) string { return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10) }
	setDefault := func(k, v string) {
		if _, ok := mc.Params[k]; !ok {
			mc.Params[k] = v
		}
	}
	if c.LockTimeout > 0 {
		setDefault("innodb_lock_wait_timeout", seconds(c.LockTimeout)) // row locks
		setDefault("lock_wait_timeout", seconds(c.LockTimeout))        // metadata locks (DDL, LOCK TABLES)
	}
	if c.StatementTimeout > 0 && mariadb {
		setDefault("max_statement_time", strconv.FormatFloat(c.StatementTimeout.Seconds(), 'f', -1, 64))
	}
	if c.TLSMode != "" {
		if mc.TLSConfig != "" {
			return nil, schema.Fatal(fmt.Errorf("%w: the DSN sets tls and the config sets ssl_mode: keep one", dialect.ErrConfig))
		}
		if c.TLSMode == dialect.TLSDisabled {
			mc.TLS = nil
		} else {
			host, _, err := net.SplitHostPort(mc.Addr)
			if err != nil {
				host = mc.Addr
			}
			mc.TLS = dialect.TLSFor(c.TLSMode, c.TLS, host)
			mc.AllowFallbackToPlaintext = c.TLSMode == dialect.TLSPreferred
		}
	}
	return mc, nil
}

// Open opens the pool; on MariaDB with a statement timeout, once more with
// max_statement_time (MySQL has no statement timeout for writes).
func (Dialect) Open(ctx context.Context, c dialect.ConnConfig) (*sql.DB, error) {
	open := func(mariadb bool) (*sql.DB, error) {
		mc, err := config(c, mariadb)
		if err != nil {
			return nil, err
		}
		conn, err := mysqldrv.NewConnector(mc)
		if err != nil {
			return nil, dialect.DSNError("MySQL", c.DSN, err)
		}
		return dialect.OpenChecked(ctx, c, conn)
	}
	db, err := open(false)
	if err != nil || c.StatementTimeout <= 0 {
		return db, err
	}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		db.Close()
		return nil, fmt.Errorf("sink: query server version: %w", err)
	}
	if !strings.Contains(strings.ToLower(version), "mariadb") {
		return db, nil
	}
	db.Close()
	return open(true)
}
