package runtime

import (
	"context"
	"errors"
	"log/slog"
)

// fatalError marks an error that retrying cannot fix.
type fatalError struct{ err error }

func (f fatalError) Error() string { return f.err.Error() }
func (f fatalError) Unwrap() error { return f.err }

// Fatal marks err as not retriable: the task stops with state FAILED.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	return fatalError{err}
}

// IsFatal is the one classifier of retriable versus fatal errors: errors
// marked with Fatal, configuration errors, and errors that expose
// `Fatal() bool` (as connectors may, without importing runtime) returning true.
func IsFatal(err error) bool {
	var f fatalError
	if errors.As(err, &f) || errors.Is(err, ErrConfig) {
		return true
	}
	var c interface{ Fatal() bool }
	return errors.As(err, &c) && c.Fatal()
}

type loggerKey struct{}

// WithLogger stores a logger in ctx for the runtime's goroutines.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

func logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}
