package binlog

import "errors"

// Errors callers may test with errors.Is.
var (
	// ErrConfig reports an invalid Config; the message names the field.
	ErrConfig = errors.New("binlog: invalid config")
	// ErrBadPosition reports a stored position that cannot be parsed.
	ErrBadPosition = errors.New("binlog: invalid position")
	// ErrPositionPurged reports that the server no longer has the binlog at
	// the position to resume from (server error 1236). It is fatal: the
	// tables must be snapshotted again.
	ErrPositionPurged = errors.New("binlog: position no longer available on the server")
	// ErrMissingMetadata reports a TABLE_MAP event without column names,
	// which happens unless the server runs with binlog_row_metadata=FULL.
	ErrMissingMetadata = errors.New("binlog: table map lacks row metadata; set binlog_row_metadata=FULL on the server")
	// ErrUnsupported reports an event or column the source cannot map.
	ErrUnsupported = errors.New("binlog: unsupported")
	// ErrSnapshotDone is returned by Read, after the last snapshot record,
	// when Config.Snapshot is "initial_only". It is not a failure.
	ErrSnapshotDone = errors.New("binlog: snapshot complete (Snapshot is initial_only)")
	// ErrUnparsedDDL reports a DDL statement that may change a captured
	// table and that the DDL parser cannot read. It is fatal; the message
	// quotes the statement and says how to continue (doc.go).
	ErrUnparsedDDL = errors.New("binlog: cannot parse a DDL statement on a captured database")
	// ErrClosed is returned by Read after Close.
	ErrClosed = errors.New("binlog: source closed")
)
