package plugin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/storage"
	"gopkg.in/yaml.v3"
)

// Plugin kinds: the config section a connector type fills.
const (
	KindSource    = "source"
	KindSink      = "sink"
	KindTransport = "transport"
)

// Plugin is one connector type. It owns the keys of its section (the yaml
// tags of the struct New returns) and their checks (Validate); the command
// registers every plugin, so adding a connector is one Register call.
type Plugin struct {
	Kind string // KindSource, KindSink or KindTransport
	Name string // the plugin's name, e.g. "mysql", "jdbc", "embedded"
	// Types are the section types it serves, as "known" lists them
	// (e.g. postgres, mysql); Aliases more spellings it accepts.
	Types   []string
	Aliases []string
	// New returns a pointer to a fresh config struct with the defaults of
	// absent keys: the shape Section.Decode fills strictly (yaml tags,
	// sluice:"required" and sluice:"bytes") and Section.Explain reads.
	New func() any
	// Validate checks and completes the decoded config without connecting:
	// defaults that come from the section's type or the document (its
	// name), then the connector's own checks. An error naming the config's
	// Go fields is retold with the YAML keys (Section.Explain); one from
	// Section.Err is returned as it is.
	Validate func(c any, sec *Section, doc *Config) error
	// NewSource, NewSink and NewTransport make the connector of the
	// plugin's kind for one task, from its config (what New returned,
	// after Validate and the command's checks that span sections) and t,
	// which they may read but not keep. A transport makes a Publisher when
	// t runs a source, a Subscriber when it runs a sink. A plugin without
	// the constructor of its kind validates but cannot run.
	NewSource    func(ctx context.Context, c any, t *Task) (runtime.Source, error)
	NewSink      func(ctx context.Context, c any, t *Task) (runtime.Sink, error)
	NewTransport func(ctx context.Context, c any, t *Task) (runtime.Publisher, runtime.Subscriber, error)
	// NewTables, for a source, makes what lists the tables it would
	// capture (TableLister, and ShapeLister for their shapes) without
	// reading or opening anything else: a task that runs only the sink
	// checks them against the sink's control tables and its target at
	// start (Pipeline.Tables). Optional.
	NewTables func(c any, t *Task) (runtime.TableLister, error)
	// Keys documents the section's keys: one line of doc for each key of
	// New's struct (and of the structs in it), with a default and allowed
	// values where the struct cannot say them (ConfigKeys).
	Keys KeyDocs
}

// Runs reports whether p has the constructor of its kind, so that a task
// can run it.
func (p *Plugin) Runs() bool {
	switch p.Kind {
	case KindSource:
		return p.NewSource != nil
	case KindSink:
		return p.NewSink != nil
	case KindTransport:
		return p.NewTransport != nil
	}
	return false
}

// TaskOptions say which task of a config the command builds and how.
type TaskOptions struct {
	// Only is "" (source and sink in one pipeline), "source" or "sink".
	Only string
	// Lease fences the source task's durable writes in a cluster (the
	// schema history in the database); zero: unfenced (`sluice run`).
	Lease storage.Lease
	// Log is the task's logger; nil: slog.Default().
	Log *slog.Logger
	// HistoryDB, with HistoryDialect ("postgres" or "mysql"), is the
	// database where a source with history_store: database keeps its
	// schema history, instead of the positions database: in a cluster the
	// coordinator, which holds the lease table, since a fenced append reads
	// the lease row in the same statement. It stays the caller's to close.
	// A non-nil HistoryDB also says the task runs in a cluster: the caller
	// (the worker) gives the source task its fenced position store, so
	// the command opens none (no positions folder, no positions database).
	HistoryDB      *sql.DB
	HistoryDialect string
	// CoordinatorTables names the cluster's control tables in HistoryDB,
	// unqualified. When a sink's target is the same database (compared by
	// asking both servers who they are), they and the schema history table
	// join the sink's protected tables (sink.Config.ControlTables): a
	// source table mapping onto one is refused at start.
	CoordinatorTables []string
	// SourceTask is which of the source section's tasks this task is (0
	// first), for a source that splits its work among several (the
	// replicator's tasks key; cluster.SourceTaskOf).
	SourceTask int
}

// Task is what a plugin's constructor gets besides its own config: the
// task being built.
type Task struct {
	TaskOptions // Log is never nil here
	// Config is the task's whole document; Sections holds the decoded
	// config of each of its sections the task uses, by key (source, sink,
	// transport, and the command's own, such as positions): what one
	// connector needs of another's (a sink's dead-letter queue is on the
	// RocketMQ transport).
	Config   *Config
	Sections map[string]any
	// Source and Sink say which sides the task runs.
	Source, Sink bool
	closers      []func() error // OnClose
}

// Registry holds the plugins by kind and section type.
type Registry struct {
	mu      sync.RWMutex
	plugins []*Plugin
	byType  map[string]*Plugin // kind + "\x00" + section type
	// document checks what spans sections (SetDocumentCheck)
	document func(*Config) error
}

// SetDocumentCheck sets the checks of a whole document that span sections
// (an embedded transport needs a source and a sink, ...), which
// ValidateConnector runs on a whole document once its section passed.
func (r *Registry) SetDocumentCheck(f func(*Config) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.document = f
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byType: map[string]*Plugin{}} }

// Register adds p. A second plugin for a kind and type is a programming
// error and panics, as database/sql.Register does.
func (r *Registry) Register(p Plugin) {
	if p.New == nil || p.Name == "" || len(p.Types) == 0 {
		panic("runtime: Register: a plugin needs a name, types and New")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range append(append([]string(nil), p.Types...), p.Aliases...) {
		k := p.Kind + "\x00" + t
		if _, dup := r.byType[k]; dup {
			panic(fmt.Sprintf("runtime: Register: a second %s plugin for type %q", p.Kind, t))
		}
		r.byType[k] = &p
	}
	r.plugins = append(r.plugins, &p)
}

// Lookup returns the plugin of kind that serves section type typ.
func (r *Registry) Lookup(kind, typ string) (*Plugin, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.byType[kind+"\x00"+typ]
	return p, ok
}

// Plugin returns the plugin named name (e.g. "jdbc"), or else the one
// serving section type name; sources first, then sinks, then transports.
func (r *Registry) Plugin(name string) (*Plugin, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, p := range r.sorted() {
		if p.Name == name {
			return p, true
		}
	}
	for _, kind := range []string{KindSource, KindSink, KindTransport} {
		if p, ok := r.byType[kind+"\x00"+name]; ok {
			return p, true
		}
	}
	return nil, false
}

// Plugins lists the plugins: sources, sinks, transports, each by name.
func (r *Registry) Plugins() []Plugin {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Plugin
	for _, p := range r.sorted() {
		out = append(out, *p)
	}
	return out
}

func (r *Registry) sorted() []*Plugin {
	order := map[string]int{KindSource: 0, KindSink: 1, KindTransport: 2}
	ps := append([]*Plugin(nil), r.plugins...)
	sort.SliceStable(ps, func(i, j int) bool {
		if order[ps[i].Kind] != order[ps[j].Kind] {
			return order[ps[i].Kind] < order[ps[j].Kind]
		}
		return ps[i].Name < ps[j].Name
	})
	return ps
}

// known lists the section types of kind, for messages.
func (r *Registry) known(kind string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var types []string
	for _, p := range r.plugins {
		if p.Kind == kind {
			types = append(types, p.Types...)
		}
	}
	return strings.Join(types, ", ")
}

// Decode decodes sec, a section of kind, with the plugin its type selects:
// strictly (an unknown key is an error naming its path and line), then the
// plugin's Validate. It returns the plugin's config (what New returned).
func (r *Registry) Decode(kind string, sec *Section, doc *Config) (any, error) {
	return r.decode(kind, sec, doc, false)
}

// decode is Decode; with all, the section's decoding problems come back
// all at once (Section.decodeAll), before the connector's own checks.
func (r *Registry) decode(kind string, sec *Section, doc *Config, all bool) (any, error) {
	p, ok := r.Lookup(kind, sec.Type)
	if !ok {
		known := r.known(kind)
		msg := fmt.Sprintf("unknown %s type %q (known: %s)", kind, sec.Type, known)
		if s := Suggest(sec.Type, strings.Split(known, ", ")); s != "" {
			msg += ": did you mean " + s + "?"
		}
		return nil, sec.Err("type", msg)
	}
	c := p.New()
	decode := sec.Decode
	if all {
		decode = sec.decodeAll
	}
	if err := decode(c); err != nil {
		return nil, err
	}
	if p.Validate != nil {
		if err := p.Validate(c, sec, doc); err != nil {
			var ke *KeyError
			if errors.As(err, &ke) {
				return nil, err
			}
			return nil, sec.Explain(err, c)
		}
	}
	return c, nil
}

// FieldError is one key's problem in a validation: Path is the key's
// dotted path (e.g. "source.mask[0].kind"), Value its value as written
// (empty for a mapping or a list, and for a secret: password, secret_key
// and a DSN's value are never repeated), Errors the messages with the line.
type FieldError struct {
	Path   string
	Value  string
	Errors []string
}

// ValidateConnector checks a connector's config as `sluice validate`
// does, without connecting. pluginType is a plugin's name ("mysql",
// "jdbc", "embedded", "rocketmq") or a section type ("postgres"). doc is
// JSON or YAML (JSON is YAML), either
//   - one section of that plugin: its keys, "type" optional (it defaults
//     to the plugin's first type, e.g. mysql or postgres); paths are then
//     prefixed with the section's kind ("source.server_id"), and the
//     pipeline name defaults read "validate"; or
//   - a whole pipeline document (top-level keys name, source, transport,
//     sink, positions), whose section of the plugin's kind is checked,
//     with the document's name, and then the checks that span sections
//     (SetDocumentCheck).
//
// ${ENV} references are expanded as in a config file. The result lists
// every decoding problem of the section (unknown, repeated and missing
// keys, bad values), or else its first failed check (nil: valid); the error is for a
// pluginType no plugin has, or a doc that is no YAML mapping.
func (r *Registry) ValidateConnector(pluginType string, doc []byte) ([]FieldError, error) {
	p, ok := r.Plugin(pluginType)
	if !ok {
		return nil, fmt.Errorf("no connector plugin %q (known: %s): %w", pluginType, r.names(), runtime.ErrConfig)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("the config is neither JSON nor YAML: %v: %w", err, runtime.ErrConfig)
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the config must be a JSON object or YAML mapping: %w", runtime.ErrConfig)
	}
	m := root.Content[0]
	var cfg *Config
	var sec *Section
	whole := isDocument(m)
	if whole {
		c, err := ParseConfig(doc, "config")
		if err != nil {
			return fieldErrors(err, m), nil
		}
		cfg = c
		switch p.Kind {
		case KindSource:
			sec = c.Source
		case KindSink:
			sec = c.Sink
		case KindTransport:
			sec = c.Transport
		}
		if sec == nil {
			return []FieldError{{Path: p.Kind, Errors: []string{fmt.Sprintf("the document has no %s section for plugin %s", p.Kind, p.Name)}}}, nil
		}
	} else {
		if err := expandEnv("config", m); err != nil {
			return fieldErrors(err, m), nil
		}
		typ := ""
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == "type" {
				typ = m.Content[i+1].Value
			}
		}
		if typ == "" {
			typ = p.Types[0]
		}
		sec = &Section{file: "config", path: p.Kind, Type: typ, node: m}
		cfg = &Config{File: "config", Name: "validate"}
		switch p.Kind {
		case KindSource:
			cfg.Source = sec
		case KindSink:
			cfg.Sink = sec
		case KindTransport:
			cfg.Transport = sec
		}
		var wrap yaml.Node
		wrap.Kind, wrap.Content = yaml.MappingNode, []*yaml.Node{{Kind: yaml.ScalarNode, Value: p.Kind}, m}
		m = &wrap
	}
	if q, ok := r.Lookup(p.Kind, sec.Type); !ok || q.Name != p.Name {
		return []FieldError{{Path: p.Kind + ".type", Value: sec.Type, Errors: []string{fmt.Sprintf("type %q is not one of plugin %s's (%s)", sec.Type, p.Name, strings.Join(p.Types, ", "))}}}, nil
	}
	if _, err := r.decode(p.Kind, sec, cfg, true); err != nil {
		return fieldErrors(err, m), nil
	}
	r.mu.RLock()
	document := r.document
	r.mu.RUnlock()
	if whole && document != nil {
		if err := document(cfg); err != nil {
			return fieldErrors(err, m), nil
		}
	}
	return nil, nil
}

func (r *Registry) names() string {
	var n []string
	for _, p := range r.Plugins() {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}

// isDocument tells a whole pipeline document from one section.
func isDocument(m *yaml.Node) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		switch m.Content[i].Value {
		case "source", "sink", "transport", "positions":
			return m.Content[i+1].Kind == yaml.MappingNode
		}
	}
	return false
}

// fieldErrors turns a config error into the FieldError of its key; root
// is the document's mapping, to read the value from.
func fieldErrors(err error, root *yaml.Node) []FieldError {
	var ps Problems
	if errors.As(err, &ps) {
		var out []FieldError
		for _, e := range ps {
			out = append(out, fieldErrors(e, root)...)
		}
		return out
	}
	var ke *KeyError
	if !errors.As(err, &ke) {
		return []FieldError{{Errors: []string{err.Error()}}}
	}
	fe := FieldError{Path: ke.Key, Errors: []string{fmt.Sprintf("line %d: %s", ke.Line, ke.Msg)}}
	s := &Section{node: root}
	if n := s.lookup(ke.Key); n != nil && n.Kind == yaml.ScalarNode && !secretKey(ke.Key) {
		fe.Value = n.Value
	}
	return []FieldError{fe}
}

// secretKey reports whether the value of a key may hold a secret.
func secretKey(path string) bool {
	k := path[strings.LastIndexAny(path, ".")+1:]
	return strings.Contains(k, "password") || strings.Contains(k, "secret") || k == "dsn" || k == "access_key"
}

// CheckInFlight checks a transport section's max_in_flight and
// max_in_flight_bytes.
func CheckInFlight(sec *Section, records int, bytes int64) error {
	if records < 0 {
		return sec.Err("max_in_flight", fmt.Sprintf("%d is negative: use a number of records such as 8192, or leave it out for the default", records))
	}
	if bytes < 0 || bytes > 1<<40 {
		return sec.Err("max_in_flight_bytes", fmt.Sprintf("%s: use a size such as 16MiB, or leave it out for the default", runtime.ByteSize(bytes)))
	}
	return nil
}
