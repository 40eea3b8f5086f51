package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lib/pq"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// CheckDSN parses a URL or key=value pairs, as lib/pq reads them.
func (d Dialect) CheckDSN(dsn string) error {
	if _, err := pq.NewConnector(dsn); err != nil {
		return dialect.CheckDSNError("postgres", dsn, d.DSNExample(), err)
	}
	return nil
}

// CheckTargetDSN is CheckDSN: the default schema holds the progress table.
func (d Dialect) CheckTargetDSN(dsn, _ string) error { return d.CheckDSN(dsn) }

func (Dialect) DSNExample() string {
	return "postgres://user:password@127.0.0.1:5432/db?sslmode=disable"
}

var pqTLSKeys atomic.Uint64

// Open opens the PostgreSQL pool with the TLS mode and the timeouts of c
// applied to the DSN's settings.
func (Dialect) Open(ctx context.Context, c dialect.ConnConfig) (*sql.DB, error) {
	pc, err := pq.NewConfig(c.DSN)
	if err != nil {
		return nil, dialect.DSNError("PostgreSQL", c.DSN, err)
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
			return nil, schema.Fatal(fmt.Errorf("%w: the DSN sets sslmode and the config sets ssl_mode: keep one", dialect.ErrConfig))
		}
		switch c.TLSMode {
		case dialect.TLSDisabled:
			pc.SSLMode = pq.SSLModeDisable
		case dialect.TLSPreferred:
			pc.SSLMode = pq.SSLModePrefer // lib/pq's own: encrypted when offered, not verified
		default:
			key := fmt.Sprintf("sluice-%d", pqTLSKeys.Add(1))
			host := pc.Host
			if i := strings.IndexByte(host, ','); i >= 0 {
				host = host[:i]
			}
			if err := pq.RegisterTLSConfig(key, dialect.TLSFor(c.TLSMode, c.TLS, host)); err != nil {
				return nil, schema.Fatal(fmt.Errorf("%w: TLS: %v", dialect.ErrConfig, err))
			}
			pc.SSLMode = pq.SSLMode("pqgo-" + key)
		}
	}
	conn, err := pq.NewConnectorConfig(pc)
	if err != nil {
		return nil, dialect.DSNError("PostgreSQL", c.DSN, err)
	}
	return dialect.OpenChecked(ctx, c, conn)
}
