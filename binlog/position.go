package binlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// PositionVersion is the version of the position text form written by
// EncodePosition for streaming positions. Positions taken while an initial
// snapshot is in progress carry a Snapshot block and are written as
// PositionVersionSnapshot. ParsePosition accepts both.
const (
	PositionVersion         = 1
	PositionVersionSnapshot = 2
)

// SnapshotProgress is the snapshot-in-progress part of a Position: the table
// being read and the primary key of the last row delivered from it. Resuming
// there reads the rest of that table (rows with a greater key) and the tables
// after it (in database, table name order), then streams from the binlog
// position of the enclosing Position, which the snapshot started at.
type SnapshotProgress struct {
	Database string `json:"db"`
	Table    string `json:"table"`
	// Key holds the text form of each primary-key column of the last row
	// delivered; nil: the table is read from its start.
	Key [][]byte `json:"key,omitempty"`
	// Rows is how many rows the snapshot numbered before this point: a
	// resumed snapshot numbers its rows on from here, so record IDs keep
	// growing even when it resumes at the same binlog position.
	Rows uint64 `json:"rows,omitempty"`
}

// Position is a point in the server's binlog at a transaction boundary:
// resuming there reads the next transaction first. It is typed here and
// opaque everywhere else (see EncodePosition).
type Position struct {
	Version int    `json:"v"`
	Flavor  string `json:"flavor"`         // "mariadb" or "mysql"
	GTIDSet string `json:"gtid,omitempty"` // executed GTID set; preferred for resuming
	File    string `json:"file,omitempty"` // binlog file name, used when GTIDSet is empty
	Pos     uint32 `json:"pos,omitempty"`  // offset in File
	// Epoch is the history this position belongs to (schema.ID.Epoch): a
	// source started without a saved position, or a new snapshot, begins a
	// new one from the clock. 0: none (a position written by hand or by an
	// older version): opening it begins a new epoch.
	Epoch uint64 `json:"epoch,omitempty"`
	// Snapshot is set while an initial snapshot is in progress (version 2).
	Snapshot *SnapshotProgress `json:"snapshot,omitempty"`
	// Incremental is set while an incremental snapshot is in progress
	// (incremental.go): a restart resumes it after its last chunk.
	Incremental *IncrementalProgress `json:"incremental,omitempty"`
	// Capture is the source's Include and Exclude when the position was
	// taken (captureKey; "": not recorded): a source opened here under
	// other ones snapshots the tables it newly captures (Config.
	// SnapshotNewTables).
	Capture string `json:"capture,omitempty"`
}

// IncrementalProgress is the incremental-snapshot-in-progress part of a
// Position: the tables still to read, in order, the first being read, and
// the primary key of the last row delivered from it (nil: from its start).
type IncrementalProgress struct {
	ID     string   `json:"id"` // the execute-snapshot signal's id
	Tables []string `json:"tables"`
	Key    [][]byte `json:"key,omitempty"`
	// Max is the greatest primary key of the first table when its first
	// chunk was read: chunks stop there, rows inserted above it later are
	// the stream's (nil: not read yet).
	Max [][]byte `json:"max,omitempty"`
	// Paused: a pause-snapshot signal holds the chunks until resume-snapshot.
	Paused bool `json:"paused,omitempty"`
}

// newEpoch returns a new epoch from the clock: greater than every epoch
// begun before on this machine, as long as its clock does not go back.
func newEpoch() uint64 { return uint64(time.Now().UnixNano()) }

// fileSeq is the sequence number of a binlog file (schema.BinlogFileSeq).
func fileSeq(name string) uint32 { return schema.BinlogFileSeq(name) }

// streamID is the identity of the idx-th record made from the binlog event
// that ends at pos in file.
func streamID(epoch uint64, file string, pos uint32, idx uint64) schema.ID {
	return schema.ID{Epoch: epoch, File: fileSeq(file), Pos: uint64(pos), Phase: schema.PhaseStream, Index: idx}
}

// atOrAfter reports whether (file, pos) is at or after p in the binlog.
func atOrAfter(file string, pos uint32, p Position) bool {
	a, b := fileSeq(file), fileSeq(p.File)
	return a > b || a == b && pos >= p.Pos
}

// String renders the position for logs and error messages.
func (p Position) String() string {
	var b strings.Builder
	if p.GTIDSet != "" {
		fmt.Fprintf(&b, "gtid=%q ", p.GTIDSet)
	}
	fmt.Fprintf(&b, "file=%s pos=%d", p.File, p.Pos)
	if p.Epoch != 0 {
		fmt.Fprintf(&b, " epoch=%x", p.Epoch)
	}
	if p.Incremental != nil {
		fmt.Fprintf(&b, " incremental=%s", strings.Join(p.Incremental.Tables, ","))
		if p.Incremental.Key != nil {
			fmt.Fprintf(&b, " after key %q", p.Incremental.Key)
		}
	}
	if p.Snapshot != nil {
		fmt.Fprintf(&b, " snapshot=%s.%s", p.Snapshot.Database, p.Snapshot.Table)
		if p.Snapshot.Key != nil {
			fmt.Fprintf(&b, " after key %q", p.Snapshot.Key)
		}
	}
	return b.String()
}

// EncodePosition renders p in its stable text form, a one-line JSON object
// such as {"v":1,"flavor":"mariadb","gtid":"0-1-42","file":"mysql-bin.000001","pos":1234}.
// It sets Version to PositionVersion, or PositionVersionSnapshot when
// p.Snapshot is set.
func EncodePosition(p Position) []byte {
	p.Version = PositionVersion
	if p.Snapshot != nil {
		p.Version = PositionVersionSnapshot
	}
	b, err := json.Marshal(p)
	if err != nil { // a struct of strings and ints always marshals
		panic(fmt.Sprintf("binlog: encode position: %v", err))
	}
	return b
}

// ParsePosition is the inverse of EncodePosition. It rejects unknown
// versions, unknown fields, unknown flavors and positions that name neither a
// GTID set nor a file.
func ParsePosition(b []byte) (Position, error) {
	var p Position
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Position{}, fmt.Errorf("%w: %q is not a binlog position: %v", ErrBadPosition, truncate(b, 120), err)
	}
	if dec.More() {
		return Position{}, fmt.Errorf("%w: trailing data after position %q", ErrBadPosition, truncate(b, 120))
	}
	switch {
	case p.Version == PositionVersion && p.Snapshot == nil:
	case p.Version == PositionVersionSnapshot && p.Snapshot != nil:
		if p.Snapshot.Database == "" || p.Snapshot.Table == "" {
			return Position{}, fmt.Errorf("%w: snapshot progress names no table", ErrBadPosition)
		}
	case p.Version == PositionVersion || p.Version == PositionVersionSnapshot:
		return Position{}, fmt.Errorf("%w: version %d with snapshot block %v", ErrBadPosition, p.Version, p.Snapshot != nil)
	default:
		return Position{}, fmt.Errorf("%w: version %d, this build reads versions %d and %d", ErrBadPosition, p.Version, PositionVersion, PositionVersionSnapshot)
	}
	if p.Incremental != nil {
		if len(p.Incremental.Tables) == 0 {
			return Position{}, fmt.Errorf("%w: incremental snapshot progress names no table", ErrBadPosition)
		}
		for _, t := range p.Incremental.Tables {
			if _, err := tableName(t); err != nil {
				return Position{}, fmt.Errorf("%w: incremental snapshot progress: %v", ErrBadPosition, err)
			}
		}
	}
	if p.Flavor != FlavorMariaDB && p.Flavor != FlavorMySQL {
		return Position{}, fmt.Errorf("%w: flavor %q, want %q or %q", ErrBadPosition, p.Flavor, FlavorMariaDB, FlavorMySQL)
	}
	if p.GTIDSet == "" && p.File == "" {
		return Position{}, fmt.Errorf("%w: neither gtid nor file is set", ErrBadPosition)
	}
	if p.GTIDSet == "" && p.Pos < 4 {
		return Position{}, fmt.Errorf("%w: pos %d in %s is before the first event (4)", ErrBadPosition, p.Pos, p.File)
	}
	return p, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
