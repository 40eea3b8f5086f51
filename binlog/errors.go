package binlog

import (
	"errors"
	"fmt"

	"github.com/sluicecdc/sluice/schema"
)

// Errors callers may test with errors.Is. Each is classified where it is
// made, in the vocabulary of schema/errors.go (read it with schema.ClassOf):
// all are fatal (retrying cannot help; the message says what to change)
// except ErrSnapshotDone, which is the end of input, and ErrClosed.
// Connection losses and other server errors the source meets are left
// unclassified (the runtime retries them with a backoff), except a refused
// login and a stream taken over by another replica, which are fatal.
var (
	// ErrConfig reports an invalid Config; the message names the field.
	ErrConfig = schema.ConfigError("binlog: invalid config")
	// ErrBadPosition reports a stored position that cannot be parsed.
	ErrBadPosition = schema.Fatal(errors.New("binlog: invalid position"))
	// ErrPositionPurged reports that the server no longer has the binlog at
	// the position to resume from (server error 1236). It is fatal: the
	// tables must be snapshotted again.
	ErrPositionPurged = schema.Fatal(errors.New("binlog: position no longer available on the server"))
	// ErrStreamRefused reports that the server refuses to send the binlog
	// from the position for a reason other than a purge (MySQL's error
	// 1236, e.g. GTID auto-positioning on a server whose gtid_mode is not
	// ON). It is fatal: every reconnect would be refused the same way.
	ErrStreamRefused = schema.Fatal(errors.New("binlog: the server refuses to stream from the position"))
	// ErrMissingMetadata reports a TABLE_MAP event without column names,
	// which happens unless the server runs with binlog_row_metadata=FULL.
	ErrMissingMetadata = schema.Fatal(errors.New("binlog: table map lacks row metadata; set binlog_row_metadata=FULL on the server"))
	// ErrUnsupported reports an event, setting or column the source cannot
	// map (binlog_format other than ROW, a statement-logged row change, ...).
	ErrUnsupported = schema.Fatal(errors.New("binlog: unsupported"))
	// ErrSnapshotDone is returned by Read, after the last snapshot record,
	// when Config.Snapshot is "initial_only". It is not a failure: it wraps
	// schema.ErrEndOfInput, so the runtime drains, saves the position and
	// stops the pipeline cleanly.
	ErrSnapshotDone = fmt.Errorf("binlog: snapshot complete (Snapshot is initial_only): %w", schema.ErrEndOfInput)
	// ErrUnparsedDDL reports a DDL statement that may change a captured
	// table and that the DDL parser cannot read. It is fatal; the message
	// quotes the statement and says how to continue (doc.go).
	ErrUnparsedDDL = schema.Fatal(errors.New("binlog: cannot parse a DDL statement on a captured database"))
	// ErrAccessDenied reports that the server refused the login or a
	// privilege the source needs. It is fatal: fix the user, the password or
	// the grants (see `sluice check`).
	ErrAccessDenied = schema.Fatal(errors.New("binlog: access denied"))
	// ErrServerIDInUse reports that another replica connected with this
	// source's server_id and took the stream over. It is fatal: retrying
	// would evict the other reader in turn.
	ErrServerIDInUse = schema.Fatal(errors.New("binlog: server_id in use by another replica"))
	// ErrClosed is returned by Read after Close.
	ErrClosed = errors.New("binlog: source closed")
)
