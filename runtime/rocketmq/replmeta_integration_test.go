package rocketmq

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
)

// TestIntegrationReplicatorCopiesGroups: a replicator's groups are copied
// with their settings to every master broker of the target; a group the
// source does not have is left out.
func TestIntegrationReplicatorCopiesGroups(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_sg_" + suffix()
	group, absent := "it_repl_sgg_"+suffix(), "it_repl_sga_"+suffix()
	replTopic(t, src, dst, dstCluster, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	masters := func(ns []string, cluster string) []string {
		ci, err := fetchClusterInfo(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		return ci.masters(cluster)
	}
	// Settings other than the broker's defaults.
	config, err := json.Marshal(map[string]any{"groupName": group, "consumeEnable": true, "consumeFromMinEnable": false,
		"consumeBroadcastEnable": false, "consumeMessageOrderly": true, "retryQueueNums": 1, "retryMaxTimes": 3,
		"brokerId": 0, "whichBrokerWhenConsumeSlowly": 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range masters(src, DefaultCluster) {
		if err := putGroup(ctx, primitive.Credentials{}, a, group, config); err != nil {
			t.Fatal(err)
		}
	}

	cfg := ReplicatorConfig{NameServers: src, Topics: []string{topic}, Groups: []string{group, absent}}
	r, err := NewReplicator(cfg, Config{NameServers: dst, Cluster: dstCluster, Pipeline: "it-repl-sg"}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, a := range masters(dst, dstCluster) {
		table, err := groupConfigs(ctx, primitive.Credentials{}, a)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := table[absent]; ok {
			t.Fatalf("%s: group %s, absent on the source, was created", a, absent)
		}
		var got struct {
			Orderly   bool `json:"consumeMessageOrderly"`
			Broadcast bool `json:"consumeBroadcastEnable"`
			FromMin   bool `json:"consumeFromMinEnable"`
			Retries   int  `json:"retryMaxTimes"`
		}
		if c, ok := table[group]; !ok {
			t.Fatalf("%s: group %s not copied", a, group)
		} else if err := json.Unmarshal(c, &got); err != nil {
			t.Fatal(err)
		}
		if !got.Orderly || got.Broadcast || got.FromMin || got.Retries != 3 {
			t.Fatalf("%s: group %s copied as %+v", a, group, got)
		}
	}
}

// TestIntegrationReplicatorSourceGainsQueues: the target topic is created
// with the source's queue count and message type; when a source broker
// gains queues while the replicator runs, the target topic gains as many,
// the new source queues are copied to target queues of their own, and
// every queue copied before keeps its target queue (also after a restart),
// so no target queue mixes two source queues. A name server that does not
// answer when the replicator looks does not stop it. With target_topics: keep, a
// target that cannot take the new queues stops the replicator with a
// fatal error that says what to do.
func TestIntegrationReplicatorSourceGainsQueues(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_gq_" + suffix()
	replTopic(t, src, dst, dstCluster, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	none := primitive.Credentials{}
	qs, err := tailQueues(ctx, src, topic)
	if err != nil {
		t.Fatal(err)
	}
	brokers := map[string]string{} // source broker name -> address
	for _, q := range qs {
		brokers[q.broker] = q.addr
	}
	for _, addr := range brokers {
		if err := putTopicSettings(ctx, none, addr, topic, topicSettings{Read: 4, Write: 4, Perm: 6, Attributes: map[string]string{messageTypeAttribute: "FIFO"}}); err != nil {
			t.Fatal(err)
		}
	}
	replProduce(t, src, topic, 2, 0)
	store := &memPositions{}
	cfg := ReplicatorConfig{NameServers: src, Topics: []string{topic}, BatchSize: 4, TopicsRefresh: time.Millisecond}
	r := replRunConfig(t, cfg, dst, dstCluster, store, int64(2*len(qs)))
	before := maps.Clone(r.pos.Targets)
	dqs, err := tailQueues(ctx, dst, topic)
	if err != nil {
		t.Fatal(err)
	}
	set, err := topicSettingsAt(ctx, none, dqs[0].addr, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(dqs) != len(qs) || set.Attributes[messageTypeAttribute] != "FIFO" {
		t.Fatalf("target topic: %d queues, settings %+v; want %d queues and message type FIFO", len(dqs), set, len(qs))
	}

	// broker-a gains 2 queues, and every queue 2 messages.
	if err := putTopicSettings(ctx, none, brokers["broker-a"], topic, topicSettings{Read: 6, Write: 6, Perm: 6, Attributes: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	for len(qs) != 10 {
		time.Sleep(20 * time.Millisecond)
		if qs, err = tailQueues(ctx, src, topic); err != nil {
			t.Fatalf("%v (the source route shows %d queues, want 10)", err, len(qs))
		}
	}
	replProduce(t, src, topic, 2, 2)
	r = replRunConfig(t, cfg, dst, dstCluster, store, int64(2*len(qs)))
	for k, tq := range before {
		if r.pos.Targets[k] != tq {
			t.Fatalf("source queue %s moved from target queue %+v to %+v", k, tq, r.pos.Targets[k])
		}
	}
	if len(r.pos.Targets) != len(qs) {
		t.Fatalf("%d source queues mapped, want %d: %v", len(r.pos.Targets), len(qs), r.pos.Targets)
	}
	owner := map[targetQueue]string{}
	for k, tq := range r.pos.Targets {
		if o, ok := owner[tq]; ok {
			t.Fatalf("source queues %s and %s both go to target queue %+v", o, k, tq)
		}
		owner[tq] = k
	}
	// Each target queue holds one source queue, in order and complete.
	srcMsgs := map[string][]*primitive.MessageExt{}
	for i, msgs := range replRead(t, src, topic) {
		srcMsgs[topic+"/"+qs[i].broker+"/"+strconv.Itoa(qs[i].id)] = msgs
	}
	if dqs, err = tailQueues(ctx, dst, topic); err != nil {
		t.Fatal(err)
	}
	if len(dqs) != len(qs) {
		t.Fatalf("target topic has %d queues, want %d", len(dqs), len(qs))
	}
	for i, msgs := range replRead(t, dst, topic) {
		key := owner[targetQueue{Topic: topic, Broker: dqs[i].broker, Queue: dqs[i].id}]
		want := srcMsgs[key]
		if len(msgs) != len(want) {
			t.Fatalf("target queue %d (source %s): %d copies, want %d", i, key, len(msgs), len(want))
		}
		for j, m := range msgs {
			p := m.GetProperties()
			if got := topic + "/" + p[SrcBrokerProperty] + "/" + p[SrcQueueProperty]; got != key || p[SrcOffsetProperty] != strconv.Itoa(j) || !bytes.Equal(m.Body, want[j].Body) {
				t.Fatalf("target queue %d offset %d: a copy of %s offset %s, want %s offset %d", i, j, got, p[SrcOffsetProperty], key, j)
			}
		}
	}

	// keep: the target cannot take a new source queue.
	topic2 := "it_repl_gk_" + suffix()
	replCreate(t, src, DefaultCluster, 1, topic2)
	cleanupTopics(t, src, DefaultCluster, topic2)
	cleanupTopics(t, dst, dstCluster, topic2)
	keep := ReplicatorConfig{NameServers: src, Topics: []string{topic2}, TopicsRefresh: time.Millisecond, TargetTopics: TargetTopicsKeep}
	rk, err := NewReplicator(keep, Config{NameServers: dst, Cluster: dstCluster, Pipeline: "it-repl-gk"}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if err := rk.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	defer rk.Close()
	// A name server that does not answer a refresh does not stop the copy.
	rk.src.NameServers = []string{"127.0.0.1:1"}
	if _, err := rk.Read(ctx); err != nil {
		t.Fatalf("a refresh without a name server stopped the copy: %v", err)
	}
	rk.src.NameServers = src
	if err := putTopicSettings(ctx, none, brokers["broker-a"], topic2, topicSettings{Read: 2, Write: 2, Perm: 6, Attributes: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err = rk.Read(ctx); err != nil || len(rk.queueList()) > 2 {
			break
		}
	}
	if err == nil || !runtime.IsFatal(err) || !strings.Contains(err.Error(), "target_topics: sync") || !strings.Contains(err.Error(), "mqadmin updateTopic") {
		t.Fatalf("a source queue without a target queue of its own under target_topics: keep: %v (%d queues), want a fatal error saying what to do", err, len(rk.queueList()))
	}
	t.Log(err)
}
