package rocketmq

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// replClusters returns the name servers of the replicator's source (the
// main cluster) and target (servers.sh start rocketmq-b) and its cluster.
func replClusters(t *testing.T) (src, dst []string, dstCluster string) {
	t.Helper()
	v := schematest.NeedServers(t, "SLUICE_ROCKETMQ_NAMESRV", "SLUICE_ROCKETMQ_B_NAMESRV", "SLUICE_ROCKETMQ_B_CLUSTER")
	return strings.Split(v[0], ","), strings.Split(v[1], ","), v[2]
}

// replTopic creates topic with 4 queues per master on the source and
// deletes it on both clusters when the test ends.
func replTopic(t *testing.T, src, dst []string, dstCluster, topic string) {
	t.Helper()
	replCreate(t, src, DefaultCluster, 4, topic)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, c := range []struct {
			ns      []string
			cluster string
		}{{src, DefaultCluster}, {dst, dstCluster}} {
			ci, err := fetchClusterInfo(ctx, c.ns)
			if err != nil {
				t.Logf("cleanup: %v", err)
				continue
			}
			adm, err := newAdmin(Config{NameServers: c.ns})
			if err != nil {
				t.Logf("cleanup: %v", err)
				continue
			}
			for _, addr := range ci.masters(c.cluster) {
				if err := adm.DeleteTopic(ctx, admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(addr), admin.WithNameSrvAddr(c.ns)); err != nil {
					t.Logf("cleanup: delete topic %s: %v", topic, err)
				}
			}
			_ = adm.Close()
		}
	})
}

// replCreate creates topic with queues queues on each master of cluster.
func replCreate(t *testing.T, ns []string, cluster string, queues int, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := Config{NameServers: ns, Cluster: cluster, Queues: queues}
	adm, err := newAdmin(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := createTopic(ctx, adm, cfg, topic); err != nil {
		t.Fatal(err)
	}
}

// replProduce sends perQueue messages to each queue of topic on ns, in
// order: binary bodies (invalid UTF-8, NUL bytes, one over the client's
// 4 KiB compression threshold), keys, tags and a user property.
func replProduce(t *testing.T, ns []string, topic string, perQueue, from int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	qs, err := tailQueues(ctx, ns, topic)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := startProducer(Config{NameServers: ns, Pipeline: "it-repl-" + suffix()}, "src", "src")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prod.Shutdown() }()
	for i := from; i < from+perQueue; i++ {
		for _, q := range qs {
			body := []byte{0xff, 0xfe, 0x00, 0xc3, 0x28, byte(i), byte(q.id)}
			if i == from && q.id == 1 {
				body = bytes.Repeat([]byte{0x80, 0x00, 0xe2, 0x82}, 1300)
			}
			m := primitive.NewMessage(topic, append(body, strconv.Itoa(i)...))
			m.WithKeys([]string{fmt.Sprintf("k-%d", i%7)})
			m.WithTag("tag-" + strconv.Itoa(q.id))
			m.WithProperty("user_prop", "héllo "+strconv.Itoa(i))
			m.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: q.broker, QueueId: q.id}
			for attempt := 0; ; attempt++ {
				r, err := prod.SendSync(ctx, m)
				if err == nil && r.Status == primitive.SendOK {
					break
				}
				if attempt > 5 {
					t.Fatalf("send: %v %v", r, err)
				}
				time.Sleep(time.Second)
			}
		}
	}
}

// replRead reads every message of topic on ns, per queue in offset order
// (queues in broker and id order).
func replRead(t *testing.T, ns []string, topic string) [][]*primitive.MessageExt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	qs, err := tailQueues(ctx, ns, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]*primitive.MessageExt, len(qs))
	for i, q := range qs {
		if q.end, err = queueOffset(ctx, q, reqGetMaxOffset); err != nil {
			t.Fatal(err)
		}
		for q.next < q.end {
			msgs, err := pullQueue(ctx, "it-repl-read", q)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 {
				break
			}
			out[i] = append(out[i], msgs...)
		}
	}
	return out
}

type memPositions struct{ pos []byte }

func (m *memPositions) Load(context.Context, string) ([]byte, error) { return m.pos, nil }
func (m *memPositions) Save(_ context.Context, _ string, pos []byte) error {
	m.pos = append([]byte(nil), pos...)
	return nil
}

// replRun runs a replicator of topic from src to dst until it copied want
// messages, resuming from store.
func replRun(t *testing.T, src, dst []string, dstCluster, topic string, store *memPositions, want int64, batch int) *Replicator {
	t.Helper()
	return replRunConfig(t, ReplicatorConfig{NameServers: src, Topics: []string{topic}, BatchSize: batch}, dst, dstCluster, store, want)
}

func replRunConfig(t *testing.T, cfg ReplicatorConfig, dst []string, dstCluster string, store *memPositions, want int64) *Replicator {
	t.Helper()
	r, err := NewReplicator(cfg, Config{NameServers: dst, Cluster: dstCluster, Pipeline: "it-repl"}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r.KeepPositions(store, "it-repl")
	if err := r.Open(ctx, store.pos); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Copied() < want {
		if _, err := r.Read(ctx); err != nil {
			t.Fatalf("after %d of %d messages: %v", r.Copied(), want, err)
		}
	}
	return r
}

// checkCopies checks that every queue of the target holds the source
// queue of the same place, message by message (want[i] of source queue
// i, offsets from 0), byte for byte, with its coordinates; dups counts
// the messages the target holds twice.
func checkCopies(t *testing.T, srcMsgs, dstMsgs [][]*primitive.MessageExt) (dups int) {
	t.Helper()
	if len(dstMsgs) != len(srcMsgs) {
		t.Fatalf("target has %d queues, source %d", len(dstMsgs), len(srcMsgs))
	}
	for i := range srcMsgs {
		next := int64(0) // the source offset the next new copy must have
		for _, d := range dstMsgs[i] {
			p := d.GetProperties()
			off, err := strconv.ParseInt(p[SrcOffsetProperty], 10, 64)
			if err != nil {
				t.Fatalf("queue %d: copy without %s: %v", i, SrcOffsetProperty, p)
			}
			if off < next {
				dups++ // copied again after a restart: an earlier message, in order
			} else if off > next {
				t.Fatalf("queue %d: copy of offset %d follows offset %d: a message was lost or reordered", i, off, next-1)
			} else {
				next++
			}
			s := srcMsgs[i][off]
			if !bytes.Equal(d.Body, s.Body) {
				t.Fatalf("queue %d offset %d: body %x, source %x", i, off, d.Body, s.Body)
			}
			if d.BornTimestamp != s.BornTimestamp || d.Flag != s.Flag {
				t.Fatalf("queue %d offset %d: born %d flag %d, source born %d flag %d", i, off, d.BornTimestamp, d.Flag, s.BornTimestamp, s.Flag)
			}
			want := maps.Clone(s.GetProperties())
			// The broker sets CLUSTER to its own cluster on every message it stores.
			want[primitive.PropertyCluster] = p[primitive.PropertyCluster]
			for _, k := range []string{SrcClusterProperty, SrcBrokerProperty, SrcQueueProperty, SrcOffsetProperty, SrcMsgIDProperty} {
				want[k] = p[k]
			}
			if !maps.Equal(p, want) {
				t.Fatalf("queue %d offset %d: properties\n %v\nsource\n %v", i, off, p, s.GetProperties())
			}
			if p[SrcMsgIDProperty] != s.MsgId || p[SrcQueueProperty] != strconv.Itoa(s.Queue.QueueId) || p[SrcClusterProperty] != DefaultCluster {
				t.Fatalf("queue %d offset %d: coordinates %v, source msg id %s queue %d", i, off, p, s.MsgId, s.Queue.QueueId)
			}
		}
		if next != int64(len(srcMsgs[i])) {
			t.Fatalf("queue %d: %d of %d messages copied", i, next, len(srcMsgs[i]))
		}
	}
	return dups
}

// TestIntegrationReplicatorCopiesByteExact: binary bodies, keys, tags,
// user properties and born timestamps arrive unchanged, each source queue
// in the target queue of the same place and in order, with the source
// coordinates.
func TestIntegrationReplicatorCopiesByteExact(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_" + suffix()
	replTopic(t, src, dst, dstCluster, topic)
	const perQueue = 12
	replProduce(t, src, topic, perQueue, 0)
	srcMsgs := replRead(t, src, topic)
	total := int64(perQueue * len(srcMsgs))
	r := replRun(t, src, dst, dstCluster, topic, &memPositions{}, total, 5)
	var body int
	for _, msgs := range srcMsgs {
		for _, m := range msgs {
			body += len(m.Body)
		}
	}
	if p := r.Progress(); p["replicator_messages"] != float64(total) || p["replicator_bytes"] != float64(body) || p["replicator_latency_seconds"] < 0 {
		t.Errorf("progress %v, want %d messages of %d bytes", p, total, body)
	}
	if dups := checkCopies(t, srcMsgs, replRead(t, dst, topic)); dups != 0 {
		t.Fatalf("%d duplicates without a restart", dups)
	}
}

// TestIntegrationReplicatorResumes: a replicator stopped after some
// batches and started again from its saved offsets copies the rest, with
// no loss, and copies again nothing it saved.
func TestIntegrationReplicatorResumes(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_" + suffix()
	replTopic(t, src, dst, dstCluster, topic)
	replProduce(t, src, topic, 10, 0)
	store := &memPositions{}
	first := replRun(t, src, dst, dstCluster, topic, store, 1, 3) // one batch of one queue
	replProduce(t, src, topic, 10, 10)
	srcMsgs := replRead(t, src, topic)
	replRun(t, src, dst, dstCluster, topic, store, int64(20*len(srcMsgs))-first.Copied(), 3)
	if dups := checkCopies(t, srcMsgs, replRead(t, dst, topic)); dups != 0 {
		t.Fatalf("%d duplicates after a clean stop", dups)
	}
}

var _ runtime.PositionStore = (*memPositions)(nil)

// TestIntegrationReplicatorFewerTargetQueues: when the target topic has
// fewer queues than the source, each key goes to one target queue and
// each source queue's messages of a key stay in order.
func TestIntegrationReplicatorFewerTargetQueues(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_" + suffix()
	replTopic(t, src, dst, dstCluster, topic)
	replCreate(t, dst, dstCluster, 2, topic)
	const perQueue = 14
	replProduce(t, src, topic, perQueue, 0)
	srcMsgs := replRead(t, src, topic)
	replRun(t, src, dst, dstCluster, topic, &memPositions{}, int64(perQueue*len(srcMsgs)), 4)
	dstMsgs := replRead(t, dst, topic)
	if len(dstMsgs) != 2 {
		t.Fatalf("target has %d queues, want the 2 it was made with", len(dstMsgs))
	}
	keyQueue := map[string]int{}
	last := map[string]int64{} // source broker/queue/key -> last offset seen
	n := 0
	for i, msgs := range dstMsgs {
		for _, m := range msgs {
			n++
			p := m.GetProperties()
			k := m.GetKeys()
			if q, ok := keyQueue[k]; ok && q != i {
				t.Fatalf("key %q in target queues %d and %d", k, q, i)
			}
			keyQueue[k] = i
			off, _ := strconv.ParseInt(p[SrcOffsetProperty], 10, 64)
			sk := p[SrcBrokerProperty] + "/" + p[SrcQueueProperty] + "/" + k
			if prev, ok := last[sk]; ok && off <= prev {
				t.Fatalf("%s: offset %d after %d", sk, off, prev)
			}
			last[sk] = off
		}
	}
	if n != perQueue*len(srcMsgs) || len(keyQueue) != 7 {
		t.Fatalf("%d copies of %d keys, want %d of 7", n, len(keyQueue), perQueue*len(srcMsgs))
	}
}

// TestIntegrationReplicatorFromNowKeepsItsStart: with from: now, where a
// queue started is saved at once, so messages sent between a first start
// (that copied nothing) and a restart are copied.
func TestIntegrationReplicatorFromNowKeepsItsStart(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_" + suffix()
	replTopic(t, src, dst, dstCluster, topic)
	replProduce(t, src, topic, 3, 0) // before the start: not copied
	cfg := ReplicatorConfig{NameServers: src, Topics: []string{topic}, From: ReplicateFromNow}
	store := &memPositions{}
	replRunConfig(t, cfg, dst, dstCluster, store, 0)
	replProduce(t, src, topic, 5, 3)
	n := int64(5 * len(replRead(t, src, topic)))
	replRunConfig(t, cfg, dst, dstCluster, store, n)
	for i, msgs := range replRead(t, dst, topic) {
		if len(msgs) != 5 {
			t.Fatalf("target queue %d holds %d copies, want the 5 sent after the first start", i, len(msgs))
		}
		if off := msgs[0].GetProperties()[SrcOffsetProperty]; off != "3" {
			t.Fatalf("target queue %d begins with source offset %s, want 3", i, off)
		}
	}
}

// TestIntegrationReplicatorRefusedMessageIsFatal: a message the target
// refuses for good (over its maxMessageSize) stops the replicator with a
// fatal error at once, instead of being tried again and again.
func TestIntegrationReplicatorRefusedMessageIsFatal(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_" + suffix()
	replTopic(t, src, dst, dstCluster, topic)
	r := replRunConfig(t, ReplicatorConfig{NameServers: src, Topics: []string{topic}}, dst, dstCluster, &memPositions{}, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	big := &primitive.MessageExt{Message: primitive.Message{Topic: topic, Body: make([]byte, 4<<20+1)}}
	err := r.send(ctx, r.queues[0], big)
	if err == nil || !runtime.IsFatal(err) || !strings.Contains(err.Error(), "code 13") {
		t.Fatalf("send of a message over the target's limit: %v, want a fatal MESSAGE_ILLEGAL", err)
	}
}
