package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
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

// TestIntegrationOrderBarriersAndCommit publishes updates of 20 keys with
// a TRUNCATE among them to a 4-partition topic on the real broker and
// consumes them: every record is on the partition runtime.QueueFor picks,
// each key's versions come in order, the TRUNCATE has a copy on every
// partition after the rows before it and before those after it, a failed
// batch is redelivered, acks come in order, and a second subscriber of the
// group gets nothing once the first committed.
func TestIntegrationOrderBarriersAndCommit(t *testing.T) {
	name := "it-" + suffix()
	id := schema.TableID{Database: "db", Table: "t"}
	cfg := Config{Brokers: brokers(t), Pipeline: name, Partitions: 4, MaxBatch: 50}
	topic := TopicName(name, id.Database, id.Table)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	pub, err := NewPublisher(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	const keys, versions = 20, 10
	var recs []schema.Record
	for v := int64(1); v <= versions; v++ {
		for k := int64(0); k < keys; k++ {
			recs = append(recs, update(id, k, v))
		}
		if v == versions/2 {
			recs = append(recs, schema.Record{Op: schema.OpTruncate, Table: id, Source: schema.Source{Connector: "mariadb", Name: "it"},
				ID: schema.ID{Epoch: 1, Pos: testIDs.Add(1)}})
		}
	}
	var acked []int
	var ackMu sync.Mutex
	for i := 0; i < len(recs); i += 37 {
		batch := recs[i:min(i+37, len(recs))]
		if err := pub.Publish(ctx, batch, func(err error) {
			if err != nil {
				t.Errorf("batch %d: ack %v", i, err)
			}
			ackMu.Lock()
			acked = append(acked, i)
			ackMu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if used := pub.UsedTopics(); !slices.Equal(used, []string{topic}) {
		t.Errorf("the publisher's used topics %v, want [%s]", used, topic)
	}
	for j := range acked {
		if j > 0 && acked[j] < acked[j-1] {
			t.Fatalf("acks out of Publish order: %v", acked)
		}
	}
	if len(acked) != (len(recs)+36)/37 {
		t.Fatalf("%d acks, want %d", len(acked), (len(recs)+36)/37)
	}

	cfg.Topics = []string{topic}
	want := keys*versions + 4 // the rows and four copies of the TRUNCATE
	// consume returns the topics the subscriber used (UsedTopics)
	consume := func(h func(recs []schema.Record) error, until func() bool) []string {
		t.Helper()
		sub, err := NewSubscriber(ctx, cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		cctx, ccancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- sub.Consume(cctx, func(_ context.Context, rs []schema.Record) error { return h(rs) }) }()
		deadline := time.Now().Add(90 * time.Second)
		for !until() && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		ccancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := sub.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return sub.UsedTopics()
	}
	var mu sync.Mutex
	var got []schema.Record
	failOnce := atomic.Bool{}
	used := consume(func(rs []schema.Record) error {
		if failOnce.CompareAndSwap(false, true) {
			return errors.New("first batch fails once")
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, rs...)
		return nil
	}, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= want })
	if len(got) != want {
		t.Fatalf("consumed %d records, want %d", len(got), want)
	}
	if !slices.Equal(used, []string{topic}) {
		t.Errorf("the subscriber's used topics %v, want [%s]", used, topic)
	}
	last := map[int64]int64{}      // key -> version
	seenTruncate := map[int]bool{} // partition -> its copy came
	offsets := map[int]int64{}     // partition -> last offset
	for _, r := range got {
		q := r.Delivery.Queue
		if r.Delivery.Topic != topic {
			t.Fatalf("record from topic %q", r.Delivery.Topic)
		}
		if prev, ok := offsets[q]; ok && r.Delivery.Offset <= prev {
			t.Fatalf("partition %d: offset %d after %d", q, r.Delivery.Offset, prev)
		}
		offsets[q] = r.Delivery.Offset
		if r.Op == schema.OpTruncate {
			if seenTruncate[q] {
				t.Fatalf("partition %d has two TRUNCATE copies", q)
			}
			seenTruncate[q] = true
			continue
		}
		key := r.Key[0].(int64)
		if wantQ := runtime.QueueFor(&r, 4); q != wantQ {
			t.Fatalf("key %d on partition %d, QueueFor says %d", key, q, wantQ)
		}
		v := r.After[1].(int64)
		if v <= last[key] {
			t.Fatalf("key %d: version %d after %d", key, v, last[key])
		}
		last[key] = v
		if (v <= versions/2) == seenTruncate[q] {
			t.Fatalf("key %d version %d on partition %d is on the wrong side of the TRUNCATE", key, v, q)
		}
	}
	if len(seenTruncate) != 4 {
		t.Fatalf("TRUNCATE copies on partitions %v, want all 4", seenTruncate)
	}
	var again atomic.Int64
	used = consume(func(rs []schema.Record) error { again.Add(int64(len(rs))); return nil },
		func() bool { time.Sleep(5 * time.Second); return true })
	if len(used) != 0 {
		t.Errorf("a subscriber that got nothing used topics %v", used)
	}
	if n := again.Load(); n != 0 {
		t.Fatalf("a second subscriber of the group got %d records: the first one's offsets were not committed", n)
	}
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
