package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/transporttest"
	"github.com/sluicecdc/sluice/schema"
)

// brokers returns SLUICE_KAFKA_BROKERS, or skips (fails in CI).
func brokers(t testing.TB) []string {
	t.Helper()
	v := os.Getenv("SLUICE_KAFKA_BROKERS")
	if v == "" {
		msg := "SLUICE_KAFKA_BROKERS is not set: start the broker with scripts/servers.sh start kafka and source its servers.env"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return strings.Split(v, ",")
}

func suffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var (
	testIDs     atomic.Uint64
	itKeySchema = &schema.Schema{Type: schema.Struct, Name: "it.Key", Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
	}}
	itValueSchema = &schema.Schema{Type: schema.Struct, Name: "it.Value", Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "version", Schema: schema.Primitive(schema.Int64, false)},
	}}
)

// update is an update of row key to version, with schemas so that the JSON
// converter can encode it.
func update(id schema.TableID, key, version int64) schema.Record {
	return schema.Record{Op: schema.OpUpdate, Table: id, KeySchema: itKeySchema, Key: schema.Row{key}, ValueSchema: itValueSchema,
		Before: schema.Row{key, version - 1}, After: schema.Row{key, version},
		Source: schema.Source{Connector: "mariadb", Name: "it", Snapshot: "false"}, ID: schema.ID{Epoch: 1, Pos: testIDs.Add(1)}}
}

// publishAll publishes recs in one batch with a publisher of cfg and
// returns once they are acknowledged and the publisher is closed.
func publishAll(ctx context.Context, t *testing.T, cfg Config, recs []schema.Record) {
	t.Helper()
	pub, err := NewPublisher(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	acked := make(chan error, 1)
	if err := pub.Publish(ctx, recs, func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationTransportKit runs the transports' common kit on the real
// broker, over 4-partition topics: every record on the partition
// runtime.QueueFor picks, order per key, TRUNCATE copies on every
// partition in place, a failed batch redelivered, a second member of the
// group given nothing once the first committed, and memory bounded by
// max_in_flight_bytes (L) while the sink does not move: the subscriber
// holds at most about 2L of fetched records
// (TestIntegrationFetchBoundedInMemory), and its next fetch and the
// handler's batches (4 partitions of max_batch records, decoded beside
// their bytes) about L more; the bound, 5L, leaves room for the
// collector's timing (3 to 6 MiB measured, with -race too).
// It runs once per format: json, and compact (schemas by reference in
// SchemaTopic, looked up by the subscriber).
func TestIntegrationTransportKit(t *testing.T) {
	for _, format := range []string{FormatJSON, FormatCompact} {
		t.Run(format, func(t *testing.T) { transportKit(t, format) })
	}
}

func transportKit(t *testing.T, format string) {
	bs := brokers(t)
	log := slog.New(slog.DiscardHandler)
	const limit = 2 << 20
	transporttest.Run(t, transporttest.Transport{
		Durable: true,
		New: func(t *testing.T, table schema.TableID) transporttest.Pipeline {
			ctx := context.Background()
			cfg := Config{Brokers: bs, Pipeline: "it-" + suffix(), Partitions: 4, MaxBatch: 50, MaxInFlightBytes: limit, Format: format}
			pub, err := NewPublisher(ctx, cfg, log)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Topics = []string{TopicName(cfg.Pipeline, table.Database, table.Table)}
			return transporttest.Pipeline{
				Publisher: pub,
				Subscriber: func() runtime.Subscriber {
					sub, err := NewSubscriber(ctx, cfg, log)
					if err != nil {
						t.Fatal(err)
					}
					return sub
				},
				Queues:   4,
				QueueOf:  func(d *schema.Delivery) string { return d.Topic + "/" + strconv.Itoa(d.Queue) },
				QueueFor: func(r *schema.Record) string { return r.Delivery.Topic + "/" + strconv.Itoa(runtime.QueueFor(r, 4)) },
				MaxHeld:  5 * limit,
			}
		},
	})
}

// TestIntegrationPausedPartitionComesBack: a subscriber whose sink is slow
// pauses the fetches of a partition holding more than its share of
// max_in_flight_bytes; when a second member takes that partition and then
// leaves, the partition comes back to the first member, which must fetch it
// again (franz-go keeps a partition paused until resumed, across
// rebalances) and apply every record.
func TestIntegrationPausedPartitionComesBack(t *testing.T) {
	name := "it-" + suffix()
	id := schema.TableID{Database: "db", Table: "t"}
	cfg := Config{Brokers: brokers(t), Pipeline: name, Partitions: 2, MaxInFlightBytes: 512 << 10, SessionTimeout: 6 * time.Second}
	topic := TopicName(name, id.Database, id.Table)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	const n = 4000 // ~2.4 MB of envelopes: each partition far over its 256 KiB share
	recs := make([]schema.Record, n)
	for k := range recs {
		recs[k] = update(id, int64(k), 1)
	}
	publishAll(ctx, t, cfg, recs)
	cfg.Topics = []string{topic}

	// member a: its handler waits for release, then records what it applied
	release := make(chan struct{})
	var mu sync.Mutex
	applied := map[[2]int64]bool{} // partition, offset
	a, err := NewSubscriber(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithCancel(ctx)
	adone := make(chan error, 1)
	go func() {
		adone <- a.Consume(actx, func(hctx context.Context, rs []schema.Record) error {
			select {
			case <-release:
			case <-hctx.Done():
				return hctx.Err()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rs {
				applied[[2]int64{int64(r.Delivery.Queue), r.Delivery.Offset}] = true
			}
			return nil
		})
	}()
	defer func() { acancel(); <-adone; _ = a.Close(context.Background()) }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("gave up waiting until %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	paused := func() int { return len(a.cl.PauseFetchPartitions(nil)[topic]) }
	assigned := func() int { a.mu.Lock(); defer a.mu.Unlock(); return len(a.assigned) }
	waitFor("member a paused both partitions", func() bool { return paused() == 2 })

	// member b joins (a gives it one partition), then leaves (it comes back)
	b, err := NewSubscriber(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	bctx, bcancel := context.WithCancel(ctx)
	bdone := make(chan error, 1)
	go func() {
		bdone <- b.Consume(bctx, func(hctx context.Context, _ []schema.Record) error { <-hctx.Done(); return hctx.Err() })
	}()
	waitFor("member b took a partition", func() bool { return assigned() == 1 })
	bcancel()
	if err := <-bdone; err != nil {
		t.Fatal(err)
	}
	_ = b.Close(ctx)
	waitFor("the partition came back to member a", func() bool { return assigned() == 2 })

	close(release)
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		got := len(applied)
		mu.Unlock()
		if got == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("member a applied %d of %d records; paused partitions: %v", got, n, a.cl.PauseFetchPartitions(nil))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
