// Package rawbench holds the Kafka half of `sluice bench`'s baselines: the
// plain franz-go client's round trip of the records sluice's publisher
// would send (RawRoundTrip). It is a benchmark harness, not part of a
// pipeline: only the bench imports it.
package rawbench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/schema"
)

// RoundTrip is what RawRoundTrip measured.
type RoundTrip struct {
	Messages int           // Kafka records sent and read back
	Bytes    int64         // their keys, values and headers
	Elapsed  time.Duration // from the first send to the last record read
}

// RawRoundTrip is the broker's raw limit for `sluice bench`: the Kafka
// records a kafka.Publisher of cfg makes for recs (kafka.Publisher.Messages:
// the same topics, partitions, keys, values and headers, byte for byte)
// produced by a plain franz-go client with the publisher's producer
// settings, while a second plain client, assigned the records' partitions
// from their start (no consumer group), reads them back, counting only.
// The records are made, the topics created and both clients connected
// before the clock starts; cfg.TopicPrefix should be fresh. atClock, when
// not nil, is called right before the clock starts: `sluice bench` starts
// the other raw sides with it, to measure them at once.
func RawRoundTrip(ctx context.Context, cfg kafka.Config, recs []schema.Record, atClock func(), log *slog.Logger) (RoundTrip, error) {
	return roundTrip(ctx, cfg, recs, atClock, nil, log)
}

// roundTrip is RawRoundTrip; read, when not nil, is called with every
// record read back (from the consuming goroutine).
func roundTrip(ctx context.Context, cfg kafka.Config, recs []schema.Record, atClock func(), read func(*kgo.Record), log *slog.Logger) (RoundTrip, error) {
	var res RoundTrip
	if log == nil {
		log = slog.Default()
	}
	pub, err := kafka.NewPublisher(ctx, cfg, log)
	if err != nil {
		return res, err
	}
	msgs, err := pub.Messages(ctx, recs)
	_ = pub.Close(ctx) // it only made the records and their topics
	if err != nil {
		return res, fmt.Errorf("kafka: raw round trip: %w", err)
	}
	if len(msgs) == 0 {
		return res, errors.New("kafka: raw round trip: no record to send")
	}
	parts := map[string]map[int32]kgo.Offset{}
	for _, m := range msgs {
		if parts[m.Topic] == nil {
			parts[m.Topic] = map[int32]kgo.Offset{}
		}
		parts[m.Topic][m.Partition] = kgo.NewOffset().AtStart()
		res.Bytes += int64(len(m.Key) + len(m.Value))
		for _, h := range m.Headers {
			res.Bytes += int64(len(h.Key) + len(h.Value))
		}
	}
	res.Messages = len(msgs)

	// The publisher's producer settings (partitions chosen by the caller,
	// acks from every in-sync replica, no linger), the client's default
	// buffer.
	prod, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		return res, fmt.Errorf("kafka: raw round trip producer: %w", err)
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumePartitions(parts))
	if err != nil {
		return res, fmt.Errorf("kafka: raw round trip consumer: %w", err)
	}
	defer cons.Close()
	for _, cl := range []*kgo.Client{prod, cons} {
		if err := cl.Ping(ctx); err != nil {
			return res, fmt.Errorf("kafka: raw round trip: no broker of %v answers: %w", cfg.Brokers, err)
		}
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumed := make(chan error, 1)
	got := 0 // written by the consumer, read after it is done
	go func() {
		for got < res.Messages {
			fs := cons.PollFetches(cctx)
			if err := cctx.Err(); err != nil {
				consumed <- err
				return
			}
			fs.EachError(func(topic string, part int32, err error) {
				log.Warn("raw round trip: fetch failed; retrying", "topic", topic, "partition", part, "err", err)
			})
			fs.EachRecord(func(r *kgo.Record) {
				got++
				if read != nil {
					read(r)
				}
			})
		}
		consumed <- nil
	}()

	if atClock != nil {
		atClock()
	}
	t0 := time.Now()
	var failed atomic.Pointer[error]
	fail := func(err error) {
		if failed.CompareAndSwap(nil, &err) {
			cancel()
		}
	}
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			fail(fmt.Errorf("kafka: raw round trip send: %w", err))
		}
	}
	for _, m := range msgs {
		prod.Produce(cctx, m, promise)
	}
	if err := prod.Flush(cctx); err != nil {
		fail(fmt.Errorf("kafka: raw round trip flush: %w", err))
	}
	err = <-consumed
	res.Elapsed = time.Since(t0)
	switch {
	case failed.Load() != nil:
		return res, *failed.Load()
	case err != nil:
		return res, fmt.Errorf("kafka: raw round trip: %d of %d records read back: %w", got, res.Messages, err)
	}
	return res, nil
}
