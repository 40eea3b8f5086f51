package rocketmq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// nameServer returns SLUICE_ROCKETMQ_NAMESRV, or skips (fails in CI).
func nameServer(t testing.TB) []string {
	t.Helper()
	return strings.Split(schematest.NeedServers(t, "SLUICE_ROCKETMQ_NAMESRV")[0], ",")
}

// skipUnderRace skips tests that run the client's push consumer: it has a
// known data race in its process queue (apache/rocketmq-client-go#1213) that
// fails any test run with -race. Run them without it:
//
//	go test -count=1 -run Integration ./runtime/rocketmq
func skipUnderRace(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("the rocketmq client's push consumer has a known data race (apache/rocketmq-client-go#1213): run this test without -race")
	}
}

func suffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// integrationCodec is the codec the broker tests use.
func integrationCodec() Codec {
	if c := defaultCodec(); c != nil {
		return c
	}
	return testCodec{}
}

// itConfig returns a config with a fresh pipeline, prefix and group; the
// topics of tables are deleted when the test ends.
func itConfig(t testing.TB, tables ...schema.TableID) Config {
	t.Helper()
	ns := nameServer(t)
	name := "it-" + suffix()
	cfg := Config{NameServers: ns, Pipeline: name, Tables: tables, Codec: integrationCodec()}
	topics := []string{SchemaTopic(name)} // the default format's
	for _, id := range tables {
		topics = append(topics, TopicName(name, id.Database, id.Table, TopicPerTable), TopicName(name, id.Database, id.Table, TopicPerDatabase))
	}
	cleanupTopics(t, ns, DefaultCluster, topics...)
	return cfg
}

// maxOffsets asks the broker of each queue of topic for its max offset.
func maxOffsets(ctx context.Context, ns []string, topic string) (int64, error) {
	r, err := fetchRoute(ctx, ns, topic)
	if err != nil {
		return 0, err
	}
	addr := map[string]string{}
	for _, bd := range r.BrokerDatas {
		addr[bd.BrokerName] = bd.BrokerAddrs["0"]
	}
	var total int64
	for _, q := range r.writeQueues() {
		h, _, err := invoke(ctx, addr[q.Broker], 30, map[string]string{"topic": topic, "queueId": strconv.Itoa(q.ID)}) // GET_MAX_OFFSET
		if err != nil {
			return 0, err
		}
		if h.Code != 0 {
			return 0, fmt.Errorf("max offset of %s/%d: code %d %s", topic, q.ID, h.Code, h.Remark)
		}
		n, err := strconv.ParseInt(h.ExtFields["offset"], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("max offset of %s/%d: %q", topic, q.ID, h.ExtFields["offset"])
		}
		total += n
	}
	return total, nil
}

var (
	itKeySchema   = &schema.Schema{Type: schema.Struct, Name: "it.Key", Fields: []schema.Field{{Name: "id", Schema: schema.Primitive(schema.Int64, false)}}}
	itValueSchema = &schema.Schema{Type: schema.Struct, Name: "it.Value", Optional: true, Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "version", Schema: schema.Primitive(schema.Int64, false)},
	}}
)

// testRecord is an update of row key to version, with schemas so that the
// JSON converter can encode it.
func testRecord(id schema.TableID, key, version int64) schema.Record {
	return schema.Record{Op: schema.OpUpdate, Table: id, KeySchema: itKeySchema, Key: schema.Row{key}, ValueSchema: itValueSchema,
		Before: schema.Row{key, version - 1}, After: schema.Row{key, version},
		Source: schema.Source{Connector: "mariadb", Name: "it", Snapshot: "false"}, ID: nextTestID()}
}

func TestIntegrationEnsureTopic(t *testing.T) {
	id := schema.TableID{Database: "db", Table: "ensure"}
	cfg := itConfig(t, id)
	cfg.Queues = 6
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topic := TopicName(cfg.Pipeline, id.Database, id.Table, TopicPerTable)
	for range 2 { // the second call finds the topic
		if err := EnsureTopic(ctx, cfg, topic); err != nil {
			t.Fatal(err)
		}
	}
	r, err := fetchRoute(ctx, cfg.NameServers, topic)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := fetchClusterInfo(ctx, cfg.NameServers)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := cfg.baseDefaults()
	if err != nil {
		t.Fatal(err)
	}
	masters := len(ci.masters(dc.Cluster))
	if qs := r.writeQueues(); len(qs) != 6*masters {
		t.Fatalf("topic %s has queues %v, want 6 on each of the %d master brokers", topic, qs, masters)
	}
	if err := EnsureTopic(ctx, cfg, "bad.topic"); !errors.Is(err, ErrConfig) {
		t.Errorf("invalid topic name: %v", err)
	}
	bad := cfg
	bad.Cluster = "NoSuchCluster"
	if err := EnsureTopic(ctx, bad, TopicName(cfg.Pipeline, "db", "other", "")); err == nil || !strings.Contains(err.Error(), "NoSuchCluster") {
		t.Errorf("unknown cluster: %v", err)
	}
}

// TestIntegrationAckAfterBrokerStored checks, inside each ack, that the
// broker's queues hold at least every record acked so far.
func TestIntegrationAckAfterBrokerStored(t *testing.T) {
	id := schema.TableID{Database: "db", Table: "acks"}
	cfg := itConfig(t, id)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := NewPublisher(ctx, cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	topic := TopicName(cfg.Pipeline, id.Database, id.Table, TopicPerTable)
	base, err := maxOffsets(ctx, cfg.NameServers, topic)
	if err != nil {
		t.Fatal(err)
	}
	var sent int64
	errs := make(chan error, 10)
	for b := range int64(5) {
		var recs []schema.Record
		for k := range int64(30) {
			recs = append(recs, testRecord(id, k, b))
		}
		sent += int64(len(recs))
		want := sent
		if err := p.Publish(ctx, recs, func(err error) {
			if err == nil {
				var have int64
				if have, err = maxOffsets(ctx, cfg.NameServers, topic); err == nil && have-base < want {
					err = fmt.Errorf("acked %d records but the broker holds %d", want, have-base)
				}
			}
			errs <- err
		}); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationOrderPerKey publishes updates of many keys over 4 queues and
// consumes them: every version of every key arrives, in order.
// TestIntegrationOrderPerKeyCompact is the same over the compact format:
// the subscriber looks the schemas up in the schema topic.
func TestIntegrationOrderPerKeyCompact(t *testing.T) {
	skipUnderRace(t)
	testOrderPerKeyFormat(t, TopicPerTable, FormatCompact)
}

// TestIntegrationOrderPerKeyPacked is the same over the packed format:
// several records a message, each queue's still in order.
func TestIntegrationOrderPerKeyPacked(t *testing.T) {
	skipUnderRace(t)
	testOrderPerKeyFormat(t, TopicPerTable, FormatPacked)
}

func TestIntegrationOrderPerKey(t *testing.T) {
	skipUnderRace(t)
	testOrderPerKey(t, TopicPerTable)
}

// TestIntegrationOrderPerKeyDatabaseMode: two tables share one topic.
func TestIntegrationOrderPerKeyDatabaseMode(t *testing.T) {
	skipUnderRace(t)
	testOrderPerKey(t, TopicPerDatabase)
}

// testOrderPerKey runs over the json format (compact, the default, has a
// test of its own).
func testOrderPerKey(t *testing.T, mode string) { testOrderPerKeyFormat(t, mode, FormatJSON) }

func testOrderPerKeyFormat(t *testing.T, mode, format string) {
	ids := []schema.TableID{{Database: "db", Table: "orders"}, {Database: "db", Table: "items"}}
	cfg := itConfig(t, ids...)
	cfg.TopicMode = mode
	if cfg.Format = format; format == FormatCompact || format == FormatPacked {
		deleteTopicAfter(t, cfg.NameServers, SchemaTopic(cfg.Pipeline))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The publisher knows only the first table: the second's topic is made
	// on first use.
	pcfg := cfg
	pcfg.Tables = ids[:1]
	p, err := NewPublisher(ctx, pcfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	const keys, versions, perBatch = 40, 50, 90
	var all []schema.Record
	for v := range int64(versions) {
		for k := range int64(keys) {
			all = append(all, testRecord(ids[k%2], k, v))
		}
	}
	var acked atomic.Int64
	for i := 0; i < len(all); i += perBatch {
		batch := []schema.Record{{Op: schema.OpBegin}}
		batch = append(batch, all[i:min(i+perBatch, len(all))]...)
		batch = append(batch, schema.Record{Op: schema.OpCommit, Position: []byte(strconv.Itoa(i))})
		if err := p.Publish(ctx, batch, func(err error) {
			if err != nil {
				t.Error(err)
			}
			acked.Add(1)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if want := int64((len(all) + perBatch - 1) / perBatch); acked.Load() != want {
		t.Fatalf("%d acks, want %d", acked.Load(), want)
	}
	if format == FormatCompact || format == FormatPacked { // the broker holds payloads that name their schema
		topic, _ := NewRegistry(cfg.Pipeline, mode).Topic(ids[0])
		n, packed := 0, 0
		if err := Tail(ctx, cfg, TailOptions{Topics: []string{topic}, Limit: 5}, func(m TailMessage) error {
			n++
			if m.Properties[SchemaProperty] == "" || strings.HasPrefix(string(m.Value), `{"schema"`) {
				t.Errorf("not a compact message: %s %v", m.Value, m.Properties)
			}
			if m.Properties[FormatProperty] == FormatPacked && m.Index > 0 {
				packed++
			}
			return nil
		}); err != nil || n == 0 {
			t.Fatalf("tail: %d messages, %v", n, err)
		}
		if (format == FormatPacked) != (packed > 0) {
			t.Errorf("format %s: tail read %d records past the first of a pack", format, packed)
		}
	}

	s, err := NewSubscriber(ctx, cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	type kv struct {
		table string
		key   int64
	}
	var mu sync.Mutex
	seen := map[kv][]int64{}
	lastOffset := map[string]int64{}
	lastID := map[string]schema.ID{}
	queuesSeen := map[string]bool{}
	routes := map[string][]queue{} // topic -> its queues, as the publisher picks among them
	total := 0
	done := make(chan struct{})
	cctx, stop := context.WithCancel(ctx)
	consumed := make(chan error, 1)
	go func() {
		consumed <- s.Consume(cctx, func(_ context.Context, recs []schema.Record) error {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range recs {
				d := r.Delivery
				if d == nil {
					t.Error("record without Delivery")
					continue
				}
				qk := d.Topic + "/" + d.Broker + "/" + strconv.Itoa(d.Queue) // queue ids repeat per broker
				// A pack's records share its offset, in order.
				if last, ok := lastOffset[qk]; ok && (d.Offset < last || d.Offset == last && format != FormatPacked) {
					t.Errorf("queue %s: offset %d after %d", qk, d.Offset, last)
				}
				if last, ok := lastID[qk]; ok && r.ID.Compare(last) <= 0 {
					t.Errorf("queue %s: record %v after %v", qk, r.ID, last)
				}
				lastOffset[qk], lastID[qk] = d.Offset, r.ID
				queuesSeen[qk] = true
				if want := TopicName(cfg.Pipeline, r.Table.Database, r.Table.Table, mode); d.Topic != want {
					t.Errorf("record of %s delivered from topic %s", r.Table, d.Topic)
				}
				qs, ok := routes[d.Topic]
				if !ok {
					route, err := fetchRoute(ctx, cfg.NameServers, d.Topic)
					if err != nil {
						t.Error(err)
						continue
					}
					qs = route.writeQueues()
					routes[d.Topic] = qs
				}
				if want := qs[runtime.QueueForKey(r.Table, r.KeyString(), len(qs))]; d.Queue != want.ID || d.Broker != want.Broker {
					t.Errorf("key %s on queue %s/%d, want %s/%d", r.KeyString(), d.Broker, d.Queue, want.Broker, want.ID)
				}
				if r.Op != schema.OpUpdate || len(r.Before) != 2 || len(r.After) != 2 || fmt.Sprint(r.Before[1]) != fmt.Sprint(r.After[1].(int64)-1) || !r.KeySchema.Equal(itKeySchema) {
					t.Errorf("record changed on the way: %+v", r)
					continue
				}
				k := kv{r.Table.Table, r.Key[0].(int64)}
				seen[k] = append(seen[k], r.After[1].(int64))
				total++
			}
			if total >= len(all) {
				select {
				case <-done:
				default:
					close(done)
				}
			}
			return nil
		})
	}()
	select {
	case <-done:
	case err := <-consumed:
		t.Fatalf("Consume returned early: %v", err)
	case <-time.After(2 * time.Minute):
		mu.Lock()
		t.Fatalf("consumed %d of %d records", total, len(all))
	}
	stop()
	if err := <-consumed; err != nil {
		t.Fatal(err)
	}
	_ = s.Close(ctx)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != keys {
		t.Fatalf("%d keys seen, want %d", len(seen), keys)
	}
	for k, vs := range seen {
		if len(vs) != versions {
			t.Errorf("key %v: %d versions (%v), want %d", k, len(vs), vs, versions)
			continue
		}
		for i, v := range vs {
			if v != int64(i) {
				t.Errorf("key %v: versions out of order: %v", k, vs)
				break
			}
		}
	}
	want := 0
	for _, qs := range routes {
		want += len(qs)
	}
	if len(routes) != len(map[string]bool{TopicName(cfg.Pipeline, "db", "orders", mode): true, TopicName(cfg.Pipeline, "db", "items", mode): true}) || len(queuesSeen) != want {
		t.Errorf("records came from %d queues (%v), want all %d of topics %v", len(queuesSeen), queuesSeen, want, routes)
	}
}

// TestIntegrationHandlerErrorRedelivers fails the first handler call; the
// same records come back, in order.
func TestIntegrationHandlerErrorRedelivers(t *testing.T) {
	skipUnderRace(t)
	id := schema.TableID{Database: "db", Table: "retry"}
	cfg := itConfig(t, id)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := NewPublisher(ctx, cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	var recs []schema.Record
	for v := range int64(10) {
		recs = append(recs, testRecord(id, 1, v))
	}
	acked := make(chan error, 1)
	if err := p.Publish(ctx, recs, func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	_ = p.Close(ctx)

	s, err := NewSubscriber(ctx, cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls [][]int64 // versions of each handler call
	var offsets [][]int64
	all := make(chan struct{})
	cctx, stop := context.WithCancel(ctx)
	consumed := make(chan error, 1)
	var got int
	go func() {
		consumed <- s.Consume(cctx, func(_ context.Context, rs []schema.Record) error {
			mu.Lock()
			defer mu.Unlock()
			var vs, os []int64
			for _, r := range rs {
				vs = append(vs, r.After[1].(int64))
				os = append(os, r.Delivery.Offset)
			}
			calls = append(calls, vs)
			offsets = append(offsets, os)
			if len(calls) == 1 {
				return errors.New("sink unavailable")
			}
			got += len(rs)
			if got == 10 {
				close(all)
			}
			return nil
		})
	}()
	select {
	case <-all:
	case <-time.After(90 * time.Second):
		mu.Lock()
		t.Fatalf("handler calls so far: %v", calls)
	}
	stop()
	if err := <-consumed; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) < 2 {
		t.Fatalf("calls %v", calls)
	}
	if calls[0][0] != 0 || calls[1][0] != 0 || offsets[1][0] != offsets[0][0] {
		t.Errorf("the failed batch %v (offsets %v) was not redelivered from its start: next call %v (offsets %v)", calls[0], offsets[0], calls[1], offsets[1])
	}
	var after []int64
	for _, c := range calls[1:] {
		after = append(after, c...)
	}
	for i, v := range after {
		if v != int64(i) {
			t.Fatalf("after the failure, versions %v: want 0..9 in order", after)
		}
	}
}

// TestIntegrationCloseWaitsForHandlers closes while a handler runs.
func TestIntegrationCloseWaitsForHandlers(t *testing.T) {
	skipUnderRace(t)
	id := schema.TableID{Database: "db", Table: "close"}
	cfg := itConfig(t, id)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := NewPublisher(ctx, cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	acked := make(chan error, 1)
	if err := p.Publish(ctx, []schema.Record{testRecord(id, 1, 0), testRecord(id, 2, 0), testRecord(id, 3, 0)}, func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	_ = p.Close(ctx)
	s, err := NewSubscriber(ctx, cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var once sync.Once
	var finished atomic.Bool
	var running atomic.Int32
	consumed := make(chan error, 1)
	go func() {
		consumed <- s.Consume(ctx, func(hctx context.Context, rs []schema.Record) error {
			running.Add(1)
			defer running.Add(-1)
			once.Do(func() { close(started) })
			time.Sleep(1500 * time.Millisecond) // a slow sink commit
			if hctx.Err() != nil {
				t.Error("handler context cancelled by a graceful Close")
			}
			finished.Store(true)
			return nil
		})
	}()
	select {
	case <-started:
	case <-time.After(90 * time.Second):
		t.Fatal("no handler call")
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !finished.Load() || running.Load() != 0 {
		t.Fatal("Close returned while a handler was running")
	}
	// Consume returns once Close has stopped it; its goroutine may report a
	// moment after Close itself returns.
	select {
	case err := <-consumed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Consume still running 5s after Close returned")
	}
}

// TestIntegrationResumeAfterClose consumes part of a topic, closes, and
// starts a new subscriber of the same group: it resumes where the first
// stopped (no gap, at most the unhandled tail again).
func TestIntegrationResumeAfterClose(t *testing.T) {
	skipUnderRace(t)
	id := schema.TableID{Database: "db", Table: "resume"}
	cfg := itConfig(t, id)
	cfg.BatchSize = 10
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := NewPublisher(ctx, cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	const n = 400
	var recs []schema.Record
	for i := range int64(n) {
		recs = append(recs, testRecord(id, i%16, i))
	}
	acked := make(chan error, 1)
	if err := p.Publish(ctx, recs, func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	_ = p.Close(ctx)

	type span struct{ first, last int64 }
	type qid struct {
		broker string
		queue  int
	}
	run := func(stopAfter int) (map[qid]span, int) {
		s, err := NewSubscriber(ctx, cfg, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		spans := map[qid]span{}
		total := 0
		enough := make(chan struct{})
		var once sync.Once
		consumed := make(chan error, 1)
		go func() {
			consumed <- s.Consume(ctx, func(_ context.Context, rs []schema.Record) error {
				mu.Lock()
				defer mu.Unlock()
				for _, r := range rs {
					q := qid{r.Delivery.Broker, r.Delivery.Queue}
					sp, ok := spans[q]
					if !ok {
						sp.first = r.Delivery.Offset
					}
					sp.last = r.Delivery.Offset
					spans[q] = sp
				}
				total += len(rs)
				if total >= stopAfter {
					once.Do(func() { close(enough) })
				}
				return nil
			})
		}()
		closeWhen(ctx, t, enough, s, consumed, func() string { return fmt.Sprintf("consumed %d records, want %d", total, stopAfter) })
		mu.Lock()
		defer mu.Unlock()
		return spans, total
	}
	first, got1 := run(n / 2)
	second, got2 := run(1)
	// Per queue, the second run must continue right after what the first
	// handled (no gap, no restart from the beginning); a queue the first run
	// never touched starts at its first offset. Which queues each run is
	// given is up to the broker's rebalance.
	for q, sp := range second {
		f, ok := first[q]
		if !ok {
			if sp.first != 0 {
				t.Errorf("queue %v: untouched by the first run, but the second starts at %d: a gap", q, sp.first)
			}
			continue
		}
		if sp.first > f.last+1 {
			t.Errorf("queue %v: first run handled offsets %d..%d, second run starts at %d: a gap", q, f.first, f.last, sp.first)
		}
		if sp.first <= f.first {
			t.Errorf("queue %v: first run handled offsets %d..%d, second run starts again at %d: no resume", q, f.first, f.last, sp.first)
		}
	}
	t.Logf("first run %d records %v; second run %d records, starting at %v", got1, first, got2, second)
}

// TestIntegrationLingerBatches sends records one at a time, 30ms apart, to
// one queue while the consumer runs: with Linger the consumer pulls at most
// once per Linger, so they reach the handler in a few batches, not one each
// (the run without linger is the logged control).
func TestIntegrationLingerBatches(t *testing.T) {
	skipUnderRace(t)
	for _, tc := range []struct {
		linger   time.Duration
		maxCalls int // -1: only logged, the control without linger
	}{{0, -1}, {2 * time.Second, 4}} {
		t.Run(tc.linger.String(), func(t *testing.T) {
			id := schema.TableID{Database: "db", Table: "linger"}
			cfg := itConfig(t, id)
			cfg.Linger = tc.linger
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			p, err := NewPublisher(ctx, cfg, quietLog())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			send := func(v int64) {
				acked := make(chan error, 1)
				if err := p.Publish(ctx, []schema.Record{testRecord(id, 1, v)}, func(err error) { acked <- err }); err != nil {
					t.Fatal(err)
				}
				if err := <-acked; err != nil {
					t.Fatal(err)
				}
			}
			s, err := NewSubscriber(ctx, cfg, quietLog())
			if err != nil {
				t.Fatal(err)
			}
			const n = 30
			var mu sync.Mutex
			var calls []int
			first, all := make(chan struct{}), make(chan struct{})
			got := 0
			consumed := make(chan error, 1)
			go func() {
				consumed <- s.Consume(ctx, func(_ context.Context, rs []schema.Record) error {
					mu.Lock()
					defer mu.Unlock()
					if got == 0 {
						close(first)
					}
					got += len(rs)
					if got > 1 {
						calls = append(calls, len(rs))
					}
					if got == n+1 {
						close(all)
					}
					return nil
				})
			}()
			send(0) // the consumer is running once this arrives
			select {
			case <-first:
			case <-time.After(90 * time.Second):
				t.Fatal("the first record never arrived")
			}
			for v := range int64(n) { // over about 0.9s, well inside the linger
				time.Sleep(30 * time.Millisecond)
				send(v + 1)
			}
			closeWhen(ctx, t, all, s, consumed, func() string { return "not every record arrived" })
			mu.Lock()
			defer mu.Unlock()
			t.Logf("linger %s: %d records sent one at a time reached the handler in %d calls %v", tc.linger, n, len(calls), calls)
			if tc.maxCalls >= 0 && len(calls) > tc.maxCalls {
				t.Errorf("linger %s: %d calls for %d records, want at most %d", tc.linger, len(calls), n, tc.maxCalls)
			}
		})
	}
}

// closeWhen waits (at most 90s) for done, then closes s and checks what
// its Consume returned; on timeout it fails with why().
func closeWhen(ctx context.Context, t testing.TB, done <-chan struct{}, s *Subscriber, consumed <-chan error, why func() string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatal(why())
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-consumed; err != nil {
		t.Fatal(err)
	}
}
