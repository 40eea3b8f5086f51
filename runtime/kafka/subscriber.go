package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

var (
	_ runtime.Subscriber   = (*Subscriber)(nil)
	_ runtime.TopicTracker = (*Subscriber)(nil)
)

// ErrDecode means a consumed record could not be decoded; the subscriber
// stops instead of skipping it.
var ErrDecode = errors.New("kafka: cannot decode record")

// Subscriber consumes the pipeline's topics in a consumer group
// (cooperative-sticky rebalancing): each partition has a worker that hands
// its records to the handler in order, one batch at a time, independently
// of the other partitions (a barrier holds its partition until its copies
// on the others arrive). A batch is retried until it is applied; its
// offsets are then marked and committed every second and when the
// partition is revoked. A revoked partition's worker is stopped, and its
// handler call finished, before the group moves it on.
type Subscriber struct {
	cfg Config
	log *slog.Logger
	cl  *kgo.Client

	mu       sync.Mutex
	workers  map[tp]*worker
	assigned map[tp]bool // the partitions the group gave this member
	run      *consumeRun // set while Consume runs

	used runtime.TopicSet // the topics records were delivered from (UsedTopics)

	// schemas finds the schemas compact records name (FormatCompact), in
	// SchemaTopic; whatever the config's format, the sink reads both.
	schemas     *converter.SchemaBook
	stopPreload context.CancelFunc // ends the schemas' preload

	// ratio is the highest compression ratio of a fetched batch so far
	// (uncompressed bytes per stored byte, at least 1; 0 before the
	// first), which sizes the fetches (see fetchBytes and OnFetchBatchRead).
	ratio atomic.Int64
	// fetcher is cl for OnFetchBatchRead, which the client's goroutines
	// may call before NewSubscriber has set cl.
	fetcher atomic.Pointer[kgo.Client]

	closeOnce sync.Once
}

// tp names one partition of one topic.
type tp struct {
	topic string
	part  int32
}

// consumeRun is one Consume call's handler, context and fatal error.
type consumeRun struct {
	ctx    context.Context
	cancel context.CancelFunc
	h      runtime.Handler
	once   sync.Once
	fatal  error
}

func (r *consumeRun) fail(err error) {
	r.once.Do(func() { r.fatal = err; r.cancel() })
}

// worker applies one partition's records.
type worker struct {
	s      *Subscriber
	at     tp
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	queue  []*kgo.Record
	bytes  int64
	paused bool
	wake   chan struct{}
}

// NewSubscriber joins cfg.Group for cfg.Topics (or every topic of the
// pipeline's prefix: new ones are found on metadata refreshes, at once
// when TopicAdded is called); Consume starts consuming.
func NewSubscriber(ctx context.Context, cfg Config, log *slog.Logger) (*Subscriber, error) {
	cfg, log, err := cfg.setup(log)
	if err != nil {
		return nil, err
	}
	s := &Subscriber{cfg: cfg, log: log, workers: map[tp]*worker{}, assigned: map[tp]bool{}}
	s.schemas = schemaBook(cfg)
	opts := append(clientOptions(cfg, log),
		kgo.ConsumerGroup(cfg.Group),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(cfg.SessionTimeout),
		kgo.HeartbeatInterval(cfg.SessionTimeout/10),
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(time.Second),
		kgo.OnPartitionsAssigned(s.assign),
		kgo.OnPartitionsRevoked(s.revoked),
		kgo.OnPartitionsLost(s.lost),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// What the client fetches ahead of the workers: one fetch at a
		// time, of at most fetchBytes (a single batch larger than that
		// still comes, alone); the workers' queues are bounded by pausing
		// their partitions (see enqueue).
		kgo.MaxConcurrentFetches(1),
		kgo.FetchMaxBytes(fetchBytes(cfg.MaxInFlightBytes, assumedRatio)),
		kgo.FetchMaxPartitionBytes(fetchBytes(cfg.MaxInFlightBytes, assumedRatio)),
		kgo.WithHooks(s),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.MetadataMaxAge(10*time.Second),
	)
	if len(cfg.Topics) > 0 {
		opts = append(opts, kgo.ConsumeTopics(cfg.Topics...))
	} else {
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(topicPattern(cfg.TopicPrefix)))
	}
	cl, err := connect(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	// Topics named in the config are made here (the publisher may start
	// later), so that the group is assigned their partitions at once.
	adm := kadm.NewClient(cl)
	for _, t := range cfg.Topics {
		if _, err := EnsureTopic(ctx, adm, t, int32(cfg.Partitions), int16(cfg.ReplicationFactor)); err != nil {
			cl.Close()
			return nil, err
		}
	}
	s.cl = cl
	s.fetcher.Store(cl)
	if r := s.ratio.Load(); r != 0 { // a batch came before the store above
		n := fetchBytes(cfg.MaxInFlightBytes, r)
		cl.UpdateFetchMaxBytes(n, n)
	}
	// The schemas of compact records read while the group forms, not when
	// the first record names one (half a second on the bench). A topic
	// that does not exist (json records only) is found so at once.
	pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	s.stopPreload = cancel
	go func() {
		defer cancel()
		_ = s.schemas.Preload(pctx)
	}()
	return s, nil
}

// A fetch's bound counts bytes as the broker stores them, which a producer
// may have compressed, while the fetched records take their whole size in
// memory: Debezium's JSON with its schema in every message compresses
// 11:1 with snappy (franz-go's default) and 30:1 for narrow rows. A fetch
// of max_in_flight_bytes as stored became some 180 MiB of records when the
// sink lagged (a bench catch-up of 300,000 rows peaked at 390 MiB of RSS).
// So a fetch asks for a quarter of max_in_flight_bytes divided by the
// highest compression ratio seen so far (assumedRatio before the first
// batch: what the first fetch brings is bounded for any ratio up to 4 ×
// assumedRatio). A fetch still returns at least one whole batch, which
// the producer bounds (franz-go's 1 MB, uncompressed): a smaller bound
// there would refuse every larger record (kerr.MessageTooLarge).
const assumedRatio = 16

// fetchBytes is what a fetch asks for at compression ratio ratio: a
// quarter of maxInFlight divided by it, at least 16 KiB.
func fetchBytes(maxInFlight runtime.ByteSize, ratio int64) int32 {
	return int32(min(max(int64(maxInFlight)/4/max(ratio, 1), 16<<10), 1<<30))
}

// OnFetchBatchRead (kgo.HookFetchBatchRead) learns the compression ratio
// of the fetched batches: the first batch sets it, and a batch that shows a
// higher one than seen before makes the next fetches ask for less.
func (s *Subscriber) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	if m.CompressedBytes <= 0 {
		return
	}
	r := max(int64((m.UncompressedBytes+m.CompressedBytes-1)/m.CompressedBytes), 1)
	for {
		old := s.ratio.Load()
		if old != 0 && r <= old { // the first batch sets it, up or down
			return
		}
		if s.ratio.CompareAndSwap(old, r) {
			break
		}
	}
	if cl := s.fetcher.Load(); cl != nil {
		n := fetchBytes(s.cfg.MaxInFlightBytes, r)
		cl.UpdateFetchMaxBytes(n, n)
	}
}

// TopicAdded makes the consumer look for new topics now (the publisher in
// the same process created one).
func (s *Subscriber) TopicAdded(string) { s.cl.ForceMetadataRefresh() }

// Consume delivers batches to h, in order per partition, until ctx is done
// (nil) or a batch fails for good (its error).
func (s *Subscriber) Consume(ctx context.Context, h runtime.Handler) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := &consumeRun{ctx: rctx, cancel: cancel, h: h}
	s.mu.Lock()
	s.run = run
	s.mu.Unlock()
	defer s.stopAll()
	for rctx.Err() == nil {
		fetches := s.cl.PollRecords(rctx, s.cfg.MaxBatch)
		if rctx.Err() != nil || fetches.IsClientClosed() {
			break
		}
		fetches.EachError(func(topic string, part int32, err error) {
			if !errors.Is(err, context.Canceled) {
				s.log.Warn("fetch failed; retrying", "topic", topic, "partition", part, "err", err)
			}
		})
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) > 0 {
				s.enqueue(run, tp{p.Topic, p.Partition}, p.Records)
			}
		})
	}
	if run.fatal != nil {
		return run.fatal
	}
	return nil
}

// partLimit is how many bytes of records one partition's worker may hold
// queued before its partition is paused: max_in_flight_bytes shared by the
// partitions assigned, at least 256 KiB. Called under s.mu.
func (s *Subscriber) partLimit() int64 {
	return max(int64(s.cfg.MaxInFlightBytes)/int64(max(1, len(s.workers))), 256<<10)
}

// enqueue hands rs, records of partition at, to its worker (started on
// the first), pausing the partition's fetches while the worker holds more
// than partLimit bytes.
func (s *Subscriber) enqueue(run *consumeRun, at tp, rs []*kgo.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.assigned[at] {
		return // polled before a revoke: the partition's next owner gets it
	}
	w := s.workers[at]
	if w == nil {
		wctx, cancel := context.WithCancel(run.ctx)
		w = &worker{s: s, at: at, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1)}
		s.workers[at] = w
		go w.loop(wctx, run)
	}
	var n int64
	for _, r := range rs {
		n += int64(len(r.Key) + len(r.Value))
	}
	w.mu.Lock()
	w.queue = append(w.queue, rs...)
	w.bytes += n
	if !w.paused && w.bytes > s.partLimit() {
		w.paused = true
		s.cl.PauseFetchPartitions(map[string][]int32{at.topic: {at.part}})
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// loop applies the worker's queue in batches of at most max_batch records
// until ctx ends (the partition was revoked, or Consume stopped) or a
// batch fails for good.
func (w *worker) loop(ctx context.Context, run *consumeRun) {
	defer close(w.done)
	for {
		w.mu.Lock()
		n := min(len(w.queue), w.s.cfg.MaxBatch)
		rs := w.queue[:n:n]
		w.mu.Unlock()
		if n == 0 {
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
				continue
			}
		}
		if err := w.s.apply(ctx, rs, run.h); err != nil {
			if ctx.Err() == nil {
				run.fail(err)
			}
			return
		}
		w.s.cl.MarkCommitRecords(rs[len(rs)-1])
		var b int64
		for _, r := range rs {
			b += int64(len(r.Key) + len(r.Value))
		}
		w.s.mu.Lock()
		limit := w.s.partLimit()
		w.s.mu.Unlock()
		w.mu.Lock()
		w.queue = w.queue[n:]
		w.bytes -= b
		if w.paused && w.bytes <= limit/2 {
			w.paused = false
			w.s.cl.ResumeFetchPartitions(map[string][]int32{w.at.topic: {w.at.part}})
		}
		w.mu.Unlock()
	}
}

// assign records the partitions the group gave this member.
func (s *Subscriber) assign(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic, ps := range parts {
		for _, p := range ps {
			s.assigned[tp{topic, p}] = true
		}
	}
}

// Assigned is how many partitions the group gives this member now (0
// until Consume has joined the group).
func (s *Subscriber) Assigned() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.assigned)
}

// revoked stops the workers of the revoked partitions, then commits what
// they applied, before the group hands the partitions on.
func (s *Subscriber) revoked(ctx context.Context, cl *kgo.Client, parts map[string][]int32) {
	s.stopWorkers(parts)
	if err := cl.CommitMarkedOffsets(ctx); err != nil {
		s.log.Warn("committing the group's offsets at a revoke failed; the partitions' next owner gets again what the sink already applied", "err", err)
	}
}

// lost stops the workers of partitions lost without a revoke (the session
// expired): their offsets can no longer be committed by this member.
func (s *Subscriber) lost(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	s.stopWorkers(parts)
}

func (s *Subscriber) stopWorkers(parts map[string][]int32) {
	var stop []*worker
	s.mu.Lock()
	for topic, ps := range parts {
		for _, p := range ps {
			delete(s.assigned, tp{topic, p})
			if w := s.workers[tp{topic, p}]; w != nil {
				stop = append(stop, w)
				delete(s.workers, tp{topic, p})
			}
		}
	}
	s.mu.Unlock()
	for _, w := range stop {
		w.cancel()
	}
	resume := map[string][]int32{}
	for _, w := range stop {
		<-w.done
		// The client keeps a partition paused until resumed, across
		// rebalances: one given back to this member later would never be
		// fetched again.
		w.mu.Lock()
		if w.paused {
			w.paused = false
			resume[w.at.topic] = append(resume[w.at.topic], w.at.part)
		}
		w.mu.Unlock()
	}
	if len(resume) > 0 {
		s.cl.ResumeFetchPartitions(resume)
	}
}

// stopAll stops every worker (Consume ends) and commits what they applied.
func (s *Subscriber) stopAll() {
	s.mu.Lock()
	parts := map[string][]int32{}
	for at := range s.workers {
		parts[at.topic] = append(parts[at.topic], at.part)
	}
	s.run = nil
	s.mu.Unlock()
	s.stopWorkers(parts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.cl.CommitMarkedOffsets(ctx); err != nil {
		s.log.Warn("committing the group's offsets at stop failed; a restart redelivers what the sink already applied", "err", err)
	}
}

// UsedTopics lists the topics records were delivered from since the
// subscriber was made or since ResetUsedTopics (runtime.TopicTracker).
func (s *Subscriber) UsedTopics() []string { return s.used.Topics() }

// ResetUsedTopics forgets them.
func (s *Subscriber) ResetUsedTopics() { s.used.Reset() }

// apply decodes rs (one partition's records, in order) and applies them,
// retrying with backoff from 100ms to 10s until h succeeds, ctx ends or the
// error is fatal.
func (s *Subscriber) apply(ctx context.Context, rs []*kgo.Record, h runtime.Handler) error {
	recs := make([]schema.Record, 0, len(rs))
	dels := make([]schema.Delivery, len(rs))
	if len(rs) > 0 {
		s.used.Add(rs[0].Topic) // one partition's
	}
	for i, r := range rs {
		if r.Value == nil {
			// A tombstone (Debezium writes one after each delete, for
			// log compaction): the delete event before it said it all.
			continue
		}
		rec, err := s.decode(ctx, r)
		if err != nil {
			if schema.ClassOf(err) == schema.ClassRetriable {
				return err
			}
			return schema.Fatal(err)
		}
		dels[i] = schema.Delivery{Topic: r.Topic, Queue: int(r.Partition), Offset: r.Offset}
		rec.Delivery = &dels[i]
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return nil
	}
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := h(ctx, recs)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || runtime.IsFatal(err) {
			return err
		}
		s.log.Warn("apply failed; retrying", "topic", rs[0].Topic, "partition", rs[0].Partition, "attempt", attempt, "backoff", backoff, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// decode turns r into a record: the codec's, with its ID and headers. A
// compact record's schemas are looked up in SchemaTopic; when that topic
// cannot be read the error is retriable.
func (s *Subscriber) decode(ctx context.Context, r *kgo.Record) (schema.Record, error) {
	where := func() string { return fmt.Sprintf("topic %q partition %d offset %d", r.Topic, r.Partition, r.Offset) }
	rec, err := decodeValue(ctx, s.cfg.Codec, s.schemas, schemaRef(r), r.Key, r.Value)
	if schema.ClassOf(err) == schema.ClassRetriable {
		return rec, fmt.Errorf("kafka: %s: %w", where(), err)
	}
	if err != nil {
		return rec, fmt.Errorf("%w: %s: %w", ErrDecode, where(), err)
	}
	id := ""
	for _, hd := range r.Headers {
		switch {
		case hd.Key == IDHeader:
			id = string(hd.Value)
		case strings.HasPrefix(hd.Key, HeaderPrefix):
			if rec.Headers == nil {
				rec.Headers = map[string]string{}
			}
			rec.Headers[strings.TrimPrefix(hd.Key, HeaderPrefix)] = string(hd.Value)
		}
	}
	if id == "" {
		// Not published by sluice: a change event of Debezium's own
		// binlog connectors, whose source block places it in the binlog.
		if rec.ID, err = schema.IDFromSource(rec.Source, r.Offset); err != nil {
			return rec, fmt.Errorf("%w: %s has no %s header (it was not published by sluice): %w", ErrDecode, where(), IDHeader, err)
		}
		return rec, nil
	}
	if rec.ID, err = schema.ParseID(id); err != nil {
		return rec, fmt.Errorf("%w: %s: header %s: %w", ErrDecode, where(), IDHeader, err)
	}
	return rec, nil
}

// schemaRef returns the value of r's SchemaHeader, "" without one.
func schemaRef(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == SchemaHeader {
			return string(h.Value)
		}
	}
	return ""
}

// schemaBook finds the schemas of cfg's compact records in SchemaTopic,
// read outside any group.
func schemaBook(cfg Config) *converter.SchemaBook {
	topic := SchemaTopic(cfg.TopicPrefix)
	return &converter.SchemaBook{Where: fmt.Sprintf("topic %q", topic), Read: func(ctx context.Context) ([]converter.SchemaEntry, error) {
		var out []converter.SchemaEntry
		err := Tail(ctx, cfg, TailOptions{Topics: []string{topic}, From: TailFromBeginning}, func(m TailMessage) error {
			var e converter.SchemaEntry
			if json.Unmarshal(m.Value, &e) == nil && e.ID != "" {
				out = append(out, e)
			}
			return nil
		})
		return out, err
	}}
}

// decodeValue decodes a record's key and value with codec, a compact
// record's (ref set) with its schemas from book.
func decodeValue(ctx context.Context, codec Codec, book *converter.SchemaBook, ref string, key, value []byte) (schema.Record, error) {
	if ref == "" {
		return codec.Decode(key, value)
	}
	e, err := book.Get(ctx, ref)
	switch {
	case errors.Is(err, converter.ErrSchemaMissing):
		return schema.Record{}, err
	case err != nil:
		return schema.Record{}, schema.Retriable(err)
	}
	if pd, ok := codec.(converter.PartsDecoder); ok {
		return pd.DecodeParts(e.KeySchema(), key, e.Value, value)
	}
	k, v := e.Expand(key, value)
	return codec.Decode(k, v)
}

// Close leaves the group and closes the client.
func (s *Subscriber) Close(context.Context) error {
	s.closeOnce.Do(func() {
		if s.stopPreload != nil {
			s.stopPreload()
		}
		s.cl.Close()
	})
	return nil
}
