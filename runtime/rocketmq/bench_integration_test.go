package rocketmq

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// BenchmarkIntegrationPublish compares the Publisher (encode, queue choice,
// per-queue ordering, acks) with the raw client sending pre-encoded batches
// of the same size to the same queues, one after another: the baseline.
//
//	go test -run '^$' -bench IntegrationPublish -benchtime 20000x ./runtime/rocketmq
func BenchmarkIntegrationPublish(b *testing.B) {
	id := schema.TableID{Database: "db", Table: "bench"}
	cfg := itConfig(b, id)
	ctx := context.Background()
	topic := TopicName(cfg.Pipeline, id.Database, id.Table, TopicPerTable)
	if err := EnsureTopic(ctx, cfg, topic); err != nil {
		b.Fatal(err)
	}
	mkRec := func(i int) schema.Record {
		return testRecord(id, int64(i%1000), int64(i))
	}
	const batch = 500

	b.Run("raw-client", func(b *testing.B) {
		prod, err := rmq.NewProducer(
			producer.WithNsResolver(primitive.NewPassthroughResolver(cfg.NameServers)),
			producer.WithInstanceName(instanceName(cfg.Pipeline, "bench")),
			producer.WithGroupName(sanitizeName(cfg.Pipeline+"-bench")),
			producer.WithQueueSelector(pinnedSelector{}),
		)
		if err != nil {
			b.Fatal(err)
		}
		if err := prod.Start(); err != nil {
			b.Fatal(err)
		}
		defer prod.Shutdown()
		codec := integrationCodec()
		// Pre-encode outside the timer: the baseline is the broker round trips.
		perQueue := make([][]*primitive.Message, 4)
		for i := range b.N {
			r := mkRec(i)
			k, v, _ := codec.Encode(&r)
			m := primitive.NewMessage(topic, v)
			m.WithProperty(KeyProperty, string(k))
			q := runtime.QueueForKey(id, r.KeyString(), 4)
			m.Queue = &primitive.MessageQueue{Topic: topic, QueueId: q}
			perQueue[q] = append(perQueue[q], m)
		}
		b.ResetTimer()
		for _, msgs := range perQueue {
			for len(msgs) > 0 {
				n := min(maxBatchMsgs, len(msgs))
				if _, err := prod.SendSync(ctx, msgs[:n]...); err != nil {
					b.Fatal(err)
				}
				msgs = msgs[n:]
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})

	b.Run("publisher", func(b *testing.B) {
		p, err := NewPublisher(ctx, cfg, quietLog())
		if err != nil {
			b.Fatal(err)
		}
		recs := make([]schema.Record, b.N)
		for i := range recs {
			recs[i] = mkRec(i)
		}
		errs := make(chan error, b.N/batch+1)
		b.ResetTimer()
		n := 0
		for i := 0; i < len(recs); i += batch {
			n++
			if err := p.Publish(ctx, recs[i:min(i+batch, len(recs))], func(err error) { errs <- err }); err != nil {
				b.Fatal(err)
			}
		}
		for range n {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		_ = p.Close(ctx)
	})
}

// BenchmarkPublishOverhead measures the publisher's own cost (encode, queue
// choice, grouping, acks) against a sender that returns at once, next to the
// encoding alone as the baseline.
func BenchmarkPublishOverhead(b *testing.B) {
	id := schema.TableID{Database: "db", Table: "t"}
	recs := make([]schema.Record, 500)
	for i := range recs {
		recs[i] = testRecord(id, int64(i%100), int64(i))
	}
	b.Run("encode-only", func(b *testing.B) {
		for range b.N {
			for i := range recs {
				if _, _, err := (testCodec{}).Encode(&recs[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*len(recs))/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("publisher", func(b *testing.B) {
		p := testPublisher(b, okSender{}, nil)
		done := make(chan error, 1)
		for range b.N {
			if err := p.Publish(context.Background(), recs, func(err error) { done <- err }); err != nil {
				b.Fatal(err)
			}
			<-done
		}
		b.ReportMetric(float64(b.N*len(recs))/b.Elapsed().Seconds(), "records/s")
		_ = p.Close(context.Background())
	})
}

type okSender struct{}

func (okSender) SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error) {
	return &primitive.SendResult{Status: primitive.SendOK}, nil
}

// BenchmarkIntegrationConsume publishes b.N records, then times a new
// subscriber reading them all (orderly, 4 queues, handler does nothing).
func BenchmarkIntegrationConsume(b *testing.B) {
	if raceEnabled {
		b.Skip("the client's push consumer races (apache/rocketmq-client-go#1213)")
	}
	id := schema.TableID{Database: "db", Table: "cbench"}
	cfg := itConfig(b, id)
	ctx := context.Background()
	p, err := NewPublisher(ctx, cfg, quietLog())
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]schema.Record, b.N)
	for i := range recs {
		recs[i] = testRecord(id, int64(i%1000), int64(i))
	}
	errs := make(chan error, 1)
	if err := p.Publish(ctx, recs, func(err error) { errs <- err }); err != nil {
		b.Fatal(err)
	}
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	_ = p.Close(ctx)
	s, err := NewSubscriber(ctx, cfg, quietLog())
	if err != nil {
		b.Fatal(err)
	}
	var got atomic.Int64
	var first atomic.Int64 // unix ns of the first batch
	done := make(chan struct{})
	b.ResetTimer()
	start := time.Now()
	go func() {
		_ = s.Consume(ctx, func(_ context.Context, rs []schema.Record) error {
			first.CompareAndSwap(0, time.Now().UnixNano())
			if got.Add(int64(len(rs))) >= int64(b.N) {
				select {
				case <-done:
				default:
					close(done)
				}
			}
			return nil
		})
	}()
	<-done
	b.StopTimer()
	end := time.Now()
	firstAt := time.Unix(0, first.Load())
	// Startup (rebalance, queue locks) is reported apart from the rate.
	b.ReportMetric(float64(firstAt.Sub(start).Milliseconds()), "startup-ms")
	b.ReportMetric(float64(b.N)/end.Sub(firstAt).Seconds(), "records/s")
	_ = s.Close(ctx)
}
