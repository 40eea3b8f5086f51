package rocketmq

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
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
