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
func TestIntegrationTransportKit(t *testing.T) {
	skipUnderRace(t)
	transporttest.Run(t, transporttest.Transport{
		New: func(t *testing.T, table schema.TableID) transporttest.Pipeline {
			ctx := context.Background()
			cfg := itConfig(t, table)
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
