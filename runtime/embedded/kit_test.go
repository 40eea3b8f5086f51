package embedded

import (
	"strconv"
	"testing"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/transporttest"
	"github.com/sluicecdc/sluice/schema"
)

// TestTransportKit runs the transports' common kit in process. The
// transport bounds batches, not bytes: with the handler held, each queue
// holds depth parts of the kit's calls and its handler's batch (maxBatch
// records), and Publish blocks. The kit's calls cover every key, so each
// gives every queue a part: what is held is about depth calls and a few
// more (the handler's, the blocked one), each record PadBytes and the
// rest of it (its Go values, well under PadBytes).
func TestTransportKit(t *testing.T) {
	const queues, depth, maxBatch = 4, 16, 50
	transporttest.Run(t, transporttest.Transport{
		New: func(t *testing.T, _ schema.TableID) transporttest.Pipeline {
			e := New(queues, depth)
			return transporttest.Pipeline{
				Publisher:  e.Publisher(),
				Subscriber: func() runtime.Subscriber { return e.Subscriber(maxBatch) },
				MaxHeld:    (depth + 8) * transporttest.MemoryBatch * 2 * transporttest.PadBytes,
				Queues:     queues,
				QueueOf:    func(d *schema.Delivery) string { return strconv.Itoa(d.Queue) },
				QueueFor:   func(r *schema.Record) string { return strconv.Itoa(runtime.QueueFor(r, queues)) },
			}
		},
	})
}
