package rocketmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// fakeSender records what would reach the broker, per queue.
type fakeSender struct {
	mu     sync.Mutex
	sent   map[int][]*primitive.Message // queue id -> messages in send order
	calls  int
	sizes  []int
	gate   chan struct{} // when set, each SendSync waits for a token or ctx
	fail   func(msgs []*primitive.Message) error
	active atomic.Int32
}

func newFakeSender() *fakeSender { return &fakeSender{sent: map[int][]*primitive.Message{}} }

func (f *fakeSender) SendSync(ctx context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error) {
	f.active.Add(1)
	defer f.active.Add(-1)
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail != nil {
		if err := f.fail(msgs); err != nil {
			return nil, err
		}
	}
	q := pinnedSelector{}.Select(msgs[0], []*primitive.MessageQueue{
		{Topic: msgs[0].Topic, BrokerName: "b", QueueId: 0}, {Topic: msgs[0].Topic, BrokerName: "b", QueueId: 1},
		{Topic: msgs[0].Topic, BrokerName: "b", QueueId: 2}, {Topic: msgs[0].Topic, BrokerName: "b", QueueId: 3}}, "")
	if q == nil {
		return nil, errors.New("fake: no queue")
	}
	for _, m := range msgs {
		if m.Queue.QueueId != q.QueueId || m.Topic != msgs[0].Topic {
			return nil, fmt.Errorf("fake: batch mixes queues %d and %d", m.Queue.QueueId, q.QueueId)
		}
	}
	f.sizes = append(f.sizes, len(msgs))
	f.sent[q.QueueId] = append(f.sent[q.QueueId], msgs...)
	return &primitive.SendResult{Status: primitive.SendOK}, nil
}

func (f *fakeSender) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, ms := range f.sent {
		n += len(ms)
	}
	return n
}

type fourQueues struct{}

func (fourQueues) queues(context.Context, string) ([]queue, error) {
	return []queue{{"b", 0}, {"b", 1}, {"b", 2}, {"b", 3}}, nil
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testPublisher(t testing.TB, s sender, mod func(*Config)) *Publisher {
	t.Helper()
	cfg := Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "t", Codec: testCodec{}}
	if mod != nil {
		mod(&cfg)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return newPublisher(cfg, quietLog(), s, fourQueues{}, nil)
}

var tbl = schema.TableID{Database: "db", Table: "t"}

func rec(key, version int64) schema.Record {
	return schema.Record{Op: schema.OpUpdate, Table: tbl, Key: schema.Row{key}, After: schema.Row{key, version}, ID: nextTestID()}
}

var testIDs atomic.Uint64

// nextTestID is a record ID greater than every one before it, as a source
// gives them.
func nextTestID() schema.ID { return schema.ID{Epoch: 1, Pos: testIDs.Add(1)} }

func TestPublisherKeepsOrderPerKeyAndAcksInOrder(t *testing.T) {
	f := newFakeSender()
	p := testPublisher(t, f, nil)
	const keys, versions, perBatch = 20, 50, 37
	var all []schema.Record
	for v := range int64(versions) {
		for k := range int64(keys) {
			all = append(all, rec(k, v))
		}
	}
	var mu sync.Mutex
	var acked []int
	ctx := context.Background()
	for i := 0; i*perBatch < len(all); i++ {
		batch := []schema.Record{{Op: schema.OpBegin}}
		batch = append(batch, all[i*perBatch:min((i+1)*perBatch, len(all))]...)
		batch = append(batch, schema.Record{Op: schema.OpCommit, Position: []byte("p" + strconv.Itoa(i))})
		sentBefore := 0
		for j := range i + 1 {
			sentBefore += min((j+1)*perBatch, len(all)) - j*perBatch
		}
		if err := p.Publish(ctx, batch, func(err error) {
			if err != nil {
				t.Errorf("batch %d: %v", i, err)
			}
			// Acked only once every record up to this batch reached the broker.
			if n := f.count(); n < sentBefore {
				t.Errorf("batch %d acked with %d of its %d records sent", i, n, sentBefore)
			}
			mu.Lock()
			acked = append(acked, i)
			mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i, a := range acked {
		if a != i {
			t.Fatalf("acks out of order: %v", acked)
		}
	}
	if want := (len(all) + perBatch - 1) / perBatch; len(acked) != want {
		t.Fatalf("%d acks, want %d", len(acked), want)
	}
	if n := f.count(); n != len(all) {
		t.Fatalf("%d messages sent, want %d (markers are not sent)", n, len(all))
	}
	next := map[int64]int64{}
	used := 0
	for q, msgs := range f.sent {
		used++
		for _, m := range msgs {
			r, err := testCodec{}.Decode([]byte(m.GetProperty(KeyProperty)), m.Body)
			if err != nil {
				t.Fatal(err)
			}
			k, v := r.Key[0].(int64), r.After[1].(int64)
			if want := runtime.QueueForKey(tbl, r.KeyString(), 4); want != q {
				t.Errorf("key %d on queue %d, want %d", k, q, want)
			}
			if v != next[k] {
				t.Fatalf("key %d: version %d after %d", k, v, next[k]-1)
			}
			next[k]++
			if m.GetTags() != "t" || m.GetKeys() != strconv.FormatInt(k, 10) {
				t.Errorf("tag %q keys %q", m.GetTags(), m.GetKeys())
			}
		}
	}
	if used != 4 {
		t.Errorf("%d queues used, want 4", used)
	}
}

func TestPublisherMarkerOnlyBatchIsAckedWithoutSending(t *testing.T) {
	f := newFakeSender()
	p := testPublisher(t, f, nil)
	got := make(chan error, 1)
	if err := p.Publish(context.Background(), []schema.Record{{Op: schema.OpHeartbeat, Position: []byte("x")}}, func(err error) { got <- err }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("marker-only batch never acked")
	}
	if f.calls != 0 {
		t.Errorf("%d sends for a marker-only batch", f.calls)
	}
	_ = p.Close(context.Background())
}

func TestPublisherSplitsLargeBatches(t *testing.T) {
	f := newFakeSender()
	p := testPublisher(t, f, nil)
	var recs []schema.Record
	for v := range int64(600) {
		recs = append(recs, rec(7, v))
	}
	done := make(chan error, 1)
	if err := p.Publish(context.Background(), recs, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_ = p.Close(context.Background())
	if len(f.sizes) != 3 || f.sizes[0] != maxBatchMsgs || f.sizes[2] != 600-2*maxBatchMsgs {
		t.Errorf("send sizes %v, want [256 256 88]", f.sizes)
	}
}

func TestPublisherBackpressure(t *testing.T) {
	f := newFakeSender()
	f.gate = make(chan struct{})
	p := testPublisher(t, f, func(c *Config) { c.MaxInFlight = 10 })
	ctx := context.Background()
	var acks atomic.Int32
	ack := func(err error) {
		if err != nil {
			t.Error(err)
		}
		acks.Add(1)
	}
	batch := func(v int64) []schema.Record {
		return []schema.Record{rec(1, v), rec(2, v), rec(3, v), rec(4, v)}
	}
	for v := range int64(2) {
		if err := p.Publish(ctx, batch(v), ack); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.win.inFlight(); n != 8 {
		t.Fatalf("in flight %d, want 8", n)
	}
	// A third batch of 4 would make 12 > 10: Publish blocks until ctx ends.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := p.Publish(short, batch(2), ack)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third Publish: err = %v, want a deadline (blocked by the window)", err)
	}
	// Once the broker answers, the blocked Publish goes through.
	published := make(chan error, 1)
	go func() { published <- p.Publish(ctx, batch(2), ack) }()
	select {
	case err := <-published:
		t.Fatalf("Publish returned (%v) while 8 records were unconfirmed", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(f.gate)
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if acks.Load() != 3 || f.count() != 12 || p.win.inFlight() != 0 {
		t.Errorf("acks %d, sent %d, in flight %d", acks.Load(), f.count(), p.win.inFlight())
	}
}

func TestPublisherOversizedBatchDoesNotDeadlock(t *testing.T) {
	f := newFakeSender()
	p := testPublisher(t, f, func(c *Config) { c.MaxInFlight = 3 })
	done := make(chan error, 1)
	if err := p.Publish(context.Background(), []schema.Record{rec(1, 0), rec(2, 0), rec(3, 0), rec(4, 0), rec(5, 0)}, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_ = p.Close(context.Background())
}

func TestPublisherFailureIsStickyAndAckedInOrder(t *testing.T) {
	f := newFakeSender()
	boom := errors.New("broker down")
	f.fail = func(msgs []*primitive.Message) error {
		if msgs[0].Queue.QueueId == runtime.QueueForKey(tbl, "1", 4) {
			return boom
		}
		return nil
	}
	p := testPublisher(t, f, func(c *Config) { c.SendRetries = 2 })
	ctx := context.Background()
	errs := make(chan error, 3)
	if err := p.Publish(ctx, []schema.Record{rec(1, 0)}, func(err error) { errs <- err }); err != nil {
		t.Fatal(err)
	}
	err := <-errs
	if !errors.Is(err, ErrSend) || !errors.Is(err, boom) {
		t.Fatalf("ack error %v, want ErrSend wrapping the broker's error", err)
	}
	f.mu.Lock()
	calls := f.calls
	f.mu.Unlock()
	if calls != 3 {
		t.Errorf("%d send attempts, want 1 + 2 retries", calls)
	}
	// The publisher refuses further batches rather than leave a gap.
	if err := p.Publish(ctx, []schema.Record{rec(2, 0)}, func(error) { t.Error("ack called after Publish failed") }); err == nil || !errors.Is(err, boom) {
		t.Fatalf("Publish after a failure: %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestPublisherLaterBatchesFailAfterAnEarlierOne(t *testing.T) {
	f := newFakeSender()
	f.gate = make(chan struct{})
	boom := errors.New("broker down")
	f.fail = func(msgs []*primitive.Message) error {
		if msgs[0].Queue.QueueId == runtime.QueueForKey(tbl, "1", 4) {
			return boom
		}
		return nil
	}
	p := testPublisher(t, f, func(c *Config) { c.SendRetries = -1 })
	ctx := context.Background()
	var errs []error
	var mu sync.Mutex
	ack := func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
	// Batch 1 goes to the failing queue, batch 2 to another that succeeds.
	other := int64(2)
	for runtime.QueueForKey(tbl, strconv.FormatInt(other, 10), 4) == runtime.QueueForKey(tbl, "1", 4) {
		other++
	}
	if err := p.Publish(ctx, []schema.Record{rec(1, 0)}, ack); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(ctx, []schema.Record{rec(other, 0)}, ack); err != nil {
		t.Fatal(err)
	}
	close(f.gate)
	_ = p.Close(ctx)
	if len(errs) != 2 || !errors.Is(errs[0], boom) || !errors.Is(errs[1], boom) {
		t.Fatalf("acks %v: the batch after a failed one must not be acked as delivered", errs)
	}
}

func TestPublisherCloseWaitsAndCancels(t *testing.T) {
	f := newFakeSender()
	f.gate = make(chan struct{})
	p := testPublisher(t, f, nil)
	acked := make(chan error, 1)
	if err := p.Publish(context.Background(), []schema.Record{rec(1, 0)}, func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(100 * time.Millisecond); f.gate <- struct{}{} }()
	start := time.Now()
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 90*time.Millisecond {
		t.Error("Close returned before the outstanding send was confirmed")
	}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(context.Background(), []schema.Record{rec(1, 1)}, func(error) {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Publish after Close: %v", err)
	}

	// A Close deadline cancels the send in progress and acks with an error.
	f2 := newFakeSender()
	f2.gate = make(chan struct{}) // never opened
	p2 := testPublisher(t, f2, nil)
	acked2 := make(chan error, 1)
	if err := p2.Publish(context.Background(), []schema.Record{rec(1, 0)}, func(err error) { acked2 <- err }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p2.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close past its deadline: %v", err)
	}
	if err := <-acked2; err == nil {
		t.Error("an unconfirmed batch was acked as delivered")
	}
}

func TestPublisherEncodeErrorTakesNothing(t *testing.T) {
	f := newFakeSender()
	p := testPublisher(t, f, nil)
	bad := schema.Record{Op: schema.OpCreate, Table: tbl, Key: schema.Row{"not an int"}}
	err := p.Publish(context.Background(), []schema.Record{rec(1, 0), bad}, func(error) { t.Error("ack called for a refused batch") })
	if err == nil {
		t.Fatal("no error for an unencodable record")
	}
	if p.win.inFlight() != 0 {
		t.Errorf("refused batch holds %d tokens", p.win.inFlight())
	}
	collide := schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "db.t", Table: "x"}}
	_ = p.Publish(context.Background(), []schema.Record{{Op: schema.OpCreate, Table: schema.TableID{Database: "db", Table: "t.x"}}}, func(error) {})
	if err := p.Publish(context.Background(), []schema.Record{collide}, func(error) {}); !errors.Is(err, ErrTopicCollision) {
		t.Errorf("colliding table: %v", err)
	}
	_ = p.Close(context.Background())
}

// ourGoroutines lists the goroutines running this package's code (not the
// client's, which leaks some by itself, nor the tests').
func ourGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:goruntime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "sluice/runtime/rocketmq.(*worker)") || strings.Contains(g, "sluice/runtime/rocketmq.(*Publisher)") ||
			strings.Contains(g, "sluice/runtime/rocketmq.(*Subscriber)") {
			out = append(out, g)
		}
	}
	return out
}

func TestPublisherNoGoroutineLeak(t *testing.T) {
	for range 3 {
		p := testPublisher(t, newFakeSender(), nil)
		deadline := time.Now().Add(2 * time.Second)
		for len(ourGoroutines()) < sendWorkers+1 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // let them start
		}
		if n := len(ourGoroutines()); n != sendWorkers+1 {
			t.Fatalf("%d publisher goroutines running, want %d workers and the ack dispatcher", n, sendWorkers+1)
		}
		done := make(chan error, 1)
		_ = p.Publish(context.Background(), []schema.Record{rec(1, 0), rec(2, 0)}, func(err error) { done <- err })
		<-done
		_ = p.Close(context.Background())
	}
	if left := ourGoroutines(); len(left) > 0 {
		t.Fatalf("%d goroutines left after Close:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

func TestPinnedSelector(t *testing.T) {
	mqs := []*primitive.MessageQueue{{BrokerName: "a", QueueId: 0}, {BrokerName: "a", QueueId: 1}, {BrokerName: "b", QueueId: 0}, {BrokerName: "b", QueueId: 1}}
	m := primitive.NewMessage("t", []byte("x"))
	if got := (pinnedSelector{}).Select(m, mqs, ""); got != nil {
		t.Errorf("no queue chosen: got %v", got)
	}
	m.Queue = &primitive.MessageQueue{BrokerName: "b", QueueId: 1}
	if got := (pinnedSelector{}).Select(m, mqs, "b"); got != mqs[3] {
		t.Errorf("got %v, want b/1", got)
	}
	m.Queue = &primitive.MessageQueue{BrokerName: "c", QueueId: 1}
	if got := (pinnedSelector{}).Select(m, mqs, ""); got != nil {
		t.Errorf("unknown broker: got %v", got)
	}
}

func TestNewPublisherNameServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := Config{NameServers: []string{addr}, Pipeline: "down", Codec: testCodec{}, Tables: []schema.TableID{tbl}}
	_, err = NewPublisher(ctx, cfg, quietLog())
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("NewPublisher with the name server down: %v; want an error naming %s", err, addr)
	}
	if err := EnsureTopic(ctx, cfg, "x"); err == nil {
		t.Fatal("EnsureTopic with the name server down: no error")
	}
}

// A TRUNCATE goes to every queue of its topic, after the rows before it on
// each, with the copy count; rows go to one queue each.
func TestPublisherBarrierToEveryQueue(t *testing.T) {
	f := newFakeSender()
	p := testPublisher(t, f, nil)
	defer p.Close(context.Background())
	var batch []schema.Record
	for k := range int64(20) {
		batch = append(batch, rec(k, 1))
	}
	batch = append(batch, schema.Record{Op: schema.OpTruncate, Table: tbl, ID: nextTestID()})
	for k := range int64(20) {
		batch = append(batch, rec(k, 2))
	}
	acked := make(chan error, 1)
	if err := p.Publish(context.Background(), batch, func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for q := range 4 {
		copies, after := 0, false
		for _, m := range f.sent[q] {
			props := m.GetProperties()
			if n, ok := props[HeaderPropertyPrefix+schema.HeaderBarrierCopies]; ok {
				copies++
				after = true
				if n != "4" {
					t.Errorf("queue %d: copies property %q, want 4", q, n)
				}
				continue
			}
			var env testEnvelope
			if err := json.Unmarshal(m.Body, &env); err != nil || len(env.After) != 2 {
				t.Fatalf("queue %d: body %s: %v", q, m.Body, err)
			}
			if v := env.After[1]; (v == 2) != after {
				t.Errorf("queue %d: a version-%d row on the wrong side of the truncate", q, v)
			}
		}
		if copies != 1 {
			t.Errorf("queue %d: %d copies of the truncate, want 1", q, copies)
		}
	}
}

// A statement naming several captured tables (DROP TABLE t, u) is one
// barrier on every queue of each table's topic, its copies counting all of
// them; before, it reached only the first table's topic and raced the rows
// of the others (issue #10).
func TestPublisherMultiTableBarrierToEveryTopic(t *testing.T) {
	f := newFakeSender()
	p := testPublisher(t, f, nil)
	defer p.Close(context.Background())
	other := schema.TableID{Database: "db", Table: "u"}
	ddl := schema.Record{Op: schema.OpSchemaChange, Table: tbl, ID: nextTestID(),
		Change: &schema.SchemaChange{DDL: "DROP TABLE t, u", Kind: "DROP", Captured: []schema.TableID{tbl, other, tbl}}}
	acked := make(chan error, 1)
	if err := p.Publish(context.Background(), []schema.Record{ddl}, func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	perTopic := map[string]map[int]bool{}
	for q, msgs := range f.sent {
		for _, m := range msgs {
			if n := m.GetProperty(HeaderPropertyPrefix + schema.HeaderBarrierCopies); n != "8" {
				t.Errorf("topic %s queue %d: copies property %q, want 8", m.Topic, q, n)
			}
			if perTopic[m.Topic] == nil {
				perTopic[m.Topic] = map[int]bool{}
			}
			perTopic[m.Topic][q] = true
		}
	}
	for _, id := range []schema.TableID{tbl, other} {
		topic, _ := p.reg.Topic(id)
		if len(perTopic[topic]) != 4 {
			t.Errorf("topic %s got copies on queues %v, want all 4 (all topics: %v)", topic, perTopic[topic], perTopic)
		}
	}
}

// The size message counts while it sets the properties is messageSize's:
// the figure max_message_bytes is checked against.
func TestMessageSizeCountedAsMarshalled(t *testing.T) {
	p := testPublisher(t, newFakeSender(), nil)
	long := strings.Repeat("v", 1000)
	for _, r := range []schema.Record{
		rec(1, 2),
		{Op: schema.OpCreate, Table: tbl, Key: schema.Row{int64(7)}, After: schema.Row{int64(7), int64(1)}, ID: nextTestID(),
			Headers: map[string]string{"a": "1", "empty": "", "sluice.x": long}},
		{Op: schema.OpDelete, Table: schema.TableID{Database: "db"}, Key: schema.Row{int64(3)}, Before: schema.Row{int64(3), int64(1)}, ID: nextTestID()},
	} {
		msg, size, err := p.message(context.Background(), &r, "topic_x")
		if err != nil {
			t.Fatal(err)
		}
		if want := messageSize(msg); size != want {
			t.Errorf("%s record: counted %d bytes, messageSize %d (properties %q)", r.Op, size, want, msg.MarshallProperties())
		}
	}
}

// Up to sendWorkers queues get a send worker each (no two of them wait for
// each other's sends), and a queue keeps its worker, so its sends keep
// their order.
func TestPublisherQueuesGetWorkersOfTheirOwn(t *testing.T) {
	p := testPublisher(t, newFakeSender(), nil)
	defer p.Close(context.Background())
	var qs []pk
	for _, b := range []string{"broker-a", "broker-b"} {
		for id := range sendWorkers / 2 {
			qs = append(qs, pk{"topic", queue{b, id}})
		}
	}
	p.enqMu.Lock()
	defer p.enqMu.Unlock()
	seen := map[*worker]pk{}
	for _, k := range qs {
		w := p.workerFor(k.topic, k.q)
		if other, ok := seen[w]; ok {
			t.Fatalf("queues %v and %v share a worker", other, k)
		}
		seen[w] = k
	}
	for _, k := range qs {
		if w := p.workerFor(k.topic, k.q); seen[w] != k {
			t.Fatalf("queue %v moved to another worker", k)
		}
	}
	if w := p.workerFor("other", queue{"broker-a", 0}); w != p.workers[0] {
		t.Fatal("the queue after sendWorkers others did not wrap around to the first worker")
	}
}

// A broker's SYSTEM_BUSY refusal (flow control under load) is sent again
// for up to busyRetryFor, beside send_retries: CI's contract kit once
// stopped a pipeline on four busy refusals in 0.7 s at a load average of
// 120. Past busyRetryFor the send fails as any other.
func TestPublisherRetriesABusyBroker(t *testing.T) {
	busy := errors.New("CODE: 2, DESC: [REJECTREQUEST]system busy, start flow control for a while")
	t.Run("within", func(t *testing.T) {
		f := newFakeSender()
		refusals := 4
		f.fail = func([]*primitive.Message) error {
			if refusals > 0 {
				refusals--
				return busy
			}
			return nil
		}
		p := testPublisher(t, f, func(c *Config) { c.SendRetries = -1 }) // no retries for other failures
		errs := make(chan error, 1)
		if err := p.Publish(context.Background(), []schema.Record{rec(1, 0)}, func(err error) { errs <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-errs; err != nil {
			t.Fatalf("ack error %v after 4 busy refusals, want the batch sent", err)
		}
		if n := f.count(); n != 1 {
			t.Fatalf("%d messages sent, want 1", n)
		}
		_ = p.Close(context.Background())
	})
	t.Run("past", func(t *testing.T) {
		defer func(d time.Duration) { busyRetryFor = d }(busyRetryFor)
		busyRetryFor = 250 * time.Millisecond
		f := newFakeSender()
		f.fail = func([]*primitive.Message) error { return busy }
		p := testPublisher(t, f, func(c *Config) { c.SendRetries = 1 })
		errs := make(chan error, 1)
		if err := p.Publish(context.Background(), []schema.Record{rec(1, 0)}, func(err error) { errs <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-errs; !errors.Is(err, ErrSend) || !strings.Contains(err.Error(), "system busy") {
			t.Fatalf("ack error %v, want ErrSend naming the busy broker", err)
		}
		_ = p.Close(context.Background())
	})
}

func TestBrokerBusy(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New("CODE: 2, DESC: [REJECTREQUEST]system busy, start flow control for a while"), true},
		{errors.New("CODE: 2, DESC: [TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while"), true},
		{errors.New("CODE: 12, DESC: x"), false},
		{errors.New("CODE: 16, DESC: no permission"), false},
		{errors.New("send timeout"), false},
		{nil, false},
	} {
		if got := brokerBusy(c.err); got != c.want {
			t.Errorf("brokerBusy(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
