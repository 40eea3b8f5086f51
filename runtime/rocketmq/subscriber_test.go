package rocketmq

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/schema"
)

func testSubscriber(t *testing.T) *Subscriber {
	t.Helper()
	cfg, err := Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "t", Codec: testCodec{}, Topics: []string{"t_db_t"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return &Subscriber{cfg: cfg, log: quietLog(), want: cfg.Topics, grown: make(chan struct{}, 1), closing: make(chan struct{}), stopped: make(chan struct{})}
}

func messageOf(t *testing.T, r schema.Record, queueID int, offset int64, reconsumed int32) *primitive.MessageExt {
	t.Helper()
	k, v, err := testCodec{}.Encode(&r)
	if err != nil {
		t.Fatal(err)
	}
	m := &primitive.MessageExt{Message: *primitive.NewMessage("t_db_t", v), QueueOffset: offset, ReconsumeTimes: reconsumed}
	if k != nil {
		m.WithProperty(KeyProperty, string(k))
	}
	m.Queue = &primitive.MessageQueue{Topic: "t_db_t", BrokerName: "b", QueueId: queueID}
	id := r.ID
	if id.IsZero() {
		id = schema.ID{Epoch: 1, Pos: uint64(offset)}
	}
	m.WithProperty(IDProperty, id.String())
	return m
}

func orderlyCtx() (context.Context, *primitive.ConsumeOrderlyContext) {
	oc := primitive.NewConsumeOrderlyContext()
	return primitive.WithOrderlyCtx(context.Background(), oc), oc
}

func TestSubscriberCallback(t *testing.T) {
	s := testSubscriber(t)
	msgs := []*primitive.MessageExt{messageOf(t, rec(1, 0), 2, 40, 0), messageOf(t, rec(1, 1), 2, 41, 0)}

	var got []schema.Record
	cctx, _ := orderlyCtx()
	res, _ := s.consume(context.Background(), cctx, func(_ context.Context, rs []schema.Record) error { got = rs; return nil }, msgs, 0)
	if res != consumer.ConsumeSuccess || len(got) != 2 {
		t.Fatalf("result %v, records %v", res, got)
	}
	if d := got[1].Delivery; d == nil || *d != (schema.Delivery{Topic: "t_db_t", Broker: "b", Queue: 2, Offset: 41}) {
		t.Errorf("delivery %+v", got[1].Delivery)
	}
	if got[0].KeyString() != "1" || got[1].After[1] != int64(1) {
		t.Errorf("decoded %+v", got)
	}

	// A handler error suspends the queue with a growing backoff.
	for _, c := range []struct {
		reconsumed int32
		want       time.Duration
	}{{0, firstSuspend}, {2, 4 * firstSuspend}, {30, maxSuspend}} {
		cctx, oc := orderlyCtx()
		m := []*primitive.MessageExt{messageOf(t, rec(1, 0), 2, 40, c.reconsumed)}
		res, _ := s.consume(context.Background(), cctx, func(context.Context, []schema.Record) error { return errors.New("down") }, m, 0)
		if res != consumer.SuspendCurrentQueueAMoment || oc.SuspendCurrentQueueTimeMillis != int(c.want/time.Millisecond) {
			t.Errorf("reconsumed %d: result %v suspend %dms, want suspend %v", c.reconsumed, res, oc.SuspendCurrentQueueTimeMillis, c.want)
		}
	}
}

func TestSubscriberDecodeErrorIsFatal(t *testing.T) {
	s := testSubscriber(t)
	bad := &primitive.MessageExt{Message: *primitive.NewMessage("t_db_t", []byte("not json")), QueueOffset: 7}
	bad.Queue = &primitive.MessageQueue{Topic: "t_db_t", QueueId: 1}
	cctx, _ := orderlyCtx()
	called := false
	res, _ := s.consume(context.Background(), cctx, func(context.Context, []schema.Record) error { called = true; return nil }, []*primitive.MessageExt{bad}, 0)
	if res != consumer.SuspendCurrentQueueAMoment || called {
		t.Fatalf("undecodable message: result %v, handler called %v", res, called)
	}
	select {
	case <-s.closing:
	default:
		t.Fatal("a decode error does not stop the subscriber")
	}
	if !errors.Is(s.fatal, ErrDecode) {
		t.Errorf("fatal error %v", s.fatal)
	}
}

func TestSubscriberStoppingRefusesNewBatches(t *testing.T) {
	s := testSubscriber(t)
	s.stopping = true
	cctx, oc := orderlyCtx()
	res, _ := s.consume(context.Background(), cctx, func(context.Context, []schema.Record) error {
		t.Error("handler called while stopping")
		return nil
	}, []*primitive.MessageExt{messageOf(t, rec(1, 0), 0, 1, 0)}, 0)
	if res != consumer.SuspendCurrentQueueAMoment || oc.SuspendCurrentQueueTimeMillis <= 0 {
		t.Errorf("result %v suspend %d", res, oc.SuspendCurrentQueueTimeMillis)
	}
}

func TestSubscriberCloseBeforeConsume(t *testing.T) {
	s := testSubscriber(t)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Consume(context.Background(), func(context.Context, []schema.Record) error { return nil }); err == nil {
		t.Error("Consume after Close: no error")
	}
}

// The ID property becomes Record.ID, the queue's broker is in Delivery,
// and dropped-column notes reach the record's headers. A message without a
// valid ID is refused.
func TestSubscriberIDBrokerAndDroppedColumns(t *testing.T) {
	s := testSubscriber(t)
	want := schema.ID{Epoch: 0x18abc, File: 3, Pos: 4711, Phase: schema.PhaseSnapshot, Index: 9}
	r := rec(1, 0)
	r.ID = want
	m := messageOf(t, r, 3, 7, 0)
	m.WithProperty(DroppedColumnsProperty, "payload")
	m.WithProperty(HeaderPropertyPrefix+"sluice.zero_dates.after", "d=0000-00-00")
	var got []schema.Record
	cctx, _ := orderlyCtx()
	if res, _ := s.consume(context.Background(), cctx, func(_ context.Context, rs []schema.Record) error { got = rs; return nil }, []*primitive.MessageExt{m}, 0); res != consumer.ConsumeSuccess {
		t.Fatalf("result %v", res)
	}
	if got[0].ID != want {
		t.Errorf("id %v, want %v", got[0].ID, want)
	}
	if d := got[0].Delivery; d == nil || *d != (schema.Delivery{Topic: "t_db_t", Broker: "b", Queue: 3, Offset: 7}) {
		t.Errorf("delivery %+v", d)
	}
	if got[0].Headers[DroppedColumnsProperty] != "payload" || got[0].Headers["sluice.zero_dates.after"] != "d=0000-00-00" {
		t.Errorf("headers %v", got[0].Headers)
	}
	for _, v := range []string{"x", strings.ToUpper(want.String())} {
		bad := messageOf(t, rec(1, 0), 3, 8, 0)
		bad.WithProperty(IDProperty, v)
		if _, err := s.decode(context.Background(), bad); !errors.Is(err, ErrDecode) {
			t.Errorf("%s=%q: %v", IDProperty, v, err)
		}
	}
	none := messageOf(t, rec(1, 0), 3, 8, 0)
	none.RemoveProperty(IDProperty)
	if _, err := s.decode(context.Background(), none); !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), IDProperty) {
		t.Errorf("no %s: %v", IDProperty, err)
	}
}

// The pull cache holds DefaultPullCacheRecords messages unless max_in_flight
// is set, which then bounds it as it bounds the source; defaults applied
// twice change nothing.
func TestPullCacheLimits(t *testing.T) {
	base := Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "t", Codec: testCodec{}}
	for _, c := range []struct {
		name          string
		records, size int
		wantRecs      int
		wantMiB       int
		wantInFlight  int
	}{
		{"defaults", 0, 0, DefaultPullCacheRecords, DefaultMaxCachedBytes >> 20, DefaultMaxCachedRecords},
		{"set", 5000, 64 << 20, 5000, 64, 5000},
		{"small bytes", 0, 100 << 10, DefaultPullCacheRecords, 1, DefaultMaxCachedRecords},
		{"over the client's limit", 10_000_000, 0, 6553500, DefaultMaxCachedBytes >> 20, 6553500},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			cfg.MaxCachedRecords, cfg.MaxCachedBytes = c.records, c.size
			once, err := cfg.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			twice, err := once.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range []Config{once, twice} {
				if r, m := pullCacheRecords(got), pullCacheMiB(got); r != c.wantRecs || m != c.wantMiB {
					t.Errorf("pull cache %d messages, %d MiB; want %d, %d", r, m, c.wantRecs, c.wantMiB)
				}
				if got.MaxCachedRecords != c.wantInFlight {
					t.Errorf("MaxCachedRecords %d, want %d", got.MaxCachedRecords, c.wantInFlight)
				}
			}
		})
	}
}

// A pack counts as packRecords records of BatchSize: the consumer's batch
// in messages is BatchSize for one-record messages, BatchSize/packRecords
// packs (at least one) under FormatPacked.
func TestConsumeBatch(t *testing.T) {
	for _, c := range []struct {
		format    string
		batch     int
		wantBatch int
	}{
		{"", 0, DefaultBatchSize}, {FormatCompact, 0, DefaultBatchSize}, {FormatPacked, 0, DefaultBatchSize / packRecords},
		{FormatPacked, 1024, 1024 / packRecords}, {FormatCompact, 1024, 1024}, {FormatPacked, 10, 1}, {FormatPacked, 5000, 1024 / packRecords},
	} {
		cfg, err := Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "t", Codec: testCodec{}, Format: c.format, BatchSize: c.batch}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.consumeBatch(); got != c.wantBatch {
			t.Errorf("format %q batch_size %d: consumer batch %d messages, want %d", c.format, c.batch, got, c.wantBatch)
		}
	}
}

// A callback of an earlier consumer (one stopped to add topics) is refused:
// its queue may already belong to the new consumer, and one queue must
// never be handled twice at once.
func TestSubscriberRefusesAnOlderConsumersCallback(t *testing.T) {
	s := testSubscriber(t)
	s.gen = 2
	cctx, oc := orderlyCtx()
	res, _ := s.consume(context.Background(), cctx, func(context.Context, []schema.Record) error {
		t.Error("handler called for a stopped consumer's batch")
		return nil
	}, []*primitive.MessageExt{messageOf(t, rec(1, 0), 0, 1, 0)}, 1)
	if res != consumer.SuspendCurrentQueueAMoment || oc.SuspendCurrentQueueTimeMillis <= 0 {
		t.Fatalf("result %v, suspend %d: want the batch left for the current consumer", res, oc.SuspendCurrentQueueTimeMillis)
	}
	called := false
	cctx, _ = orderlyCtx()
	if res, _ := s.consume(context.Background(), cctx, func(context.Context, []schema.Record) error { called = true; return nil },
		[]*primitive.MessageExt{messageOf(t, rec(1, 0), 0, 1, 0)}, 2); res != consumer.ConsumeSuccess || !called {
		t.Fatalf("the current consumer's batch: result %v, handler called %v", res, called)
	}
}

// AddTopics keeps one sorted copy of each topic and signals growth once.
func TestSubscriberAddTopics(t *testing.T) {
	s := testSubscriber(t)
	s.AddTopics("t_db_b", "t_db_a", "t_db_b")
	if got := s.Topics(); !slices.Equal(got, []string{"t_db_a", "t_db_b", "t_db_t"}) {
		t.Fatalf("topics %v", got)
	}
	select {
	case <-s.grown:
	default:
		t.Fatal("adding topics did not signal the consumer")
	}
	s.AddTopics("t_db_a")
	select {
	case <-s.grown:
		t.Fatal("adding a known topic signalled the consumer")
	default:
	}
}

// One queue's batches reach the handler one at a time even when the client
// calls back for it from two process queues at once (its own queue lock
// locks a new mutex each time: issue #27), while another queue's go on
// beside them.
func TestSubscriberOneBatchOfAQueueAtATime(t *testing.T) {
	s := testSubscriber(t)
	started, release := make(chan struct{}), make(chan struct{})
	var running, overlapped atomic.Bool
	first := func(_ context.Context, rs []schema.Record) error {
		running.Store(true)
		close(started)
		<-release
		running.Store(false)
		return nil
	}
	second := func(_ context.Context, rs []schema.Record) error {
		if running.Load() {
			overlapped.Store(true)
		}
		return nil
	}
	done := make(chan consumer.ConsumeResult, 2)
	go func() {
		cctx, _ := orderlyCtx()
		res, _ := s.consume(context.Background(), cctx, first, []*primitive.MessageExt{messageOf(t, rec(1, 0), 2, 40, 0)}, 0)
		done <- res
	}()
	<-started
	// Another queue is not held up by queue 2's batch.
	other := make(chan consumer.ConsumeResult, 1)
	go func() {
		cctx, _ := orderlyCtx()
		res, _ := s.consume(context.Background(), cctx, second, []*primitive.MessageExt{messageOf(t, rec(1, 1), 3, 40, 0)}, 0)
		other <- res
	}()
	select {
	case <-other:
	case <-time.After(time.Minute):
		t.Fatal("queue 3's batch waited for queue 2's")
	}
	overlapped.Store(false)
	go func() {
		cctx, _ := orderlyCtx()
		res, _ := s.consume(context.Background(), cctx, second, []*primitive.MessageExt{messageOf(t, rec(1, 1), 2, 40, 0)}, 0)
		done <- res
	}()
	time.Sleep(100 * time.Millisecond) // room for the second batch to overlap the first
	close(release)
	for range 2 {
		if res := <-done; res != consumer.ConsumeSuccess {
			t.Fatalf("result %v", res)
		}
	}
	if overlapped.Load() {
		t.Fatal("two batches of queue 2 reached the handler at once")
	}
}
