package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
)

// A replicator's YAML takes the naming, loop and filter keys, and a
// source and target of the same name are refused when it is built.
func TestReplicatorConfigKeys(t *testing.T) {
	t.Chdir(t.TempDir()) // file positions
	build := func(extra, transportCluster string) (*runtime.Pipeline, error) {
		t.Helper()
		cfg, err := runtime.ParseConfig([]byte("name: r\nsource:\n  type: rocketmq\n  name_servers: [127.0.0.1:1]\n  topics: [orders]\n"+extra+
			"transport:\n  type: rocketmq\n  name_servers: [127.0.0.1:2]\n  cluster: "+transportCluster+"\n"), "r.yaml")
		if err != nil {
			return nil, err
		}
		return BuildTask(context.Background(), cfg, TaskOptions{Only: "source"})
	}
	p, err := build("  cluster: A\n  target_cluster: B\n  topic_prefix: a_\n  tags: \"TagA || TagB\"\n  properties: {region: eu}\n", "DefaultCluster")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Source.(*rocketmq.Replicator); !ok {
		t.Fatalf("source %T, want the replicator", p.Source)
	}
	if _, err := build("", "DefaultCluster"); !errors.Is(err, rocketmq.ErrConfig) || !strings.Contains(err.Error(), `both named "DefaultCluster"`) {
		t.Fatalf("source and target both DefaultCluster: %v", err)
	}
	if _, err := build("  properties: [region]\n", "ClusterB"); err == nil {
		t.Fatal("properties as a list: no error")
	}
	if _, err := build("  tags: \"TagA ||\"\n", "ClusterB"); err == nil || !strings.Contains(err.Error(), "tags") {
		t.Fatalf("tags with an empty tag: %v", err)
	}
}
