package converter

import (
	"hash/maphash"
	"sync/atomic"
)

// internTable hands out one string for text that repeats from record to
// record (a source block's version, connector, server name, database,
// table, binlog file and GTID, a transaction's id), so that decoding
// them allocates nothing once seen: a record decoded from a message
// otherwise holds a new copy of each. It is a fixed array of slots chosen
// by a hash of the text, each holding the last string put there, safe
// for concurrent use without locks: a lookup that meets another text in
// its slot makes a new string and takes the slot, so the table's memory
// is bounded and a changing text costs what it did before.
type internTable struct {
	seed  maphash.Seed
	slots [internSlots]atomic.Pointer[string]
}

const (
	internSlots  = 512 // a power of two
	maxInternLen = 128 // longer texts are copied, not kept
)

// sourceStrings is the table of every converter's decoders (the strings
// are immutable, so converters may share them).
var sourceStrings = newInternTable()

func newInternTable() *internTable { return &internTable{seed: maphash.MakeSeed()} }

// get returns b as a string, the table's when it holds the same text.
func (t *internTable) get(b []byte) string {
	if len(b) > maxInternLen {
		return string(b)
	}
	slot := &t.slots[maphash.Bytes(t.seed, b)&(internSlots-1)]
	if s := slot.Load(); s != nil && *s == string(b) {
		return *s
	}
	s := string(b)
	slot.Store(&s)
	return s
}
