package rocketmq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

func TestParseQueueSet(t *testing.T) {
	set, err := parseQueueSet("broker-b:2;broker-a:3")
	if err != nil {
		t.Fatal(err)
	}
	if got := set.String(); got != "broker-a:3;broker-b:2" {
		t.Errorf("String() = %q", got)
	}
	want := []queue{{"broker-a", 0}, {"broker-a", 1}, {"broker-a", 2}, {"broker-b", 0}, {"broker-b", 1}}
	if got := set.queues(); !slices.Equal(got, want) {
		t.Errorf("queues() = %v, want %v", got, want)
	}
	for _, bad := range []string{"", ";", "broker-a", "broker-a:0", "broker-a:x", ":4", "broker-a:4;broker-a:4", "broker-a:99999999"} {
		if _, err := parseQueueSet(bad); err == nil {
			t.Errorf("parseQueueSet(%q): no error", bad)
		}
	}
}

// TestRouteQueueSet: a broker's queues count whether or not the route has
// a live master for it; read-only queues do not.
func TestRouteQueueSet(t *testing.T) {
	r := topicRoute{
		QueueDatas: []queueData{{BrokerName: "broker-b", WriteQueueNums: 4, Perm: 6}, {BrokerName: "broker-a", WriteQueueNums: 2, Perm: 6},
			{BrokerName: "broker-c", WriteQueueNums: 4, Perm: 4}},
		BrokerDatas: []brokerData{{BrokerName: "broker-b", BrokerAddrs: map[string]string{"0": "127.0.0.1:1"}}},
	}
	if got := routeQueueSet(r).String(); got != "broker-a:2;broker-b:4" {
		t.Errorf("routeQueueSet = %q", got)
	}
	if got := r.writeQueues(); len(got) != 4 || got[0].Broker != "broker-b" {
		t.Errorf("writeQueues (live only) = %v", got)
	}
}

func TestQueueSetChangedFrom(t *testing.T) {
	recorded, _ := parseQueueSet("broker-a:4;broker-b:4")
	for _, route := range []string{"broker-a:4;broker-b:4", "broker-b:4", "broker-a:4", ""} {
		set, _ := parseQueueSet(route)
		if err := recorded.changedFrom("t", set); err != nil {
			t.Errorf("route %q (brokers down): %v", route, err)
		}
	}
	for route, want := range map[string]string{
		"broker-a:4;broker-b:4;broker-c:4": "broker broker-c has 4 queues of it, none recorded",
		"broker-a:8;broker-b:4":            "broker broker-a has 8 queues of it, 4 recorded",
		"broker-b:2":                       "-v 'broker-a:4;broker-b:2'",
		"broker-c:4":                       "-v 'broker-a:4;broker-b:4;broker-c:4'",
	} {
		set, _ := parseQueueSet(route)
		err := recorded.changedFrom("t", set)
		if !errors.Is(err, ErrQueueSetChanged) || !runtime.IsFatal(err) || !strings.Contains(err.Error(), want) ||
			!strings.Contains(err.Error(), "mqadmin updateOrderConf") {
			t.Errorf("route %q: err = %v, want fatal ErrQueueSetChanged with %q", route, err, want)
		}
	}
}

// kvNameServer is a fake name server with a KV store, a topic route and a
// cluster table that a test changes as brokers come and go.
type kvNameServer struct {
	mu      sync.Mutex
	kv      map[string]string // ORDER_TOPIC_CONFIG by topic
	route   string            // "" answers TOPIC_NOT_EXIST
	cluster string
	puts    int
}

func newKVNameServer(t *testing.T, route, cluster string) (*kvNameServer, string) {
	ns := &kvNameServer{kv: map[string]string{}, route: route, cluster: cluster}
	addr := fakeNameServerExt(t, func(h remotingHeader) (int, string, map[string]string) {
		ns.mu.Lock()
		defer ns.mu.Unlock()
		switch h.Code {
		case reqGetKVConfig:
			if v, ok := ns.kv[h.ExtFields["key"]]; ok && h.ExtFields["namespace"] == orderConfNamespace {
				return resSuccess, "", map[string]string{"value": v}
			}
			return resQueryNotFound, "", nil
		case reqPutKVConfig:
			ns.puts++
			ns.kv[h.ExtFields["key"]] = h.ExtFields["value"]
			return resSuccess, "", nil
		case reqGetRouteInfoByTopic:
			if ns.route == "" {
				return resTopicNotExist, "", nil
			}
			return resSuccess, ns.route, nil
		case reqGetBrokerClusterInfo:
			return resSuccess, ns.cluster, nil
		}
		return 1, "", nil
	})
	return ns, addr
}

func (ns *kvNameServer) set(route string) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.route = route
}

const (
	twoBrokerRoute = `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"},{"brokerAddrs":{0:"127.0.0.1:11911"},"brokerName":"broker-b","cluster":"DefaultCluster"}],` +
		`"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"writeQueueNums":4},{"brokerName":"broker-b","perm":6,"readQueueNums":4,"writeQueueNums":4}]}`
	// what the name server routes once broker-a's master died (RocketMQ
	// 5.3.3 drops its queues with it)
	brokerBRoute = `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:11911"},"brokerName":"broker-b","cluster":"DefaultCluster"}],` +
		`"queueDatas":[{"brokerName":"broker-b","perm":6,"readQueueNums":4,"writeQueueNums":4}]}`
	brokerBCluster   = `{"brokerAddrTable":{"broker-b":{"brokerAddrs":{0:"127.0.0.1:11911"},"brokerName":"broker-b","cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-b"]}}`
	threeBrokerRoute = `{"brokerDatas":[],"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"writeQueueNums":4},{"brokerName":"broker-b","perm":6,"readQueueNums":4,"writeQueueNums":4},` +
		`{"brokerName":"broker-c","perm":6,"readQueueNums":4,"writeQueueNums":4}]}`
)

// TestQueueSetSurvivesBrokerOutage: the first publisher records the
// topic's queue set; a publisher built while broker-a is down (the name
// server routes broker-b alone, or nothing) hashes every key to the queue
// it had, creates nothing, and a route with queues the set lacks is a
// fatal ErrQueueSetChanged.
func TestQueueSetSurvivesBrokerOutage(t *testing.T) {
	ns, addr := newKVNameServer(t, twoBrokerRoute, brokerBCluster)
	cfg, _ := Config{NameServers: []string{addr}, Pipeline: "p"}.baseDefaults()
	fc := &fakeCreator{}
	ctx := context.Background()
	full, err := newTopicCache(cfg, fc).queues(ctx, "p_db_t")
	if err != nil || len(full) != 8 {
		t.Fatalf("queues %v, err %v", full, err)
	}
	if ns.kv["p_db_t"] != "broker-a:4;broker-b:4" {
		t.Fatalf("recorded %q", ns.kv["p_db_t"])
	}
	keyQueues := func(qs []queue) []queue {
		var out []queue
		for k := range int64(200) {
			r := schema.Record{Key: schema.Row{k}}
			out = append(out, qs[runtime.QueueFor(&r, len(qs))])
		}
		return out
	}
	before := keyQueues(full)
	for _, route := range []string{brokerBRoute, ""} {
		ns.set(route)
		qs, err := newTopicCache(cfg, fc).queues(ctx, "p_db_t")
		if err != nil {
			t.Fatalf("route %q: %v", route, err)
		}
		if !slices.Equal(keyQueues(qs), before) {
			t.Errorf("route %q: keys moved to other queues: %v", route, qs)
		}
	}
	if len(fc.calls) != 0 {
		t.Errorf("the topic was created again (%d calls) while its brokers were down", len(fc.calls))
	}
	ns.set(threeBrokerRoute)
	if _, err := newTopicCache(cfg, fc).queues(ctx, "p_db_t"); !errors.Is(err, ErrQueueSetChanged) || !runtime.IsFatal(err) {
		t.Fatalf("broker-c added: err = %v, want fatal ErrQueueSetChanged", err)
	}
	// A topic first met while broker-a is down records what is routed;
	// broker-a's return then is a change, reported, not a silent rehash.
	ns.set(brokerBRoute)
	if qs, err := newTopicCache(cfg, fc).queues(ctx, "p_db_u"); err != nil || len(qs) != 4 {
		t.Fatalf("queues %v, err %v", qs, err)
	}
	ns.set(twoBrokerRoute)
	if _, err := newTopicCache(cfg, fc).queues(ctx, "p_db_u"); !errors.Is(err, ErrQueueSetChanged) {
		t.Fatalf("broker-a back on a set recorded without it: err = %v", err)
	}
}

// TestQueueSetRecordedOnEveryNameServer: a name server without the record
// (replaced, its store lost) gets it from the others; one that does not
// answer, while none that answers has it, is an error, not a new record.
func TestQueueSetRecordedOnEveryNameServer(t *testing.T) {
	ns1, addr1 := newKVNameServer(t, brokerBRoute, brokerBCluster)
	ns2, addr2 := newKVNameServer(t, brokerBRoute, brokerBCluster)
	ns2.kv["p_db_t"] = "broker-a:4;broker-b:4"
	cfg, _ := Config{NameServers: []string{addr1, addr2}, Pipeline: "p"}.baseDefaults()
	qs, err := newTopicCache(cfg, &fakeCreator{}).queues(context.Background(), "p_db_t")
	if err != nil || len(qs) != 8 {
		t.Fatalf("queues %v, err %v", qs, err)
	}
	if ns1.kv["p_db_t"] != "broker-a:4;broker-b:4" || ns2.puts != 0 {
		t.Errorf("name server 1 has %q; name server 2 written %d times", ns1.kv["p_db_t"], ns2.puts)
	}
	_, up := newKVNameServer(t, twoBrokerRoute, brokerBCluster)
	cfg.NameServers = []string{up, "127.0.0.1:1"}
	if _, err := newTopicCache(cfg, &fakeCreator{}).queues(context.Background(), "p_db_t"); err == nil || !strings.Contains(err.Error(), "recorded queue set") {
		t.Errorf("a name server down, none with a record: err = %v", err)
	}
}

// brokerSender fails every send to broker-a while down is set, and
// records where each record it takes went, by key.
type brokerSender struct {
	down atomic.Bool
	// stale, once down is cleared, is how many more sends to broker-a
	// fail as a broker just back fails them: missing from the client's
	// cached route, then busy.
	stale atomic.Int32
	mu    sync.Mutex
	sent  map[string][]sentTo // key -> its records in send order
}

type sentTo struct {
	q       queue
	version int64
}

func (b *brokerSender) SendSync(_ context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error) {
	if msgs[0].Queue.BrokerName == "broker-a" {
		if b.down.Load() {
			return nil, errors.New("dial tcp: connection refused")
		}
		if n := b.stale.Add(-1); n >= 2 {
			return nil, fmt.Errorf("the topic=%s route info not found", msgs[0].Topic)
		} else if n >= 0 {
			return nil, errors.New("CODE: 2, DESC: [TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while")
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range msgs {
		r, err := testCodec{}.Decode([]byte(m.GetProperty(KeyProperty)), m.Body)
		if err != nil {
			return nil, err
		}
		k := m.GetProperty(primitive.PropertyKeys)
		b.sent[k] = append(b.sent[k], sentTo{queue{m.Queue.BrokerName, m.Queue.QueueId}, r.After[1].(int64)})
	}
	return &primitive.SendResult{Status: primitive.SendOK}, nil
}

func (b *brokerSender) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.sent {
		n += len(s)
	}
	return n
}

// TestPublisherWaitsForDownBroker (issue 27): while broker-a is down, a
// publisher built then sends each record to its key's queue of the
// recorded set: broker-b's records reach broker-b, and broker-a's are sent
// nowhere else; they wait, the publisher neither fails nor acks the
// batches holding them, and reports the outage (Unreachable). Once
// broker-a is back (its sends failing a while longer, as a broker just
// back fails them: not yet in the client's route, then busy) they reach
// their queues in order and every batch is acked without error.
func TestPublisherWaitsForDownBroker(t *testing.T) {
	ns, addr := newKVNameServer(t, twoBrokerRoute, brokerBCluster)
	cfg, err := Config{NameServers: []string{addr}, Pipeline: "t", Codec: testCodec{}, SendRetries: -1}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	full, err := newTopicCache(cfg, &fakeCreator{}).queues(ctx, "t_db_t")
	if err != nil {
		t.Fatal(err)
	}
	ns.set(brokerBRoute)
	s := &brokerSender{sent: map[string][]sentTo{}}
	s.down.Store(true)
	p := newPublisher(cfg, quietLog(), s, newTopicCache(cfg, &fakeCreator{}), nil)
	p.waitDelay = 50 * time.Millisecond
	if topic, _ := p.reg.Topic(tbl); topic != "t_db_t" {
		t.Fatalf("topic %q", topic)
	}
	const keys, versions = 50, 3
	want := map[string]queue{}
	acked := make(chan error, versions)
	for v := range int64(versions) {
		var recs []schema.Record
		for k := range int64(keys) {
			r := rec(k, v)
			recs = append(recs, r)
			want[r.KeyString()] = full[runtime.QueueFor(&r, len(full))]
		}
		if err := p.Publish(ctx, recs, func(err error) { acked <- err }); err != nil {
			t.Fatalf("Publish while broker-a is down: %v", err)
		}
	}
	onB := 0
	for _, q := range want {
		if q.Broker == "broker-b" {
			onB += versions
		}
	}
	for deadline := time.Now().Add(10 * time.Second); (s.count() < onB || len(p.Unreachable()) == 0) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := s.count(); n != onB {
		t.Fatalf("%d records sent while broker-a is down, want broker-b's %d", n, onB)
	}
	u := p.Unreachable()
	if len(u) != 1 || u[0].Broker != "broker-a" || u[0].Since.IsZero() || len(u[0].Queues) == 0 || !strings.HasPrefix(u[0].Queues[0], "t_db_t:") {
		t.Fatalf("Unreachable() = %+v, want broker-a with its queues", u)
	}
	select {
	case err := <-acked:
		t.Fatalf("a batch was acked (%v) while records of it wait for broker-a", err)
	case <-time.After(300 * time.Millisecond):
	}
	ns.set(twoBrokerRoute)
	s.stale.Store(12) // more than one try's attempts of each kind
	s.down.Store(false)
	for range versions {
		select {
		case err := <-acked:
			if err != nil {
				t.Fatalf("batch acked with %v after broker-a came back", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a batch still unacked 10 s after broker-a came back")
		}
	}
	// The waiting queue leaves the outage just after its last send.
	for deadline := time.Now().Add(5 * time.Second); len(p.Unreachable()) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if u := p.Unreachable(); len(u) != 0 {
		t.Errorf("Unreachable() = %+v after broker-a came back", u)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, q := range want {
		got := s.sent[key]
		if len(got) != versions {
			t.Errorf("key %s: %d records sent, want %d", key, len(got), versions)
			continue
		}
		for v, st := range got {
			if st.q != q || st.version != int64(v) {
				t.Errorf("key %s: record %d sent to %v with version %d, want %v version %d", key, v, st.q, st.version, q, v)
			}
		}
	}
}

// TestSubscriberConsumesChangedQueueSet: a sink starts on a topic whose
// queues differ from its recorded set (only the publisher stops on that),
// so that it can drain the topic.
func TestSubscriberConsumesChangedQueueSet(t *testing.T) {
	ns, addr := newKVNameServer(t, threeBrokerRoute, brokerBCluster)
	ns.kv["p_db_t"] = "broker-a:4;broker-b:4"
	s, err := NewSubscriber(context.Background(), Config{NameServers: []string{addr}, Pipeline: "p", Group: "g", Topics: []string{"p_db_t"}}, quietLog())
	if err != nil {
		t.Fatalf("NewSubscriber: %v", err)
	}
	_ = s.Close(context.Background())
	if ns.kv["p_db_t"] != "broker-a:4;broker-b:4" {
		t.Errorf("the recorded set became %q", ns.kv["p_db_t"])
	}
}

const (
	// broker-a's queues raised to 8 (mqadmin updateTopic -w 8)
	eightQueuesARoute = `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"},{"brokerAddrs":{0:"127.0.0.1:11911"},"brokerName":"broker-b","cluster":"DefaultCluster"}],` +
		`"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"writeQueueNums":8},{"brokerName":"broker-b","perm":6,"readQueueNums":4,"writeQueueNums":4}]}`
	// broker-a down, the topic created on a new broker-c
	brokersBCRoute = `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:11911"},"brokerName":"broker-b","cluster":"DefaultCluster"},{"brokerAddrs":{0:"127.0.0.1:12911"},"brokerName":"broker-c","cluster":"DefaultCluster"}],` +
		`"queueDatas":[{"brokerName":"broker-b","perm":6,"readQueueNums":4,"writeQueueNums":4},{"brokerName":"broker-c","perm":6,"readQueueNums":4,"writeQueueNums":4}]}`
)

// TestPublisherStopsOnQueueSetChange (issue 27, item 1): a running
// publisher compares its topics' queue sets with the name servers' routes
// and records (every queueSetCheckEvery). A broker down is no change; a
// broker added to the topic, queues added on a broker, or another set
// recorded while it runs is: the next batch is refused with the fatal
// ErrQueueSetChanged naming the change and what to do, and a batch whose
// records wait for a down broker fails with it instead of waiting for
// ever. Batches sent before the change are acknowledged. Before, a
// publisher read each set once, at its start, and hashed keys over it
// whatever the topic became.
func TestPublisherStopsOnQueueSetChange(t *testing.T) {
	old := queueSetCheckEvery
	queueSetCheckEvery = 20 * time.Millisecond
	t.Cleanup(func() { queueSetCheckEvery = old })
	ctx := context.Background()
	for _, c := range []struct {
		name, route, recorded, want string
		brokerADown                 bool
	}{
		{name: "broker added", route: threeBrokerRoute, want: "broker broker-c has 4 queues of it, none recorded"},
		{name: "queues added", route: eightQueuesARoute, want: "broker broker-a has 8 queues of it, 4 recorded"},
		{name: "set recorded anew", route: twoBrokerRoute, recorded: "broker-a:4;broker-b:4;broker-c:4",
			want: "recorded on the name servers is now broker-a:4;broker-b:4;broker-c:4, while this source hashes keys over broker-a:4;broker-b:4"},
		{name: "broker added while one is down", route: brokersBCRoute, brokerADown: true, want: "broker broker-c has 4 queues of it, none recorded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns, addr := newKVNameServer(t, twoBrokerRoute, brokerBCluster)
			cfg, err := Config{NameServers: []string{addr}, Pipeline: "t", Codec: testCodec{}, SendRetries: -1}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			s := &brokerSender{sent: map[string][]sentTo{}}
			p := newPublisher(cfg, quietLog(), s, newTopicCache(cfg, &fakeCreator{}), nil)
			p.waitDelay = 20 * time.Millisecond
			t.Cleanup(func() {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				_ = p.Close(cctx)
			})
			acked := make(chan error, 8)
			publish := func(v int64) error {
				var recs []schema.Record
				for k := range int64(20) {
					recs = append(recs, rec(k, v))
				}
				return p.Publish(ctx, recs, func(err error) { acked <- err })
			}
			ack := func() error {
				select {
				case err := <-acked:
					return err
				case <-time.After(10 * time.Second):
					t.Fatal("no ack within 10 s")
					return nil
				}
			}
			if err := publish(0); err != nil {
				t.Fatal(err)
			}
			if err := ack(); err != nil {
				t.Fatalf("first batch: %v", err)
			}
			// broker-a down: its queues leave the route, which is no
			// change; many checks pass and batches go on.
			ns.set(brokerBRoute)
			s.down.Store(c.brokerADown)
			time.Sleep(10 * queueSetCheckEvery)
			if err := publish(1); err != nil {
				t.Fatalf("Publish with broker-a down: %v", err)
			}
			if !c.brokerADown {
				if err := ack(); err != nil {
					t.Fatalf("batch sent with broker-a out of the route: %v", err)
				}
			}
			ns.set(c.route)
			if c.recorded != "" {
				ns.mu.Lock()
				ns.kv["t_db_t"] = c.recorded
				ns.mu.Unlock()
			}
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, ErrQueueSetChanged) || !runtime.IsFatal(err) || !strings.Contains(err.Error(), c.want) ||
					!strings.Contains(err.Error(), "mqadmin updateOrderConf") {
					t.Fatalf("%s: err = %v, want a fatal ErrQueueSetChanged with %q", what, err, c.want)
				}
			}
			if c.brokerADown {
				// The batch waiting for broker-a fails with the change.
				check("the batch waiting for broker-a", ack())
			}
			var perr error
			for deadline := time.Now().Add(10 * time.Second); perr == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if perr = publish(2); perr == nil {
					if aerr := ack(); aerr != nil && !c.brokerADown {
						t.Fatalf("a batch sent before the change was seen: %v", aerr)
					}
				}
			}
			check("Publish after the change", perr)
		})
	}
}
