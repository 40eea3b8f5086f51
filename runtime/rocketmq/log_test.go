package rocketmq

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func TestClientLogAdapter(t *testing.T) {
	var buf bytes.Buffer
	old := clientLog.Load()
	defer clientLog.Store(old)
	clientLog.Store(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	a := slogAdapter{}

	a.Info("rebalance done", map[string]any{"group": "g"})
	if buf.Len() != 0 {
		t.Errorf("client info logged at Info: %s", buf.String())
	}
	a.Warning("broker unreachable", map[string]any{"broker": "127.0.0.1:1", "b": 2})
	if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "broker=127.0.0.1:1") || strings.Index(out, "b=2") > strings.Index(out, "broker=") {
		t.Errorf("warning: %q (fields sorted by key)", out)
	}
	buf.Reset()
	body := strings.Repeat("x", 10000)
	msgs := []*primitive.MessageExt{{Message: primitive.Message{Topic: "t", Body: []byte(body)}, QueueOffset: 41}}
	a.Warning("consumeMessage Orderly return not OK", map[string]any{"messages": msgs})
	a.Warning("do balance in group failed, the topic does not exist", map[string]any{"topic": "%RETRY%g"})
	if buf.Len() != 0 {
		t.Errorf("routine client warnings not demoted: %s", buf.String())
	}
	a.Error("send failed", map[string]any{"messages": msgs})
	if out := buf.String(); strings.Contains(out, body) || !strings.Contains(out, "1 messages from t offset 41") {
		t.Errorf("message bodies not summarized: %.200s", out)
	}
}

// The client's normal-run warnings are Debug; a broker request timing out
// is a Warning; one event is one line.
func TestClientLogLevels(t *testing.T) {
	var buf bytes.Buffer
	old := clientLog.Load()
	defer clientLog.Store(old)
	clientLog.Store(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	a := slogAdapter{}
	timeout := errors.New("request timeout")
	// Messages as rocketmq-client-go writes them (consumer/push_consumer.go,
	// consumer/pull_consumer.go, consumer/process_queue.go, consumer/consumer.go).
	a.Warning("pull message from broker error", map[string]any{rlog.LogKeyBroker: "127.0.0.1:20911", rlog.LogKeyUnderlayError: timeout.Error()})
	a.Warning("defaultPullConsumer pull message from broker error", map[string]any{rlog.LogKeyBroker: "127.0.0.1:20911", rlog.LogKeyUnderlayError: timeout.Error()})
	a.Warning("pull broker timeout", map[string]any{rlog.LogKeyBroker: "127.0.0.1:20911"})
	a.Warning("the cached message count exceeds the threshold, so do flow control", map[string]any{"PullThresholdForQueue": 1024})
	a.Warning("the message queue not locked, so consume later", map[string]any{rlog.LogKeyMessageQueue: "q"})
	if buf.Len() != 0 {
		t.Fatalf("routine client warnings logged at Info or above:\n%s", buf.String())
	}
	a.Warning("pull message from broker error", map[string]any{rlog.LogKeyBroker: "127.0.0.1:20911", rlog.LogKeyUnderlayError: "connection refused"})
	if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "connection refused") {
		t.Fatalf("a failing pull is not a warning: %q", out)
	}
	buf.Reset()
	group := "g-" + t.Name()
	a.Error("get consumer list of group from broker error", map[string]any{rlog.LogKeyConsumerGroup: group, rlog.LogKeyUnderlayError: timeout})
	a.Warning("do balance in group failed, get consumer id list failed", map[string]any{rlog.LogKeyConsumerGroup: group, rlog.LogKeyTopic: "t"})
	if out := buf.String(); strings.Count(out, "\n") != 1 || !strings.Contains(out, "level=WARN") || strings.Contains(out, "do balance") {
		t.Fatalf("a timed-out consumer list: want one warning line, got:\n%s", out)
	}
}

func TestClientLogRepeatsHeldBack(t *testing.T) {
	attrs := []slog.Attr{slog.String("broker", "b-"+t.Name())}
	t0 := time.Now()
	if n, ok := admit(slog.LevelWarn, "send heart beat to broker error", attrs, t0); !ok || n != 0 {
		t.Fatalf("first: %d %v", n, ok)
	}
	for i := 1; i <= 3; i++ {
		if _, ok := admit(slog.LevelWarn, "send heart beat to broker error", attrs, t0.Add(time.Duration(i)*time.Second)); ok {
			t.Fatalf("repeat %d within the window logged", i)
		}
	}
	if _, ok := admit(slog.LevelWarn, "send heart beat to broker error", []slog.Attr{slog.String("broker", "other-"+t.Name())}, t0.Add(time.Second)); !ok {
		t.Fatal("the same message with other fields held back")
	}
	if n, ok := admit(slog.LevelWarn, "send heart beat to broker error", attrs, t0.Add(repeatWindow+time.Second)); !ok || n != 3 {
		t.Fatalf("after the window: %d %v, want 3 repeats reported", n, ok)
	}
}
