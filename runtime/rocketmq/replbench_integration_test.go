package rocketmq

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/storage"
)

// BenchmarkIntegrationReplicator copies b.N messages of 1 KiB, on the 8
// queues of a topic of cluster A (4 on each of its two brokers), to
// cluster B twice in the same run:
//
//   - raw-client: the plain Go client's round trip, the baseline. A pull
//     consumer pulls each source queue from its start, batch messages a
//     pull, and a producer sends each pull's messages to the queue of the
//     same place of a topic on B as one batch (the batching the client
//     allows), the next pull of the queue after B's SEND_OK; 8 queues at
//     once, as the replicator copies them.
//   - replicator: the Replicator with batch_size batch (8 queues at
//     once) and its offsets in a file store, as `sluice run` keeps them
//     by default; saves and save-ms are the store's saves and the time
//     they took.
//
// Each is timed from its first pull to B's SEND_OK of the last message,
// its target topic made before the clock starts; ratio is the
// replicator's rate over the raw client's. The source is written by a
// client producer in batches of batch messages (so the messages of one
// send share their born time). Knobs: SLUICE_BENCH_REPL_BATCH (default
// 64, the replicator's default batch_size), SLUICE_BENCH_REPL_SINGLE=1
// (the source sent one message at a time: born times apart, so the
// replicator sends one at a time too), SLUICE_BENCH_REPL_STORE=mem (the
// offsets kept in memory: the replicator without its store's cost).
//
//	go test -run '^$' -bench IntegrationReplicator -benchtime 200000x ./runtime/rocketmq
func BenchmarkIntegrationReplicator(b *testing.B) {
	src, dst, dstCluster := replClusters(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	batch := DefaultReplicateBatch
	if v := os.Getenv("SLUICE_BENCH_REPL_BATCH"); v != "" {
		var err error
		if batch, err = strconv.Atoi(v); err != nil || batch < 1 || batch > 1024 {
			b.Fatalf("SLUICE_BENCH_REPL_BATCH=%q: a batch size from 1 to 1024", v)
		}
	}
	topic := "bench_repl_" + suffix()
	rawTopic := topic + "_raw"
	replCreate(b, src, DefaultCluster, 4, topic)
	cleanupTopics(b, src, DefaultCluster, topic)
	cleanupTopics(b, dst, dstCluster, topic, rawTopic)
	srcQs, err := tailQueues(ctx, src, topic)
	if err != nil {
		b.Fatal(err)
	}
	replCreate(b, dst, dstCluster, len(srcQs), rawTopic)
	benchFill(b, ctx, src, topic, srcQs, b.N, 1024, batch, os.Getenv("SLUICE_BENCH_REPL_SINGLE") == "1")
	b.ResetTimer()

	raw, err := rawReplicate(ctx, src, dst, topic, rawTopic, srcQs, batch)
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewReplicator(ReplicatorConfig{NameServers: src, Topics: []string{topic}, BatchSize: batch},
		Config{NameServers: dst, Cluster: dstCluster, Pipeline: "bench-repl-" + suffix()}, quietLog())
	if err != nil {
		b.Fatal(err)
	}
	store, err := storage.NewFileStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	timed := &timedStore{PositionStore: store}
	if os.Getenv("SLUICE_BENCH_REPL_STORE") == "mem" {
		timed.PositionStore = &memPositions{}
	}
	r.KeepPositions(timed, "bench")
	if err := r.Open(ctx, nil); err != nil { // creates the target topic
		b.Fatal(err)
	}
	start := time.Now()
	for r.Copied() < int64(b.N) {
		if _, err := r.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
	repl := time.Since(start)
	_ = r.Close()
	b.StopTimer()
	for _, t := range []string{rawTopic, topic} {
		if got := benchCount(b, dst, t, b.N); got != b.N {
			b.Fatalf("%s on B holds %d messages, want %d", t, got, b.N)
		}
	}
	rawRate, replRate := float64(b.N)/raw.Seconds(), float64(b.N)/repl.Seconds()
	b.ReportMetric(rawRate, "raw-msg/s")
	b.ReportMetric(replRate, "repl-msg/s")
	b.ReportMetric(replRate/rawRate, "ratio")
	b.ReportMetric(float64(timed.saves), "saves")
	b.ReportMetric(float64(timed.took.Milliseconds()), "save-ms")
}

// benchFill sends n messages of size bytes to the queues qs of topic on
// ns, round the queues, in client batches of DefaultReplicateBatch
// messages a queue (one message a send with single).
func benchFill(b *testing.B, ctx context.Context, ns []string, topic string, qs []*tailQueue, n, size, batch int, single bool) {
	b.Helper()
	prod, err := rmq.NewProducer(producerOptions(Config{NameServers: ns, Pipeline: "bench-fill-" + suffix()}, "fill", "fill")...)
	if err != nil {
		b.Fatal(err)
	}
	if err := prod.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = prod.Shutdown() }()
	per := batch
	if single {
		per = 1
	}
	body := make([]byte, size)
	for i := range body {
		body[i] = byte(i * 7)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(qs))
	for qi, q := range qs {
		wg.Go(func() {
			mq := &primitive.MessageQueue{Topic: topic, BrokerName: q.broker, QueueId: q.id}
			for i := qi; i < n; {
				var msgs []*primitive.Message
				for ; i < n && len(msgs) < per; i += len(qs) {
					m := primitive.NewMessage(topic, body)
					m.WithKeys([]string{"k" + strconv.Itoa(i%1000)})
					m.WithTag("t")
					m.WithProperty("seq", strconv.Itoa(i))
					m.Queue = mq
					msgs = append(msgs, m)
				}
				if err := benchSend(ctx, prod, msgs); err != nil {
					errs <- fmt.Errorf("fill %s: %w", topic, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if got := benchCount(b, ns, topic, n); got != n {
		b.Fatalf("filled %d of %d", got, n)
	}
}

// benchCount is the number of messages on the queues of topic on ns,
// waiting (at most 30 s) until it is want: SEND_OK comes before a message
// is in its consume queue.
func benchCount(tb testing.TB, ns []string, topic string, want int) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	qs, err := tailQueues(ctx, ns, topic)
	if err != nil {
		tb.Fatal(err)
	}
	for {
		total := 0
		for _, q := range qs {
			hi, err := queueOffset(ctx, q, reqGetMaxOffset)
			if err != nil {
				tb.Fatal(err)
			}
			total += int(hi)
		}
		if total == want || ctx.Err() != nil {
			return total
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rawReplicate copies every message of the queues qs of topic on src to
// the queue of the same place of dstTopic on dst with the plain client (a
// pull consumer, and a producer sending each pull as one batch), queues
// at once, and returns the time from the first pull to the last SEND_OK.
func rawReplicate(ctx context.Context, src, dst []string, topic, dstTopic string, qs []*tailQueue, batch int) (time.Duration, error) {
	prod, err := rmq.NewProducer(producerOptions(Config{NameServers: dst, Pipeline: "bench-raw-" + suffix()}, "raw", "raw")...)
	if err != nil {
		return 0, err
	}
	if err := prod.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = prod.Shutdown() }()
	// The pull consumer pulls the queues rebalancing gives it in the
	// background (for Poll): it is given none, so that PullFrom alone
	// reads the topic.
	none := func(string, string, []*primitive.MessageQueue, []string) []*primitive.MessageQueue { return nil }
	pc, err := rmq.NewPullConsumer(consumer.WithGroupName("bench-raw-"+suffix()), consumer.WithInstance("bench-raw-"+suffix()),
		consumer.WithNsResolver(primitive.NewPassthroughResolver(src)), consumer.WithStrategy(none))
	if err != nil {
		return 0, err
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}); err != nil {
		return 0, err
	}
	if err := pc.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = pc.Shutdown() }()
	dstQs, err := tailQueues(ctx, dst, dstTopic)
	if err != nil {
		return 0, err
	}
	ends := make([]int64, len(qs))
	for i, q := range qs {
		if ends[i], err = queueOffset(ctx, q, reqGetMaxOffset); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(qs))
	for i, q := range qs {
		wg.Go(func() {
			mq := &primitive.MessageQueue{Topic: topic, BrokerName: q.broker, QueueId: q.id}
			to := &primitive.MessageQueue{Topic: dstTopic, BrokerName: dstQs[i].broker, QueueId: dstQs[i].id}
			for off := int64(0); off < ends[i]; {
				res, err := pc.PullFrom(ctx, mq, off, batch)
				if err != nil {
					errs <- err
					return
				}
				if res.Status != primitive.PullFound {
					errs <- fmt.Errorf("pull %v at %d: status %v", mq, off, res.Status)
					return
				}
				msgs := make([]*primitive.Message, 0, len(res.GetMessageExts()))
				for _, m := range res.GetMessageExts() {
					props := m.GetProperties()
					for _, k := range replicaDropped {
						delete(props, k)
					}
					delete(props, primitive.PropertyCluster)
					c := primitive.NewMessage(dstTopic, m.Body)
					c.WithProperties(props)
					c.Queue = to
					msgs = append(msgs, c)
				}
				if err := benchSend(ctx, prod, msgs); err != nil {
					errs <- fmt.Errorf("send to %v: %w", to, err)
					return
				}
				off = res.NextBeginOffset
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		return 0, err
	}
	return elapsed, nil
}

// benchSend sends msgs as one batch, trying again while the broker is
// busy, as the replicator does (up to replicaSendAttempts, a second
// apart).
func benchSend(ctx context.Context, prod rmq.Producer, msgs []*primitive.Message) error {
	for attempt := 1; ; attempt++ {
		r, err := prod.SendSync(ctx, msgs...)
		if err == nil && r.Status == primitive.SendOK {
			return nil
		}
		if attempt >= replicaSendAttempts {
			return fmt.Errorf("%v %w", r, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// timedStore counts the saves of a position store and the time they took.
type timedStore struct {
	runtime.PositionStore
	saves int
	took  time.Duration
}

func (s *timedStore) Save(ctx context.Context, name string, pos []byte) error {
	start := time.Now()
	err := s.PositionStore.Save(ctx, name, pos)
	s.saves++
	s.took += time.Since(start)
	return err
}
