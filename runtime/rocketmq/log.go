package rocketmq

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
// (every rebalance, every connection), so it maps to slog's Debug; its
// warnings and errors go through clientLevel, and a warning or error
// repeated with the same fields within repeatWindow is logged once, with
// the number of repeats on the next line that gets through.
type slogAdapter struct{}

// repeatWindow is how long an identical client warning or error is held back.
const repeatWindow = time.Minute

var repeats = struct {
	sync.Mutex
	seen map[string]*repeat
}{seen: map[string]*repeat{}}

type repeat struct {
	last    time.Time
	dropped int
}

func (slogAdapter) log(level slog.Level, msg string, fields map[string]any) {
	if level > slog.LevelDebug {
		level = clientLevel(level, msg, fields)
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
	attrs := make([]slog.Attr, 0, len(keys)+1)
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, summarize(fields[k])))
	}
	if level > slog.LevelInfo {
		dropped, ok := admit(level, msg, attrs, time.Now())
		if !ok {
			return
		}
		if dropped > 0 {
			attrs = append(attrs, slog.Int("repeated", dropped))
		}
	}
	l.LogAttrs(ctx, level, msg, attrs...)
}

// admit reports whether a client warning or error is new enough to log,
// and how many identical ones it held back since the last one logged.
func admit(level slog.Level, msg string, attrs []slog.Attr, now time.Time) (int, bool) {
	var b strings.Builder
	fmt.Fprint(&b, level, msg)
	for _, a := range attrs {
		fmt.Fprint(&b, "\x00", a.Key, "=", a.Value)
	}
	key := b.String()
	repeats.Lock()
	defer repeats.Unlock()
	r := repeats.seen[key]
	if r != nil && now.Sub(r.last) < repeatWindow {
		r.dropped++
		return 0, false
	}
	if r == nil {
		if len(repeats.seen) > 1024 {
			clear(repeats.seen) // bounded: at worst a repeat is logged again
		}
		r = &repeat{}
		repeats.seen[key] = r
	}
	dropped := r.dropped
	r.last, r.dropped = now, 0
	return dropped, true
}

// listFailed holds, per consumer group, when the client last logged that it
// could not list the group's consumers.
var listFailed sync.Map

// clientLevel is the level sluice gives a client warning or error. In normal
// runs the client reports, as warnings: a pull whose long poll found nothing
// (an idle queue: the broker holds the request up to its suspend time, and
// the client's request timeout can end it first), flow control (the sink is
// slower than the topic: backpressure, not a fault), a queue locked by
// another consumer during a rebalance, a handler failure (the subscriber
// logs its own warning), and the retry topic of a new group not existing
// yet. Those are Debug. A broker request that timed out is a Warning, not an
// Error: the client retries it.
func clientLevel(level slog.Level, msg string, fields map[string]any) slog.Level {
	cause := fmt.Sprint(fields[rlog.LogKeyUnderlayError])
	switch strings.TrimPrefix(msg, "defaultPullConsumer ") {
	case "pull message from broker error":
		if strings.Contains(cause, "request timeout") {
			return slog.LevelDebug
		}
	case "pull broker timeout",
		"the cached message count exceeds the threshold, so do flow control",
		"the cached message size exceeds the threshold, so do flow control",
		"the queue's messages span too long, so do flow control",
		"the message queue not locked, so consume later",
		"the message queue lock expired, so consume later",
		"consumeMessage Orderly return not OK", "consumeMessage orderly error":
		return slog.LevelDebug
	case "query topic route from server error":
		if strings.Contains(cause, "topic not exist") {
			return slog.LevelDebug
		}
	case "get consumer list of group from broker error":
		// The rebalance then warns that it failed, about the same event.
		listFailed.Store(fmt.Sprint(fields[rlog.LogKeyConsumerGroup]), time.Now())
	case "do balance in group failed, get consumer id list failed":
		if at, ok := listFailed.LoadAndDelete(fmt.Sprint(fields[rlog.LogKeyConsumerGroup])); ok && time.Since(at.(time.Time)) < 5*time.Second {
			return slog.LevelDebug
		}
	}
	if topic, _ := fields[rlog.LogKeyTopic].(string); strings.HasPrefix(topic, "%RETRY%") {
		return slog.LevelDebug
	}
	if level > slog.LevelWarn && strings.Contains(cause, "request timeout") {
		return slog.LevelWarn
	}
	return level
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
