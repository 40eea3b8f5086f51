package rocketmq

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// Heartbeats, as MirrorMaker 2 writes them: with heartbeat_topic set, the
// replicator writes a small message to that topic of the source every
// heartbeat_interval and copies the topic like the others. The born time
// of the newest heartbeat the target acknowledged gives the replication
// latency even when nothing else is written (replicator_heartbeat_age_seconds),
// and a consumer on the target can read the copies to see that the
// replication is alive.

// DefaultHeartbeatInterval is how often a heartbeat is written.
const DefaultHeartbeatInterval = time.Second

// Heartbeat is the body of a heartbeat: the names of the source and target
// clusters (the source section's cluster and target_cluster) and its time,
// Unix ms.
type Heartbeat struct {
	Source    string `json:"source"`
	Target    string `json:"target"`
	Timestamp int64  `json:"timestamp"`
}

// createHeartbeatTopic creates src's heartbeat topic on the source unless
// it exists: one queue on each master broker of the source's cluster (the
// source section's cluster names its brokerClusterName for this).
func createHeartbeatTopic(ctx context.Context, src ReplicatorConfig) error {
	cfg := Config{NameServers: src.NameServers, Cluster: src.Cluster, Queues: 1, AccessKey: src.AccessKey, SecretKey: src.SecretKey}
	adm, err := newAdmin(cfg)
	if err != nil {
		return err
	}
	defer adm.Close()
	if _, err := createTopic(ctx, adm, cfg, src.HeartbeatTopic); err != nil {
		return fmt.Errorf("rocketmq replicator: heartbeat topic %q on the source (created in the cluster the source section's cluster names): %w", src.HeartbeatTopic, sourceKeys(err))
	}
	return nil
}

// heartbeats writes the heartbeats until stop.
type heartbeats struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startHeartbeats starts writing src's heartbeats to queue 0 of the first
// broker of its heartbeat topic.
func startHeartbeats(ctx context.Context, src ReplicatorConfig, group string, log *slog.Logger) (*heartbeats, error) {
	qs, err := tailQueues(ctx, src.NameServers, src.HeartbeatTopic)
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("rocketmq replicator: heartbeat topic %q has no queue on the source", src.HeartbeatTopic)
	}
	q := qs[0]
	cred := src.credentials()
	pm := &primitive.Message{}
	pm.WithProperty(HeartbeatProperty, src.Cluster)
	ctx, cancel := context.WithCancel(context.Background())
	h := &heartbeats{cancel: cancel}
	h.wg.Go(func() {
		tick := time.NewTicker(src.HeartbeatInterval)
		defer tick.Stop()
		failing := false
		for {
			now := time.Now().UnixMilli()
			body, _ := json.Marshal(Heartbeat{Source: src.Cluster, Target: src.TargetCluster, Timestamp: now})
			ext := sendHeader(group, q.topic, queue{Broker: q.broker, ID: q.id}, now, 0, pm.MarshallProperties())
			hd, _, err := invokeSigned(ctx, cred, q.addr, reqSendMessage, ext, body)
			if err == nil {
				err = sourceKeys(authError(cred.AccessKey, q.addr, hd))
			}
			if err == nil && hd.Code != resSuccess {
				err = fmt.Errorf("code %d: %s", hd.Code, hd.Remark)
			}
			switch {
			case err != nil && ctx.Err() == nil && !failing:
				log.Warn("replicator: cannot write a heartbeat to the source; trying again every heartbeat_interval", "topic", q.topic, "broker", q.addr, "err", err)
				failing = true
			case err == nil && failing:
				log.Info("replicator: heartbeats written again", "topic", q.topic)
				failing = false
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	return h, nil
}

// stop stops the heartbeats and waits for the last one.
func (h *heartbeats) stop() {
	h.cancel()
	h.wg.Wait()
}
