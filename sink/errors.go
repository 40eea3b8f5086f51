package sink

import "errors"

// Sentinel errors callers may test with errors.Is. Errors wrapping them are
// also marked fatal (they expose Fatal() bool): retrying the same records
// cannot succeed, the configuration or the target must change first.
var (
	// ErrConfig marks an invalid Config.
	ErrConfig = errors.New("sink: invalid configuration")
	// ErrValue marks a value the target cannot represent (for example a TIME
	// beyond 24 hours for a PostgreSQL TIME column, or a Go value of the wrong
	// type for its schema).
	ErrValue = errors.New("sink: value cannot be written")
	// ErrSchema marks a record whose columns the target table lacks while
	// AutoEvolve is off, a missing table while AutoCreate is off, or a change
	// the sink cannot apply to the table's shape (an update or delete on a
	// table without primary key).
	ErrSchema = errors.New("sink: record does not fit the target table")
	// ErrSchemaChange marks a schema-change record met with
	// SchemaChanges "fail".
	ErrSchemaChange = errors.New("sink: schema change refused by configuration")
	// ErrClosed is returned by Write after Close.
	ErrClosed = errors.New("sink: closed")
)

// fatalError marks an error that retrying cannot fix; the runtime's classifier
// recognises it through the Fatal method without importing this package.
type fatalError struct{ err error }

func (f fatalError) Error() string { return f.err.Error() }
func (f fatalError) Unwrap() error { return f.err }
func (f fatalError) Fatal() bool   { return true }

func fatal(err error) error {
	if err == nil {
		return nil
	}
	return fatalError{err}
}
