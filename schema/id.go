package schema

import (
	"cmp"
	"fmt"
)

// ID is a record's identity: its place in the history of its source. The
// source assigns it where it makes the record, as a pure function of what it
// reads, so a replay from any saved position gives every record the ID it
// had before, across reconnects, restarts and heartbeats. IDs are totally
// ordered (Compare); within one queue of a transport they only grow, which
// is what lets a sink skip a record it already applied.
//
// The zero ID means "no identity": sinks refuse such a record.
type ID struct {
	// Epoch orders whole histories: a source that starts with no saved
	// position (a first start, or after `sluice positions reset`) begins a
	// new epoch, greater than any before, and saves it with its positions.
	Epoch uint64
	// File is the binlog file's sequence number (the numeric suffix of
	// mysql-bin.000042).
	File uint32
	// Pos is the event's end position in File (where the next event
	// begins). For snapshot rows it is the position the snapshot is
	// consistent with.
	Pos uint64
	// Phase is PhaseStream for changes read from the binlog and
	// PhaseSnapshot for rows a snapshot read at Pos: those order after the
	// stream up to Pos and before every change after it.
	Phase uint8
	// Index is the row's index within its event (stream) or its number
	// within the snapshot.
	Index uint64
}

// Phases of an ID.
const (
	PhaseStream   uint8 = 0
	PhaseSnapshot uint8 = 1
)

// IsZero reports whether id is the zero ID (no identity).
func (id ID) IsZero() bool { return id == ID{} }

// Compare returns -1, 0 or +1 as id orders before, equal to or after o.
func (id ID) Compare(o ID) int {
	if c := cmp.Compare(id.Epoch, o.Epoch); c != 0 {
		return c
	}
	if c := cmp.Compare(id.File, o.File); c != 0 {
		return c
	}
	if c := cmp.Compare(id.Pos, o.Pos); c != 0 {
		return c
	}
	if c := cmp.Compare(id.Phase, o.Phase); c != 0 {
		return c
	}
	return cmp.Compare(id.Index, o.Index)
}

// idTextLen is the length of ID.String: fixed-width hex fields, so the text
// forms of two IDs sort like the IDs.
const idTextLen = 16 + 1 + 8 + 1 + 16 + 1 + 2 + 1 + 16

// String renders id as fixed-width lower-case hex fields joined by '-'
// (epoch-file-pos-phase-index). Text forms sort like IDs; this is the form
// stored in the sink's progress table and carried in transport headers.
func (id ID) String() string {
	return fmt.Sprintf("%016x-%08x-%016x-%02x-%016x", id.Epoch, id.File, id.Pos, id.Phase, id.Index)
}

// ParseID is the inverse of ID.String.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != idTextLen {
		return ID{}, fmt.Errorf("schema: record id %q: want %d characters, have %d", s, idTextLen, len(s))
	}
	n, err := fmt.Sscanf(s, "%016x-%08x-%016x-%02x-%016x", &id.Epoch, &id.File, &id.Pos, &id.Phase, &id.Index)
	if err != nil || n != 5 {
		return ID{}, fmt.Errorf("schema: record id %q is not epoch-file-pos-phase-index in hex: %v", s, err)
	}
	if id.String() != s { // upper case or other non-canonical forms
		return ID{}, fmt.Errorf("schema: record id %q is not in canonical form (want %q)", s, id.String())
	}
	return id, nil
}
