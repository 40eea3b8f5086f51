package sink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// Sentinel errors callers may test with errors.Is. Errors wrapping them are
// also marked fatal (schema.ClassOf is schema.ClassFatal): retrying the
// same records cannot succeed, the configuration or the target must change
// first.
var (
	// ErrConfig marks an invalid Config.
	ErrConfig = dialect.ErrConfig
	// ErrValue marks a value the target cannot represent (for example a TIME
	// beyond 24 hours for a PostgreSQL TIME column, or a Go value of the wrong
	// type for its schema).
	ErrValue = dialect.ErrValue
	// ErrSchema marks a record whose columns the target table lacks while
	// AutoEvolve is off, a missing table while AutoCreate is off, or a change
	// the sink cannot apply to the table's shape (an update or delete on a
	// table without primary key).
	ErrSchema = dialect.ErrSchema
	// ErrSchemaChange marks a schema-change record met with
	// SchemaChanges "fail".
	ErrSchemaChange = errors.New("sink: schema change refused by configuration")
	// ErrClosed is returned by Write after Close.
	ErrClosed = errors.New("sink: closed")
	// ErrTargetChanged marks a target table changed behind the sink in a
	// way it cannot repair: dropped by someone else after it wrote rows
	// there (registry.go).
	ErrTargetChanged = errors.New("sink: target table changed behind the sink")
)

// fatal is schema.Fatal: the sink's errors are classified in the
// contract's one vocabulary, where they are made.
func fatal(err error) error { return schema.Fatal(err) }

// connectError classifies a failed connection to the target: a refused
// login or a missing database is fatal (fix the DSN or the grants), a
// server down or unreachable is retriable (the runtime tries again with its
// backoff).
func connectError(dialect string, err error) error {
	if explainErr(err).Login {
		return fatal(fmt.Errorf("sink: connect to %s target: the server refused the login or the database (fix the user, password or database in the DSN): %w", dialect, err))
	}
	return fmt.Errorf("sink: connect to %s target (check the DSN and that the server is up): %w", dialect, wrapDB(err))
}

// createTable runs a CREATE TABLE IF NOT EXISTS of the sink's own tables.
// Sink processes starting together race on it, and PostgreSQL then fails
// one with a duplicate in pg_type (an integrity violation the sink would
// take for fatal): an error is ignored when the table can be read after it.
func createTable(ctx context.Context, db *sql.DB, ddl, quoted string) error {
	_, err := db.ExecContext(ctx, ddl)
	for attempt := 0; err != nil && attempt < 3 && ctx.Err() == nil; attempt++ {
		var one int
		if perr := db.QueryRowContext(ctx, "SELECT 1 FROM "+quoted+" WHERE 1 = 0").Scan(&one); errors.Is(perr, sql.ErrNoRows) {
			return nil // another process created it
		}
		_, err = db.ExecContext(ctx, ddl)
	}
	return err
}
