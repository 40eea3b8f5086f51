package binlog

import (
	"context"
	"log/slog"
)

// libraryLogger is the logger go-mysql's syncer gets: its records below
// WARN become DEBUG. It logs its whole config ("create BinlogSyncer") and
// every connect at INFO; the source logs what a user needs at INFO itself.
func libraryLogger(l *slog.Logger) *slog.Logger {
	return slog.New(debugBelowWarn{l.Handler()}).With("component", "go-mysql")
}

type debugBelowWarn struct{ inner slog.Handler }

func demote(l slog.Level) slog.Level {
	if l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}

func (h debugBelowWarn) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, demote(l))
}

func (h debugBelowWarn) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return h.inner.Handle(ctx, r)
}

func (h debugBelowWarn) WithAttrs(as []slog.Attr) slog.Handler {
	return debugBelowWarn{h.inner.WithAttrs(as)}
}

func (h debugBelowWarn) WithGroup(name string) slog.Handler {
	return debugBelowWarn{h.inner.WithGroup(name)}
}
