package runtime

import (
	"maps"
	"strconv"

	"github.com/sluicecdc/sluice/schema"
)

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
