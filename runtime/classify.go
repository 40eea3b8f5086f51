package runtime

import (
	"context"
	"log/slog"

	"github.com/sluicecdc/sluice/schema"
)

// ClassOf is the one classifier the runtime reads: schema.ClassOf, the
// contract's vocabulary (schema.Fatal, schema.Retriable,
// schema.ErrEndOfInput), set once where an error is made. A configuration
// error of any package wraps schema.ErrConfig, which is fatal, so it needs
// no case here.
func ClassOf(err error) schema.Class { return schema.ClassOf(err) }

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
