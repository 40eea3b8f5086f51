package sink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/sluicecdc/sluice/schema"
)

// TLS modes (Config.TLSMode): MySQL's ssl-mode values, for both dialects
// (schema.ParseSSLMode).
const (
	TLSDisabled       = schema.SSLDisabled
	TLSPreferred      = schema.SSLPreferred
	TLSRequired       = schema.SSLRequired
	TLSVerifyCA       = schema.SSLVerifyCA
	TLSVerifyIdentity = schema.SSLVerifyIdentity
)

// Defaults of Config.LockTimeout and Config.StatementTimeout.
const (
	DefaultLockTimeout      = 30 * time.Second
	DefaultStatementTimeout = 10 * time.Minute
)

// normalizeTLSMode accepts MySQL's spellings; unset stays unset (TLS as
// the DSN says).
func normalizeTLSMode(m string) (string, error) {
	v, err := schema.ParseSSLMode(m)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return v, nil
}

// tlsFor applies the mode's verification to a copy of base for host.
func tlsFor(mode string, base *tls.Config, host string) *tls.Config {
	return schema.ClientTLS(mode, base, host)
}

var pqTLSKeys atomic.Uint64

// openPostgres opens the PostgreSQL pool with the TLS mode and the
// timeouts of c applied to the DSN's settings.
func openPostgres(c *Config) (*sql.DB, error) {
	pc, err := pq.NewConfig(c.DSN)
	if err != nil {
		return nil, fatal(fmt.Errorf("%w: PostgreSQL DSN: %v", ErrConfig, schema.RedactDSN(err.Error(), c.DSN)))
	}
	if pc.Runtime == nil {
		pc.Runtime = map[string]string{}
	}
	setDefault := func(k string, d time.Duration) {
		if _, ok := pc.Runtime[k]; !ok && d > 0 {
			pc.Runtime[k] = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
	setDefault("lock_timeout", c.LockTimeout)
	setDefault("statement_timeout", c.StatementTimeout)
	if c.TLSMode != "" {
		if strings.Contains(strings.ToLower(c.DSN), "sslmode") {
			return nil, fatal(fmt.Errorf("%w: the DSN sets sslmode and the config sets ssl_mode: keep one", ErrConfig))
		}
		switch c.TLSMode {
		case TLSDisabled:
			pc.SSLMode = pq.SSLModeDisable
		case TLSPreferred:
			pc.SSLMode = pq.SSLModePrefer // lib/pq's own: encrypted when offered, not verified
		default:
			key := fmt.Sprintf("sluice-%d", pqTLSKeys.Add(1))
			host := pc.Host
			if i := strings.IndexByte(host, ','); i >= 0 {
				host = host[:i]
			}
			if err := pq.RegisterTLSConfig(key, tlsFor(c.TLSMode, c.TLS, host)); err != nil {
				return nil, fatal(fmt.Errorf("%w: TLS: %v", ErrConfig, err))
			}
			pc.SSLMode = pq.SSLMode("pqgo-" + key)
		}
	}
	conn, err := pq.NewConnectorConfig(pc)
	if err != nil {
		return nil, fatal(fmt.Errorf("%w: PostgreSQL DSN: %v", ErrConfig, schema.RedactDSN(err.Error(), c.DSN)))
	}
	return sql.OpenDB(conn), nil
}

// mysqlConfig parses the DSN and applies the session settings, the TLS
// mode and the timeouts of c (mariadb: the server is MariaDB, which has
// max_statement_time).
func mysqlConfig(c *Config, mariadb bool) (*mysqldrv.Config, error) {
	mc, err := mysqldrv.ParseDSN(c.DSN)
	if err != nil {
		return nil, fatal(fmt.Errorf("%w: MySQL DSN: %v", ErrConfig, schema.RedactDSN(err.Error(), c.DSN)))
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
			return nil, fatal(fmt.Errorf("%w: the DSN sets tls and the config sets ssl_mode: keep one", ErrConfig))
		}
		if c.TLSMode == TLSDisabled {
			mc.TLS = nil
		} else {
			host, _, err := net.SplitHostPort(mc.Addr)
			if err != nil {
				host = mc.Addr
			}
			mc.TLS = tlsFor(c.TLSMode, c.TLS, host)
			mc.AllowFallbackToPlaintext = c.TLSMode == TLSPreferred
		}
	}
	return mc, nil
}

// connect opens and checks the pool of c's target.
func connect(ctx context.Context, c *Config) (*sqlx.DB, error) {
	if c.Dialect == DialectPostgres {
		db, err := openPostgres(c)
		if err != nil {
			return nil, err
		}
		return ping(ctx, sqlx.NewDb(db, "postgres"), c)
	}
	open := func(mariadb bool) (*sqlx.DB, error) {
		mc, err := mysqlConfig(c, mariadb)
		if err != nil {
			return nil, err
		}
		conn, err := mysqldrv.NewConnector(mc)
		if err != nil {
			return nil, fatal(fmt.Errorf("%w: MySQL DSN: %v", ErrConfig, schema.RedactDSN(err.Error(), c.DSN)))
		}
		return ping(ctx, sqlx.NewDb(sql.OpenDB(conn), "mysql"), c)
	}
	db, err := open(false)
	if err != nil || c.StatementTimeout <= 0 {
		return db, err
	}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		db.Close()
		return nil, fmt.Errorf("sink: query server version: %w", wrapDB(err))
	}
	if !strings.Contains(strings.ToLower(version), "mariadb") {
		return db, nil // MySQL has no statement timeout for writes
	}
	db.Close()
	return open(true)
}

func ping(ctx context.Context, db *sqlx.DB, c *Config) (*sqlx.DB, error) {
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		if msg := tlsProblem(err); msg != "" {
			return nil, fatal(fmt.Errorf("sink: TLS (ssl_mode %s) with the %s target: %s: %w", c.TLSMode, c.Dialect, msg, err))
		}
		return nil, connectError(c.Dialect, err)
	}
	return db, nil
}

// tlsProblem says what is wrong when err is a failed certificate check,
// which retrying cannot fix; "" otherwise.
func tlsProblem(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown):
		return "the server's certificate is not signed by the configured CA (ssl_ca)"
	case errors.As(err, &host):
		return "the server's certificate does not name the DSN's host: connect by a name it lists, or use ssl_mode verify_ca"
	case errors.As(err, &invalid), errors.As(err, &verify):
		return "the server's certificate is not valid"
	case strings.Contains(err.Error(), "SSL is not enabled on the server"), strings.Contains(err.Error(), "server does not support TLS"):
		return "the server offers no TLS: enable it on the server, or set ssl_mode preferred or disabled"
	}
	return ""
}
