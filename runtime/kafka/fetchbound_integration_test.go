package kafka

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// queuedBytes is what the subscriber's partition workers hold: records
// fetched and not yet applied (their keys' and values' bytes).
func (s *Subscriber) queuedBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, w := range s.workers {
		w.mu.Lock()
		n += w.bytes
		w.mu.Unlock()
	}
	return n
}

// TestIntegrationFetchBoundedInMemory: the broker counts a fetch's bytes as
// stored, compressed by the producer (snappy, franz-go's default), while
// the records take their whole size in memory. With a sink that does not
// move, the records the subscriber holds must stay within twice
// max_in_flight_bytes. When a fetch could be max_in_flight_bytes as
// stored, one fetch of a lagging sink brought in several times the limit
// (a bench catch-up peaked at 390 MiB of RSS).
func TestIntegrationFetchBoundedInMemory(t *testing.T) {
	bs := brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := schema.TableID{Database: "db", Table: "lagging"}
	cfg := Config{Brokers: bs, Pipeline: "it-" + suffix(), Partitions: 4, MaxInFlightBytes: 2 << 20}
	var recs []schema.Record
	for i := range int64(40000) { // about 100 MiB as the JSON converter writes them, a few MiB compressed (30:1)
		recs = append(recs, update(id, i%500, i/500+1))
	}
	// Published as a source does, a transaction's batch at a time and each
	// acknowledged, so the producer's batches are what a source makes, not
	// one backlog of 40,000 records.
	pub, err := NewPublisher(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(recs); i += 100 {
		acked := make(chan error, 1)
		if err := pub.Publish(ctx, recs[i:min(i+100, len(recs))], func(err error) { acked <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-acked; err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}

	cfg.Topics = []string{TopicName(cfg.Pipeline, id.Database, id.Table)}
	sub, err := NewSubscriber(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	consumed := make(chan error, 1)
	go func() {
		consumed <- sub.Consume(cctx, func(ctx context.Context, _ []schema.Record) error {
			<-ctx.Done() // the sink does not move
			return ctx.Err()
		})
	}()
	// The queues grow until every partition is paused: wait until they
	// have not grown for two seconds.
	var held int64
	for still := 0; still < 20 && ctx.Err() == nil; {
		time.Sleep(100 * time.Millisecond)
		if n := sub.queuedBytes(); n != held || n == 0 {
			held, still = n, 0
		} else {
			still++
		}
	}
	stop()
	<-consumed
	_ = sub.Close(ctx)
	if held == 0 {
		t.Fatal("the subscriber fetched nothing")
	}
	if limit := 2 * int64(cfg.MaxInFlightBytes); held > limit {
		t.Fatalf("the subscriber held %d KiB of records with max_in_flight_bytes %d KiB: more than twice the limit", held>>10, cfg.MaxInFlightBytes>>10)
	}
	t.Logf("held %d KiB of records, max_in_flight_bytes %d KiB", held>>10, cfg.MaxInFlightBytes>>10)
}
