package runtime

import (
	"maps"
	"slices"

	"github.com/sluicecdc/sluice/schema"
)

// MarkTransactionEnds sets schema.HeaderTxEnd on the last data record of
// each transaction per destination queue, for every transaction whose
// commit marker is among recs. dest gives a record's destination (false: the
// record is not sent). Transports call it on their own copy of a batch
// before they drop the markers; headers are copied before they are changed,
// so maps shared with the caller's records stay untouched. A transaction
// whose commit comes in a later batch gets no mark: its sink waits for the
// next transaction, as before.
func MarkTransactionEnds[K comparable](recs []schema.Record, dest func(i int) (K, bool)) {
	var ends []int
	open := map[string]map[K]int{} // transaction -> destination -> index of its last record
	for i := range recs {
		r := &recs[i]
		id := ""
		if r.Transaction != nil {
			id = r.Transaction.ID
		}
		if id == "" {
			continue
		}
		if r.Op == schema.OpCommit {
			for _, last := range open[id] {
				ends = append(ends, last)
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
	slices.Sort(ends)
	for _, i := range ends {
		h := maps.Clone(recs[i].Headers)
		if h == nil {
			h = make(map[string]string, 1)
		}
		h[schema.HeaderTxEnd] = "true"
		recs[i].Headers = h
	}
}
