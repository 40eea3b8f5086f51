package rocketmq

import (
	"context"
	"strconv"
	"testing"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/transporttest"
	"github.com/sluicecdc/sluice/schema"
)

// TestIntegrationTransportKit runs the transports' common kit on the real
// brokers, in the default format: a table's topic has queues on both
// brokers, and every record is on the queue runtime.QueueForKey picks
// among the route's write queues. A second member of the group is not
// checked for nothing redelivered: RocketMQ's consumer offsets may give the
// last batches again after a close, which the sink's progress rows skip
// (TestIntegrationResumeAfterClose checks the resume itself).
//
// Memory: the subscriber's pull cache is bounded in messages
// (max_in_flight, MaxCachedRecords) and in bytes (max_in_flight_bytes),
// shared out among the queues; the client's floor of 1 MiB a queue makes
// the byte bound of the default 8 queues larger than the kit's case is
// cheap to overrun, so the count binds here: each queue holds its share
// and one pull (batch_size messages) more, and the handler one batch; the
// publisher's window holds MaxInFlight records unacknowledged. Each of
// those messages takes its PadBytes about three times: in the pull's
// buffer, the client's message and the decoded record.
func TestIntegrationTransportKit(t *testing.T) {
	skipUnderRace(t)
	const cached, batch, window = 64, 32, 128
	transporttest.Run(t, transporttest.Transport{
		New: func(t *testing.T, table schema.TableID) transporttest.Pipeline {
			ctx := context.Background()
			cfg := itConfig(t, table)
			cfg.MaxCachedRecords, cfg.BatchSize, cfg.MaxInFlight = cached, batch, window
			pub, err := NewPublisher(ctx, cfg, quietLog())
			if err != nil {
				t.Fatal(err)
			}
			route, err := fetchRoute(ctx, cfg.NameServers, TopicName(cfg.Pipeline, table.Database, table.Table, TopicPerTable))
			if err != nil {
				t.Fatal(err)
			}
			qs := route.writeQueues()
			return transporttest.Pipeline{
				Publisher: pub,
				Subscriber: func() runtime.Subscriber {
					sub, err := NewSubscriber(ctx, cfg, quietLog())
					if err != nil {
						t.Fatal(err)
					}
					return sub
				},
				MaxHeld: int64(cached+2*batch*len(qs)+window) * 3 * transporttest.PadBytes,
				Queues:  len(qs),
				QueueOf: func(d *schema.Delivery) string { return d.Topic + "/" + d.Broker + "/" + strconv.Itoa(d.Queue) },
				QueueFor: func(r *schema.Record) string {
					q := qs[runtime.QueueForKey(r.Table, r.KeyString(), len(qs))]
					return r.Delivery.Topic + "/" + q.Broker + "/" + strconv.Itoa(q.ID)
				},
			}
		},
	})
}
