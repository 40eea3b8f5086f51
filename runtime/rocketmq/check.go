package rocketmq

import (
	"context"
	"fmt"

	"github.com/apache/rocketmq-client-go/v2/admin"

	"github.com/sluicecdc/sluice/schema"
)

// Use says which sides of the transport a process runs, for Check.
type Use struct {
	Publish   bool // a source: it sends to the topics
	Subscribe bool // a sink: it consumes them as its group
}

// Check verifies, for `sluice check`, that the transport can run: a name
// server answers, the cluster has a master broker, the brokers take the
// credentials, and a topic can be created and is routed on every master
// (a probe topic, <topic_prefix>_sluice_check, deleted again; a delete
// that fails is a warning naming it). With credentials (a broker with
// authorization), it also sends one message to the probe topic when the
// process publishes, and pulls from it as cfg.Group when it subscribes:
// a user without Pub or Sub there (or on the group) fails the check
// instead of the first send or pull. It returns nil when every check
// passes.
func Check(ctx context.Context, cfg Config, use Use) []schema.Problem {
	var out []schema.Problem
	fail := func(check, detail, fix string) {
		out = append(out, schema.Problem{Check: check, Detail: detail, Fix: fix})
	}
	cfg, err := cfg.baseDefaults()
	if err != nil {
		fail("broker_config", err.Error(), "correct the transport section of the config")
		return out
	}
	ci, err := fetchClusterInfo(ctx, cfg.NameServers)
	if err != nil {
		fail("broker_reachable", fmt.Sprintf("name servers %v: %v", cfg.NameServers, err), "check transport.name_servers and that the name server is up")
		return out
	}
	masters := ci.masters(cfg.Cluster)
	if len(masters) == 0 {
		fail("broker_cluster", fmt.Sprintf("cluster %q has no master broker registered with name servers %v", cfg.Cluster, cfg.NameServers),
			"check transport.cluster (the broker's brokerClusterName) and that the broker is up")
		return out
	}
	if err := checkCredentials(ctx, cfg); err != nil {
		fail("broker_credentials", err.Error(), "fix transport.access_key and transport.secret_key")
		return out
	}
	adm, err := newAdmin(cfg)
	if err != nil {
		fail("broker_admin", err.Error(), "check transport.name_servers")
		return out
	}
	defer adm.Close()
	topic := sanitizeName(cfg.TopicPrefix + "_sluice_check")
	if _, err := ensureTopic(ctx, adm, cfg, topic); err != nil {
		fail("broker_topics", fmt.Sprintf("cannot create topic %q: %v", topic, err),
			"let the user create topics (ACL: Create on topics of the prefix), or create the pipeline's topics beforehand")
		return out
	}
	if use.Publish {
		if err := checkPublish(ctx, cfg, topic, masters); err != nil {
			fail("broker_acl", fmt.Sprintf("cannot publish to topic %q: %v", topic, err),
				"grant the user Pub on the pipeline's topics (ACL: Topic:"+sanitizeName(cfg.TopicPrefix)+"* or each topic)")
		}
	}
	if use.Subscribe {
		if err := checkSubscribe(ctx, cfg, []string{topic}); err != nil {
			fail("broker_acl", fmt.Sprintf("cannot consume topic %q as group %q: %v", topic, cfg.Group, err),
				"grant the user Sub on the pipeline's topics and on group "+cfg.Group)
		}
	}
	for _, addr := range masters {
		if err := adm.DeleteTopic(context.WithoutCancel(ctx), admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(addr), admin.WithNameSrvAddr(cfg.NameServers)); err != nil {
			out = append(out, schema.Problem{Check: "broker_topics", Warning: true,
				Detail: fmt.Sprintf("created the probe topic %q but could not delete it from broker %s: %v", topic, addr, err),
				Fix:    "delete it with mqadmin deleteTopic"})
		}
	}
	return out
}
