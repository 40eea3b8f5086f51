package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// replicaMsg is one message as the test compares it.
type replicaMsg struct {
	body   []byte
	offset int64 // the source offset: its own, or sluice_src_offset of a copy
}

// readTopic reads every message of topic on ns, by "broker/queue" (of
// the source, for copies).
func readTopic(t *testing.T, ns, topic string, copies bool) map[string][]replicaMsg {
	t.Helper()
	out, err := tryReadTopic(ns, topic, copies)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tryReadTopic(ns, topic string, copies bool) (map[string][]replicaMsg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := map[string][]replicaMsg{}
	err := rocketmq.Tail(ctx, rocketmq.Config{NameServers: []string{ns}, Pipeline: "it-repl"}, rocketmq.TailOptions{Topics: []string{topic}},
		func(m rocketmq.TailMessage) error {
			k, off := m.Broker+"/"+strconv.Itoa(m.Queue), m.Offset
			if copies {
				var err error
				if off, err = strconv.ParseInt(m.Properties[rocketmq.SrcOffsetProperty], 10, 64); err != nil {
					return fmt.Errorf("copy without %s: %v", rocketmq.SrcOffsetProperty, m.Properties)
				}
				k = m.Properties[rocketmq.SrcBrokerProperty] + "/" + m.Properties[rocketmq.SrcQueueProperty]
			}
			out[k] = append(out[k], replicaMsg{m.Value, off})
			return nil
		})
	return out, err
}

// TestReplicatorKill9: `sluice run` of a replicator killed with SIGKILL
// mid-copy and started again copies every message, in order per queue,
// byte for byte, and copies again at most one batch (batch_size) of each
// queue. A group that had read half of each queue on the source is
// checkpointed across the kill; `sluice replicator failover` then sets its
// offsets on the target, from which it reads every message it had not
// read, and again at most offset_sync_messages-1 per queue it had (plus
// the batch the kill copied twice).
func TestReplicatorKill9(t *testing.T) {
	env := schematest.NeedServers(t, "SLUICE_ROCKETMQ_NAMESRV", "SLUICE_ROCKETMQ_B_NAMESRV", "SLUICE_ROCKETMQ_B_CLUSTER")
	a, b, bCluster := env[0], env[1], env[2]
	var sfx [4]byte
	_, _ = rand.Read(sfx[:])
	topic := "it_repl_kill_" + hex.EncodeToString(sfx[:])
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const perQueue = 150
	queues := fillTopic(ctx, t, a, b, topic, perQueue)
	src := readTopic(t, a, topic, false)

	// The group read half of each queue on the source.
	group := "it_repl_kill_g_" + hex.EncodeToString(sfx[:])
	const groupRead, syncEvery = perQueue / 2, 20
	for _, q := range queues {
		if err := rocketmq.CommitGroupOffset(ctx, rocketmq.Config{NameServers: []string{a}}, group, topic, q.BrokerName, q.QueueId, groupRead); err != nil {
			t.Fatal(err)
		}
	}

	const batchSize = 10
	dir := t.TempDir()
	cfg := filepath.Join(dir, "replicator.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "name: it-repl-kill\nsource:\n  type: rocketmq\n  name_servers: [%s]\n  topics: [%s]\n  batch_size: %d\n"+
		"  groups: [%s]\n  offset_sync_messages: %d\n  checkpoint_interval: 100ms\n"+
		"transport:\n  type: rocketmq\n  name_servers: [%s]\n  cluster: %s\npositions:\n  type: file\n  dir: positions\n", a, topic, batchSize, group, syncEvery, b, bCluster), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := buildSluice(t)
	total := func() int {
		n := 0
		copies, err := tryReadTopic(b, topic, true)
		if err != nil { // not created on the target yet
			return 0
		}
		for _, ms := range copies {
			n += len(ms)
		}
		return n
	}
	p := startProcess(t, bin, "source", cfg)
	schematest.Eventually(t, 2*time.Minute, 20*time.Millisecond, "the replicator copies", func() (bool, string) {
		select {
		case err := <-p.errc:
			t.Fatal(err)
		default:
		}
		n := total()
		return n > 0, strconv.Itoa(n) + " copies"
	})
	p.kill(t)
	atKill := total()
	if atKill >= perQueue*len(queues) {
		t.Logf("everything was copied before the kill (%d messages): the restart proves no resume", atKill)
	}
	rest := freePort(t)
	t.Setenv("SLUICE_REST", rest) // sluice run serves the REST API there
	p = startProcess(t, bin, "source", cfg)
	var dst map[string][]replicaMsg
	schematest.Eventually(t, 2*time.Minute, 200*time.Millisecond, "the replicator copies the rest", func() (bool, string) {
		dst = readTopic(t, b, topic, true)
		done := 0
		for k, ms := range dst {
			if len(ms) > 0 && ms[len(ms)-1].offset == int64(len(src[k])-1) {
				done++
			}
		}
		return done == len(src), fmt.Sprintf("%d of %d queues complete (%d copies at the kill)", done, len(src), atKill)
	})
	// The checkpoints are taken every 100ms, and a finer one is kept: GET
	// .../groups reports them, POST .../groups/failover writes them on the
	// target while the replicator runs.
	var groups struct{ Groups []rocketmq.GroupStatus }
	restGroups := func(method, path string) string {
		req, err := http.NewRequestWithContext(ctx, method, "http://"+rest+"/connectors/it-repl-kill/groups"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(body, &groups); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("%s .../groups%s: %d %s", method, path, resp.StatusCode, body)
		}
		return string(body)
	}
	schematest.Eventually(t, time.Minute, 100*time.Millisecond, "the group is checkpointed", func() (bool, string) {
		body := restGroups(http.MethodGet, "")
		sts := groups.Groups
		return len(sts) == 1 && sts[0].Queues == len(queues) && sts[0].DuplicateWindow < int64(syncEvery*len(queues)), body
	})
	if body := restGroups(http.MethodPost, "/failover"); len(groups.Groups) != 1 || groups.Groups[0].Applied != len(queues) {
		t.Fatalf("POST .../groups/failover: %s", body)
	}
	// A planned switchover through the running replicator: everything is
	// copied, so it writes the final checkpoints at once.
	if body := restGroups(http.MethodPost, "/switchover?timeout=30s"); !strings.Contains(body, `"drained":true`) || len(groups.Groups) != 1 ||
		groups.Groups[0].Applied+groups.Groups[0].Kept != len(queues) {
		t.Fatalf("POST .../groups/switchover: %s", body)
	}
	p.stopProcess(t)
	// Failover and switchover again from the command line, the replicator
	// stopped: the offsets are where the last checkpoints say (none moved
	// back), and the saved position shows everything copied.
	for _, cmd := range []string{"failover", "switchover"} {
		out, err := exec.Command(bin, "replicator", cmd, "--json", "--timeout", "5s", "--config", cfg).CombinedOutput()
		var sts []rocketmq.GroupStatus
		if err == nil {
			err = json.Unmarshal(out, &sts)
		}
		if err != nil || len(sts) != 1 || sts[0].Group != group || sts[0].Applied+sts[0].Kept != len(queues) || sts[0].Online {
			t.Fatalf("replicator %s: %v\n%s", cmd, err, out)
		}
	}
	checkGroupOnTarget(t, b, topic, group, groupRead, perQueue, syncEvery+batchSize)

	dups := 0
	for k, want := range src {
		next, queueDups := int64(0), 0
		for _, m := range dst[k] {
			switch {
			case m.offset < next:
				queueDups++
			case m.offset > next:
				t.Fatalf("queue %s: the copy of offset %d follows offset %d: lost or reordered", k, m.offset, next-1)
			default:
				next++
			}
			if !bytes.Equal(m.body, want[m.offset].body) {
				t.Fatalf("queue %s offset %d: body %x, source %x", k, m.offset, m.body, want[m.offset].body)
			}
		}
		if next != int64(len(want)) {
			t.Fatalf("queue %s: %d of %d copied", k, next, len(want))
		}
		if queueDups > batchSize {
			t.Fatalf("queue %s: %d duplicates, more than one batch (%d)", k, queueDups, batchSize)
		}
		dups += queueDups
	}
	t.Logf("%d queues, %d messages, %d copied at the kill, %d duplicates", len(src), perQueue*len(queues), atKill, dups)
}

// fillTopic creates topic on A (ns a, 4 queues), deleted from A and B (ns
// b) at the end of the test, and sends perQueue binary messages in order
// to each of its queues; it returns the queues.
func fillTopic(ctx context.Context, t *testing.T, a, b, topic string, perQueue int) []*primitive.MessageQueue {
	t.Helper()
	if err := rocketmq.EnsureTopic(ctx, rocketmq.Config{NameServers: []string{a}, Queues: 4, Pipeline: "it-repl"}, topic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{a, b})))
		if err != nil {
			return
		}
		defer adm.Close()
		for _, addr := range []string{os.Getenv("SLUICE_ROCKETMQ_BROKER_ADDR"), os.Getenv("SLUICE_ROCKETMQ_BROKER_B_ADDR"), os.Getenv("SLUICE_ROCKETMQ_B_BROKER_ADDR")} {
			if addr != "" {
				_ = adm.DeleteTopic(context.Background(), admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(addr))
			}
		}
	})

	// perQueue messages a queue, binary bodies, sent in order to each queue.
	prod, err := rmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{a})),
		producer.WithGroupName(topic+"-src"), producer.WithQueueSelector(producer.NewManualQueueSelector()))
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prod.Shutdown() }()
	queues := readQueues(t, a, topic)
	for i := range perQueue {
		var batch []*primitive.Message
		for _, q := range queues {
			m := primitive.NewMessage(topic, []byte{0xff, 0x00, 0xc3, byte(i), byte(i >> 8), byte(q.QueueId)})
			m.Queue = q
			batch = append(batch, m)
		}
		for _, m := range batch {
			for attempt := 0; ; attempt++ { // a busy broker refuses for a moment
				r, err := prod.SendSync(ctx, m)
				if err == nil && r.Status == primitive.SendOK {
					break
				}
				if attempt >= 10 {
					t.Fatalf("send: %v %v", r, err)
				}
				time.Sleep(500 * time.Millisecond)
			}
		}
	}
	return queues
}

// readQueues lists topic's write queues on ns.
func readQueues(t *testing.T, ns, topic string) []*primitive.MessageQueue {
	t.Helper()
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{ns})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	qs, err := adm.FetchPublishMessageQueues(context.Background(), topic)
	if err != nil || len(qs) == 0 {
		t.Fatalf("queues of %s: %v %v", topic, qs, err)
	}
	return qs
}

// checkGroupOnTarget reads topic on ns from group's committed offsets and
// checks that it holds, per source queue, every source offset from read to
// perQueue-1, and at most dups before read.
func checkGroupOnTarget(t *testing.T, ns, topic, group string, read, perQueue int64, dups int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := rocketmq.Config{NameServers: []string{ns}, Pipeline: "it-repl"}
	from := map[string]int64{} // target "broker/queue" -> the group's offset
	seen := map[string]map[int64]bool{}
	again := map[string]int{}
	err := rocketmq.Tail(ctx, cfg, rocketmq.TailOptions{Topics: []string{topic}}, func(m rocketmq.TailMessage) error {
		k := m.Broker + "/" + strconv.Itoa(m.Queue)
		off, ok := from[k]
		if !ok {
			o, has, err := rocketmq.GroupOffset(ctx, cfg, group, topic, m.Broker, m.Queue)
			if err != nil || !has {
				return fmt.Errorf("group %s on target queue %s: offset %d %v %v", group, k, o, has, err)
			}
			off, from[k] = o, o
		}
		if m.Offset < off {
			return nil
		}
		so, err := strconv.ParseInt(m.Properties[rocketmq.SrcOffsetProperty], 10, 64)
		if err != nil {
			return err
		}
		sk := m.Properties[rocketmq.SrcBrokerProperty] + "/" + m.Properties[rocketmq.SrcQueueProperty]
		if seen[sk] == nil {
			seen[sk] = map[int64]bool{}
		}
		seen[sk][so] = true
		if so < read {
			again[sk]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || len(seen) != len(from) {
		t.Fatalf("the group reads %d source queues on %d target queues", len(seen), len(from))
	}
	for sk, offs := range seen {
		for o := read; o < perQueue; o++ {
			if !offs[o] {
				t.Fatalf("source queue %s: offset %d skipped for the group on the target", sk, o)
			}
		}
		if again[sk] > dups {
			t.Fatalf("source queue %s: the group reads %d messages again, more than %d", sk, again[sk], dups)
		}
	}
	t.Logf("group offsets on the target %v; messages read again per source queue %v", from, again)
}
