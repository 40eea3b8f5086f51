package runtime

import (
	"maps"
	"strconv"

	"github.com/sluicecdc/sluice/schema"
)

// QueueFor picks the queue of a record among queues: a hash of table and
// key, so that all changes to one row go to one queue and stay in order.
// It is the one partitioner of every transport (the RocketMQ publisher
// indexes a topic's writable queues with it).
func QueueFor(r *schema.Record, queues int) int {
	if queues <= 1 {
		return 0
	}
	return QueueForKey(r.Table, r.KeyString(), queues)
}

// QueueForKey is QueueFor for a table and a key's text form
// (schema.Record.KeyString): fnv32a of "database.table", a NUL and the key.
func QueueForKey(table schema.TableID, key string, queues int) int {
	if queues <= 1 {
		return 0
	}
	h := fnv32a(fnvOffset32, table.Database)
	h = fnv32a(h, ".")
	h = fnv32a(h, table.Table)
	h = fnv32a(h, "\x00")
	h = fnv32a(h, key)
	return int(h % uint32(queues))
}

// FNV-1a, 32 bits (what hash/fnv's New32a computes), over strings without
// converting them to bytes: QueueForKey runs for every record.
const (
	fnvOffset32 = 2166136261
	fnvPrime32  = 16777619
)

func fnv32a(h uint32, s string) uint32 {
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= fnvPrime32
	}
	return h
}

// QueuesFor returns the queues among n that r goes to: the one QueueFor
// picks for a row, every queue for a barrier (schema.Record.IsBarrier), so
// that a TRUNCATE or schema change reaches each queue at its place among
// the rows of its table.
func QueuesFor(r *schema.Record, n int) []int {
	if !r.IsBarrier() || n <= 1 {
		return []int{QueueFor(r, n)}
	}
	qs := make([]int, n)
	for i := range qs {
		qs[i] = i
	}
	return qs
}

// BarrierCopy returns r (a copy, headers copied) marked as one of copies
// copies of a barrier, and as the end of its transaction on its queue: a
// TRUNCATE or a DDL statement is a transaction of its own.
func BarrierCopy(r schema.Record, copies int) schema.Record {
	h := maps.Clone(r.Headers)
	if h == nil {
		h = make(map[string]string, 2)
	}
	h[schema.HeaderBarrierCopies] = strconv.Itoa(copies)
	h[schema.HeaderTxEnd] = "true"
	r.Headers = h
	return r
}
