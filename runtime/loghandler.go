package runtime

import (
	"context"
	"log/slog"
	"slices"
)

// UniqueKeys wraps h so that a line never repeats a key: loggers derived
// with With (a component's logger handed to a library that adds its own
// "component") would otherwise write both. The last value of a key wins, at
// the place of its first occurrence. Groups keep their own keys.
func UniqueKeys(h slog.Handler) slog.Handler { return &uniqueKeys{inner: h} }

type uniqueKeys struct {
	inner slog.Handler // with the attrs and groups before the last group
	attrs []slog.Attr  // attrs added since then
}

func (u *uniqueKeys) Enabled(ctx context.Context, l slog.Level) bool { return u.inner.Enabled(ctx, l) }

func (u *uniqueKeys) WithAttrs(as []slog.Attr) slog.Handler {
	return &uniqueKeys{inner: u.inner, attrs: merge(u.attrs, as)}
}

func (u *uniqueKeys) WithGroup(name string) slog.Handler {
	if name == "" {
		return u
	}
	return &uniqueKeys{inner: u.inner.WithAttrs(u.attrs).WithGroup(name)}
}

func (u *uniqueKeys) Handle(ctx context.Context, r slog.Record) error {
	own := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		own = append(own, a)
		return true
	})
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(merge(u.attrs, own)...)
	return u.inner.Handle(ctx, out)
}

// merge returns base followed by as, a key given again replacing the
// earlier value in place. It never writes into base.
func merge(base, as []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, len(base), len(base)+len(as))
	copy(out, base)
	for _, a := range as {
		if i := slices.IndexFunc(out, func(b slog.Attr) bool { return b.Key == a.Key && a.Key != "" }); i >= 0 {
			out[i] = a
		} else {
			out = append(out, a)
		}
	}
	return out
}
