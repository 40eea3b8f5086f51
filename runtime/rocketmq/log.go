package rocketmq

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"

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
		attrs = append(attrs, slog.Any(k, fields[k]))
	}
	l.LogAttrs(ctx, level, msg, attrs...)
}

func (a slogAdapter) Debug(msg string, fields map[string]any)   { a.log(slog.LevelDebug, msg, fields) }
func (a slogAdapter) Info(msg string, fields map[string]any)    { a.log(slog.LevelDebug, msg, fields) }
func (a slogAdapter) Warning(msg string, fields map[string]any) { a.log(slog.LevelWarn, msg, fields) }
func (a slogAdapter) Error(msg string, fields map[string]any)   { a.log(slog.LevelError, msg, fields) }
func (a slogAdapter) Fatal(msg string, fields map[string]any)   { a.log(slog.LevelError, msg, fields) }
func (slogAdapter) Level(string)                                {}
func (slogAdapter) OutputPath(string) error                     { return nil }

var _ rlog.Logger = slogAdapter{}
