package engine

import (
	"strconv"
	"sync"

	"github.com/sluicecdc/sluice/schema"
)

// barrierTally makes records_applied count a barrier (a TRUNCATE or a
// table's schema change) once, as records_read does, although the transport
// delivers a copy of it to every queue of its topic (BarrierCopy): a copy
// counts only when it is the last of its barrier this process applies. A
// sink process that consumes some of the queues only (a RocketMQ group of
// several) counts none of a barrier whose other copies another process
// applies; records_read, counted where the source runs, is never below.
type barrierTally struct {
	mu   sync.Mutex
	seen map[string]int // barrier key -> copies applied, until the last
}

// maxTallied bounds the barriers waiting for their other copies; past it
// the tally starts afresh (the copies of those barriers are then not
// counted, which keeps records_applied at or below records_read).
const maxTallied = 4096

// counted returns recs without the barrier copies that must not be counted:
// recs itself (no copy made) when there are none.
func (b *barrierTally) counted(recs []schema.Record) []schema.Record {
	var out []schema.Record
	for i := range recs {
		if b.surplus(&recs[i]) {
			if out == nil {
				out = append(make([]schema.Record, 0, len(recs)), recs[:i]...)
			}
			continue
		}
		if out != nil {
			out = append(out, recs[i])
		}
	}
	if out == nil {
		return recs
	}
	return out
}

// surplus reports a copy of a barrier that is not the last of its copies.
func (b *barrierTally) surplus(r *schema.Record) bool {
	if !r.IsBarrier() {
		return false
	}
	copies, err := strconv.Atoi(r.Headers[schema.HeaderBarrierCopies])
	if err != nil || copies <= 1 {
		return false
	}
	key := schema.BarrierKey(r)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen == nil || len(b.seen) >= maxTallied {
		b.seen = map[string]int{}
	}
	b.seen[key]++
	if b.seen[key] < copies {
		return true
	}
	delete(b.seen, key)
	return false
}
