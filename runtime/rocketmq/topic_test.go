package rocketmq

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
)

type fakeCreator struct {
	mu    sync.Mutex
	calls []admin.TopicConfigCreate
	err   error
}

func (f *fakeCreator) CreateTopic(_ context.Context, opts ...admin.OptionCreate) error {
	var c admin.TopicConfigCreate
	for _, o := range opts {
		o(&c)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return f.err
}

const oneBrokerCluster = `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}`

const fourQueueRoute = `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"writeQueueNums":4}]}`

// TestEnsureTopicSlowBroker: the create call times out but the topic shows
// up on the name server later; ensureTopic succeeds.
func TestEnsureTopicSlowBroker(t *testing.T) {
	var routeAsks atomic.Int32
	addr := fakeNameServer(t, withNoRecord(func(h remotingHeader) (int, string) {
		switch h.Code {
		case reqGetBrokerClusterInfo:
			return 0, oneBrokerCluster
		case reqGetRouteInfoByTopic:
			if routeAsks.Add(1) < 4 {
				return resTopicNotExist, ""
			}
			return 0, fourQueueRoute
		}
		return 1, ""
	}))
	cfg, _ := Config{NameServers: []string{addr}, Pipeline: "p"}.baseDefaults()
	fc := &fakeCreator{err: errors.New("request timeout")}
	qs, err := ensureTopic(context.Background(), fc, cfg, "p_db_t")
	if err != nil {
		t.Fatal(err)
	}
	if len(qs.queues()) != 4 || len(fc.calls) != 1 {
		t.Fatalf("queues %v, create calls %d", qs, len(fc.calls))
	}
	if c := fc.calls[0]; c.Topic != "p_db_t" || c.BrokerAddr != "127.0.0.1:10911" || c.ReadQueueNums != 4 || c.WriteQueueNums != 4 {
		t.Errorf("create call %+v", c)
	}
}

func TestEnsureTopicNeverRouted(t *testing.T) {
	addr := fakeNameServer(t, withNoRecord(func(h remotingHeader) (int, string) {
		if h.Code == reqGetBrokerClusterInfo {
			return 0, oneBrokerCluster
		}
		return resTopicNotExist, ""
	}))
	old := topicVisibleTimeout
	topicVisibleTimeout = 300 * time.Millisecond
	defer func() { topicVisibleTimeout = old }()
	cfg, _ := Config{NameServers: []string{addr}, Pipeline: "p"}.baseDefaults()
	_, err := ensureTopic(context.Background(), &fakeCreator{err: errors.New("request timeout")}, cfg, "p_db_t")
	if err == nil || !strings.Contains(err.Error(), "request timeout") || !strings.Contains(err.Error(), "0 of 4 queues") {
		t.Fatalf("err = %v", err)
	}
}

func TestEnsureTopicExisting(t *testing.T) {
	addr := fakeNameServer(t, withNoRecord(func(h remotingHeader) (int, string) {
		if h.Code == reqGetRouteInfoByTopic {
			return 0, fourQueueRoute
		}
		return 1, ""
	}))
	cfg, _ := Config{NameServers: []string{addr}, Pipeline: "p", Queues: 8}.baseDefaults()
	fc := &fakeCreator{}
	qs, err := ensureTopic(context.Background(), fc, cfg, "p_db_t")
	if err != nil || len(qs.queues()) != 4 || len(fc.calls) != 0 {
		t.Fatalf("existing topic: queues %v, err %v, creates %d (an existing topic keeps its queues)", qs, err, len(fc.calls))
	}
}

const twoBrokerCluster = `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"},` +
	`"broker-b":{"brokerAddrs":{0:"127.0.0.1:11911"},"brokerName":"broker-b","cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a","broker-b"]}}`

// TestEnsureTopicBeingCreatedElsewhere: a topic another process is creating
// on two master brokers shows up on the name server one broker at a time.
// ensureTopic must take (and record) the set of both brokers, the one the
// creator records: before, it took broker-a's four queues as the set, so
// its publisher hashed keys over 4 queues while every later one hashed
// them over 8, and a key's changes went to two queues (lost updates in
// TestContract/*/kill_source_and_sink).
func TestEnsureTopicBeingCreatedElsewhere(t *testing.T) {
	var routeAsks atomic.Int32
	var recorded atomic.Value
	addr := fakeNameServer(t, func(h remotingHeader) (int, string) {
		switch h.Code {
		case reqGetKVConfig:
			return resQueryNotFound, ""
		case reqPutKVConfig:
			recorded.Store(h.ExtFields["value"])
			return resSuccess, ""
		case reqGetBrokerClusterInfo:
			return 0, twoBrokerCluster
		case reqGetRouteInfoByTopic:
			if routeAsks.Add(1) < 4 {
				return 0, fourQueueRoute // broker-a registered the topic, broker-b not yet
			}
			return 0, twoBrokerRoute
		}
		return 1, ""
	})
	cfg, _ := Config{NameServers: []string{addr}, Pipeline: "p"}.baseDefaults()
	fc := &fakeCreator{}
	qs, err := ensureTopic(context.Background(), fc, cfg, "p_db_t")
	if err != nil {
		t.Fatal(err)
	}
	if qs.String() != "broker-a:4;broker-b:4" || len(fc.calls) != 0 {
		t.Fatalf("queue set %s, create calls %d: want broker-a:4;broker-b:4 and no create", qs, len(fc.calls))
	}
	if r, _ := recorded.Load().(string); r != "broker-a:4;broker-b:4" {
		t.Fatalf("recorded %q", r)
	}
}

// withNoRecord makes answer a name server's that has no queue set recorded
// and takes one.
func withNoRecord(answer func(h remotingHeader) (int, string)) func(h remotingHeader) (int, string) {
	return func(h remotingHeader) (int, string) {
		switch h.Code {
		case reqGetKVConfig:
			return resQueryNotFound, ""
		case reqPutKVConfig:
			return resSuccess, ""
		}
		return answer(h)
	}
}
