package rocketmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

var (
	_ runtime.Publisher    = (*Publisher)(nil)
	_ runtime.TopicTracker = (*Publisher)(nil)
)

const (
	sendWorkers     = 8
	maxBatchMsgs    = 256
	maxBatchBytes   = 1 << 20 // well under the broker's 4 MiB message limit
	sendTimeout     = 5 * time.Second
	firstRetryDelay = 100 * time.Millisecond
	maxRetryDelay   = 5 * time.Second
	maxIndexKey     = 512
)

// sender is the part of the client's producer the publisher uses.
type sender interface {
	SendSync(ctx context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error)
}

// deadLetterSender is what the oversize policy "dlq" needs; *DeadLetter
// satisfies it.
type deadLetterSender interface {
	Send(ctx context.Context, rec schema.Record, cause error) error
}

var _ deadLetterSender = (*DeadLetter)(nil)

// Publisher sends records to RocketMQ. See the package documentation for
// its guarantees. It is safe for concurrent use, but order between
// concurrent Publish calls is undefined.
type Publisher struct {
	cfg    Config
	log    *slog.Logger
	reg    *Registry
	topics interface {
		queues(ctx context.Context, topic string) ([]queue, error)
	}
	send    sender
	cleanup func() // shuts the clients down
	// dlq takes oversize records under OversizePolicy "dlq".
	dlq deadLetterSender
	// compact is set under FormatCompact.
	compact *compactEncoder

	used runtime.TopicSet // the topics sent to (UsedTopics)

	win     *window
	enqMu   sync.Mutex // orders enqueueing so that queues see Publish order
	closed  bool       // under enqMu
	workers []*worker
	// assigned maps each queue sent to so far to its worker, under enqMu:
	// queues take the workers in turn, so up to sendWorkers queues each
	// have one of their own (a hash could put 2 or 3 of 8 queues on one worker,
	// whose sends then waited for each other). One entry per queue of the
	// pipeline's topics.
	assigned map[pk]*worker
	acks     *fifo[*batch]

	// parked holds, per queue whose broker is unreachable, the parts
	// queued behind the send that waits for it (waitForBroker); a queue
	// is in it while it waits.
	parkMu sync.Mutex
	parked map[pk][]*part
	// dropped holds, per queue whose waiting ended with an
	// ErrQueueSetChanged, that error: later parts of it fail with it too,
	// so that none of them is sent after an earlier one failed.
	dropped map[pk]error
	// outage: since when each waiting queue waits (Unreachable).
	outageMu sync.Mutex
	outage   map[pk]time.Time
	// waitDelay is how long a queue that waits for its broker waits
	// between tries.
	waitDelay time.Duration

	outstanding sync.WaitGroup // batches not yet acked
	goroutines  sync.WaitGroup
	stop        chan struct{}
	sendCtx     context.Context
	sendCancel  context.CancelFunc

	// stats counts what the workers sent (SendStats).
	stats struct{ sends, messages atomic.Int64 }

	// readers, in a process without a sink, finds the topics no consumer
	// group reads (UnconsumedTopics).
	readers *readerWatch

	failed atomic.Pointer[error] // first send failure: later sends are refused
	// changed is the first ErrQueueSetChanged watchQueueSets found: later
	// batches are refused, and records waiting for a broker fail with it.
	changed   atomic.Pointer[error]
	ackErr    error // dispatcher only: first error acked
	closeOnce sync.Once
	closeErr  error
}

// NewPublisher starts a producer and creates the topics of cfg.Tables.
func NewPublisher(ctx context.Context, cfg Config, log *slog.Logger) (*Publisher, error) {
	cfg, log, adm, err := setup(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	prod, err := startProducer(cfg, "source", "pub")
	if err != nil {
		_ = adm.Close()
		return nil, err
	}
	cleanup := func() {
		_ = prod.Shutdown()
		_ = adm.Close()
	}
	var dlq *DeadLetter
	if cfg.OversizePolicy == OversizeDLQ {
		dlq, err = NewDeadLetter(ctx, cfg, log)
		if err != nil {
			cleanup()
			return nil, schema.Wrapf("rocketmq", err, "oversize_policy %q needs the dead-letter topic", OversizeDLQ)
		}
		cleanup = func() {
			_ = prod.Shutdown()
			_ = dlq.Close()
			_ = adm.Close()
		}
	}
	p := newPublisher(cfg, log, batchSender{prod}, newTopicCache(cfg, adm), cleanup)
	if dlq != nil {
		p.dlq = dlq
	}
	if cfg.OnTopic == nil {
		// No sink in this process: say which topics no consumer group reads.
		p.readers = newReaderWatch(cfg, log, p.reg)
		p.goroutines.Go(func() { p.readers.run(p.stop) })
	}
	for _, id := range cfg.Tables {
		topic, err := p.reg.Topic(id)
		if err == nil {
			_, err = p.topics.queues(ctx, topic)
		}
		if err != nil {
			_ = p.Close(ctx)
			return nil, err
		}
	}
	return p, nil
}

func newPublisher(cfg Config, log *slog.Logger, s sender, topics interface {
	queues(ctx context.Context, topic string) ([]queue, error)
}, cleanup func()) *Publisher {
	p := &Publisher{
		cfg:     cfg,
		log:     log,
		reg:     &Registry{prefix: cfg.TopicPrefix, mode: cfg.TopicMode, onNew: cfg.OnTopic, owner: map[string]string{}, byTable: map[schema.TableID]string{}},
		topics:  topics,
		send:    s,
		cleanup: cleanup,
		win:     newWindow(cfg.MaxInFlight),
		acks:    newFifo[*batch](),
		stop:    make(chan struct{}),

		assigned: map[pk]*worker{},
		parked:   map[pk][]*part{},
		dropped:  map[pk]error{},
		outage:   map[pk]time.Time{},

		waitDelay: maxRetryDelay,
	}
	p.sendCtx, p.sendCancel = context.WithCancel(context.Background())
	if cfg.Format == FormatCompact || cfg.Format == FormatPacked {
		p.compact = newCompactEncoder(SchemaTopic(cfg.TopicPrefix), p.storeSchema)
	}
	for range sendWorkers {
		w := &worker{p: p, q: newFifo[*part]()}
		p.workers = append(p.workers, w)
		p.goroutines.Go(w.run)
	}
	p.goroutines.Go(p.dispatchAcks)
	if c, ok := topics.(queueSetChecker); ok {
		p.goroutines.Go(func() { p.watchQueueSets(c) })
	}
	return p
}

// queueSetCheckEvery is how often a running publisher compares its
// topics' queue sets with the name servers (watchQueueSets).
var queueSetCheckEvery = 30 * time.Second

// queueSetChecker is what topicCache tells besides a topic's queue set:
// whether the name servers still show the sets in use (recheck).
type queueSetChecker interface {
	recheck(ctx context.Context) error
}

// watchQueueSets checks every queueSetCheckEvery that the queue sets the
// publisher hashes keys over are still its topics' (topicCache.recheck):
// a topic whose queues changed while the source runs (queues added, a
// broker added, queues taken away, a new set recorded) stops the
// publisher with the fatal ErrQueueSetChanged, which names the change and
// what to do, instead of hashing on over a set no longer the topic's, or
// waiting for ever as if the broker of a queue taken away were down. What
// is in flight to live queues is still sent and acknowledged, so that the
// stop saves a position past it; the next batch is refused, and records
// that wait for a broker fail with the error (waitForBroker).
func (p *Publisher) watchQueueSets(c queueSetChecker) {
	t := time.NewTicker(queueSetCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.sendCtx.Done():
			return
		case <-t.C:
		}
		err := c.recheck(p.sendCtx)
		if !errors.Is(err, ErrQueueSetChanged) && !errors.Is(err, ErrConfig) {
			continue
		}
		if p.changed.CompareAndSwap(nil, &err) {
			p.log.Error("rocketmq topic queue set changed while the source runs: the source stops at its next batch", "err", err)
		}
		return
	}
}

// batch is one Publish call: one part per queue it sends to.
type batch struct {
	ack    runtime.AckFunc
	tokens int
	*runtime.Pending
}

// part is the messages of one batch for one queue, in Publish order.
type part struct {
	b     *batch
	topic string
	q     queue
	msgs  []*primitive.Message
	sizes []int // messageSize of each message, measured once in Publish
	// entries, under FormatPacked instead of msgs: each record's line of
	// a pack (packedEntry), packed by the send worker.
	entries []packEntry
}

// len is the number of records of pt.
func (pt *part) len() int { return max(len(pt.msgs), len(pt.entries)) }

// markTxEnd marks the i-th record of pt as its transaction's last in the
// queue.
func (pt *part) markTxEnd(i int) {
	if pt.entries != nil {
		pt.entries[i].markTxEnd()
		return
	}
	pt.msgs[i].WithProperty(HeaderPropertyPrefix+schema.HeaderTxEnd, "true")
}

// SendStats is what the publisher's sends confirmed so far: the client's
// send calls and the messages they held.
type SendStats struct{ Sends, Messages int64 }

// SendStats reports what was sent so far (`sluice bench` reports it).
func (p *Publisher) SendStats() SendStats {
	return SendStats{p.stats.sends.Load(), p.stats.messages.Load()}
}

// UsedTopics lists the topics this publisher has sent records to since it
// was made or since ResetUsedTopics (runtime.TopicTracker).
func (p *Publisher) UsedTopics() []string { return p.used.Topics() }

// ResetUsedTopics forgets them.
func (p *Publisher) ResetUsedTopics() { p.used.Reset() }

// Publish encodes recs and hands them to the send workers; see
// runtime.Publisher. It blocks while MaxInFlight records are unacked. When
// it returns an error, ack is not called.
func (p *Publisher) Publish(ctx context.Context, recs []schema.Record, ack runtime.AckFunc) error {
	if ack == nil {
		return errors.New("rocketmq: Publish needs an ack function")
	}
	if errp := p.failed.Load(); errp != nil {
		return fmt.Errorf("rocketmq: publisher stopped after a failed send, restart from the last acked position: %w", *errp)
	}
	if errp := p.changed.Load(); errp != nil {
		return *errp
	}
	var parts []*part
	index := map[pk]*part{}
	data := 0
	type sent struct {
		to pk
		pt *part // nil: not sent
		i  int   // the record's index in pt
	}
	dest := make([]sent, len(recs))
	packed := p.cfg.Format == FormatPacked
	for i := range recs {
		rec := &recs[i]
		if rec.Op.IsMarker() {
			continue
		}
		data++
		topic, err := p.reg.Topic(rec.Table)
		if err != nil {
			return err
		}
		qs, err := p.topics.queues(ctx, topic)
		if err != nil {
			return err
		}
		if len(qs) == 0 {
			return fmt.Errorf("rocketmq: topic %q has no writable queue", topic)
		}
		barrier := rec.IsBarrier()
		var targets []pk
		if barrier { // a copy to every queue, on every broker, of each table's topic
			if targets, err = p.barrierTargets(ctx, rec); err != nil {
				return err
			}
			c := runtime.BarrierCopy(*rec, len(targets))
			rec = &c
		}
		var (
			msg   *primitive.Message
			entry packEntry
			size  int
			fast  bool
		)
		if packed {
			if entry, size, fast, err = p.packedEntry(ctx, rec, topic); err != nil {
				return err
			}
		}
		if !fast {
			if msg, size, err = p.fitMessage(ctx, rec, topic); err != nil {
				return err
			}
			if msg == nil { // sent to the dead-letter topic
				continue
			}
			if packed {
				entry = messageEntry(msg.GetProperties(), msg.Body)
			}
		}
		if !barrier {
			targets = []pk{{topic, qs[runtime.QueueFor(rec, len(qs))]}}
		}
		for j, k := range targets {
			q := k.q
			pt := index[k]
			if pt == nil {
				pt = &part{topic: k.topic, q: q}
				index[k] = pt
				parts = append(parts, pt)
			}
			if packed {
				pt.entries = append(pt.entries, entry)
			} else {
				m := msg
				if j > 0 {
					m = primitive.NewMessage(k.topic, msg.Body)
					m.WithProperties(msg.GetProperties())
				}
				m.Queue = &primitive.MessageQueue{Topic: k.topic, BrokerName: q.Broker, QueueId: q.ID}
				pt.msgs = append(pt.msgs, m)
				pt.sizes = append(pt.sizes, size)
			}
			if !barrier { // barrier copies carry their end mark already
				dest[i] = sent{k, pt, pt.len() - 1}
			}
		}
	}
	// Mark the last record of each transaction per queue whose commit is in
	// this batch (see runtime.TransactionEnds).
	for i := range runtime.TransactionEnds(recs, func(i int) (pk, bool) { return dest[i].to, dest[i].pt != nil }) {
		dest[i].pt.markTxEnd(dest[i].i)
	}
	tokens := max(1, data)
	if err := p.win.acquire(ctx, tokens); err != nil {
		return err
	}
	b := &batch{ack: ack, tokens: tokens, Pending: runtime.NewPending(len(parts))}
	p.enqMu.Lock()
	if p.closed {
		p.enqMu.Unlock()
		p.win.release(tokens)
		return ErrClosed
	}
	p.outstanding.Add(1)
	p.acks.push(b)
	for _, pt := range parts {
		pt.b = b
		p.used.Add(pt.topic)
		p.workerFor(pt.topic, pt.q).q.push(pt)
	}
	p.enqMu.Unlock()
	return nil
}

// pk names one queue of one topic.
type pk struct {
	topic string
	q     queue
}

// barrierTargets lists the queues barrier rec goes to: every queue of the
// topic of each table it is ordered with (schema.Record.BarrierTables), so
// that a statement naming several tables (`DROP TABLE a, b`) waits for the
// rows before it of each and precedes the rows after it of each.
func (p *Publisher) barrierTargets(ctx context.Context, rec *schema.Record) ([]pk, error) {
	var out []pk
	seen := map[string]bool{}
	for _, id := range rec.BarrierTables() {
		topic, err := p.reg.Topic(id)
		if err != nil {
			return nil, err
		}
		if seen[topic] {
			continue
		}
		seen[topic] = true
		qs, err := p.topics.queues(ctx, topic)
		if err != nil {
			return nil, err
		}
		if len(qs) == 0 {
			return nil, fmt.Errorf("rocketmq: topic %q has no writable queue", topic)
		}
		for _, q := range qs {
			out = append(out, pk{topic, q})
		}
	}
	return out, nil
}

// storeSchema sends a schema message of the compact format, a copy to the
// first queue of each broker of its topic that is up, and waits for the
// brokers' confirmation. Sinks read every queue of the schema topic, so a
// schema stays readable while one broker that holds it is up.
func (p *Publisher) storeSchema(ctx context.Context, msg *primitive.Message) error {
	qs, err := p.topics.queues(ctx, msg.Topic)
	if err != nil {
		return err
	}
	if len(qs) == 0 {
		return fmt.Errorf("rocketmq: topic %q has no writable queue", msg.Topic)
	}
	if l, ok := p.topics.(liveQueues); ok {
		if up, err := l.live(ctx, msg.Topic); err == nil && len(up) > 0 {
			qs = up
		}
	}
	// A copy on every live broker; the sink finds a schema on any of them
	// (it reads the whole topic), so one stored copy is enough. A broker
	// just back from an outage can refuse for a moment ("route info not
	// found" until the client's routes catch up): that must not stop the
	// pipeline while another broker has the copy (the hourly store
	// reaches it later).
	seen := map[string]bool{}
	var failed []error
	for _, q := range qs {
		if seen[q.Broker] {
			continue
		}
		seen[q.Broker] = true
		m := primitive.NewMessage(msg.Topic, msg.Body)
		m.WithProperties(msg.GetProperties())
		m.Queue = &primitive.MessageQueue{Topic: msg.Topic, BrokerName: q.Broker, QueueId: q.ID}
		if err := p.sendRetry(msg.Topic, q, []*primitive.Message{m}); err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) == len(seen) {
		return errors.Join(failed...)
	}
	for _, err := range failed {
		p.log.Warn("rocketmq: a schema was stored on some brokers only; the sink reads it there", "topic", msg.Topic, "err", err)
	}
	return nil
}

// liveQueues is what topicCache tells besides a topic's queue set: the
// queues the name servers route to a live master now.
type liveQueues interface {
	live(ctx context.Context, topic string) ([]queue, error)
}

// brokerDown explains why sends to queue q of topic failed when the name
// servers route no live master for its broker (nil otherwise, or when they
// cannot tell).
func (p *Publisher) brokerDown(topic string, q queue) error {
	l, ok := p.topics.(liveQueues)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), remotingTimeout)
	defer cancel()
	up, err := l.live(ctx, topic)
	if err != nil || slices.ContainsFunc(up, func(u queue) bool { return u.Broker == q.Broker }) {
		return nil
	}
	return errBrokerDown(topic, q)
}

// encode returns rec's key and value as the message carries them, and
// under the compact formats the ID of their schemas (empty otherwise).
// Once a record of its schemas has been split, a compact record's payloads
// are written alone when the codec can (payloadEncoder), not written with
// their schemas to be cut out of them.
func (p *Publisher) encode(ctx context.Context, rec *schema.Record) (key, val []byte, schemaRef string, err error) {
	encodeErr := func(err error) error {
		return fmt.Errorf("rocketmq: cannot encode %s record of %s key %q: %w", rec.Op, rec.Table, rec.KeyString(), err)
	}
	compact := p.compact != nil && rec.Op.IsData()
	if pe, ok := p.cfg.Codec.(payloadEncoder); ok && compact && rec.ValueSchema != nil {
		k, v, err := pe.EncodePayloads(rec)
		if err != nil {
			return nil, nil, "", encodeErr(err)
		}
		id, ok, err := p.compact.cached(ctx, rec, k != nil)
		if err != nil {
			return nil, nil, "", err
		}
		if ok {
			return k, v, id, nil
		}
	}
	if key, val, err = p.cfg.Codec.Encode(rec); err != nil {
		return nil, nil, "", encodeErr(err)
	}
	if compact {
		var ok bool
		if key, val, schemaRef, ok, err = p.compact.compact(ctx, rec, key, val); err != nil {
			return nil, nil, "", err
		} else if !ok {
			schemaRef = ""
		}
	}
	return key, val, schemaRef, nil
}

// recordFields are what a record's message carries: its encoded key and
// value, schema reference and the strings of its properties.
type recordFields struct {
	key, val      []byte
	schemaRef     string
	keys, tag, id string
	size          int // messageSize of the message (see fields)
}

// fields encodes rec for topic: the fields of its message and the size of
// that message (messageSize's figure, counted rather than measured by
// marshalling the properties).
func (p *Publisher) fields(ctx context.Context, rec *schema.Record, topic string) (recordFields, error) {
	var f recordFields
	key, val, schemaRef, err := p.encode(ctx, rec)
	if err != nil {
		return f, err
	}
	if len(val) == 0 {
		return f, fmt.Errorf("rocketmq: %s record of %s key %q encodes to an empty value, which RocketMQ refuses", rec.Op, rec.Table, rec.KeyString())
	}
	if rec.ID.IsZero() {
		return f, schema.Fatal(fmt.Errorf("rocketmq: %s record of %s key %q has no record ID; the source must set Record.ID (sinks refuse records without one)", rec.Op, rec.Table, rec.KeyString()))
	}
	f.key, f.val, f.schemaRef, f.tag, f.id = key, val, schemaRef, rec.Table.Table, rec.ID.String()
	// KEYS feeds the broker's message index; a long key is left out of it
	// (the broker limits a message's properties to 32 KiB in all).
	if ks := rec.KeyString(); len(ks) <= maxIndexKey {
		f.keys = ks
	}
	f.size = len(val) + len(topic)
	prop := func(k string, v int) { // what MarshallProperties writes for a property set (v its value's length)
		if v > 0 {
			f.size += len(k) + v + 2
		}
	}
	prop(primitive.PropertyKeys, len(f.keys))
	prop(primitive.PropertyTags, len(f.tag))
	prop(KeyProperty, len(key))
	for k, v := range rec.Headers {
		if v != "" {
			f.size += len(HeaderPropertyPrefix) + len(k) + len(v) + 2
		}
	}
	prop(IDProperty, len(f.id))
	prop(SchemaProperty, len(schemaRef))
	return f, nil
}

// message encodes rec as topic's message and returns it with its size.
func (p *Publisher) message(ctx context.Context, rec *schema.Record, topic string) (*primitive.Message, int, error) {
	f, err := p.fields(ctx, rec, topic)
	if err != nil {
		return nil, 0, err
	}
	msg := primitive.NewMessage(topic, f.val)
	set := func(k, v string) { // as fields counts them
		if k != "" && v != "" {
			msg.WithProperty(k, v)
		}
	}
	set(primitive.PropertyKeys, f.keys) // msg.WithKeys of one key
	set(primitive.PropertyTags, f.tag)  // msg.WithTag
	set(KeyProperty, string(f.key))
	for k, v := range rec.Headers {
		set(HeaderPropertyPrefix+k, v)
	}
	set(IDProperty, f.id)
	set(SchemaProperty, f.schemaRef)
	return msg, f.size, nil
}

// packedEntry is rec's line of a pack and the size of its message, made
// from the record without a message of its own (FormatPacked); it is the
// entry messageEntry makes of message's message. ok is false when that
// message is larger than maxRecordBytes: fitMessage then applies the
// oversize policy.
func (p *Publisher) packedEntry(ctx context.Context, rec *schema.Record, topic string) (e packEntry, size int, ok bool, err error) {
	f, err := p.fields(ctx, rec, topic)
	if err != nil || f.size > p.maxRecordBytes() {
		return e, 0, false, err
	}
	e = packEntry{ID: f.id, Keys: f.keys, Schema: f.schemaRef, Value: f.val, Tag: f.tag, hasID: true, hasSchema: f.schemaRef != ""}
	if len(f.key) > 0 {
		e.Key = f.key
	}
	for k, v := range rec.Headers {
		if v != "" { // as message sets HeaderPropertyPrefix+k
			if e.Headers == nil {
				e.Headers = make(map[string]string, len(rec.Headers))
			}
			e.Headers[k] = v
		}
	}
	return e, f.size, true, nil
}

// maxRecordBytes is the largest record message (messageSize) the
// publisher sends: MaxMessageBytes, less under FormatPacked the bytes a
// pack of that record alone may add (its line's framing and the pack's
// properties; the record's own properties, which move into the line, are
// counted already).
func (p *Publisher) maxRecordBytes() int {
	if p.cfg.Format == FormatPacked {
		return p.cfg.MaxMessageBytes - packOverhead
	}
	return p.cfg.MaxMessageBytes
}

// messageSize is what a message weighs against MaxMessageBytes.
func messageSize(m *primitive.Message) int {
	return len(m.Body) + len(m.MarshallProperties()) + len(m.Topic)
}

// fitMessage returns rec's message and its size, applying OversizePolicy
// when it is larger than MaxMessageBytes. A nil message and nil error mean
// the record went to the dead-letter topic.
func (p *Publisher) fitMessage(ctx context.Context, rec *schema.Record, topic string) (*primitive.Message, int, error) {
	msg, size, err := p.message(ctx, rec, topic)
	if err != nil {
		return nil, 0, err
	}
	if size <= p.maxRecordBytes() {
		return msg, size, nil
	}
	tooBig := fmt.Errorf("%w: %s record of %s key %q is %d bytes, more than max_message_bytes %d (oversize_policy %q)",
		ErrOversize, rec.Op, rec.Table, rec.KeyString(), size, p.maxRecordBytes(), p.cfg.OversizePolicy)
	switch p.cfg.OversizePolicy {
	case OversizeDLQ:
		if p.dlq == nil {
			return nil, 0, schema.Fatal(fmt.Errorf("%w; no dead-letter sender is set up", tooBig))
		}
		if err := p.dlq.Send(ctx, *rec, tooBig); err != nil {
			return nil, 0, schema.Wrapf("rocketmq", err, "oversize record of %s key %q to the dead-letter topic", rec.Table, rec.KeyString())
		}
		p.log.Warn("record too large, sent to the dead-letter topic", "table", rec.Table.String(), "key", rec.KeyString(), "bytes", size, "max", p.maxRecordBytes())
		return nil, 0, nil
	case OversizeTruncateColumns:
		msg, err := p.truncateColumns(ctx, rec, topic, tooBig)
		if err != nil {
			return nil, 0, err
		}
		return msg, messageSize(msg), nil
	default:
		return nil, 0, schema.Fatal(fmt.Errorf("%w: raise the broker's maxMessageSize and the transport's max_message_bytes, exclude or mask the column at the source, or set oversize_policy to %q or %q", tooBig, OversizeDLQ, OversizeTruncateColumns))
	}
}

// truncateColumns sets the largest string/bytes values of nullable non-key
// columns to nil (in a copy of rec), one column at a time, until the message
// fits.
func (p *Publisher) truncateColumns(ctx context.Context, orig *schema.Record, topic string, tooBig error) (*primitive.Message, error) {
	if orig.ValueSchema == nil {
		return nil, schema.Fatal(fmt.Errorf("%w; the record has no value schema, so no column can be dropped", tooBig))
	}
	rec := *orig
	rec.Before = slices.Clone(orig.Before)
	rec.After = slices.Clone(orig.After)
	isKey := map[string]bool{}
	if rec.KeySchema != nil {
		for _, f := range rec.KeySchema.Fields {
			isKey[f.Name] = true
		}
	}
	valueLen := func(row schema.Row, i int) int {
		if i >= len(row) {
			return 0
		}
		switch v := row[i].(type) {
		case string:
			return len(v)
		case []byte:
			return len(v)
		}
		return 0
	}
	var dropped []string
	for {
		best, bestLen := -1, 0
		for i, f := range rec.ValueSchema.Fields {
			if isKey[f.Name] || f.Schema == nil || !f.Schema.Optional {
				continue
			}
			if n := valueLen(rec.Before, i) + valueLen(rec.After, i); n > bestLen {
				best, bestLen = i, n
			}
		}
		if best < 0 {
			return nil, schema.Fatal(fmt.Errorf("%w; still too large with columns %v set to NULL and no nullable string or bytes column left", tooBig, dropped))
		}
		if best < len(rec.Before) {
			rec.Before[best] = nil
		}
		if best < len(rec.After) {
			rec.After[best] = nil
		}
		dropped = append(dropped, rec.ValueSchema.Fields[best].Name)
		rec.Headers = maps.Clone(orig.Headers)
		if rec.Headers == nil {
			rec.Headers = map[string]string{}
		}
		rec.Headers[DroppedColumnsProperty] = strings.Join(dropped, ",")
		msg, _, err := p.message(ctx, &rec, topic)
		if err != nil {
			return nil, err
		}
		msg.WithProperty(DroppedColumnsProperty, rec.Headers[DroppedColumnsProperty])
		if size := messageSize(msg); size <= p.maxRecordBytes() {
			p.log.Warn("record too large, columns set to NULL", "table", rec.Table.String(), "key", rec.KeyString(), "columns", dropped, "bytes", size, "max", p.maxRecordBytes())
			return msg, nil
		}
	}
}

// workerFor returns the worker that sends queue q of topic, the same for
// the Publisher's life (so a queue's sends keep their order); p.enqMu held.
func (p *Publisher) workerFor(topic string, q queue) *worker {
	k := pk{topic, q}
	w, ok := p.assigned[k]
	if !ok {
		w = p.workers[len(p.assigned)%len(p.workers)]
		p.assigned[k] = w
	}
	return w
}

// dispatchAcks calls acks in Publish order, each once its batch is done.
func (p *Publisher) dispatchAcks() {
	for {
		b, ok := p.acks.pop(p.stop)
		if !ok {
			return
		}
		<-b.Done()
		err := b.Err()
		if p.ackErr != nil {
			err = fmt.Errorf("rocketmq: batch not acknowledged because an earlier batch failed: %w", p.ackErr)
		} else if err != nil {
			p.ackErr = err
		}
		b.ack(err)
		p.win.release(b.tokens)
		p.outstanding.Done()
	}
}

// Close waits for every outstanding ack (bounded by ctx; past it the sends
// in progress are cancelled and their batches acked with an error), then
// shuts the producer down. Later calls return the first call's result.
func (p *Publisher) Close(ctx context.Context) error {
	p.closeOnce.Do(func() {
		p.enqMu.Lock()
		p.closed = true
		p.enqMu.Unlock()
		if p.failed.Load() != nil {
			// A send failed for good: nothing after it can be committed,
			// so sends still retrying are cut short instead of making the
			// shutdown wait for them.
			p.sendCancel()
		}
		drained := make(chan struct{})
		go func() { p.outstanding.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-ctx.Done():
			p.closeErr = fmt.Errorf("rocketmq: publisher closed before every batch was confirmed: %w", ctx.Err())
			p.sendCancel()
			<-drained
		}
		p.sendCancel()
		close(p.stop)
		p.goroutines.Wait()
		if p.cleanup != nil {
			p.cleanup()
		}
	})
	return p.closeErr
}

// worker sends the parts of the queues hashed to it, in order.
type worker struct {
	p *Publisher
	q *fifo[*part]
}

func (w *worker) run() {
	for {
		items, ok := w.q.popAll(w.p.stop)
		if !ok {
			return
		}
		w.process(items)
	}
}

// process sends items, grouped per queue; parts of one queue keep their order.
func (w *worker) process(items []*part) {
	type gk struct {
		topic string
		q     queue
	}
	var order []gk
	groups := map[gk][]*part{}
	for _, it := range items {
		k := gk{it.topic, it.q}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], it)
	}
	for _, k := range order {
		if w.p.park(pk(k), groups[k]) {
			continue
		}
		w.sendGroup(k.topic, k.q, groups[k])
	}
}

// queueSend is what one queue has to send: the messages of parts in
// order (ends[i] is the index after parts[i]'s last one), of which sent
// are confirmed and parts[:next] finished.
type queueSend struct {
	pk
	msgs       []*primitive.Message
	sizes      []int
	parts      []*part
	ends       []int
	sent, next int
}

func (w *worker) sendGroup(topic string, q queue, parts []*part) {
	p := w.p
	qs := p.queueSend(pk{topic, q}, parts)
	if err := p.sendQueue(qs, false); errors.Is(err, errUnreachable) {
		// Parked: what follows for the queue waits behind qs in
		// p.parked, sent by waitForBroker, while this worker goes on
		// with its other queues.
		p.parkMu.Lock()
		p.parked[qs.pk] = nil
		p.parkMu.Unlock()
		p.goroutines.Go(func() { p.waitForBroker(qs, err) })
	}
}

// park appends parts to queue k's waiting parts and tells true when the
// queue waits for its broker (waitForBroker sends them then), or finishes
// them with the error that dropped the queue.
func (p *Publisher) park(k pk, parts []*part) bool {
	p.parkMu.Lock()
	defer p.parkMu.Unlock()
	if err, ok := p.dropped[k]; ok {
		for _, pt := range parts {
			pt.b.Finish(err)
		}
		return true
	}
	waiting, ok := p.parked[k]
	if ok {
		p.parked[k] = append(waiting, parts...)
	}
	return ok
}

// queueSend lays out the messages of parts, all for queue k.
func (p *Publisher) queueSend(k pk, parts []*part) *queueSend {
	topic, q := k.topic, k.q
	var msgs []*primitive.Message
	var sizes []int
	ends := make([]int, len(parts)) // ends[i]: index after the last message of parts[i]
	if p.cfg.Format == FormatPacked {
		// What is queued for the queue goes in packs, which may hold the
		// records of several parts: a part is done once the pack of its
		// last record is.
		es := parts[0].entries
		if len(parts) > 1 {
			n := 0
			for _, pt := range parts {
				n += len(pt.entries)
			}
			es = make([]packEntry, 0, n)
		}
		for i, pt := range parts {
			if len(parts) > 1 {
				es = append(es, pt.entries...)
			}
			ends[i] = len(es)
		}
		var packOf []int
		mq := &primitive.MessageQueue{Topic: topic, BrokerName: q.Broker, QueueId: q.ID}
		msgs, sizes, packOf = packEntries(topic, mq, es, min(PackBytes, p.cfg.MaxMessageBytes))
		for i := range ends {
			ends[i] = packOf[ends[i]-1] + 1
		}
	} else {
		for i, pt := range parts {
			msgs = append(msgs, pt.msgs...)
			sizes = append(sizes, pt.sizes...)
			ends[i] = len(msgs)
		}
	}
	return &queueSend{pk: k, msgs: msgs, sizes: sizes, parts: parts, ends: ends}
}

// sendQueue sends what qs has left, finishing its parts as their messages
// are confirmed. A send that fails because the queue's broker has no live
// master returns an error wrapping errUnreachable and leaves qs as far as
// it got, to be resumed, as does any failure but a fatal one once waiting
// (the broker was found down before); any other failure stops the
// publisher (p.failed) and finishes the rest of qs's parts with it.
func (p *Publisher) sendQueue(qs *queueSend, waiting bool) error {
	msgs, sizes := qs.msgs, qs.sizes
	for qs.sent < len(msgs) {
		if errp := p.failed.Load(); errp != nil {
			break
		}
		n, size := 0, 0
		for qs.sent+n < len(msgs) && n < maxBatchMsgs {
			// Measured in Publish; 64 bytes of headroom cover the
			// transaction end mark added since and the batch's framing.
			sz := 64
			if qs.sent+n < len(sizes) {
				sz += sizes[qs.sent+n]
			} else {
				sz += messageSize(msgs[qs.sent+n])
			}
			if n > 0 && size+sz > maxBatchBytes {
				break
			}
			size += sz
			n++
		}
		if err := p.sendRetry(qs.topic, qs.q, msgs[qs.sent:qs.sent+n]); err != nil {
			if p.sendCtx.Err() == nil {
				if errors.Is(err, errUnreachable) {
					return err
				}
				if waiting && !runtime.IsFatal(err) {
					// A broker coming back may time out or refuse
					// sends for a while before it serves them.
					return fmt.Errorf("%w: %w", errUnreachable, err)
				}
			}
			p.failed.CompareAndSwap(nil, &err)
			break
		}
		p.stats.sends.Add(1)
		p.stats.messages.Add(int64(n))
		qs.sent += n
		for qs.next < len(qs.parts) && qs.ends[qs.next] <= qs.sent {
			qs.parts[qs.next].b.Finish(nil)
			qs.next++
		}
	}
	if qs.next < len(qs.parts) {
		err := *p.failed.Load()
		for ; qs.next < len(qs.parts); qs.next++ {
			qs.parts[qs.next].b.Finish(err)
		}
		return err
	}
	return nil
}

// waitForBroker sends qs, and then what was parked behind it, once the
// queue's broker is back: a broker outage holds its queues' records (their
// batches unacknowledged, so the publisher's window bounds them) instead of
// failing the publisher, which would restart the source task and resend
// every record since its position to the other brokers. The outage is
// reported (Unreachable) while it lasts. It ends on another failure, or when
// Close gives up on the sends.
func (p *Publisher) waitForBroker(qs *queueSend, cause error) {
	k := qs.pk
	since := time.Now()
	p.outageMu.Lock()
	first := p.waitingOn(k.q.Broker) == 0
	p.outage[k] = since
	p.outageMu.Unlock()
	if first { // once per broker, not per queue
		p.log.Warn("rocketmq broker unreachable: the records of its queues wait for it, the pipeline goes on with the other brokers' queues",
			"broker", k.q.Broker, "topic", k.topic, "queue", k.q.ID, "err", cause)
	}
	sent := false
	defer func() {
		p.outageMu.Lock()
		delete(p.outage, k)
		last := p.waitingOn(k.q.Broker) == 0
		p.outageMu.Unlock()
		if last && sent {
			p.log.Info("rocketmq broker reachable again: the records that waited for it are sent",
				"broker", k.q.Broker, "waited", time.Since(since).Round(time.Millisecond))
		}
	}()
	for {
		for {
			select {
			case <-time.After(p.waitDelay):
			case <-p.sendCtx.Done():
			}
			if errp := p.changed.Load(); errp != nil {
				// The queue set changed: the queue may be gone (its
				// records would wait for ever) and the source stops.
				for ; qs.next < len(qs.parts); qs.next++ {
					qs.parts[qs.next].b.Finish(*errp)
				}
				p.parkMu.Lock()
				p.dropped[k] = *errp
				p.parkMu.Unlock()
				p.failParked(k, *errp)
				return
			}
			err := p.sendQueue(qs, true)
			if err == nil {
				break
			}
			if !errors.Is(err, errUnreachable) {
				// Failed: what waits behind qs fails with it.
				p.failParked(k, err)
				return
			}
		}
		p.parkMu.Lock()
		rest := p.parked[k]
		if len(rest) == 0 {
			delete(p.parked, k)
			p.parkMu.Unlock()
			sent = true
			return
		}
		p.parked[k] = nil
		p.parkMu.Unlock()
		qs = p.queueSend(k, rest)
	}
}

// failParked finishes the parts parked behind queue k's waiting send
// with err and ends its waiting.
func (p *Publisher) failParked(k pk, err error) {
	p.parkMu.Lock()
	rest := p.parked[k]
	delete(p.parked, k)
	p.parkMu.Unlock()
	for _, pt := range rest {
		pt.b.Finish(err)
	}
}

// waitingOn counts the queues of broker that wait for it; p.outageMu held.
func (p *Publisher) waitingOn(broker string) int {
	n := 0
	for k := range p.outage {
		if k.q.Broker == broker {
			n++
		}
	}
	return n
}

// Unreachable reports the brokers the publisher waits for: each one's
// queues whose records wait, and since when (see runtime.OutageReporter).
func (p *Publisher) Unreachable() []runtime.Unreachable {
	p.outageMu.Lock()
	defer p.outageMu.Unlock()
	by := map[string]*runtime.Unreachable{}
	for k, since := range p.outage {
		u := by[k.q.Broker]
		if u == nil {
			u = &runtime.Unreachable{Broker: k.q.Broker, Since: since}
			by[k.q.Broker] = u
		}
		if since.Before(u.Since) {
			u.Since = since
		}
		u.Queues = append(u.Queues, fmt.Sprintf("%s:%d", k.topic, k.q.ID))
	}
	out := make([]runtime.Unreachable, 0, len(by))
	for _, u := range by {
		slices.Sort(u.Queues)
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b runtime.Unreachable) int { return strings.Compare(a.Broker, b.Broker) })
	return out
}

// busyRetryFor bounds how long sendRetry keeps sending again a batch that
// a broker refuses as busy (flow control: its send queue waited longer
// than waitTimeMillsInSendQueue, or its page cache is busy), beside the
// three retries (Config.SendRetries) that other failures get. A busy
// broker asks to be sent to again a little later; a pipeline stopped and
// restarted for it (as it was before, after those retries' 0.7 s) would
// only add load. Kafka's producer retries the same way within its
// delivery.timeout.ms (2 minutes).
var busyRetryFor = 30 * time.Second

// resSystemBusy is the broker's SYSTEM_BUSY response code.
const resSystemBusy = 2

// brokerBusy reports whether err is a broker's SYSTEM_BUSY refusal, which
// the client reports only as the text "CODE: 2, DESC: <remark>".
func brokerBusy(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "CODE: "+strconv.Itoa(resSystemBusy)+", DESC: ")
}

func (p *Publisher) sendRetry(topic string, q queue, msgs []*primitive.Message) error {
	ctx := p.sendCtx
	delay := firstRetryDelay
	var last error
	var busySince time.Time
	attempts := 0
	for attempt := 0; attempt <= p.cfg.SendRetries; attempt++ {
		attempts++
		res, err := p.send.SendSync(ctx, msgs...)
		if err == nil && res != nil && res.Status == primitive.SendOK {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("broker answered status %d", sendStatus(res))
		}
		last = err
		if err := sendRefused(p.cfg.AccessKey, q.Broker, err); err != nil {
			return err // no retry makes the broker accept it
		}
		if ctx.Err() != nil {
			break
		}
		if brokerBusy(err) {
			if busySince.IsZero() {
				busySince = time.Now()
			}
			if time.Since(busySince) < busyRetryFor {
				attempt-- // not a failed attempt: the broker asks for a later one
			}
		}
		if attempt < p.cfg.SendRetries {
			p.log.Warn("rocketmq send failed, retrying", "topic", topic, "broker", q.Broker, "queue", q.ID, "messages", len(msgs), "attempt", attempt+1, "err", err)
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
			delay = min(2*delay, maxRetryDelay)
		}
	}
	err := fmt.Errorf("%w: topic %q broker %q queue %d, %d messages, %d attempts: %w", ErrSend, topic, q.Broker, q.ID, len(msgs), attempts, last)
	if down := p.brokerDown(topic, q); down != nil {
		err = fmt.Errorf("%w; %w: %w", err, errUnreachable, down)
	} else if noRoute(last) {
		// The name servers route the broker again, but the client's
		// cached route (refreshed every 30 s) does not yet: a broker just
		// back, whose queues wait a little longer.
		err = fmt.Errorf("%w; %w: the producer has no route to queue %d of broker %s yet", err, errUnreachable, q.ID, q.Broker)
	}
	return err
}

// noRoute tells whether err is the client's refusal of a send to a queue
// its cached route of the topic lacks (pinnedSelector found none): the
// client has no error value for it, only this text.
func noRoute(err error) bool {
	return err != nil && strings.Contains(err.Error(), "route info not found")
}

func sendStatus(r *primitive.SendResult) int {
	if r == nil {
		return -1
	}
	return int(r.Status)
}

// pinnedSelector sends a message to the queue the publisher chose and put in
// Message.Queue (a batch carries its first message's queue).
type pinnedSelector struct{}

func (pinnedSelector) Select(msg *primitive.Message, mqs []*primitive.MessageQueue, _ string) *primitive.MessageQueue {
	if msg.Queue == nil {
		return nil
	}
	for _, mq := range mqs {
		if mq.QueueId == msg.Queue.QueueId && (msg.Queue.BrokerName == "" || mq.BrokerName == msg.Queue.BrokerName) {
			return mq
		}
	}
	return nil
}

var _ producer.QueueSelector = pinnedSelector{}

// startProducer starts a producer that sends to explicitly chosen queues
// and leaves retries to its caller (with a backoff, to the same queue).
// group and instance name its role, e.g. "source" and "pub".
func startProducer(cfg Config, group, instance string) (rmq.Producer, error) {
	prod, err := rmq.NewProducer(producerOptions(cfg, group, instance)...)
	if err != nil {
		return nil, fmt.Errorf("rocketmq: cannot create %s producer: %w", group, err)
	}
	if err := prod.Start(); err != nil {
		return nil, fmt.Errorf("rocketmq: cannot start %s producer for name servers %v: %w", group, cfg.NameServers, err)
	}
	return prod, nil
}

// compressBodyFrom is the body size from which the client zlib-compresses
// a message sent alone (it never compresses a batch): the broker's default
// maxMessageSize less headroom, DefaultMaxMessageBytes, so that only a row
// too big for that broker uncompressed (max_message_bytes raised) is
// compressed (packs, at most PackBytes, never are). The client's default,
// 4 KiB, compressed the json format's records (4-4.5 KB with their schema)
// whenever one went alone, as on a quiet queue, but not the same records
// in a batch, as in a catch-up: zlib cost about 45 µs to compress and 45
// µs and a 53 KB zlib reader to decompress such a record, ten times the
// transport's own work for it (BenchmarkJSONMessages: 8 µs), to save the
// broker 3.2 KB of it (4.0 KB to 0.85 KB) only when the queue was quiet.
const compressBodyFrom = DefaultMaxMessageBytes

func producerOptions(cfg Config, group, instance string) []producer.Option {
	// The client's process-wide logger is set before its first client
	// starts: setting it later races with the started client's goroutines
	// (the race detector saw a test's producer started before the
	// replicator's Open set it).
	setClientLogger(nil)
	opts := []producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver(cfg.NameServers)),
		producer.WithGroupName(sanitizeName(cfg.Pipeline + "-" + group)),
		producer.WithInstanceName(instanceName(cfg.Pipeline, instance)),
		producer.WithRetry(0),
		producer.WithQueueSelector(pinnedSelector{}),
		producer.WithSendMsgTimeout(sendTimeout),
		producer.WithCompressMsgBodyOverHowmuch(compressBodyFrom),
	}
	if cfg.hasCredentials() {
		opts = append(opts, producer.WithCredentials(cfg.credentials()))
	}
	return opts
}
