package plugin

import (
	"context"
	"github.com/sluicecdc/sluice/runtime"
)

// Spec is a connector plugin with its config type C: the typed form of
// Plugin, whose functions take the *C that New returns, so that no
// connector asserts the type of its own config. Plugin turns it into the
// registry's entry, where the one conversion lives.
type Spec[C any] struct {
	Kind           string // KindSource, KindSink or KindTransport
	Name           string
	Types, Aliases []string
	// New returns a fresh config with the defaults of absent keys; nil: a
	// zero C.
	New func() *C
	// Validate, NewSource, NewSink, NewTransport and NewTables are
	// Plugin's, typed.
	Validate     func(c *C, sec *Section, doc *Config) error
	NewSource    func(ctx context.Context, c *C, t *Task) (runtime.Source, error)
	NewSink      func(ctx context.Context, c *C, t *Task) (runtime.Sink, error)
	NewTransport func(ctx context.Context, c *C, t *Task) (runtime.Publisher, runtime.Subscriber, error)
	NewTables    func(c *C, t *Task) (runtime.TableLister, error)
	// Keys documents the section's keys (Plugin.Keys).
	Keys KeyDocs
}

// Plugin is the registry's entry for s.
func (s Spec[C]) Plugin() Plugin {
	p := Plugin{Kind: s.Kind, Name: s.Name, Types: s.Types, Aliases: s.Aliases, Keys: s.Keys,
		New: func() any {
			if s.New == nil {
				return new(C)
			}
			return s.New()
		}}
	if f := s.Validate; f != nil {
		p.Validate = func(v any, sec *Section, doc *Config) error { return f(v.(*C), sec, doc) }
	}
	if f := s.NewSource; f != nil {
		p.NewSource = func(ctx context.Context, v any, t *Task) (runtime.Source, error) { return f(ctx, v.(*C), t) }
	}
	if f := s.NewSink; f != nil {
		p.NewSink = func(ctx context.Context, v any, t *Task) (runtime.Sink, error) { return f(ctx, v.(*C), t) }
	}
	if f := s.NewTransport; f != nil {
		p.NewTransport = func(ctx context.Context, v any, t *Task) (runtime.Publisher, runtime.Subscriber, error) {
			return f(ctx, v.(*C), t)
		}
	}
	if f := s.NewTables; f != nil {
		p.NewTables = func(v any, t *Task) (runtime.TableLister, error) { return f(v.(*C), t) }
	}
	return p
}

// SectionConfig returns the decoded config of the task's section key
// (Task.Sections) when it is a *C: what one connector reads of another's
// (a sink's dead-letter queue is on the RocketMQ transport).
func SectionConfig[C any](t *Task, key string) (*C, bool) {
	c, ok := t.Sections[key].(*C)
	return c, ok
}

// ConfigOf returns v, a config some plugin's New made, as a *C.
func ConfigOf[C any](v any) (*C, bool) {
	c, ok := v.(*C)
	return c, ok
}

// OnClose has f run when the pipeline built for t closes its sink side,
// after the sink (Pipeline.OnClose): a resource a constructor opened
// beside its connector (a sink's dead-letter producer) closes with it,
// and the connector keeps every optional capability it has, since it is
// not wrapped.
func (t *Task) OnClose(f func() error) { t.closers = append(t.closers, f) }

// Closers are the functions OnClose gave, for Pipeline.OnClose.
func (t *Task) Closers() []func() error { return t.closers }
