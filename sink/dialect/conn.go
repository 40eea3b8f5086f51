package dialect

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/secure"
)

// CheckDSNError is the error of CheckDSN for a DSN the driver's parser
// refused (parseErr): its message, without the DSN (the parser may quote
// it, password and all), and an example of the dialect's form.
func CheckDSNError(dialect, dsn, example string, parseErr error) error {
	msg := strings.ReplaceAll(parseErr.Error(), dsn, "<dsn>")
	return fmt.Errorf("%w: DSN: %s (a %s DSN looks like %s)", ErrConfig, msg, dialect, example)
}

// DSNError is a fatal configuration error of a DSN the driver refused
// when opening, its text redacted (secure.RedactDSN); db names the
// database ("MySQL", "PostgreSQL").
func DSNError(db, dsn string, err error) error {
	return schema.Fatal(fmt.Errorf("%w: %s DSN: %v", ErrConfig, db, secure.RedactDSN(err.Error(), dsn)))
}

// OpenChecked opens a pool on conn and checks it with c.Ping; the pool is
// closed when the check fails.
func OpenChecked(ctx context.Context, c ConnConfig, conn driver.Connector) (*sql.DB, error) {
	db := sql.OpenDB(conn)
	if err := c.Ping(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
