package rocketmq

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestIntegrationReplicatorHeartbeatsAndMetrics: the replicator writes
// heartbeats to the source and copies them; its metrics report the
// heartbeat age, the checkpoint age, the lag of each source queue after a
// pull, the offset-sync age (0 once every queue ends on a sync) and the
// failed sends.
func TestIntegrationReplicatorHeartbeatsAndMetrics(t *testing.T) {
	src, dst, dstCluster := replClusters(t)
	topic := "it_repl_m_" + suffix()
	hb := "it_repl_hb_" + suffix()
	replTopic(t, src, dst, dstCluster, topic)
	cleanupTopics(t, src, DefaultCluster, hb)
	cleanupTopics(t, dst, dstCluster, hb)
	const perQueue, batch = 10, 4
	replProduce(t, src, topic, perQueue, 0)
	group := "it_repl_mg_" + suffix()
	commitRead(t, src, topic, group, func(int) int64 { return 5 })

	cfg := ReplicatorConfig{NameServers: src, Topics: []string{topic}, BatchSize: batch, Groups: []string{group},
		HeartbeatTopic: hb, OffsetSyncInterval: time.Hour, CheckpointInterval: time.Hour}
	r, err := NewReplicator(cfg, Config{NameServers: dst, Cluster: dstCluster, Pipeline: "it-repl-m"}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r.readFor = 0 // a Read copies one batch of each queue
	r.KeepPositions(&lockedPositions{}, "it-repl-m")
	if err := r.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := r.Progress()
	if _, ok := p["replicator_heartbeat_age_seconds"]; ok || p["replicator_send_errors"] != 0 || p["replicator_offset_sync_age_seconds"] != 0 {
		t.Fatalf("before the first copy: %v", p)
	}
	if _, ok := p["replicator_checkpoint_age_seconds"]; ok {
		t.Fatalf("a checkpoint age before the first checkpoint: %v", p)
	}

	// One batch of each queue: 6 messages left in each, and copies after
	// the first sync that are not synced yet.
	if _, err := r.Read(ctx); err != nil {
		t.Fatal(err)
	}
	lag := r.QueueProgress()["replicator_lag_messages"]
	for _, q := range r.queues {
		if q.src.topic != topic {
			continue
		}
		if lag[q.key] != perQueue-batch || q.unsynced.Load() == 0 {
			t.Fatalf("queue %s after one batch: lag %v (want %d), unsynced since %d", q.key, lag[q.key], perQueue-batch, q.unsynced.Load())
		}
	}
	if p := r.Progress(); p["replicator_checkpoint_age_seconds"] < 0 || p["replicator_offset_sync_age_seconds"] < 0 {
		t.Fatalf("after the first checkpoint: %v", p)
	}
	if _, ok := r.Progress()["replicator_checkpoint_age_seconds"]; !ok {
		t.Fatal("no checkpoint age after the first checkpoint")
	}

	// Until the topic is copied and a heartbeat too.
	for {
		done := true
		for _, q := range r.queues {
			if q.src.topic == topic && (q.lag.Load() != 0 || q.unsynced.Load() != 0) {
				done = false
			}
		}
		if _, ok := r.Progress()["replicator_heartbeat_age_seconds"]; ok && done {
			break
		}
		if _, err := r.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if age := r.Progress()["replicator_heartbeat_age_seconds"]; age < 0 {
		t.Fatalf("heartbeat age %v", age)
	}
	beats := 0
	for _, msgs := range replRead(t, dst, hb) {
		for _, m := range msgs {
			var h Heartbeat
			if err := json.Unmarshal(m.Body, &h); err != nil {
				t.Fatal(err)
			}
			if m.GetProperty(HeartbeatProperty) != DefaultCluster || h.Source != DefaultCluster || h.Target != dstCluster || h.Timestamp != m.BornTimestamp {
				t.Fatalf("heartbeat copy %v: %+v", m.GetProperties(), h)
			}
			beats++
		}
	}
	if beats == 0 {
		t.Fatal("no heartbeat copied to the target")
	}

	// A target that refuses connections: each failed try is counted.
	r.sendWait = 10 * time.Millisecond
	for _, q := range r.queues {
		for b := range q.addrs {
			q.addrs[b] = "127.0.0.1:1"
		}
	}
	replProduce(t, src, topic, 1, perQueue)
	if _, err := r.Read(ctx); err == nil {
		t.Fatal("a copy to a closed port succeeded")
	}
	if n := r.Progress()["replicator_send_errors"]; n < replicaSendAttempts {
		t.Fatalf("send errors %v, want at least %d", n, replicaSendAttempts)
	}
	t.Logf("%d heartbeats copied; metrics %v", beats, r.Progress())
}
