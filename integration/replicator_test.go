package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
// queue.
func TestReplicatorKill9(t *testing.T) {
	env := schematest.NeedServers(t, "SLUICE_ROCKETMQ_NAMESRV", "SLUICE_ROCKETMQ_B_NAMESRV", "SLUICE_ROCKETMQ_B_CLUSTER")
	a, b, bCluster := env[0], env[1], env[2]
	var sfx [4]byte
	_, _ = rand.Read(sfx[:])
	topic := "it_repl_kill_" + hex.EncodeToString(sfx[:])
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
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

	// 150 messages a queue, binary bodies, sent in order to each queue.
	prod, err := rmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{a})),
		producer.WithGroupName("it-repl-kill-src"), producer.WithQueueSelector(producer.NewManualQueueSelector()))
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prod.Shutdown() }()
	const perQueue = 150
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
	src := readTopic(t, a, topic, false)

	const batchSize = 10
	dir := t.TempDir()
	cfg := filepath.Join(dir, "replicator.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "name: it-repl-kill\nsource:\n  type: rocketmq\n  name_servers: [%s]\n  topics: [%s]\n  batch_size: %d\n"+
		"transport:\n  type: rocketmq\n  name_servers: [%s]\n  cluster: %s\npositions:\n  type: file\n  dir: positions\n", a, topic, batchSize, b, bCluster), 0o600); err != nil {
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
	p.stopProcess(t)

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
