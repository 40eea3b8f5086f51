package runtime

import (
	"context"
	"errors"
	"log/slog"

	"github.com/sluicecdc/sluice/schema"
)

// Fatal marks err as not retriable: the task stops with state FAILED. It is
// schema.Fatal, for code of the runtime and its transports.
func Fatal(err error) error { return schema.Fatal(err) }

// ClassOf is the one classifier the runtime reads: schema.ClassOf, with a
// runtime configuration error (ErrConfig) fatal unless it says otherwise.
func ClassOf(err error) schema.Class {
	c := schema.ClassOf(err)
	if c == schema.ClassUnknown && errors.Is(err, ErrConfig) {
		return schema.ClassFatal
	}
	return c
}

// IsFatal reports whether retrying cannot fix err (ClassOf is ClassFatal).
func IsFatal(err error) bool { return ClassOf(err) == schema.ClassFatal }

// IsEndOfInput reports whether err says the source's input is complete.
func IsEndOfInput(err error) bool { return ClassOf(err) == schema.ClassEndOfInput }

type loggerKey struct{}

// WithLogger stores a logger in ctx for the runtime's goroutines.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// Logger returns the logger WithLogger stored in ctx, or slog.Default():
// for a transport's goroutines, which the pipeline starts with it.
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}
