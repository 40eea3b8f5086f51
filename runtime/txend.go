package runtime

import (
	"maps"

	"github.com/sluicecdc/sluice/schema"
)

// TransactionEnds returns the set of indices of recs that end their
// transaction on their destination queue: the last data record of each
// transaction per destination, for every transaction whose commit marker is
// among recs. dest gives a record's destination (false: not sent).
// Transports drop commit markers; they mark these records with
// schema.HeaderTxEnd (see WithTxEnd) so that a transaction-consistent sink
// knows a queue's tail is complete. A transaction whose commit comes in a
// later batch gets no mark from this batch.
func TransactionEnds[K comparable](recs []schema.Record, dest func(i int) (K, bool)) map[int]bool {
	var ends map[int]bool
	open := map[string]map[K]int{} // transaction -> destination -> index of its last record
	for i := range recs {
		r := &recs[i]
		if r.Transaction == nil || r.Transaction.ID == "" {
			continue
		}
		id := r.Transaction.ID
		if r.Op == schema.OpCommit {
			for _, last := range open[id] {
				if ends == nil {
					ends = map[int]bool{}
				}
				ends[last] = true
			}
			delete(open, id)
			continue
		}
		if r.Op.IsMarker() {
			continue
		}
		k, ok := dest(i)
		if !ok {
			continue
		}
		m := open[id]
		if m == nil {
			m = map[K]int{}
			open[id] = m
		}
		m[k] = i
	}
	return ends
}

// WithTxEnd returns r (a copy) with the schema.HeaderTxEnd mark; its header
// map is copied, never changed in place.
func WithTxEnd(r schema.Record) schema.Record {
	h := maps.Clone(r.Headers)
	if h == nil {
		h = make(map[string]string, 1)
	}
	h[schema.HeaderTxEnd] = "true"
	r.Headers = h
	return r
}
