package runtime

import (
	"hash/fnv"
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
	h := fnv.New32a()
	h.Write([]byte(table.Database))
	h.Write([]byte{'.'})
	h.Write([]byte(table.Table))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(queues))
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
