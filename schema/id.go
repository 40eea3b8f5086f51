package schema

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
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
	var b [idTextLen]byte
	putHex(b[0:16], id.Epoch)
	b[16] = '-'
	putHex(b[17:25], uint64(id.File))
	b[25] = '-'
	putHex(b[26:42], id.Pos)
	b[42] = '-'
	putHex(b[43:45], uint64(id.Phase))
	b[45] = '-'
	putHex(b[46:62], id.Index)
	return string(b[:])
}

const hexDigits = "0123456789abcdef"

// putHex writes v into b as len(b) lower-case hex digits.
func putHex(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = hexDigits[v&0xf]
		v >>= 4
	}
}

// ParseID is the inverse of ID.String. It accepts only the canonical form
// (lower-case hex, every field at full width).
func ParseID(s string) (ID, error) {
	if len(s) != idTextLen {
		return ID{}, fmt.Errorf("schema: record id %q: want %d characters, have %d", s, idTextLen, len(s))
	}
	var id ID
	var f [5]uint64
	at := 0
	for n, width := range [5]int{16, 8, 16, 2, 16} {
		if n > 0 {
			if s[at] != '-' {
				return ID{}, fmt.Errorf("schema: record id %q is not epoch-file-pos-phase-index in lower-case hex", s)
			}
			at++
		}
		for _, c := range []byte(s[at : at+width]) {
			var d byte
			switch {
			case c >= '0' && c <= '9':
				d = c - '0'
			case c >= 'a' && c <= 'f':
				d = c - 'a' + 10
			default:
				return ID{}, fmt.Errorf("schema: record id %q is not epoch-file-pos-phase-index in lower-case hex", s)
			}
			f[n] = f[n]<<4 | uint64(d)
		}
		at += width
	}
	id.Epoch, id.File, id.Pos, id.Phase, id.Index = f[0], uint32(f[1]), f[2], uint8(f[3]), f[4]
	return id, nil
}

// BinlogFileSeq is the sequence number of a binlog file: the numeric suffix
// of mysql-bin.000042 (0 when the name has none).
func BinlogFileSeq(name string) uint32 {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return 0
	}
	n, err := strconv.ParseUint(name[i+1:], 10, 32)
	if err != nil {
		return 0
	}
	return uint32(n)
}

// IDFromSource derives the identity of a record that carries none (one
// written by Debezium's own binlog connectors rather than by sluice) from
// its source block: a streamed change is (binlog file, position, row), the
// file's sequence number, Debezium's source.pos (where the change's event
// begins) and the row's index in that event; a snapshot row (source.snapshot
// neither empty nor "false") has the snapshot's file and position, which all
// its rows share, and is told apart and ordered by seq, its offset in the
// queue it came from (so it orders only within that queue, which is all the
// sink needs). It refuses a block that has no binlog file with a sequence
// number or no position, naming what is missing.
func IDFromSource(src Source, seq int64) (ID, error) {
	var missing []string
	file := BinlogFileSeq(src.File)
	if file == 0 {
		missing = append(missing, fmt.Sprintf("source.file %q is not a binlog file name with a sequence number", src.File))
	}
	if src.Pos == 0 {
		missing = append(missing, "source.pos is missing or 0")
	}
	if len(missing) > 0 {
		return ID{}, fmt.Errorf("schema: the record carries no identity and none can be derived from its source block (connector %q): %s",
			src.Connector, strings.Join(missing, "; "))
	}
	id := ID{File: file, Pos: src.Pos, Phase: PhaseStream}
	switch src.Snapshot {
	case "", "false":
		if src.Row < 0 {
			return ID{}, fmt.Errorf("schema: the record carries no identity and source.row %d is negative", src.Row)
		}
		id.Index = uint64(src.Row)
	default:
		if seq < 0 {
			return ID{}, fmt.Errorf("schema: snapshot row without identity has no queue offset %d", seq)
		}
		id.Phase, id.Index = PhaseSnapshot, uint64(seq)
	}
	return id, nil
}
