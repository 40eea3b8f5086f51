package rocketmq

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// The client logs through one process-wide logger. clientLog forwards it to
// the slog.Logger of the most recently created publisher or subscriber.
var (
	clientLog     atomic.Pointer[slog.Logger]
	clientLogOnce sync.Once
)

func setClientLogger(l *slog.Logger) {
	if l != nil {
		clientLog.Store(l.With("component", "rocketmq-client"))
	}
	clientLogOnce.Do(func() { rlog.SetLogger(slogAdapter{}) })
}

// slogAdapter implements rlog.Logger. The client's info level is chatty
// (every rebalance, every connection), so it maps to slog's Debug.
type slogAdapter struct{}

func (slogAdapter) log(level slog.Level, msg string, fields map[string]any) {
	if level > slog.LevelDebug && routine(msg, fields) {
		level = slog.LevelDebug
	}
	l := clientLog.Load()
	if l == nil {
		l = slog.Default()
	}
	ctx := context.Background()
	if !l.Enabled(ctx, level) {
		return
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, summarize(fields[k])))
	}
	l.LogAttrs(ctx, level, msg, attrs...)
}

// routine reports client warnings that are expected in normal operation:
// a handler failure (the subscriber logs its own warning), and the retry
// topic of a new consumer group not existing yet.
func routine(msg string, fields map[string]any) bool {
	switch msg {
	case "consumeMessage Orderly return not OK", "consumeMessage orderly error":
		return true
	case "query topic route from server error":
		return strings.Contains(fmt.Sprint(fields[rlog.LogKeyUnderlayError]), "topic not exist")
	}
	topic, _ := fields[rlog.LogKeyTopic].(string)
	return strings.HasPrefix(topic, "%RETRY%")
}

// summarize replaces messages (whole bodies, up to megabytes) by their
// position.
func summarize(v any) any {
	switch m := v.(type) {
	case []*primitive.MessageExt:
		if len(m) == 0 {
			return "0 messages"
		}
		return fmt.Sprintf("%d messages from %s offset %d", len(m), m[0].Topic, m[0].QueueOffset)
	case *primitive.MessageExt:
		if m == nil {
			return nil
		}
		return fmt.Sprintf("message %s offset %d", m.Topic, m.QueueOffset)
	case []*primitive.Message:
		return fmt.Sprintf("%d messages", len(m))
	case *primitive.Message:
		if m == nil {
			return nil
		}
		return "message to " + m.Topic
	}
	return v
}

func (a slogAdapter) Debug(msg string, fields map[string]any)   { a.log(slog.LevelDebug, msg, fields) }
func (a slogAdapter) Info(msg string, fields map[string]any)    { a.log(slog.LevelDebug, msg, fields) }
func (a slogAdapter) Warning(msg string, fields map[string]any) { a.log(slog.LevelWarn, msg, fields) }
func (a slogAdapter) Error(msg string, fields map[string]any)   { a.log(slog.LevelError, msg, fields) }
func (a slogAdapter) Fatal(msg string, fields map[string]any)   { a.log(slog.LevelError, msg, fields) }
func (slogAdapter) Level(string)                                {}
func (slogAdapter) OutputPath(string) error                     { return nil }

var _ rlog.Logger = slogAdapter{}
