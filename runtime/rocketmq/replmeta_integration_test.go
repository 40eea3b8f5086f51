package rocketmq

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
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
