package rocketmq

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// RoundTrip is what RawRoundTrip measured.
type RoundTrip struct {
	Messages int           // messages sent and read back
	Sends    int           // the client's send calls (batches) that sent them
	Bytes    int64         // their bodies and properties
	Elapsed  time.Duration // from the first send to the last message read
}

// ConsumerStartWait is how long after its start an orderly consumer of the
// client first pulls the queues it was assigned: the client locks a new
// queue at the broker before it makes the queue's local state, which so
// starts "not locked" (apache/rocketmq#2621, fixed in the Java client, not
// in the Go one), and it puts off the pull of a queue not locked by 3 s;
// the subscriber's lock renewal (every second) has locked it by then.
// `sluice bench` starts each RocketMQ phase's consumer this long before its
// clock (sluice's with the source paused), so that the catch-up figures
// measure the pipeline, not this one wait, the same for both.
const ConsumerStartWait = 4 * time.Second

// RawRoundTrip is the broker's raw limit for `sluice bench`: the plain Go
// client sending the messages Publish would send for recs (same bodies,
// properties, keys and queues; data records only) to topic, one sending
// goroutine per queue with batches as large as the publisher's, while an
// orderly push consumer with the subscriber's pull settings reads them
// back, counting only. Messages are built, and the consumer started
// ConsumerStartWait, before the clock starts. cfg is
// the transport's configuration (name servers, queues, batch size, codec);
// the consumer group is made unique per call and starts at the topic's
// first offset, so topic should be fresh. maxPerSend, when above zero,
// caps the messages of a send below the publisher's batches: the brokers'
// warm-up sends one a time, so that the brokers' per-request code (sends,
// pulls of a few messages) runs as often as under sluice's streaming.
// atClock, when not nil, is called right before the clock starts: `sluice
// bench` starts the other raw sides with it, to measure them at once.
func RawRoundTrip(ctx context.Context, cfg Config, topic string, recs []schema.Record, maxPerSend int, atClock func(), log *slog.Logger) (RoundTrip, error) {
	var res RoundTrip
	cfg.Pipeline = sanitizeName(topic)
	cfg.Group = ""
	cfg, log, adm, err := setup(ctx, cfg, log)
	if err != nil {
		return res, err
	}
	defer adm.Close()
	set, err := ensureTopic(ctx, adm, cfg, topic)
	if err != nil {
		return res, err
	}
	qs := set.queues()
	prod, err := startProducer(cfg, "raw", "raw")
	if err != nil {
		return res, err
	}
	defer prod.Shutdown()
	// The messages, grouped per queue, marked as Publish marks them.
	p := &Publisher{cfg: cfg, log: log, send: prod, topics: newTopicCache(cfg, adm), sendCtx: ctx}
	if cfg.Format == FormatCompact || cfg.Format == FormatPacked {
		p.compact = newCompactEncoder(SchemaTopic(cfg.TopicPrefix), p.storeSchema)
	}
	perQueue := make([][]*primitive.Message, len(qs))
	dest := make([]*primitive.Message, len(recs))
	for i := range recs {
		rec := &recs[i]
		if !rec.Op.IsData() {
			continue
		}
		m, _, err := p.message(ctx, rec, topic)
		if err != nil {
			return res, err
		}
		q := runtime.QueueFor(rec, len(qs))
		m.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: qs[q].Broker, QueueId: qs[q].ID}
		perQueue[q] = append(perQueue[q], m)
		dest[i] = m
	}
	for i := range runtime.TransactionEnds(recs, func(i int) (*primitive.MessageQueue, bool) {
		if dest[i] == nil {
			return nil, false
		}
		return dest[i].Queue, true
	}) {
		dest[i].WithProperty(HeaderPropertyPrefix+schema.HeaderTxEnd, "true")
	}
	dest = nil
	if cfg.Format == FormatPacked { // as the publisher packs a queue's backlog
		for q, msgs := range perQueue {
			if len(msgs) > 0 {
				perQueue[q], _, _ = packMessages(topic, msgs, min(PackBytes, cfg.MaxMessageBytes))
			}
		}
	}
	var batches [][][]*primitive.Message // per queue, the batches sent
	for _, msgs := range perQueue {
		var bs [][]*primitive.Message
		for start := 0; start < len(msgs); {
			n, size := 0, 0
			limit := maxBatchMsgs
			if maxPerSend > 0 {
				limit = min(limit, maxPerSend)
			}
			for start+n < len(msgs) && n < limit {
				sz := messageSize(msgs[start+n]) + 64
				if n > 0 && size+sz > maxBatchBytes {
					break
				}
				size += sz
				n++
			}
			bs = append(bs, msgs[start:start+n])
			res.Bytes += int64(size - 64*n)
			start += n
		}
		res.Messages += len(msgs)
		res.Sends += len(bs)
		batches = append(batches, bs)
	}
	if res.Messages == 0 {
		return res, fmt.Errorf("rocketmq: raw round trip: no data record to send")
	}

	pc, err := rmq.NewPushConsumer(consumerOptions(cfg)...)
	if err != nil {
		return res, fmt.Errorf("rocketmq: raw round trip consumer: %w", err)
	}
	var got atomic.Int64
	all := make(chan struct{})
	var once sync.Once
	want := int64(res.Messages)
	if err := pc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		if got.Add(int64(len(msgs))) >= want {
			once.Do(func() { close(all) })
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		return res, fmt.Errorf("rocketmq: raw round trip subscribe: %w", err)
	}
	if err := pc.Start(); err != nil {
		return res, fmt.Errorf("rocketmq: raw round trip consumer start: %w", err)
	}
	defer pc.Shutdown()
	// The clock starts once the consumer pulls (ConsumerStartWait), as
	// sluice's phase of the bench starts its clock.
	select {
	case <-time.After(ConsumerStartWait):
	case <-ctx.Done():
		return res, ctx.Err()
	}

	if atClock != nil {
		atClock()
	}
	t0 := time.Now()
	sendCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(batches))
	var wg sync.WaitGroup
	p.sendCtx = sendCtx
	for q, bs := range batches {
		wg.Go(func() {
			for _, b := range bs {
				// As the publisher sends: retried with its backoff.
				if err := p.sendRetry(topic, qs[q], b); err != nil {
					errs <- fmt.Errorf("rocketmq: raw round trip send: %w", err)
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return res, err
	default:
	}
	select {
	case <-all:
	case <-ctx.Done():
		return res, fmt.Errorf("rocketmq: raw round trip: %d of %d messages read back: %w", got.Load(), want, ctx.Err())
	}
	res.Elapsed = time.Since(t0)
	return res, nil
}

// PipelineRoundTrip sends recs (data records) through a Publisher, 100
// records a Publish as a source's transactions come (at rate records a
// second when rate is above zero, else as fast as the publisher takes
// them: a steady stream and a catch-up are not the same requests to a
// broker, the stream's pulls holding and returning a few messages each),
// and reads them back with a Subscriber whose handler only counts (the
// count is returned): the brokers serve the requests a pipeline makes (its
// sends, pulls and offset commits), with no source or sink beside. `sluice bench` warms fresh brokers up with it: a
// raw round trip alone leaves the brokers compiling the code of the
// pipeline's requests through the first measured phase. The topic and group
// are named after prefix, which should be fresh.
func PipelineRoundTrip(ctx context.Context, cfg Config, prefix string, recs []schema.Record, rate int, log *slog.Logger) (int, error) {
	cfg.TopicPrefix = sanitizeName(prefix)
	cfg.Pipeline = sanitizeName(prefix)
	cfg.Group, cfg.Topics, cfg.Tables = "", nil, nil
	want := 0
	for i := range recs {
		if !recs[i].Op.IsData() {
			continue
		}
		want++
		if !slices.Contains(cfg.Tables, recs[i].Table) {
			cfg.Tables = append(cfg.Tables, recs[i].Table)
		}
	}
	if want == 0 {
		return 0, fmt.Errorf("rocketmq: pipeline round trip: no data record to send")
	}
	pub, err := NewPublisher(ctx, cfg, log)
	if err != nil {
		return 0, err
	}
	defer pub.Close(context.WithoutCancel(ctx))
	sub, err := NewSubscriber(ctx, cfg, log)
	if err != nil {
		return 0, err
	}
	cctx, cancel := context.WithCancel(ctx)
	var got atomic.Int64
	all := make(chan struct{})
	var once sync.Once
	consumed := make(chan error, 1)
	go func() {
		consumed <- sub.Consume(cctx, func(_ context.Context, rs []schema.Record) error {
			if got.Add(int64(len(rs))) >= int64(want) {
				once.Do(func() { close(all) })
			}
			return nil
		})
	}()
	failed := make(chan error, 1)
	ack := func(err error) {
		if err != nil {
			select {
			case failed <- err:
			default:
			}
		}
	}
	res := publishPaced(ctx, pub, recs, rate, ack)
	if res == nil {
		select {
		case <-all:
		case err := <-failed:
			res = fmt.Errorf("rocketmq: pipeline round trip send: %w", err)
		case err := <-consumed:
			consumed <- err // for the wait below
			res = fmt.Errorf("rocketmq: pipeline round trip: the subscriber stopped after %d of %d records: %w", got.Load(), want, err)
		case <-ctx.Done():
			res = fmt.Errorf("rocketmq: pipeline round trip: %d of %d records read back: %w", got.Load(), want, ctx.Err())
		}
	}
	// Every way out stops the subscriber and waits for it.
	cancel()
	if err := <-consumed; err != nil && res == nil {
		res = err
	}
	return int(got.Load()), res
}

// publishPaced publishes recs 100 a Publish, record i not before i/rate
// seconds from the start when rate is above zero.
func publishPaced(ctx context.Context, pub interface {
	Publish(context.Context, []schema.Record, runtime.AckFunc) error
}, recs []schema.Record, rate int, ack runtime.AckFunc) error {
	t0 := time.Now()
	for i := 0; i < len(recs); i += 100 {
		if rate > 0 {
			if wait := time.Until(t0.Add(time.Duration(float64(i) / float64(rate) * float64(time.Second)))); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		if err := pub.Publish(ctx, recs[i:min(i+100, len(recs))], ack); err != nil {
			return fmt.Errorf("rocketmq: pipeline round trip publish: %w", err)
		}
	}
	return nil
}
