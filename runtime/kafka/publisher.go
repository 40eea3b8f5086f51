package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

var (
	_ runtime.Publisher    = (*Publisher)(nil)
	_ runtime.TopicTracker = (*Publisher)(nil)
)

// ErrClosed is returned by Publish after Close.
var ErrClosed = errors.New("kafka: publisher closed")

// Publisher sends records to their tables' topics with an idempotent
// producer; see the package documentation for the layout.
type Publisher struct {
	cfg Config
	log *slog.Logger
	cl  *kgo.Client
	adm *kadm.Client

	topicMu sync.Mutex
	parts   map[string]int32          // topic -> partitions
	tables  map[string]schema.TableID // topic -> the table it was first used for

	used runtime.TopicSet // the topics sent to (UsedTopics)

	refs          *converter.SchemaRefs // FormatCompact; nil otherwise
	schemaTopicOK atomic.Bool           // SchemaTopic exists

	enqMu  sync.Mutex
	closed bool
	acks   chan *batch // in Publish order
	failed atomic.Pointer[error]
	done   chan struct{} // closed when the ack dispatcher ends
}

// batch is one Publish call: its records, and one part for Publish
// itself, so that the batch is not done before every record was produced.
type batch struct {
	ack runtime.AckFunc
	*runtime.Pending
}

// clientOptions are the options of every client of cfg.
func clientOptions(cfg Config, log *slog.Logger) []kgo.Opt {
	return append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.WithLogger(logAdapter{log}),
		// franz-go caches an answer "no such topic" for MetadataMinAge
		// (default 5s): EnsureTopic, which waits until a topic it created
		// is in the metadata, would wait that long for every new topic.
		kgo.MetadataMinAge(250 * time.Millisecond),
		// for the clients that produce (the publisher, dead letters)
		kgo.ProducerBatchCompression(cfg.codec()),
	}, securityOptions(cfg)...)
}

// NewPublisher connects an idempotent producer to cfg.Brokers.
func NewPublisher(ctx context.Context, cfg Config, log *slog.Logger) (*Publisher, error) {
	cfg, log, err := cfg.setup(log)
	if err != nil {
		return nil, err
	}
	opts := append(clientOptions(cfg, log),
		// Partitions are chosen by runtime.QueueFor, never by the client.
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), // the idempotent producer's default, said once
		kgo.MaxBufferedRecords(cfg.MaxInFlight),
		kgo.MaxBufferedBytes(int(cfg.MaxInFlightBytes)),
		kgo.ProducerLinger(0),
	)
	cl, err := connect(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	p := &Publisher{cfg: cfg, log: log, cl: cl, adm: kadm.NewClient(cl),
		parts: map[string]int32{}, tables: map[string]schema.TableID{},
		acks: make(chan *batch, 1<<16), done: make(chan struct{})}
	if cfg.Format == FormatCompact {
		// Stored once per publisher: the schema topic is compacted, so
		// the broker keeps the latest record of every schema ID.
		p.refs = converter.NewSchemaRefs(p.storeSchema, 0)
		// Made now, not in front of the first record (creating a topic
		// took half a second on the bench's broker).
		if err := p.ensureSchemaTopic(ctx); err != nil {
			cl.Close()
			return nil, err
		}
	}
	go p.dispatchAcks()
	return p, nil
}

// storeSchema produces one schema record to SchemaTopic and waits for the
// broker's acknowledgement, so that it is stored before any record naming
// it.
func (p *Publisher) storeSchema(ctx context.Context, id string, body []byte) error {
	topic := SchemaTopic(p.cfg.TopicPrefix)
	if err := p.ensureSchemaTopic(ctx); err != nil {
		return err
	}
	r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(id), Value: body, Headers: []kgo.RecordHeader{{Key: SchemaHeader, Value: []byte(id)}}}
	if err := p.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("kafka: produce to topic %q: %w", topic, err)
	}
	return nil
}

// ensureSchemaTopic creates SchemaTopic, compacted with one partition,
// unless it exists or was made already.
func (p *Publisher) ensureSchemaTopic(ctx context.Context) error {
	if p.schemaTopicOK.Load() {
		return nil
	}
	if _, err := ensureTopicWith(ctx, p.adm, SchemaTopic(p.cfg.TopicPrefix), 1, int16(p.cfg.ReplicationFactor), map[string]*string{"cleanup.policy": ptr("compact")}); err != nil {
		return err
	}
	p.schemaTopicOK.Store(true)
	return nil
}

func ptr[T any](v T) *T { return &v }

// dispatchAcks calls the batches' acks in Publish order; after a failed
// batch every later one fails too (the source restarts from the last acked
// position, so nothing after a failure may count as delivered).
func (p *Publisher) dispatchAcks() {
	defer close(p.done)
	var failed error
	for b := range p.acks {
		<-b.Done()
		err := b.Err()
		if err == nil && failed != nil {
			err = fmt.Errorf("kafka: an earlier batch failed: %w", failed)
		}
		if err != nil && failed == nil {
			failed = err
			p.failed.Store(&failed)
		}
		b.ack(err)
	}
}

// topic returns the topic of table and its partitions, creating the topic
// with cfg.Partitions partitions when it does not exist.
func (p *Publisher) topic(ctx context.Context, table schema.TableID) (string, int32, error) {
	name := TopicName(p.cfg.TopicPrefix, table.Database, table.Table)
	p.topicMu.Lock()
	defer p.topicMu.Unlock()
	if prev, ok := p.tables[name]; ok && prev != table {
		return "", 0, schema.Fatal(fmt.Errorf("%w: tables %s and %s both map to topic %q: rename one or set another topic_prefix", ErrConfig, prev, table, name))
	}
	if n, ok := p.parts[name]; ok {
		return name, n, nil
	}
	n, err := p.ensureTopic(ctx, name)
	if err != nil {
		return "", 0, err
	}
	p.parts[name], p.tables[name] = n, table
	if p.cfg.OnTopic != nil {
		p.cfg.OnTopic(name)
	}
	return name, n, nil
}

// ensureTopic creates topic unless it exists, and returns its partitions.
func (p *Publisher) ensureTopic(ctx context.Context, topic string) (int32, error) {
	return EnsureTopic(ctx, p.adm, topic, int32(p.cfg.Partitions), int16(p.cfg.ReplicationFactor))
}

// EnsureTopic creates topic with partitions partitions (replication 0: the
// broker's default) unless it exists, and returns its partition count.
func EnsureTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, replication int16) (int32, error) {
	return ensureTopicWith(ctx, adm, topic, partitions, replication, nil)
}

// ensureTopicWith is EnsureTopic creating the topic with configs.
func ensureTopicWith(ctx context.Context, adm *kadm.Client, topic string, partitions int32, replication int16, configs map[string]*string) (int32, error) {
	for attempt := 0; ; attempt++ {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return 0, fmt.Errorf("kafka: list topic %q: %w", topic, err)
		}
		if d, ok := td[topic]; ok && d.Err == nil && len(d.Partitions) > 0 {
			return int32(len(d.Partitions)), nil
		}
		if attempt > 0 {
			if attempt > 50 {
				return 0, fmt.Errorf("kafka: topic %q created but not visible in metadata", topic)
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-afterRetry(attempt):
			}
			continue
		}
		rf := replication
		if rf == 0 {
			rf = -1
		}
		resp, err := adm.CreateTopic(ctx, partitions, rf, configs, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return 0, fmt.Errorf("kafka: create topic %q with %d partitions: %w", topic, partitions, err)
		}
	}
}

// UsedTopics lists the topics this publisher has sent records to since it
// was made or since ResetUsedTopics (runtime.TopicTracker).
func (p *Publisher) UsedTopics() []string { return p.used.Topics() }

// ResetUsedTopics forgets them.
func (p *Publisher) ResetUsedTopics() { p.used.Reset() }

// Publish encodes recs and hands them to the producer; see
// runtime.Publisher. It blocks while the producer's buffer is full
// (max_in_flight records or max_in_flight_bytes). When it returns an
// error, ack is not called.
func (p *Publisher) Publish(ctx context.Context, recs []schema.Record, ack runtime.AckFunc) error {
	if ack == nil {
		return errors.New("kafka: Publish needs an ack function")
	}
	if errp := p.failed.Load(); errp != nil {
		return fmt.Errorf("kafka: publisher stopped after a failed send, restart from the last acked position: %w", *errp)
	}
	out, err := p.Messages(ctx, recs)
	if err != nil {
		return err
	}
	b := &batch{ack: ack, Pending: runtime.NewPending(len(out) + 1)}
	p.enqMu.Lock()
	if p.closed {
		p.enqMu.Unlock()
		return ErrClosed
	}
	select {
	case p.acks <- b:
	case <-ctx.Done():
		p.enqMu.Unlock()
		return ctx.Err()
	}
	p.enqMu.Unlock()
	for _, r := range out {
		p.used.Add(r.Topic)
	}
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			err = fmt.Errorf("kafka: send failed: %w", err)
		}
		b.Finish(err)
	}
	for _, r := range out {
		// Produce blocks while the buffer is full; a done ctx fails the
		// record through its promise (and so the batch).
		p.cl.Produce(ctx, r, promise)
	}
	b.Finish(nil)
	return nil
}

// Messages returns the Kafka records Publish sends for recs, in the order
// it produces them (topics made when first used, partitions chosen,
// barriers copied, transaction ends marked): `sluice bench`'s raw round
// trip sends these bytes with a plain client.
func (p *Publisher) Messages(ctx context.Context, recs []schema.Record) ([]*kgo.Record, error) {
	type dest struct {
		topic string
		part  int32
	}
	var out []*kgo.Record
	at := make([]int, len(recs)) // index in out of each data record's message, -1 none
	to := make([]dest, len(recs))
	for i := range recs {
		at[i] = -1
		rec := &recs[i]
		if rec.Op.IsMarker() {
			continue
		}
		if rec.ID.IsZero() {
			return nil, schema.Fatal(fmt.Errorf("kafka: %s record of %s key %q has no record ID; the source must set Record.ID (sinks refuse records without one)", rec.Op, rec.Table, rec.KeyString()))
		}
		if rec.IsBarrier() {
			var targets []dest
			for _, id := range rec.BarrierTables() {
				topic, n, err := p.topic(ctx, id)
				if err != nil {
					return nil, err
				}
				for q := range n {
					targets = append(targets, dest{topic, q})
				}
			}
			c := runtime.BarrierCopy(*rec, len(targets))
			key, val, ref, err := p.encode(ctx, &c)
			if err != nil {
				return nil, err
			}
			for _, d := range targets {
				out = append(out, p.record(&c, d.topic, d.part, key, val, ref))
			}
			continue
		}
		topic, n, err := p.topic(ctx, rec.Table)
		if err != nil {
			return nil, err
		}
		key, val, ref, err := p.encode(ctx, rec)
		if err != nil {
			return nil, err
		}
		q := int32(runtime.QueueFor(rec, int(n)))
		at[i], to[i] = len(out), dest{topic, q}
		out = append(out, p.record(rec, topic, q, key, val, ref))
	}
	// Mark the last record of each transaction per partition whose commit
	// is in this batch (see runtime.TransactionEnds).
	for i := range runtime.TransactionEnds(recs, func(i int) (dest, bool) { return to[i], at[i] >= 0 }) {
		r := out[at[i]]
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: HeaderPrefix + schema.HeaderTxEnd, Value: []byte("true")})
	}
	return out, nil
}

// encode returns rec's key and value bytes and, in the compact format,
// the ID of their schemas (stored first when new); ref is empty for a
// record sent whole.
func (p *Publisher) encode(ctx context.Context, rec *schema.Record) (key, val []byte, ref string, err error) {
	if key, val, err = p.cfg.Codec.Encode(rec); err != nil {
		return nil, nil, "", fmt.Errorf("kafka: cannot encode %s record of %s key %q: %w", rec.Op, rec.Table, rec.KeyString(), err)
	}
	if p.refs == nil {
		return key, val, "", nil
	}
	k, v, id, ok, err := p.refs.Compact(ctx, rec, key, val)
	switch {
	case errors.Is(err, converter.ErrNotEnvelope):
		return nil, nil, "", fmt.Errorf("%w: format %q: %w", ErrConfig, FormatCompact, err)
	case err != nil:
		return nil, nil, "", fmt.Errorf("kafka: %w", err)
	case !ok:
		return key, val, "", nil
	}
	return k, v, id, nil
}

// record is rec's Kafka record for partition part of topic; ref, when
// set, names its schemas (FormatCompact).
func (p *Publisher) record(rec *schema.Record, topic string, part int32, key, val []byte, ref string) *kgo.Record {
	hs := make([]kgo.RecordHeader, 0, 2+len(rec.Headers))
	hs = append(hs, kgo.RecordHeader{Key: IDHeader, Value: []byte(rec.ID.String())})
	if ref != "" {
		hs = append(hs, kgo.RecordHeader{Key: SchemaHeader, Value: []byte(ref)})
	}
	for k, v := range rec.Headers {
		hs = append(hs, kgo.RecordHeader{Key: HeaderPrefix + k, Value: []byte(v)})
	}
	return &kgo.Record{Topic: topic, Partition: part, Key: key, Value: val, Headers: hs}
}

// Close waits for outstanding acks (bounded by ctx) and closes the client.
func (p *Publisher) Close(ctx context.Context) error {
	p.enqMu.Lock()
	if p.closed {
		p.enqMu.Unlock()
		return nil
	}
	p.closed = true
	close(p.acks)
	p.enqMu.Unlock()
	var err error
	if ferr := p.cl.Flush(ctx); ferr != nil {
		err = fmt.Errorf("kafka: flush at close: %w", ferr)
	}
	p.cl.Close() // fails what is still buffered: its batches are acked with the error
	select {
	case <-p.done:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	return err
}
