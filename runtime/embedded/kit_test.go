package embedded

import (
	"strconv"
	"testing"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/transporttest"
	"github.com/sluicecdc/sluice/schema"
)

// TestTransportKit runs the transports' common kit in process.
func TestTransportKit(t *testing.T) {
	transporttest.Run(t, transporttest.Transport{
		New: func(t *testing.T, _ schema.TableID) transporttest.Pipeline {
			e := New(4, 16)
			return transporttest.Pipeline{
				Publisher:  e.Publisher(),
				Subscriber: func() runtime.Subscriber { return e.Subscriber(50) },
				Queues:     4,
				QueueOf:    func(d *schema.Delivery) string { return strconv.Itoa(d.Queue) },
				QueueFor:   func(r *schema.Record) string { return strconv.Itoa(runtime.QueueFor(r, 4)) },
			}
		},
	})
}
