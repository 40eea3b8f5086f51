package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// TestReplicatorSwitchoverInCluster: in a cluster of two `sluice worker`s,
// POST .../groups/switchover of a replicator connector, asked of either
// worker (one of them does not run its task), waits on the position the
// coordinator keeps until everything is copied, then writes the group's
// offsets on B, from which it reads every message it had not read on A.
func TestReplicatorSwitchoverInCluster(t *testing.T) {
	e := servers(t, "SLUICE_PG_DSN", "SLUICE_ROCKETMQ_NAMESRV", "SLUICE_ROCKETMQ_B_NAMESRV", "SLUICE_ROCKETMQ_B_CLUSTER")
	t.Setenv("SLUICE_IT_COORD_DSN", e["SLUICE_PG_DSN"])
	a, b := e["SLUICE_ROCKETMQ_NAMESRV"], e["SLUICE_ROCKETMQ_B_NAMESRV"]
	topic, group := uniqueName("it_cl_switch"), uniqueName("it_cl_switch_g")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const perQueue, groupRead = 30, 10
	queues := fillTopic(ctx, t, a, b, topic, perQueue)
	for _, q := range queues {
		if err := rocketmq.CommitGroupOffset(ctx, rocketmq.Config{NameServers: []string{a}}, group, topic, q.BrokerName, q.QueueId, groupRead); err != nil {
			t.Fatal(err)
		}
	}
	c := newCluster(t)
	w1, w2 := c.start("w1"), c.start("w2")
	body, _ := json.Marshal(map[string]any{"name": topic, "config": map[string]any{
		"source":    map[string]any{"type": "rocketmq", "name_servers": []string{a}, "topics": []string{topic}, "groups": []string{group}, "offset_sync_messages": 5, "checkpoint_interval": "100ms"},
		"transport": map[string]any{"type": "rocketmq", "name_servers": []string{b}, "cluster": e["SLUICE_ROCKETMQ_B_CLUSTER"]},
	}})
	post := func(w *clusterWorker, path string, body []byte) (int, string) { return postTo(ctx, t, w, path, body) }
	if code, out := post(w1, "/connectors", body); code != http.StatusCreated {
		t.Fatalf("POST /connectors: %d %s", code, out)
	}
	for _, w := range []*clusterWorker{w2, w1} {
		code, out := post(w, "/connectors/"+topic+"/groups/switchover?timeout=2m", nil)
		var rep rocketmq.SwitchoverReport
		if err := json.Unmarshal([]byte(out), &rep); code != http.StatusOK || err != nil || !rep.Drained || len(rep.Groups) != 1 ||
			rep.Groups[0].Applied+rep.Groups[0].Kept != len(queues) {
			t.Fatalf("switchover through %s: %d %s", w.id, code, out)
		}
	}
	if code, out := post(w1, "/connectors/nope/groups/switchover", nil); code != http.StatusNotFound {
		t.Errorf("an unknown connector: %d %s", code, out)
	}
	checkGroupOnTarget(t, b, topic, group, groupRead, perQueue, 5)
}

// postTo POSTs body to path of worker w's REST API.
func postTo(ctx context.Context, t *testing.T, w *clusterWorker, path string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+w.addr+path, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReplicatorTasksInCluster: a replicator connector with tasks: 2 in a
// cluster of two `sluice worker`s runs one task on each, each copying its
// share of the source queues. The switchover (asked of either worker)
// waits for both tasks' positions and sets the group's offsets on B for
// every queue. After a kill -9 of one worker, the other takes its task
// and copies what was sent meanwhile from the saved offsets: on B each
// source queue holds every message exactly once, in order.
func TestReplicatorTasksInCluster(t *testing.T) {
	e := servers(t, "SLUICE_PG_DSN", "SLUICE_ROCKETMQ_NAMESRV", "SLUICE_ROCKETMQ_B_NAMESRV", "SLUICE_ROCKETMQ_B_CLUSTER")
	t.Setenv("SLUICE_IT_COORD_DSN", e["SLUICE_PG_DSN"])
	a, b := e["SLUICE_ROCKETMQ_NAMESRV"], e["SLUICE_ROCKETMQ_B_NAMESRV"]
	topic, group := uniqueName("it_cl_tasks"), uniqueName("it_cl_tasks_g")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const perQueue, groupRead, batch = 20, 7, 4
	queues := fillTopic(ctx, t, a, b, topic, perQueue)
	for _, q := range queues {
		if err := rocketmq.CommitGroupOffset(ctx, rocketmq.Config{NameServers: []string{a}}, group, topic, q.BrokerName, q.QueueId, groupRead); err != nil {
			t.Fatal(err)
		}
	}
	owners := map[int]int{}
	for _, q := range queues {
		owners[rocketmq.QueueTask(topic, q.BrokerName, q.QueueId, 2)]++
	}
	if owners[0] == 0 || owners[1] == 0 {
		t.Fatalf("the queues by task: %v; both tasks should own some", owners)
	}
	c := newCluster(t)
	w1, w2 := c.start("w1"), c.start("w2")
	body, _ := json.Marshal(map[string]any{"name": topic, "config": map[string]any{
		"source": map[string]any{"type": "rocketmq", "name_servers": []string{a}, "topics": []string{topic}, "groups": []string{group},
			"offset_sync_messages": 5, "checkpoint_interval": "100ms", "batch_size": batch, "tasks": 2},
		"transport": map[string]any{"type": "rocketmq", "name_servers": []string{b}, "cluster": e["SLUICE_ROCKETMQ_B_CLUSTER"]},
	}})
	if code, out := postTo(ctx, t, w1, "/connectors", body); code != http.StatusCreated {
		t.Fatalf("POST /connectors: %d %s", code, out)
	}
	tasks := []string{topic + "/source", topic + "/source-1"}
	if g0, _ := c.holderOf(tasks[0]); g0 == first(c.holderOf(tasks[1])) {
		t.Fatalf("both tasks on %s: %v", g0.id, c.leases())
	}
	initial := c.leases()
	// Drained, through the merged positions of both tasks.
	for _, w := range []*clusterWorker{w2, w1} {
		code, out := postTo(ctx, t, w, "/connectors/"+topic+"/groups/switchover?timeout=1m", nil)
		for try := 0; code == http.StatusInternalServerError && try < 3; try++ {
			// A broker of A that did not answer in time (a loaded machine):
			// the switchover moves no offset back, so it is asked again.
			t.Logf("switchover through %s: %s; again", w.id, out)
			code, out = postTo(ctx, t, w, "/connectors/"+topic+"/groups/switchover?timeout=1m", nil)
		}
		var rep rocketmq.SwitchoverReport
		if err := json.Unmarshal([]byte(out), &rep); code != http.StatusOK || err != nil || !rep.Drained || len(rep.Groups) != 1 ||
			rep.Groups[0].Applied+rep.Groups[0].Kept != len(queues) {
			t.Fatalf("switchover through %s: %d %s", w.id, code, out)
		}
	}
	checkGroupOnTarget(t, b, topic, group, groupRead, perQueue, 5)
	cli := fmt.Sprintf("name: %s\nsource:\n  type: rocketmq\n  name_servers: [%s]\n  topics: [%s]\n  groups: [%s]\n  tasks: 2\ntransport:\n  type: rocketmq\n  name_servers: [%s]\n  cluster: %s\n",
		topic, a, topic, group, b, e["SLUICE_ROCKETMQ_B_CLUSTER"])
	checkSplitOffsets(ctx, t, c, []*clusterWorker{w1, w2}, cli, topic, queues, perQueue, len(queues))
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, "http://"+w1.addr+"/connectors/"+topic+"/offsets", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("DELETE .../offsets of a split source: %v %v, want 400", resp, err)
	} else {
		resp.Body.Close()
	}

	h0, l0 := c.holderOf(tasks[0])
	if h1, _ := c.holderOf(tasks[1]); h0 == h1 {
		t.Fatalf("both tasks on %s before the kill: %v", h0.id, c.leases())
	}
	h0.p.kill(t)
	survivor := w1
	if h0 == w1 {
		survivor = w2
	}
	sendMore(ctx, t, a, topic, queues, perQueue)
	if l, _ := c.waitTakeover(tasks[0], h0.id, l0.epoch, time.Now(), time.Minute); l.holder != survivor.id {
		t.Fatalf("task 0 went to %s", l.holder)
	}
	var dst map[string][]replicaMsg
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(time.Second) {
		copies, err := tryReadTopic(b, topic, true)
		n := 0
		for _, c := range copies {
			n += len(c)
		}
		if err == nil && n >= 2*perQueue*len(queues) {
			dst = copies
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the kill: %d of %d copies on B (%v)", n, 2*perQueue*len(queues), err)
		}
	}
	// A task copies again at most one batch per queue each time its lease
	// changes hands other than at the kill (none while the machine keeps
	// up: then every message is copied exactly once). The kill came when
	// the copy was drained, so it copies nothing again.
	last := c.leases()
	moves := last[tasks[0]].epoch - initial[tasks[0]].epoch - 1 + last[tasks[1]].epoch - initial[tasks[1]].epoch
	if moves > 0 {
		t.Logf("the tasks' leases changed hands %d times besides the kill (a loaded machine): up to %d copies again per queue allowed", moves, moves*batch)
	}
	// The sent messages are known: offsets 0 to 2*perQueue-1 of each
	// queue of the new topic, bodies numbered as fillTopic and sendMore
	// number them. Each copy is the next one, or one of the last batch
	// copied again.
	for _, q := range queues {
		k := q.BrokerName + "/" + strconv.Itoa(q.QueueId)
		next, again := int64(0), int64(0)
		for _, m := range dst[k] {
			body := []byte{0xff, 0x00, 0xc3, byte(m.offset), byte(m.offset >> 8), byte(q.QueueId)}
			switch {
			case m.offset == next && bytes.Equal(m.body, body):
				next++
			case m.offset < next && next-m.offset <= batch && bytes.Equal(m.body, body):
				again++
			default:
				t.Fatalf("queue %s: after offset %d the copy of offset %d (%x): out of order or not the message sent", k, next-1, m.offset, m.body)
			}
		}
		if next != 2*perQueue || again > moves*batch {
			t.Errorf("queue %s: copies up to offset %d of %d, %d copied again (%d allowed)", k, next, 2*perQueue, again, moves*batch)
		}
	}
}

// checkSplitOffsets checks that the offsets of the replicator connector
// topic, split into tasks and drained, are shown whole, each of the
// source queues once at its end (perQueue): by GET .../offsets of each
// worker (the merged positions of its tasks, as Kafka Connect shows a
// connector's offsets), and by `sluice positions show` and `sluice
// replicator status` with cli (the connector's config as YAML) and a
// positions section that names the coordinator's positions table.
// groupQueues: the queues its group has a checkpoint for.
func checkSplitOffsets(ctx context.Context, t *testing.T, c *cluster, ws []*clusterWorker, cli, topic string, queues []*primitive.MessageQueue, perQueue, groupQueues int) {
	t.Helper()
	want := map[string]int64{}
	for _, q := range queues {
		want[topic+"/"+q.BrokerName+"/"+strconv.Itoa(q.QueueId)] = int64(perQueue)
	}
	whole := func(what string, pos []byte) {
		t.Helper()
		var p struct {
			Next map[string]int64 `json:"next"`
		}
		if err := json.Unmarshal(pos, &p); err != nil || !maps.Equal(p.Next, want) {
			t.Fatalf("%s: the offsets of a connector split into tasks are not whole (want %v): %v\n%s", what, want, err, pos)
		}
	}
	for _, w := range ws {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.addr+"/connectors/"+topic+"/offsets", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got admin.ConnectorOffsets
		if err := json.Unmarshal(body, &got); resp.StatusCode != http.StatusOK || err != nil || len(got.Offsets) != 1 {
			t.Fatalf("GET .../offsets through %s: %d %v %s", w.id, resp.StatusCode, err, body)
		}
		whole("GET .../offsets through "+w.id, got.Offsets[0].Offset)
	}
	// The command line, from the coordinator's positions table.
	cfg := filepath.Join(c.dir, "cli.yaml")
	if err := os.WriteFile(cfg, []byte(cli+fmt.Sprintf("positions:\n  type: %s\n  dsn: %q\n  table: %spositions\n", c.driver, os.Getenv("SLUICE_IT_COORD_DSN"), c.prefix)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, c.bin, "positions", "show", "--config", cfg).Output()
	if err != nil {
		t.Fatalf("sluice positions show: %v\n%s", err, out)
	}
	whole("sluice positions show", out)
	// Each task checkpoints its own queues once it has copied some (every
	// checkpoint_interval): the group's queues add up from both rows.
	schematest.Eventually(t, 30*time.Second, 100*time.Millisecond, "sluice replicator status shows the group's checkpoints of both tasks", func() (bool, string) {
		out, err := exec.CommandContext(ctx, c.bin, "replicator", "status", "--json", "--config", cfg).Output()
		var sts []rocketmq.GroupStatus
		if err == nil {
			err = json.Unmarshal(out, &sts)
		}
		return err == nil && len(sts) == 1 && sts[0].Queues == groupQueues, fmt.Sprintf("%v, want its group with %d queues: %s", err, groupQueues, out)
	})
}

// first is the first of two values.
func first[A, B any](a A, _ B) A { return a }

// sendMore sends perQueue more messages to each of queues of topic on ns,
// in order, their bodies numbered from perQueue.
func sendMore(ctx context.Context, t *testing.T, ns, topic string, queues []*primitive.MessageQueue, perQueue int) {
	t.Helper()
	prod, err := rmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName(topic+"-more"), producer.WithQueueSelector(producer.NewManualQueueSelector()))
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prod.Shutdown() }()
	for i := perQueue; i < 2*perQueue; i++ {
		for _, q := range queues {
			m := primitive.NewMessage(topic, []byte{0xff, 0x00, 0xc3, byte(i), byte(i >> 8), byte(q.QueueId)})
			m.Queue = q
			if r, err := prod.SendSync(ctx, m); err != nil || r.Status != primitive.SendOK {
				t.Fatalf("send: %v %v", r, err)
			}
		}
	}
}
