// Package transporttest is the kit every transport's tests run: the
// guarantees of runtime.Publisher and runtime.Subscriber, checked the same
// way on the embedded transport, RocketMQ and Kafka. A transport's test
// calls Run with a Transport that makes a fresh pipeline of its own.
// Production code never imports it.
package transporttest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// Transport is what the kit needs of a transport under test.
type Transport struct {
	// New makes a pipeline of its own (fresh names, topics and group) for
	// table. It registers its own cleanup.
	New func(t *testing.T, table schema.TableID) Pipeline
	// Durable says acknowledged batches outlive the subscriber: a new
	// member of the group gets none of them again (false for the embedded
	// transport, whose queues live in the process).
	Durable bool
}

// Pipeline is one pipeline of the transport under test.
type Pipeline struct {
	Publisher runtime.Publisher
	// Subscriber makes a subscriber; every one made is a member of the
	// same consumer group.
	Subscriber func() runtime.Subscriber
	// Queues is how many queues the table's records spread over.
	Queues int
	// QueueOf names the queue a delivered record came from (a broker and a
	// queue, a partition): the kit checks that a key keeps its queue and
	// that barriers reach every queue.
	QueueOf func(d *schema.Delivery) string
	// QueueFor, when set, names the queue a record must be delivered on
	// (runtime.QueueFor, where the transport numbers its queues as it does).
	QueueFor func(r *schema.Record) string
	// MaxHeld is the most the pipeline's two sides may add to the Go heap
	// for records published and not yet applied, however many more are
	// published while the handler holds its batches: what the transport's
	// in-flight limits, as New configured them, allow (see memoryBounded).
	// Zero skips that case.
	MaxHeld int64
}

// Run runs every case of the kit against tr.
func Run(t *testing.T, tr Transport) {
	t.Run("order_barriers_redelivery", func(t *testing.T) { orderBarriersRedelivery(t, tr) })
	t.Run("memory_bounded", func(t *testing.T) { memoryBounded(t, tr) })
}

var (
	ids       atomic.Uint64
	keySchema = &schema.Schema{Type: schema.Struct, Name: "kit.Key", Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
	}}
	valueSchema = &schema.Schema{Type: schema.Struct, Name: "kit.Value", Optional: true, Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "version", Schema: schema.Primitive(schema.Int64, false)},
	}}
)

func source() schema.Source {
	return schema.Source{Connector: "mariadb", Name: "kit", Snapshot: "false"}
}

// update is an update of row key to version, with the schemas every codec
// needs.
func update(table schema.TableID, key, version int64) schema.Record {
	return schema.Record{Op: schema.OpUpdate, Table: table, KeySchema: keySchema, Key: schema.Row{key}, ValueSchema: valueSchema,
		Before: schema.Row{key, version - 1}, After: schema.Row{key, version},
		Source: source(), ID: schema.ID{Epoch: 1, Pos: ids.Add(1)}}
}

// orderBarriersRedelivery publishes versions 1..10 of 20 keys with a
// TRUNCATE after version 5, in batches that cut across keys, and consumes
// them with a handler that fails its first call: every batch is
// acknowledged once without an error; every record arrives once (the
// failed batch again, not lost); a key keeps its queue and its versions
// come in order; the TRUNCATE has one copy on every queue, after the rows
// before it and before those after it; and, on a durable transport, a new
// member of the group gets nothing again once the first acknowledged.
func orderBarriersRedelivery(t *testing.T, tr Transport) {
	table := schema.TableID{Database: "kit", Table: "t"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := tr.New(t, table)
	pub, newSub := p.Publisher, p.Subscriber
	const keys, versions, perBatch = 20, 10, 37
	var recs []schema.Record
	for v := int64(1); v <= versions; v++ {
		for k := int64(0); k < keys; k++ {
			recs = append(recs, update(table, k, v))
		}
		if v == versions/2 {
			recs = append(recs, schema.Record{Op: schema.OpTruncate, Table: table, Source: source(), ID: schema.ID{Epoch: 1, Pos: ids.Add(1)}})
		}
	}
	want := keys*versions + p.Queues // the rows, and a copy of the TRUNCATE per queue

	batches := (len(recs) + perBatch - 1) / perBatch
	acks := make(chan error, batches)
	for i := 0; i < len(recs); i += perBatch {
		if err := pub.Publish(ctx, recs[i:min(i+perBatch, len(recs))], func(err error) { acks <- err }); err != nil {
			t.Fatal(err)
		}
	}
	// The subscriber starts before the acknowledgements are awaited: the
	// embedded transport acknowledges a batch once the sink applied it.
	var mu sync.Mutex
	var got []schema.Record
	var failed atomic.Bool
	sub := newSub()
	cctx, stop := context.WithCancel(ctx)
	consumed := make(chan error, 1)
	go func() {
		consumed <- sub.Consume(cctx, func(_ context.Context, rs []schema.Record) error {
			if failed.CompareAndSwap(false, true) {
				return errors.New("the kit's handler fails its first call")
			}
			mu.Lock()
			got = append(got, rs...)
			mu.Unlock()
			return nil
		})
	}()

	awaitAcks(ctx, t, acks, batches)
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-acks:
		t.Fatalf("a batch was acknowledged twice (%v)", err)
	default:
	}
	awaitRecords(ctx, &mu, &got, want)
	stopConsume(ctx, t, stop, consumed, sub)
	if !failed.Load() {
		t.Fatal("the handler was never called")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != want {
		t.Fatalf("consumed %d records, want %d (%d rows and a TRUNCATE per queue of %d)", len(got), want, keys*versions, p.Queues)
	}
	if err := checkOrder(got, p, versions/2); err != nil {
		t.Fatal(err)
	}
	// A transport that tracks its topics used one, on both sides.
	for side, v := range map[string]any{"publisher": pub, "subscriber": sub} {
		if tt, ok := v.(runtime.TopicTracker); ok && len(tt.UsedTopics()) != 1 {
			t.Errorf("the %s used topics %v, want one", side, tt.UsedTopics())
		}
	}

	if !tr.Durable {
		return
	}
	// A new member of the group: what the first acknowledged is not
	// delivered again. (A check of absence: it waits a while for nothing.)
	again := newSub()
	var n atomic.Int64
	actx, astop := context.WithTimeout(ctx, 5*time.Second)
	defer astop()
	if err := again.Consume(actx, func(_ context.Context, rs []schema.Record) error { n.Add(int64(len(rs))); return nil }); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume of a second member: %v", err)
	}
	if err := again.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 0 {
		t.Fatalf("a new member of the group got %d records the first one had acknowledged", n.Load())
	}
	if tt, ok := again.(runtime.TopicTracker); ok && len(tt.UsedTopics()) != 0 {
		t.Errorf("a subscriber that got nothing used topics %v", tt.UsedTopics())
	}
}

// checkOrder checks got, as delivered: each key on one queue with its
// versions rising, one TRUNCATE copy per queue, with every version up to
// cut before it and the later ones after; each record on the queue
// p.QueueFor names, when set.
func checkOrder(got []schema.Record, p Pipeline, cut int64) error {
	queueOfKey := map[int64]string{}
	last := map[int64]int64{}
	truncated := map[string]bool{}
	for i := range got {
		r := &got[i]
		if r.Delivery == nil {
			return fmt.Errorf("record %d has no Delivery", i)
		}
		q := p.QueueOf(r.Delivery)
		if r.Op == schema.OpTruncate {
			if truncated[q] {
				return fmt.Errorf("queue %s has two copies of the TRUNCATE", q)
			}
			truncated[q] = true
			continue
		}
		key, _ := r.Key[0].(int64)
		if prev, ok := queueOfKey[key]; ok && prev != q {
			return fmt.Errorf("key %d on queue %s, earlier on %s", key, q, prev)
		}
		queueOfKey[key] = q
		if p.QueueFor != nil && p.QueueFor(r) != q {
			return fmt.Errorf("key %d on queue %s, want %s", key, q, p.QueueFor(r))
		}
		v, _ := r.After[1].(int64)
		if v <= last[key] {
			return fmt.Errorf("key %d: version %d after %d", key, v, last[key])
		}
		last[key] = v
		if (v <= cut) == truncated[q] {
			return fmt.Errorf("key %d version %d on queue %s is on the wrong side of the TRUNCATE", key, v, q)
		}
	}
	if len(truncated) != p.Queues {
		return fmt.Errorf("TRUNCATE copies on %d queues %v, want %d", len(truncated), truncated, p.Queues)
	}
	return nil
}

// awaitAcks waits for n acknowledgements on acks, failing t on an error or
// when ctx ends first.
func awaitAcks(ctx context.Context, t *testing.T, acks <-chan error, n int) {
	t.Helper()
	for range n {
		select {
		case err := <-acks:
			if err != nil {
				t.Fatalf("a batch was acknowledged with %v", err)
			}
		case <-ctx.Done():
			t.Fatalf("not every batch was acknowledged: %v", ctx.Err())
		}
	}
}

// awaitRecords waits until *got (under mu) holds want records or ctx ends.
func awaitRecords(ctx context.Context, mu *sync.Mutex, got *[]schema.Record, want int) {
	for {
		mu.Lock()
		n := len(*got)
		mu.Unlock()
		if n >= want || ctx.Err() != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopConsume ends a Consume call (stop cancels its context; consumed
// gives its result) and closes sub.
func stopConsume(ctx context.Context, t *testing.T, stop context.CancelFunc, consumed <-chan error, sub runtime.Subscriber) {
	t.Helper()
	stop()
	if err := <-consumed; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume: %v", err)
	}
	if err := sub.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
