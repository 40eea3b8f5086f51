package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
)

// A replicator's YAML takes the naming, loop and filter keys, and a
// source and target of the same name are refused when it is built.
func TestReplicatorConfigKeys(t *testing.T) {
	t.Chdir(t.TempDir()) // file positions
	build := func(extra, transportCluster string) (*engine.Pipeline, error) {
		t.Helper()
		cfg, err := plugin.ParseConfig([]byte("name: r\nsource:\n  type: rocketmq\n  name_servers: [127.0.0.1:1]\n  topics: [orders]\n"+extra+
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
	// tasks splits the copy in a worker cluster only.
	if _, err := build("  tasks: 2\n", "ClusterB"); err == nil || !strings.Contains(err.Error(), "tasks") || !strings.Contains(err.Error(), "sluice worker") {
		t.Fatalf("tasks: 2 under sluice run: %v", err)
	}
	if _, err := build("  tasks: 65\n", "ClusterB"); !errors.Is(err, rocketmq.ErrConfig) {
		t.Fatalf("tasks: 65: %v", err)
	}
}

// sluice replicator needs status or failover and a replicator's config; a
// replicator without saved checkpoints reports none. Its groups keys are
// checked when the config is read.
func TestReplicatorCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	repl := write("r.yaml", "name: r\nsource:\n  type: rocketmq\n  name_servers: [127.0.0.1:1]\n  topics: [orders]\n  groups: [billing]\n"+
		"transport:\n  type: rocketmq\n  name_servers: [127.0.0.1:2]\n  cluster: B\n")
	other := write("m.yaml", "name: m\nsource:\n  type: mysql\n  host: 127.0.0.1\n  user: u\n  server_id: 7\n"+
		"transport:\n  type: rocketmq\n  name_servers: [127.0.0.1:2]\n")
	badGroup := write("g.yaml", "name: g\nsource:\n  type: rocketmq\n  name_servers: [127.0.0.1:1]\n  topics: [orders]\n  groups: [\"a b\"]\n"+
		"transport:\n  type: rocketmq\n  name_servers: [127.0.0.1:2]\n  cluster: B\n")
	for _, c := range []struct {
		args       []string
		code       int
		out, inErr string
	}{
		{[]string{"replicator"}, 2, "", "say status, failover or switchover"},
		{[]string{"replicator", "status", "--config", other}, 2, "", "is not a replicator"},
		{[]string{"replicator", "status", "--config", badGroup}, 2, "", "is not a group name"},
		{[]string{"replicator", "status", "--config", repl}, 0, "no checkpoints", ""},
		{[]string{"replicator", "failover", "--json", "--config", repl}, 0, "[]\n", ""},
		{[]string{"replicator", "switchover", "--groups", "a b", "--config", repl}, 2, "", "is not a group name"},
		{[]string{"replicator", "switchover", "--config", repl}, 2, "", "names no queue copied"},
	} {
		var out, errOut strings.Builder
		code := Main(c.args, &out, &errOut)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errOut.String(), c.inErr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, out.String(), errOut.String(), c.code, c.out, c.inErr)
		}
	}
}

// The status table has a line per group; failover adds applied and kept.
func TestPrintGroups(t *testing.T) {
	var b strings.Builder
	sts := []rocketmq.GroupStatus{{Group: "billing", Queues: 8, Lag: 40, CheckpointAge: 2.5, DuplicateWindow: 3, Applied: 6, Kept: 2}}
	if err := printGroups(&b, sts, true, false); err != nil {
		t.Fatal(err)
	}
	want := "GROUP    QUEUES  LAG  CHECKPOINT_AGE_S  DUPLICATE_WINDOW  ONLINE  APPLIED  KEPT\n" +
		"billing  8       40   2.5               3                 false   6        2\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant\n%s", b.String(), want)
	}
}

// A worker reports a replicator connector's groups from the position the
// coordinator keeps (none saved: no groups), and refuses another source.
func TestGroupsForCluster(t *testing.T) {
	parse := func(doc string) *plugin.Config {
		cfg, err := plugin.ParseConfig([]byte(doc), "")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	repl := parse("name: r\nsource:\n  type: rocketmq\n  name_servers: [127.0.0.1:1]\n  topics: [orders]\n  groups: [billing]\n" +
		"transport:\n  type: rocketmq\n  name_servers: [127.0.0.1:2]\n  cluster: B\n")
	if sts, err := groupsForCluster(context.Background(), repl, nil, true); err != nil || fmt.Sprint(sts) != "[]" {
		t.Fatalf("no position: %v, %v", sts, err)
	}
	other := parse("name: m\nsource:\n  type: mysql\n  host: 127.0.0.1\n  user: u\n  server_id: 7\ntransport:\n  type: rocketmq\n  name_servers: [127.0.0.1:2]\n")
	if _, err := groupsForCluster(context.Background(), other, nil, false); !errors.Is(err, engine.ErrNoGroups) {
		t.Fatalf("a binlog source: %v, want ErrNoGroups", err)
	}
}

// A worker's switchover of a replicator whose task has saved no position
// waits for one, reading it again, and times out (504) when none comes;
// another source is refused.
func TestSwitchoverForCluster(t *testing.T) {
	cfg, err := plugin.ParseConfig([]byte("name: r\nsource:\n  type: rocketmq\n  name_servers: [127.0.0.1:1]\n  topics: [orders]\n  groups: [billing]\n"+
		"transport:\n  type: rocketmq\n  name_servers: [127.0.0.1:2]\n  cluster: B\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	loads := 0
	none := func(context.Context) ([]byte, error) { loads++; return nil, nil }
	if _, err := switchoverForCluster(context.Background(), cfg, none, nil, 500*time.Millisecond); !errors.Is(err, rocketmq.ErrNotDrained) || !errors.Is(err, context.DeadlineExceeded) || loads < 2 {
		t.Fatalf("no position: %v after %d loads, want ErrNotDrained and DeadlineExceeded after several", err, loads)
	}
	other, err := plugin.ParseConfig([]byte("name: m\nsource:\n  type: mysql\n  host: 127.0.0.1\n  user: u\n  server_id: 7\ntransport:\n  type: rocketmq\n  name_servers: [127.0.0.1:2]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := switchoverForCluster(context.Background(), other, none, nil, time.Second); !errors.Is(err, engine.ErrNoGroups) {
		t.Fatalf("a binlog source: %v, want ErrNoGroups", err)
	}
}
