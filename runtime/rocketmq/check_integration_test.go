package rocketmq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Check (`sluice check` for the broker, issue 28, problem 6) creates its
// probe topic on the real brokers and deletes it again, and fails on a
// cluster with no master broker.
func TestCheckProbesTopicCreation(t *testing.T) {
	cfg := itConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if ps := Check(ctx, cfg); len(ps) != 0 {
		t.Fatalf("a working broker: %v", ps)
	}
	topic := sanitizeName(cfg.Pipeline + "_sluice_check")
	if _, err := fetchRoute(ctx, cfg.NameServers, topic); !errors.Is(err, errTopicNotExist) {
		t.Errorf("the probe topic %s is still routed after the check (%v)", topic, err)
	}
	cfg.Cluster = "NoSuchCluster"
	if ps := Check(ctx, cfg); len(ps) != 1 || ps[0].Check != "broker_cluster" || !strings.Contains(ps[0].Detail, "NoSuchCluster") {
		t.Errorf("a cluster without masters: %v", ps)
	}
}
