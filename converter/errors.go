package converter

import (
	"errors"

	"github.com/sluicecdc/sluice/schema"
)

// Sentinel errors callers may test with errors.Is.
var (
	// ErrNotData is returned by the encoders for marker records (BEGIN,
	// COMMIT, heartbeat): they have no Debezium envelope. Callers skip them.
	ErrNotData = errors.New("converter: marker record has no envelope; skip it")
	// ErrValue means a row value does not have the Go type its schema
	// documents (see package schema); fix the producer of the record.
	ErrValue = errors.New("converter: value does not match its schema")
	// ErrSchema means a schema cannot be expressed or read back.
	ErrSchema = errors.New("converter: unsupported schema")
	// ErrSyntax means the bytes given to Decode are not a well-formed event
	// of this format; the message is corrupt or was written by something else.
	ErrSyntax = errors.New("converter: malformed event")
	// ErrConfig means an option value is not one the converter knows; the
	// message names the option and the allowed values. Fix the config.
	ErrConfig = schema.ConfigError("converter: bad option")
)
