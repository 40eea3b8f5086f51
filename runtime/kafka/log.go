package kafka

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// logAdapter passes franz-go's log lines to slog, at info and above (its
// debug level is very chatty).
type logAdapter struct{ log *slog.Logger }

func (l logAdapter) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l logAdapter) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelDebug // the client's info lines (connections, rebalances) are many
	switch level {
	case kgo.LogLevelError:
		lv = slog.LevelError
	case kgo.LogLevelWarn:
		lv = slog.LevelWarn
	}
	l.log.Log(context.Background(), lv, "kafka client: "+msg, keyvals...)
}

// afterRetry is the wait before retry attempt n (from 1): 50ms doubling up
// to 2s.
func afterRetry(n int) <-chan time.Time {
	d := 50 * time.Millisecond << min(n-1, 6)
	return time.After(min(d, 2*time.Second))
}
