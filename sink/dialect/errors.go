package dialect

import (
	"errors"

	"github.com/sluicecdc/sluice/schema"
)

// Sentinel errors callers may test with errors.Is (package sink exports
// them under the same names). Errors wrapping them are also marked fatal
// (schema.Fatal; ErrConfig is fatal itself): retrying the same records
// cannot succeed, the configuration or the target must change first.
var (
	// ErrConfig marks an invalid configuration.
	ErrConfig = schema.ConfigError("sink: invalid configuration")
	// ErrValue marks a value the target cannot represent (for example a TIME
	// beyond 24 hours for a PostgreSQL TIME column, or a Go value of the wrong
	// type for its schema).
	ErrValue = errors.New("sink: value cannot be written")
	// ErrSchema marks a record whose columns the target table lacks while
	// AutoEvolve is off, a missing table while AutoCreate is off, a schema
	// the target has no type for, or a change the sink cannot apply to the
	// table's shape (an update or delete on a table without primary key).
	ErrSchema = errors.New("sink: record does not fit the target table")
)

// Cond is what a driver error says happened, in the core's words.
type Cond uint8

const (
	CondNone            Cond = iota // nothing the core tells apart
	CondUniqueViolation             // a unique or primary key constraint refused a row
	CondUndefinedTable              // no such table
	CondUndefinedColumn             // no such column
	CondExists                      // the table or schema exists already (a CREATE lost a race, a rename done before)
	CondColumnExists                // the column exists already (an ADD COLUMN done before)
)

// ErrInfo is a dialect's reading of a driver error.
type ErrInfo struct {
	Driver bool // err came from the database driver
	Cond   Cond
	// Class is what running the same statement again does:
	// schema.ClassFatal when it fails the same way (bad data, a
	// constraint, syntax, a missing privilege, DDL the server refuses),
	// schema.ClassRetriable when the server, the connection or a lock was
	// the cause, schema.ClassUnknown otherwise.
	Class schema.Class
	// Login reports a refused login or an unknown database: fix the DSN
	// or the grants.
	Login bool
}
