package rocketmq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// Check (`sluice check` for the broker, issue 28, problem 6) creates its
// probe topic on the real brokers and deletes it again, and fails on a
// cluster with no master broker.
func TestCheckProbesTopicCreation(t *testing.T) {
	cfg := itConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if ps := Check(ctx, cfg, Use{Publish: true, Subscribe: true}); len(ps) != 0 {
		t.Fatalf("a working broker: %v", ps)
	}
	topic := sanitizeName(cfg.Pipeline + "_sluice_check")
	if _, err := fetchRoute(ctx, cfg.NameServers, topic); !errors.Is(err, errTopicNotExist) {
		t.Errorf("the probe topic %s is still routed after the check (%v)", topic, err)
	}
	cfg.Cluster = "NoSuchCluster"
	if ps := Check(ctx, cfg, Use{Publish: true, Subscribe: true}); len(ps) != 1 || ps[0].Check != "broker_cluster" || !strings.Contains(ps[0].Detail, "NoSuchCluster") {
		t.Errorf("a cluster without masters: %v", ps)
	}
}

// On a broker with authorization, Check tries what the process will do
// with the user's permissions: create the probe topic (Create), publish to
// it (Pub) when the process runs a source, pull from it as the sink's
// group (Sub) when it runs a sink. A user without one of them fails the
// check naming it; before, only the credentials and the topic creation
// were tried, and a user without Pub or Sub passed and stopped the
// pipeline at its first send or pull.
func TestCheckProbesACL(t *testing.T) {
	skipUnderRace(t)
	ns, superKey, superSecret := aclServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfgFor := func(ak, sk string) Config {
		return Config{NameServers: ns, Pipeline: "chk-" + suffix(), AccessKey: ak, SecretKey: sk}
	}
	both := Use{Publish: true, Subscribe: true}
	if ps := Check(ctx, cfgFor(superKey, superSecret), both); len(ps) != 0 {
		t.Fatalf("the super user: %v", ps)
	}
	all := []string{"Pub", "Sub", "Create", "Update", "Get"}
	without := func(a string) []string {
		var out []string
		for _, x := range all {
			if x != a {
				out = append(out, x)
			}
		}
		return out
	}
	ak, sk := aclUser(ctx, t, ns, superKey, superSecret, "chkall", all...)
	if ps := Check(ctx, cfgFor(ak, sk), both); len(ps) != 0 {
		t.Errorf("a user with every permission: %v", ps)
	}
	refused := func(ps []schema.Problem, check, text string) bool {
		for _, p := range ps {
			if !p.Warning && p.Check == check && strings.Contains(p.Detail, text) && strings.Contains(p.Detail, ak) {
				return true
			}
		}
		return false
	}
	ak, sk = aclUser(ctx, t, ns, superKey, superSecret, "chknopub", without("Pub")...)
	if ps := Check(ctx, cfgFor(ak, sk), Use{Publish: true}); !refused(ps, "broker_acl", "cannot publish") {
		t.Errorf("a source's user without Pub: %v", ps)
	}
	if ps := Check(ctx, cfgFor(ak, sk), Use{Subscribe: true}); len(ps) != 0 {
		t.Errorf("a sink's user without Pub: %v", ps)
	}
	ak, sk = aclUser(ctx, t, ns, superKey, superSecret, "chknosub", without("Sub")...)
	if ps := Check(ctx, cfgFor(ak, sk), Use{Subscribe: true}); !refused(ps, "broker_acl", "cannot consume") {
		t.Errorf("a sink's user without Sub: %v", ps)
	}
	if ps := Check(ctx, cfgFor(ak, sk), Use{Publish: true}); len(ps) != 0 {
		t.Errorf("a source's user without Sub: %v", ps)
	}
}
