package kafka

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The Kafka client's info lines (connections, rebalances: many) log at
// DEBUG; its warnings and errors keep their level (issue 33, item 5:
// library noise at DEBUG).
func TestClientInfoIsDebug(t *testing.T) {
	var out bytes.Buffer
	l := logAdapter{slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for level, want := range map[kgo.LogLevel]string{kgo.LogLevelInfo: "level=DEBUG", kgo.LogLevelDebug: "level=DEBUG",
		kgo.LogLevelWarn: "level=WARN", kgo.LogLevelError: "level=ERROR"} {
		out.Reset()
		l.Log(level, "connection opened", "broker", "1")
		if line := out.String(); !strings.Contains(line, want) || !strings.Contains(line, `msg="kafka client: connection opened" broker=1`) {
			t.Errorf("client level %v: %q, want %s", level, line, want)
		}
	}
}
