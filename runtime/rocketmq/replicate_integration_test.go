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

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// replClusters returns the name servers of the replicator's source (the
// main cluster) and target (servers.sh start rocketmq-b) and its cluster.
func replClusters(t testing.TB) (src, dst []string, dstCluster string) {
	t.Helper()
	v := schematest.NeedServers(t, "SLUICE_ROCKETMQ_NAMESRV", "SLUICE_ROCKETMQ_B_NAMESRV", "SLUICE_ROCKETMQ_B_CLUSTER")
	return strings.Split(v[0], ","), strings.Split(v[1], ","), v[2]
}

// replTopic creates topic with 4 queues per master on the source and
// deletes it on both clusters when the test ends.
func replTopic(t *testing.T, src, dst []string, dstCluster, topic string) {
	t.Helper()
	replCreate(t, src, DefaultCluster, 4, topic)
	cleanupTopics(t, src, DefaultCluster, topic)
	cleanupTopics(t, dst, dstCluster, topic)
}

// cleanupTopics deletes those of topics that exist from the masters of
// cluster when the test ends.
func cleanupTopics(t testing.TB, ns []string, cluster string, topics ...string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ci, err := fetchClusterInfo(ctx, ns)
		if err != nil {
			t.Logf("cleanup: %v", err)
			return
		}
		adm, err := newAdmin(Config{NameServers: ns})
		if err != nil {
			t.Logf("cleanup: %v", err)
			return
		}
		defer adm.Close()
		for _, topic := range topics {
			if _, err := fetchRoute(ctx, ns, topic); err != nil {
				continue // not made by the test
			}
			for _, addr := range ci.masters(cluster) {
				if err := adm.DeleteTopic(ctx, admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(addr), admin.WithNameSrvAddr(ns)); err != nil {
					t.Logf("cleanup: delete topic %s: %v", topic, err)
				}
			}
		}
	})
}

// replCreate creates topic with queues queues on each master of cluster.
func replCreate(t testing.TB, ns []string, cluster string, queues int, topic string) {
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
// default 4 KiB compression threshold, which its producer keeps, unlike
// sluice's, so that the body reaches the broker compressed), keys, tags
// and a user property.
func replProduce(t *testing.T, ns []string, topic string, perQueue, from int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	qs, err := tailQueues(ctx, ns, topic)
	if err != nil {
		t.Fatal(err)
	}
	opts := producerOptions(Config{NameServers: ns, Pipeline: "it-repl-" + suffix()}, "src", "src")
	prod, err := rmq.NewProducer(append(opts, producer.WithCompressMsgBodyOverHowmuch(4096))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prod.Shutdown() }()
	last := make([]int64, len(qs)) // the offset of the last message sent to each queue
	for i := from; i < from+perQueue; i++ {
		for qi, q := range qs {
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
					last[qi] = r.QueueOffset
					break
				}
				if attempt > 5 {
					t.Fatalf("send: %v %v", r, err)
				}
				time.Sleep(time.Second)
			}
		}
	}
	// SEND_OK comes before the broker adds a message to its consume
	// queue: wait until each queue serves the last message to a pull.
	for qi, q := range qs {
		for {
			end, err := queueOffset(ctx, q, reqGetMaxOffset)
			if err != nil {
				t.Fatal(err)
			}
			if end > last[qi] {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// replRead reads every message of topic on ns, per queue in offset order
// (queues in broker and id order).
func replRead(t *testing.T, ns []string, topic string) [][]*primitive.MessageExt {
	t.Helper()
	return replReadAs(t, ns, primitive.Credentials{}, topic)
}

// replReadAs is replRead with requests signed with cred.
func replReadAs(t *testing.T, ns []string, cred primitive.Credentials, topic string) [][]*primitive.MessageExt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	qs, err := tailQueues(ctx, ns, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]*primitive.MessageExt, len(qs))
	for i, q := range qs {
		q.cred = cred
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
	return replRunUntil(t, cfg, dst, dstCluster, store, func(r *Replicator) bool { return r.Copied() >= want })
}

// replDrain runs a replicator until it has read every message its source
// queues held when it started (copied or not).
func replDrain(t *testing.T, cfg ReplicatorConfig, dst []string, dstCluster string, store *memPositions) *Replicator {
	t.Helper()
	var ends []int64
	return replRunUntil(t, cfg, dst, dstCluster, store, func(r *Replicator) bool {
		if ends == nil {
			for _, q := range r.queues {
				end, err := queueOffset(context.Background(), q.src, reqGetMaxOffset)
				if err != nil {
					t.Fatal(err)
				}
				ends = append(ends, end)
			}
		}
		for i, q := range r.queues {
			if q.src.next < ends[i] {
				return false
			}
		}
		return true
	})
}

// replRunUntil runs a replicator with cfg to dst, resuming from store,
// until done.
func replRunUntil(t *testing.T, cfg ReplicatorConfig, dst []string, dstCluster string, store *memPositions, done func(*Replicator) bool) *Replicator {
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
	for !done(r) {
		if _, err := r.Read(ctx); err != nil {
			t.Fatalf("after %d messages: %v", r.Copied(), err)
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
	replCount(t, dst, topic, DefaultCluster, int(total))
	if dups := checkCopies(t, srcMsgs, replRead(t, dst, topic)); dups != 0 {
		t.Fatalf("%d duplicates without a restart", dups)
	}
}

// TestIntegrationReplicatorCopiesBatches: messages that their producer
// sent as one batch (one born timestamp) are copied together, byte for
// byte: bodies, flags, properties and born timestamps, in order, each
// source queue to the target queue of its place.
func TestIntegrationReplicatorCopiesBatches(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_batch_" + suffix()
	replTopic(t, src, dst, dstCluster, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	qs, err := tailQueues(ctx, src, topic)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := rmq.NewProducer(producerOptions(Config{NameServers: src, Pipeline: "it-repl-" + suffix()}, "src", "src")...)
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prod.Shutdown() }()
	const batches, per = 3, 5
	for b := range batches {
		for _, q := range qs {
			var msgs []*primitive.Message
			for i := range per {
				m := primitive.NewMessage(topic, []byte{0xff, 0x00, byte(b), byte(i), byte(q.id), 0xc3})
				m.WithKeys([]string{fmt.Sprintf("k-%d", i%3)})
				m.WithTag("tag-" + strconv.Itoa(i%2))
				m.WithProperty("user_prop", "héllo "+strconv.Itoa(b*per+i))
				m.Flag = int32(i)
				m.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: q.broker, QueueId: q.id}
				msgs = append(msgs, m)
			}
			if r, err := prod.SendSync(ctx, msgs...); err != nil || r.Status != primitive.SendOK {
				t.Fatalf("send: %v %v", r, err)
			}
		}
	}
	total := batches * per * len(qs)
	if n := benchCount(t, src, topic, total); n != total {
		t.Fatalf("%d of %d messages on the source", n, total)
	}
	srcMsgs := replRead(t, src, topic)
	r := replRun(t, src, dst, dstCluster, topic, &memPositions{}, int64(total), 64)
	if n := r.sends.Load(); n > batches*int64(len(qs)) {
		t.Errorf("%d sends for %d batches of %d messages", n, batches*len(qs), per)
	}
	replCount(t, dst, topic, DefaultCluster, total)
	dstMsgs := replRead(t, dst, topic)
	if dups := checkCopies(t, srcMsgs, dstMsgs); dups != 0 {
		t.Fatalf("%d duplicates without a restart", dups)
	}
	for i, msgs := range dstMsgs {
		for j, m := range msgs {
			if m.Flag != int32(j%per) || (j%per > 0 && m.BornTimestamp != msgs[j-1].BornTimestamp) {
				t.Fatalf("queue %d offset %d: flag %d, born %d: not as sent in its batch", i, j, m.Flag, m.BornTimestamp)
			}
		}
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
	replCount(t, dst, topic, DefaultCluster, 20*len(srcMsgs))
	if dups := checkCopies(t, srcMsgs, replRead(t, dst, topic)); dups != 0 {
		t.Fatalf("%d duplicates after a clean stop", dups)
	}
}

var _ runtime.PositionStore = (*memPositions)(nil)

// TestIntegrationReplicatorFewerTargetQueues: when the target topic has
// fewer queues than the source and target_topics is keep, each key goes
// to one target queue and each source queue's messages of a key stay in
// order.
func TestIntegrationReplicatorFewerTargetQueues(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_" + suffix()
	replTopic(t, src, dst, dstCluster, topic)
	replCreate(t, dst, dstCluster, 2, topic)
	const perQueue = 14
	replProduce(t, src, topic, perQueue, 0)
	srcMsgs := replRead(t, src, topic)
	cfg := ReplicatorConfig{NameServers: src, Topics: []string{topic}, BatchSize: 4, TargetTopics: TargetTopicsKeep}
	replRunConfig(t, cfg, dst, dstCluster, &memPositions{}, int64(perQueue*len(srcMsgs)))
	replCount(t, dst, topic, DefaultCluster, perQueue*len(srcMsgs))
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
	replCount(t, dst, topic, DefaultCluster, int(n))
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
	_, err := r.send(ctx, r.queues[0], []*primitive.MessageExt{big})
	if err == nil || !runtime.IsFatal(err) || !strings.Contains(err.Error(), "code 13") {
		t.Fatalf("send of a message over the target's limit: %v, want a fatal MESSAGE_ILLEGAL", err)
	}
}

// replCount counts the messages of topic on ns and those among them
// copied from cluster.
// It waits (up to 30s) until there are at least want: a copy the target
// acknowledged may not be in its consume queue yet.
func replCount(t *testing.T, ns []string, topic, cluster string, want int) (all, from int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		all, from = 0, 0
		for _, msgs := range replRead(t, ns, topic) {
			for _, m := range msgs {
				all++
				if m.GetProperty(SrcClusterProperty) == cluster {
					from++
				}
			}
		}
		if all >= want || time.Now().After(deadline) {
			return all, from
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestIntegrationReplicatorActiveActiveIdentity: with A→B and B→A on the
// same topic (identity naming), each message is copied once to the other
// cluster and never back.
func TestIntegrationReplicatorActiveActiveIdentity(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_" + suffix()
	replTopic(t, src, dst, dstCluster, topic)
	replCreate(t, dst, dstCluster, 4, topic)
	replProduce(t, src, topic, 2, 0)
	replProduce(t, dst, topic, 3, 0)
	nA, _ := replCount(t, src, topic, "", 0)
	nB, _ := replCount(t, dst, topic, "", 0)
	aToB := ReplicatorConfig{NameServers: src, Topics: []string{topic}, Cluster: DefaultCluster}
	bToA := ReplicatorConfig{NameServers: dst, Topics: []string{topic}, Cluster: dstCluster}
	storeAB, storeBA := &memPositions{}, &memPositions{}
	if r := replDrain(t, aToB, dst, dstCluster, storeAB); r.Copied() != int64(nA) {
		t.Fatalf("A→B copied %d, want A's %d", r.Copied(), nA)
	}
	rBA, err := NewReplicator(bToA, Config{NameServers: src, Pipeline: "it-repl"}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if rBA.dst.Cluster != DefaultCluster {
		t.Fatalf("B→A's target cluster %q", rBA.dst.Cluster)
	}
	if r := replDrain(t, bToA, src, DefaultCluster, storeBA); r.Copied() != int64(nB) || r.Progress()["replicator_skipped"] != float64(nA) {
		t.Fatalf("B→A copied %d, skipped %v; want B's own %d, and the %d copies from A skipped", r.Copied(), r.Progress()["replicator_skipped"], nB, nA)
	}
	if r := replDrain(t, aToB, dst, dstCluster, storeAB); r.Copied() != 0 {
		t.Fatalf("A→B copied %d of B's copies back", r.Copied())
	}
	if all, fromB := replCount(t, src, topic, dstCluster, nA+nB); all != nA+nB || fromB != nB {
		t.Fatalf("A holds %d messages, %d from B; want %d, %d", all, fromB, nA+nB, nB)
	}
	if all, fromA := replCount(t, dst, topic, DefaultCluster, nA+nB); all != nA+nB || fromA != nA {
		t.Fatalf("B holds %d messages, %d from A; want %d, %d", all, fromA, nA+nB, nA)
	}
}

// TestIntegrationReplicatorActiveActivePrefix: A→B with topic_prefix a_
// and B→A with b_, where B→A also reads A's copies (a_<topic>): B's own
// messages reach A as b_<topic>, and A's copies are not copied back.
func TestIntegrationReplicatorActiveActivePrefix(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_" + suffix()
	replTopic(t, src, dst, dstCluster, topic)
	replCreate(t, dst, dstCluster, 4, topic)
	cleanupTopics(t, dst, dstCluster, "a_"+topic)
	cleanupTopics(t, src, DefaultCluster, "b_"+topic, "b_a_"+topic)
	replProduce(t, src, topic, 2, 0)
	replProduce(t, dst, topic, 3, 0)
	nA, _ := replCount(t, src, topic, "", 0)
	nB, _ := replCount(t, dst, topic, "", 0)
	replDrain(t, ReplicatorConfig{NameServers: src, Topics: []string{topic}, TopicPrefix: "a_"}, dst, dstCluster, &memPositions{})
	if all, fromA := replCount(t, dst, "a_"+topic, DefaultCluster, nA); all != nA || fromA != nA {
		t.Fatalf("B's a_%s holds %d messages, %d from A; want %d", topic, all, fromA, nA)
	}
	if all, _ := replCount(t, dst, topic, "", nB); all != nB {
		t.Fatalf("B's %s holds %d messages, want its own %d", topic, all, nB)
	}
	bToA := ReplicatorConfig{NameServers: dst, Topics: []string{topic, "a_" + topic}, Cluster: dstCluster, TopicPrefix: "b_"}
	if r := replDrain(t, bToA, src, DefaultCluster, &memPositions{}); r.Copied() != int64(nB) {
		t.Fatalf("B→A copied %d, want B's own %d", r.Copied(), nB)
	}
	if all, fromB := replCount(t, src, "b_"+topic, dstCluster, nB); all != nB || fromB != nB {
		t.Fatalf("A's b_%s holds %d messages, %d from B; want %d", topic, all, fromB, nB)
	}
	if all, _ := replCount(t, src, "b_a_"+topic, "", 0); all != 0 {
		t.Fatalf("A's b_a_%s holds %d of A's own messages copied back", topic, all)
	}
}

// TestIntegrationReplicatorFilters: a tag expression copies only the
// messages with those tags, and properties only those with these values.
func TestIntegrationReplicatorFilters(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_" + suffix()
	replTopic(t, src, dst, dstCluster, topic)
	cleanupTopics(t, dst, dstCluster, "t_"+topic, "p_"+topic)
	const perQueue = 3
	replProduce(t, src, topic, perQueue, 0) // tag-<queue id>, user_prop "héllo <i>"
	srcMsgs := replRead(t, src, topic)
	var wantTags, wantProps int
	for _, msgs := range srcMsgs {
		for _, m := range msgs {
			if tag := m.GetTags(); tag == "tag-0" || tag == "tag-2" {
				wantTags++
			}
			if m.GetProperty("user_prop") == "héllo 1" {
				wantProps++
			}
		}
	}
	if wantTags == 0 || wantTags == perQueue*len(srcMsgs) || wantProps == 0 {
		t.Fatalf("the test's messages: %d with the tags, %d with the property", wantTags, wantProps)
	}
	tags := ReplicatorConfig{NameServers: src, Topics: []string{topic}, TopicPrefix: "t_", Tags: " tag-0||tag-2 "}
	if r := replDrain(t, tags, dst, dstCluster, &memPositions{}); r.Copied() != int64(wantTags) || r.Progress()["replicator_skipped"] != float64(len(srcMsgs)*perQueue-wantTags) {
		t.Fatalf("tags copied %d, skipped %v, want %d of %d", r.Copied(), r.Progress()["replicator_skipped"], wantTags, len(srcMsgs)*perQueue)
	}
	if all, _ := replCount(t, dst, "t_"+topic, DefaultCluster, wantTags); all != wantTags {
		t.Fatalf("t_%s holds %d copies, want %d", topic, all, wantTags)
	}
	for _, msgs := range replRead(t, dst, "t_"+topic) {
		for _, m := range msgs {
			if tag := m.GetTags(); tag != "tag-0" && tag != "tag-2" {
				t.Fatalf("copy with tag %q", tag)
			}
		}
	}
	props := ReplicatorConfig{NameServers: src, Topics: []string{topic}, TopicPrefix: "p_", Properties: map[string]string{"user_prop": "héllo 1"}}
	replDrain(t, props, dst, dstCluster, &memPositions{})
	replCount(t, dst, "p_"+topic, DefaultCluster, wantProps)
	n := 0
	for _, msgs := range replRead(t, dst, "p_"+topic) {
		for _, m := range msgs {
			n++
			if p := m.GetProperty("user_prop"); p != "héllo 1" {
				t.Fatalf("copy with user_prop %q", p)
			}
		}
	}
	if n != wantProps {
		t.Fatalf("properties copied %d, want %d", n, wantProps)
	}
}
