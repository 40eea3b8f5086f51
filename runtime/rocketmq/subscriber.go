package rocketmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

var (
	_ runtime.Subscriber   = (*Subscriber)(nil)
	_ runtime.TopicTracker = (*Subscriber)(nil)
)

const (
	firstSuspend = 200 * time.Millisecond
	maxSuspend   = 10 * time.Second
	stopSuspend  = time.Second
	// lockInterval is how often the orderly consumer renews its queue locks
	// at the brokers (the client's default is 20s). The client locks a
	// queue it is assigned before it creates the queue's local state, so the
	// local state stays "not locked" until the next periodic renewal (the
	// bug of apache/rocketmq#2621, also in the Go client): until then every
	// pull of the queue is put off by 3s. The first renewal runs 1s after
	// Start, and missed the queues when the first rebalance took longer
	// (a busy machine): then nothing was consumed for ~20s. Renewing every
	// second bounds that start-up wait to the client's 3s pull retry; the
	// broker's lock (60s) and the client's local expiry (30s) are
	// unchanged, renewing more often only keeps them fresher. Cost: one
	// lock request per broker per second.
	lockInterval = time.Second
)

// Subscriber consumes the pipeline's topics with an orderly push consumer:
// one queue's messages reach the handler in order, one batch at a time.
type Subscriber struct {
	cfg Config
	log *slog.Logger
	// pattern, when set (TopicsRegex), finds more topics to consume on the
	// name servers every TopicsRefresh.
	pattern *regexp.Regexp
	// schemas resolves the schemas of compact messages.
	schemas *schemaLookup
	// grown is signalled when want gains a topic the consumer lacks.
	grown chan struct{}

	mu       sync.Mutex
	want     []string // the topics to consume, sorted
	started  bool
	stopping bool           // no new handler starts
	gen      int            // the running consumer's generation: older ones' callbacks are refused
	inflight sync.WaitGroup // handlers running
	hcancel  context.CancelFunc
	fatal    error
	used     runtime.TopicSet // the topics records were delivered from (UsedTopics)
	// queueLocks holds a *sync.Mutex per primitive.MessageQueue: one batch
	// of a queue at a time reaches the handler. The client means to do
	// that (consumeMessageOrderly's queue lock), but its QueueLock.fetchLock
	// has a value receiver, so each call locks a new mutex; after a
	// rebalance drops a queue and takes it again, the old and the new
	// process queue of it then consume at once, older batches beside newer
	// ones (issue #27). Upstream: apache/rocketmq-client-go issue 1239
	// (open); keep this lock while the client version we use has it.
	queueLocks sync.Map

	closing   chan struct{} // closed by Close or a fatal error
	closeOnce sync.Once
	stopped   chan struct{} // closed when Consume has shut the consumer down
}

// NewSubscriber prepares an orderly consumer of cfg.Topics (or the topics of
// cfg.Tables), creating missing topics; Consume starts it. With
// cfg.TopicsRegex it consumes the matching topics, and looks for new ones
// every cfg.TopicsRefresh; AddTopics adds more at any time.
func NewSubscriber(ctx context.Context, cfg Config, log *slog.Logger) (*Subscriber, error) {
	cfg, log, adm, err := setup(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	topics, err := cfg.topics()
	if err != nil {
		_ = adm.Close()
		return nil, err
	}
	var pattern *regexp.Regexp
	if cfg.TopicsRegex != "" {
		if pattern, err = topicsPattern(cfg.TopicsRegex); err != nil {
			_ = adm.Close()
			return nil, err
		}
		all, err := fetchTopicList(ctx, cfg.NameServers)
		if err != nil {
			_ = adm.Close()
			return nil, err
		}
		topics = append(topics, matchingTopics(all, pattern, cfg.TopicPrefix)...)
	}
	for _, t := range topics {
		_, err := ensureTopic(ctx, adm, cfg, t)
		if errors.Is(err, ErrQueueSetChanged) {
			// The publisher's concern (it stops on it): the sinks read
			// every queue, and must go on to drain the topic.
			log.Warn("topic's queues differ from its recorded queue set; consuming them all", "topic", t, "err", err)
			err = nil
		}
		if err != nil {
			_ = adm.Close()
			return nil, err
		}
	}
	_ = adm.Close()
	if err := checkSubscribe(ctx, cfg, topics); err != nil {
		return nil, err
	}
	slices.Sort(topics)
	return &Subscriber{
		cfg: cfg, log: log, want: slices.Compact(topics), pattern: pattern, schemas: newSchemaLookup(cfg),
		grown:   make(chan struct{}, 1),
		closing: make(chan struct{}),
		stopped: make(chan struct{}),
	}, nil
}

// AddTopics makes the subscriber consume topics too, creating those that do
// not exist: a running consumer is restarted with them within a
// TopicsRefresh (the sink's progress keeps the restart exactly-once).
func (s *Subscriber) AddTopics(topics ...string) {
	s.mu.Lock()
	added := false
	for _, t := range topics {
		if i, ok := slices.BinarySearch(s.want, t); !ok {
			s.want = slices.Insert(s.want, i, t)
			added = true
		}
	}
	s.mu.Unlock()
	if added {
		select {
		case s.grown <- struct{}{}:
		default:
		}
	}
}

// Topics returns the topics the subscriber consumes or is about to.
func (s *Subscriber) Topics() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.want)
}

// Consume delivers batches to h until ctx is done, Close is called, a
// message cannot be decoded (then it returns an error wrapping ErrDecode)
// or h returns a fatal error (runtime.IsFatal; Consume returns it and the
// batch stays unacknowledged).
// It stops pulling, waits for the handlers in flight, shuts the consumer
// down (committing the offsets of handled batches) and returns; nil after a
// clean stop. Any other handler error redelivers the same messages, in
// order, after a backoff. Handlers get a context that ctx's cancellation cancels; Close
// lets them finish. Consume runs once. When topics are added (AddTopics,
// or new topics matching TopicsRegex) the consumer is stopped the same way
// and started again with them.
func (s *Subscriber) Consume(ctx context.Context, h runtime.Handler) error {
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("rocketmq: Consume called twice, or after Close")
	}
	s.started = true
	s.hcancel = hcancel
	s.mu.Unlock()
	defer close(s.stopped)
	if s.pattern != nil {
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		go s.watchPattern(wctx)
	}
	for {
		topics := s.Topics()
		if len(topics) == 0 {
			// Nothing to consume yet (a sink beside its source, before the
			// first record): wait for a topic.
			select {
			case <-ctx.Done():
				return nil
			case <-s.closing:
				return nil
			case <-s.grown:
				continue
			}
		}
		pc, err := s.startConsumer(ctx, hctx, h, topics)
		if err != nil {
			return err
		}
		restart := false
		select {
		case <-ctx.Done():
		case <-s.closing:
		case <-s.grown:
			restart = true
		}
		fatal, err := s.stopConsumer(pc)
		if fatal != nil {
			return fatal
		}
		if !restart || ctx.Err() != nil {
			if err != nil {
				return fmt.Errorf("rocketmq: consumer shutdown: %w", err)
			}
			return nil
		}
		if err != nil {
			s.log.Warn("rocketmq consumer shutdown before a restart failed; starting it again", "group", s.cfg.Group, "err", err)
		}
		// More topics may be on their way (a transaction over new tables):
		// take them into the same restart.
		select {
		case <-time.After(settleBeforeRestart):
		case <-ctx.Done():
			return nil
		case <-s.closing:
			return nil
		}
		select {
		case <-s.grown:
		default:
		}
	}
}

// settleBeforeRestart gathers the topics added together into one restart.
const settleBeforeRestart = 500 * time.Millisecond

// startConsumer creates the topics that lack a route, then starts a new
// generation of the consumer on topics.
func (s *Subscriber) startConsumer(ctx, hctx context.Context, h runtime.Handler, topics []string) (rmq.PushConsumer, error) {
	s.mu.Lock()
	first := s.gen == 0
	s.gen++
	gen := s.gen
	s.stopping = false
	s.mu.Unlock()
	if !first {
		adm, err := newAdmin(s.cfg)
		if err != nil {
			return nil, err
		}
		for _, t := range topics {
			if _, err := ensureTopic(ctx, adm, s.cfg, t); err != nil {
				_ = adm.Close()
				return nil, err
			}
		}
		_ = adm.Close()
	}
	pc, err := rmq.NewPushConsumer(consumerOptions(s.cfg)...)
	if err != nil {
		return nil, fmt.Errorf("rocketmq: cannot create consumer for group %q: %w", s.cfg.Group, err)
	}
	// The client panics when a consumer that never started is shut down:
	// Shutdown is called only after a successful Start.
	for _, t := range topics {
		if err := pc.Subscribe(t, consumer.MessageSelector{}, func(cctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			return s.consume(hctx, cctx, h, msgs, gen)
		}); err != nil {
			return nil, fmt.Errorf("rocketmq: cannot subscribe to topic %q: %w", t, err)
		}
	}
	if err := pc.Start(); err != nil {
		return nil, fmt.Errorf("rocketmq: cannot start consumer group %q on name servers %v: %w", s.cfg.Group, s.cfg.NameServers, err)
	}
	s.log.Info("rocketmq consumer started", "group", s.cfg.Group, "topics", topics)
	return pc, nil
}

// stopConsumer stops pc's handlers from starting, waits for those running
// and shuts it down; fatal is the error a handler failed the subscriber with.
func (s *Subscriber) stopConsumer(pc rmq.PushConsumer) (fatal, err error) {
	s.mu.Lock()
	s.stopping = true
	fatal = s.fatal
	s.mu.Unlock()
	pc.Suspend()
	s.inflight.Wait()
	err = pc.Shutdown()
	s.log.Info("rocketmq consumer stopped", "group", s.cfg.Group)
	s.mu.Lock()
	if fatal == nil {
		fatal = s.fatal
	}
	s.mu.Unlock()
	return fatal, err
}

// watchPattern looks for new topics matching the pattern every
// TopicsRefresh until ctx is done.
func (s *Subscriber) watchPattern(ctx context.Context) {
	t := time.NewTicker(s.cfg.TopicsRefresh)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		all, err := fetchTopicList(ctx, s.cfg.NameServers)
		if err != nil {
			if !failing && ctx.Err() == nil {
				s.log.Warn("rocketmq: cannot look for new topics matching topics_regex; trying again", "topics_regex", s.cfg.TopicsRegex, "err", err)
			}
			failing = true
			continue
		}
		failing = false
		if found := matchingTopics(all, s.pattern, s.cfg.TopicPrefix); len(found) > 0 {
			before := len(s.Topics())
			s.AddTopics(found...)
			if after := s.Topics(); len(after) > before {
				s.log.Info("rocketmq: new topics match topics_regex; the consumer restarts with them", "topics_regex", s.cfg.TopicsRegex, "topics", len(after))
			}
		}
	}
}

// UsedTopics lists the topics records were delivered from since the
// subscriber was made or since ResetUsedTopics (runtime.TopicTracker).
func (s *Subscriber) UsedTopics() []string { return s.used.Topics() }

// ResetUsedTopics forgets them.
func (s *Subscriber) ResetUsedTopics() { s.used.Reset() }

// consume is the client's callback for one batch of one queue.
func (s *Subscriber) consume(hctx, cctx context.Context, h runtime.Handler, msgs []*primitive.MessageExt, gen int) (consumer.ConsumeResult, error) {
	s.mu.Lock()
	if s.stopping || gen != s.gen {
		s.mu.Unlock()
		setSuspend(cctx, stopSuspend)
		return consumer.SuspendCurrentQueueAMoment, nil
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	if len(msgs) > 0 && msgs[0].Queue != nil {
		l, _ := s.queueLocks.LoadOrStore(*msgs[0].Queue, new(sync.Mutex))
		l.(*sync.Mutex).Lock()
		defer l.(*sync.Mutex).Unlock()
	}

	recs := make([]schema.Record, 0, recordCount(msgs))
	if len(msgs) > 0 {
		s.used.Add(msgs[0].Topic) // a batch is one queue's
	}
	for _, m := range msgs {
		var err error
		recs, err = s.decodeAll(hctx, m, recs)
		var retry errRetrySchema
		if errors.As(err, &retry) {
			level := slog.LevelWarn
			if hctx.Err() != nil {
				level = slog.LevelDebug
			}
			s.log.Log(hctx, level, "rocketmq: cannot look the schema of a compact message up; consuming the batch again after a backoff",
				"topic", m.Topic, "offset", m.QueueOffset, "err", err)
			setSuspend(cctx, firstSuspend<<min(m.ReconsumeTimes, 5))
			return consumer.SuspendCurrentQueueAMoment, nil
		}
		if err != nil {
			s.fail(err)
			setSuspend(cctx, stopSuspend)
			return consumer.SuspendCurrentQueueAMoment, nil
		}
	}
	if len(recs) == 0 {
		return consumer.ConsumeSuccess, nil
	}
	if err := h(hctx, recs); err != nil {
		if hctx.Err() == nil && runtime.IsFatal(err) {
			// Redelivering cannot help (a row the target refuses under
			// on_error: fail): Consume returns the error, failing the task.
			first := recs[0].Delivery
			s.fail(fmt.Errorf("topic %q queue %d offset %d: %w", first.Topic, first.Queue, first.Offset, err))
			setSuspend(cctx, stopSuspend)
			return consumer.SuspendCurrentQueueAMoment, nil
		}
		var reconsumed int32
		if len(msgs) > 0 {
			reconsumed = msgs[0].ReconsumeTimes
		}
		backoff := min(firstSuspend<<min(reconsumed, 10), maxSuspend)
		first := recs[0].Delivery
		level := slog.LevelWarn
		if hctx.Err() != nil {
			level = slog.LevelDebug // stopping: the batch is read again at the next start
		}
		s.log.Log(hctx, level, "rocketmq handler failed; redelivering the batch after a backoff",
			"topic", first.Topic, "queue", first.Queue, "offset", first.Offset, "records", len(recs),
			"attempt", reconsumed+1, "backoff", backoff, "err", err)
		setSuspend(cctx, backoff)
		return consumer.SuspendCurrentQueueAMoment, nil
	}
	return consumer.ConsumeSuccess, nil
}

// recordCount is how many records msgs hold (packs count theirs), so that
// the batch's slice of records is made once: growing it copies them all.
func recordCount(msgs []*primitive.MessageExt) int {
	n := 0
	for _, m := range msgs {
		n += max(1, packCount(m.GetProperty(RecordsProperty), m.Body))
	}
	return n
}

// packCount is the records a pack says it holds (its RecordsProperty
// prop), 0 when prop is not a count or is more than body can hold (a line
// is at least minPackLine bytes): a property can't make what it sizes
// larger than its message.
func packCount(prop string, body []byte) int {
	v, err := strconv.Atoi(prop)
	if err != nil || v <= 0 || v > len(body)/minPackLine {
		return 0
	}
	return v
}

// minPackLine is the shortest line of a pack: {"id":"","value":0} and its
// newline.
const minPackLine = 20

// decodeAll decodes m: one record, or those of a packed message.
func (s *Subscriber) decodeAll(ctx context.Context, m *primitive.MessageExt, into []schema.Record) ([]schema.Record, error) {
	props := m.GetProperties() // a copy of the message's map: taken once
	if !isPacked(props) {
		rec, err := s.decodeEntry(ctx, m, messageEntry(props, m.Body))
		if err != nil {
			return into, err
		}
		return append(into, rec), nil
	}
	n, err := unpack(m.Body, func(i int, e packEntry) error {
		rec, err := s.decodeEntry(ctx, m, e)
		if err != nil {
			var retry errRetrySchema
			if errors.As(err, &retry) {
				return err
			}
			return fmt.Errorf("record %d of the pack: %w", i, err)
		}
		into = append(into, rec)
		return nil
	})
	if err != nil {
		var retry errRetrySchema
		if errors.As(err, &retry) || errors.Is(err, ErrDecode) {
			return into, err
		}
		return into, s.decodeError(m, err)
	}
	if want := props[RecordsProperty]; want != "" && want != strconv.Itoa(n) {
		return into, s.decodeError(m, fmt.Errorf("%w: %d records, property %s says %s", errPack, n, RecordsProperty, want))
	}
	return into, nil
}

// decode decodes m, a message of one record.
func (s *Subscriber) decode(ctx context.Context, m *primitive.MessageExt) (schema.Record, error) {
	recs, err := s.decodeAll(ctx, m, nil)
	if err != nil {
		return schema.Record{}, err
	}
	if len(recs) != 1 {
		return schema.Record{}, fmt.Errorf("rocketmq: message of %d records where one was expected", len(recs))
	}
	return recs[0], nil
}

// decodeError wraps err as ErrDecode with m's place on the broker.
func (s *Subscriber) decodeError(m *primitive.MessageExt, err error) error {
	queueID, broker := -1, ""
	if m.Queue != nil {
		queueID, broker = m.Queue.QueueId, m.Queue.BrokerName
	}
	return fmt.Errorf("%w: topic %q broker %q queue %d offset %d (msgId %s): %w", ErrDecode, m.Topic, broker, queueID, m.QueueOffset, m.MsgId, err)
}

// decodeEntry decodes one record of m (m's own, or one of its pack).
func (s *Subscriber) decodeEntry(ctx context.Context, m *primitive.MessageExt, e packEntry) (schema.Record, error) {
	queueID := -1
	broker := ""
	if m.Queue != nil {
		queueID = m.Queue.QueueId
		broker = m.Queue.BrokerName
	}
	key, body := e.Key, e.Value
	var rec schema.Record
	var err error
	if e.hasSchema { // FormatCompact, FormatPacked
		se, gerr := s.schemas.get(ctx, e.Schema)
		if gerr != nil {
			if ctx.Err() == nil && errors.Is(gerr, errSchemaMissing) {
				return schema.Record{}, s.decodeError(m, gerr)
			}
			return schema.Record{}, errRetrySchema{gerr}
		}
		if pd, ok := s.cfg.Codec.(partsDecoder); ok {
			rec, err = pd.DecodeParts(se.KeySchema(), key, se.Value, body)
		} else {
			key, body = se.Expand(key, body)
			rec, err = s.cfg.Codec.Decode(key, body)
		}
	} else {
		rec, err = s.cfg.Codec.Decode(key, body)
	}
	if err != nil {
		return rec, s.decodeError(m, err)
	}
	if !e.hasID {
		return rec, fmt.Errorf("%w: topic %q broker %q queue %d offset %d (msgId %s) has no %s property: it was not published by this version of sluice (messages of versions before record IDs must be consumed by that version, or the topic emptied, before upgrading)", ErrDecode, m.Topic, broker, queueID, m.QueueOffset, m.MsgId, IDProperty)
	}
	if rec.ID, err = schema.ParseID(e.ID); err != nil {
		return rec, s.decodeError(m, fmt.Errorf("property %s: %w", IDProperty, err))
	}
	rec.Delivery = &schema.Delivery{Topic: m.Topic, Broker: broker, Queue: queueID, Offset: m.QueueOffset}
	rec.Headers = e.Headers
	return rec, nil
}

// partsDecoder is a Codec that decodes a compact message's payloads with
// their schemas (converter.PartsDecoder).
type partsDecoder = converter.PartsDecoder

// errRetrySchema: the schema topic could not be read (broker unreachable,
// stopping): the batch is consumed again after a backoff.
type errRetrySchema struct{ err error }

func (e errRetrySchema) Error() string { return e.err.Error() }
func (e errRetrySchema) Unwrap() error { return e.err }

// fail records a fatal error and makes Consume stop.
func (s *Subscriber) fail(err error) {
	s.mu.Lock()
	if s.fatal == nil {
		s.fatal = err
		// Consume returns err and the task's failure reports it: not twice.
		s.log.Info("rocketmq consumer stopping after a fatal error", "group", s.cfg.Group)
	}
	s.mu.Unlock()
	s.closeOnce.Do(func() { close(s.closing) })
}

func setSuspend(ctx context.Context, d time.Duration) {
	if oc, ok := primitive.GetOrderlyCtx(ctx); ok {
		oc.SuspendCurrentQueueTimeMillis = int(d / time.Millisecond)
	}
}

// Close stops Consume gracefully: no new batch starts, the handlers in flight
// finish (their context stays alive until ctx is done, then it is
// cancelled) and the consumer shuts down. Close returns once Consume has
// returned (or at once if Consume never ran). Safe to call more than once.
func (s *Subscriber) Close(ctx context.Context) error {
	s.closeOnce.Do(func() { close(s.closing) })
	s.mu.Lock()
	started := s.started
	if !started {
		s.started = true // Consume after Close does nothing
	}
	s.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-s.stopped:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		if s.hcancel != nil {
			s.hcancel()
		}
		s.mu.Unlock()
		<-s.stopped
		return fmt.Errorf("rocketmq: handlers did not finish before the close deadline and were cancelled: %w", ctx.Err())
	}
}

func consumerOptions(cfg Config) []consumer.Option {
	setClientLogger(nil) // before the client starts, as producerOptions
	opts := []consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver(cfg.NameServers)),
		consumer.WithGroupName(cfg.Group),
		consumer.WithInstance(instanceName(cfg.Pipeline, "sub")),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumerOrder(true),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumeMessageBatchMaxSize(cfg.consumeBatch()),
		consumer.WithPullBatchSize(int32(cfg.consumeBatch())),
		// The pull cache, bounded over all queues (the client divides
		// these among the queues it is assigned): without them each queue
		// caches up to 102400/queues messages and 512 MiB.
		consumer.WithPullThresholdForTopic(pullCacheRecords(cfg)),
		consumer.WithPullThresholdSizeForTopic(pullCacheMiB(cfg)),
		consumer.WithPullInterval(cfg.Linger),
		consumer.WithSuspendCurrentQueueTimeMillis(firstSuspend),
		consumer.WithRebalanceLockInterval(lockInterval),
		consumer.WithAutoCommit(true), // false is broken in the client: see the notes
	}
	if cfg.hasCredentials() {
		opts = append(opts, consumer.WithCredentials(cfg.credentials()))
	}
	return opts
}

// pullCacheRecords and pullCacheMiB are the client's PullThresholdForTopic
// and PullThresholdSizeForTopic for cfg (after withDefaults).
func pullCacheRecords(cfg Config) int { return max(1, cfg.pullCacheRecords) }

func pullCacheMiB(cfg Config) int { return max(1, min(cfg.MaxCachedBytes>>20, 102400)) }
