package rocketmq

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
)

// TestIntegrationReplicatorACL runs the replicator between two clusters with
// authentication and authorization on (the ACL instance is both: its topic
// is copied to the prefixed topic "b_…" of the same brokers, and the two
// sides sign with two users), each user a normal one with the actions of an
// application (no super user): the copies, the heartbeats written to and
// copied from the source, the group's settings copied, its offsets read on
// the source, checkpointed and written on the target, and the failover's
// report all work. A source user that may not subscribe stops the
// replicator with a fatal ErrAuth that names the source section's keys, a
// target user that may not publish one that names the transport's.
func TestIntegrationReplicatorACL(t *testing.T) {
	ns, superKey, superSecret := aclServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	super := primitive.Credentials{AccessKey: superKey, SecretKey: superSecret}
	app := []string{"Pub", "Sub", "Create", "Update", "Get"}
	srcKey, srcSecret := aclUser(ctx, t, ns, superKey, superSecret, "repl-src", app...)
	dstKey, dstSecret := aclUser(ctx, t, ns, superKey, superSecret, "repl-dst", app...)
	topic, hb := "it_repl_acl_"+suffix(), "it_repl_aclhb_"+suffix()
	group := "it_repl_aclg_" + suffix()
	const prefix = "b_"
	superCfg := Config{NameServers: ns, Cluster: DefaultCluster, Queues: 2, AccessKey: superKey, SecretKey: superSecret}
	cleanupTopics(t, ns, DefaultCluster, topic, hb, prefix+topic, prefix+hb)
	adm, err := newAdmin(superCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := createTopic(ctx, adm, superCfg, topic); err != nil {
		t.Fatal(err)
	}

	// Messages, and a group that read 3 of each queue, on the source.
	const perQueue, read = 6, 3
	qs, err := tailQueues(ctx, ns, topic)
	if err != nil {
		t.Fatal(err)
	}
	// All born in the same millisecond: the replicator copies a queue's
	// messages in one signed batch send.
	born := time.Now().UnixMilli()
	for i := range perQueue {
		for _, q := range qs {
			pm := &primitive.Message{}
			pm.WithProperty("user_prop", strconv.Itoa(i))
			h, _, err := invokeSigned(ctx, super, q.addr, reqSendMessage,
				sendHeader("it-repl-acl", topic, queue{Broker: q.broker, ID: q.id}, born, 0, pm.MarshallProperties()), []byte{0xff, 0x00, byte(i)})
			if err != nil || h.Code != resSuccess {
				t.Fatalf("send: %v code %d %s", err, h.Code, h.Remark)
			}
		}
	}
	for _, q := range qs {
		if err := setGroupOffset(ctx, super, q.addr, group, topic, q.id, read); err != nil {
			t.Fatal(err)
		}
	}

	cfg := ReplicatorConfig{NameServers: ns, TargetCluster: "B", Topics: []string{topic}, TopicPrefix: prefix,
		AccessKey: srcKey, SecretKey: srcSecret, Groups: []string{group}, OffsetSyncMessages: 1, SyncGroupOffsets: true,
		HeartbeatTopic: hb, HeartbeatInterval: 100 * time.Millisecond, CheckpointInterval: time.Hour}
	dst := Config{NameServers: ns, Cluster: DefaultCluster, Pipeline: "it-repl-acl", AccessKey: dstKey, SecretKey: dstSecret}
	r, err := NewReplicator(cfg, dst, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	r.KeepPositions(&lockedPositions{}, "it-repl-acl")
	if err := r.Open(ctx, nil); err != nil {
		t.Fatalf("open: %v", err)
	}
	defer r.Close()
	for r.Copied() < int64(perQueue*len(qs)) || r.lastBeat.Load() == 0 {
		if _, err := r.Read(ctx); err != nil {
			t.Fatalf("after %d copies: %v", r.Copied(), err)
		}
	}
	if r.sends.Load() >= r.Copied() {
		t.Errorf("%d sends for %d copies: no batch send", r.sends.Load(), r.Copied())
	}
	if err := r.Checkpoint(ctx); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}

	// The copies, in the target queue of their own place.
	srcMsgs := replReadAs(t, ns, super, topic)
	dstMsgs := replReadAs(t, ns, super, prefix+topic)
	if len(dstMsgs) != len(srcMsgs) {
		t.Fatalf("target has %d queues, source %d", len(dstMsgs), len(srcMsgs))
	}
	for i := range srcMsgs {
		if len(dstMsgs[i]) != perQueue {
			t.Fatalf("target queue %d holds %d copies, want %d", i, len(dstMsgs[i]), perQueue)
		}
		for j, d := range dstMsgs[i] {
			if s := srcMsgs[i][j]; string(d.Body) != string(s.Body) || d.GetProperty(SrcOffsetProperty) != strconv.Itoa(j) || d.GetProperty(SrcClusterProperty) != DefaultCluster {
				t.Fatalf("target queue %d offset %d: %x %v, source %x", i, j, d.Body, d.GetProperties(), s.Body)
			}
		}
	}
	beats := 0
	for _, msgs := range replReadAs(t, ns, super, prefix+hb) {
		beats += len(msgs)
	}
	if beats == 0 {
		t.Fatal("no heartbeat copied")
	}
	// The group: its settings on the target, and its offsets written there.
	table, err := groupConfigs(ctx, super, qs[0].addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := table[group]; !ok {
		t.Fatalf("group %s not on the target", group)
	}
	dqs, err := tailQueues(ctx, ns, prefix+topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range dqs {
		off, ok, err := groupOffset(ctx, super, q.addr, group, prefix+topic, q.id)
		if err != nil || !ok || off != read {
			t.Fatalf("group offset on the target queue %d: %d %v %v, want %d", q.id, off, ok, err, read)
		}
	}
	sts, err := r.Groups(ctx, true)
	if err != nil {
		t.Fatalf("failover: %v", err)
	}
	if st := sts.([]GroupStatus); len(st) != 1 || st[0].Queues != len(qs) || st[0].Kept != len(qs) || st[0].DuplicateWindow != 0 {
		t.Fatalf("failover: %+v", st)
	}

	// Users without the permissions: fatal, naming the keys to fix.
	refused := func(what string, err error, field string) {
		t.Helper()
		if err == nil || !errors.Is(err, ErrAuth) || !runtime.IsFatal(err) || !strings.Contains(err.Error(), field) {
			t.Fatalf("%s: %v, want a fatal ErrAuth naming %s", what, err, field)
		}
		for _, s := range []string{srcSecret, dstSecret, superSecret} {
			if strings.Contains(err.Error(), s) {
				t.Fatalf("%s: a secret in %q", what, err)
			}
		}
	}
	// A checkpoint whose read of the group's offsets is refused.
	noneKey, noneSecret := aclUser(ctx, t, ns, superKey, superSecret, "repl-none")
	r.src.AccessKey, r.src.SecretKey = noneKey, noneSecret
	refused("checkpoint by a source user without permissions", r.Checkpoint(ctx), "source.access_key")
	run := func(src ReplicatorConfig, dst Config) error {
		src.Groups, src.HeartbeatTopic = nil, ""
		r, err := NewReplicator(src, dst, quietLog())
		if err != nil {
			return err
		}
		if err := r.Open(ctx, nil); err != nil {
			return err
		}
		defer r.Close()
		_, err = r.Read(ctx)
		return err
	}
	nosubKey, nosubSecret := aclUser(ctx, t, ns, superKey, superSecret, "repl-nosub", "Pub", "Create", "Update", "Get")
	bad := cfg
	bad.AccessKey, bad.SecretKey = nosubKey, nosubSecret
	refused("source user without Sub", run(bad, dst), "source.access_key")
	badDst := dst
	nopubKey, nopubSecret := aclUser(ctx, t, ns, superKey, superSecret, "repl-nopub", "Sub", "Create", "Update", "Get")
	badDst.AccessKey, badDst.SecretKey = nopubKey, nopubSecret
	replMore := cfg
	replMore.TopicPrefix = "c_"
	cleanupTopics(t, ns, DefaultCluster, "c_"+topic)
	refused("target user without Pub", run(replMore, badDst), "transport.access_key")
}
