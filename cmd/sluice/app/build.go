package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/embedded"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/sink"
)

type decoded struct {
	source    *binlog.Config
	codec     converter.Options // the event format the source's options ask for
	sink      *sink.Config
	embedded  *embedded.Config
	rocketmq  *rocketmq.Config
	kafka     *kafka.Config
	positions positionsConfig
	maxFlight int
	// maxFlightBytes: the transport's max_in_flight_bytes (0: default).
	maxFlightBytes int
	// plugins and configs: by kind, the connector each section's type
	// selected and its decoded config, which BuildTask hands to the
	// connector's constructor; the typed fields above point at the configs
	// of the connectors whose checks span sections.
	plugins map[string]*plugin.Plugin
	configs map[string]any
}

// decode decodes sec, the section of kind, with the connector its type
// selects (connectors), and keeps both for BuildTask; a connector that
// cannot make a task is refused.
func (d *decoded) decode(kind string, sec *plugin.Section, cfg *plugin.Config) (any, error) {
	v, err := connectors.Decode(kind, sec, cfg)
	if err != nil {
		return nil, err
	}
	p, ok := connectors.Lookup(kind, sec.Type)
	if !ok || !p.Runs() {
		return nil, sec.Err("type", fmt.Sprintf("%s type %q has no runner in this build", kind, sec.Type))
	}
	d.plugins[kind], d.configs[kind] = p, v
	return v, nil
}

// sections are the decoded sections for the connectors' constructors
// (plugin.Task.Sections): by kind, and positions (a positionsConfig).
func (d *decoded) sections() map[string]any {
	m := map[string]any{"positions": &d.positions}
	for k, v := range d.configs {
		m[k] = v
	}
	return m
}

// paths appends to log attributes the paths the config names, resolved
// against its folder: where positions are kept and the schema history file.
func (d *decoded) paths(attrs ...any) []any {
	if d.source != nil {
		attrs = append(attrs, "positions", d.positions.where())
	}
	if d.source != nil && d.source.HistoryFile != "" {
		attrs = append(attrs, "history_file", d.source.HistoryFile)
	}
	return attrs
}

// decodeAll decodes every section the process shape needs, each with the
// connector its type selects (connectors), and checks what spans sections,
// for a process that runs alone (`sluice run`).
func decodeAll(cfg *plugin.Config, only string) (*decoded, error) {
	return decodeTask(cfg, only, false)
}

// decodeTask is decodeAll; coordinated says the task runs in a cluster,
// whose coordinator database keeps what history_store: database keeps
// (TaskOptions.HistoryDB), so it needs no SQL positions. Its steps: the
// sides --only selects, each connector's section, the transport with what
// it takes from the source, the positions, and the control tables the
// sink must leave alone.
func decodeTask(cfg *plugin.Config, only string, coordinated bool) (*decoded, error) {
	d := &decoded{positions: positionsConfig{Dir: "positions", typ: "file"}, plugins: map[string]*plugin.Plugin{}, configs: map[string]any{}}
	wantSource, wantSink, err := sides(cfg, only)
	if err != nil {
		return nil, err
	}
	if err := d.decodeConnectors(cfg, only, wantSource, wantSink); err != nil {
		return nil, err
	}
	if err := d.decodePositions(cfg); err != nil {
		return nil, err
	}
	if err := d.checkHistory(cfg, coordinated); err != nil {
		return nil, err
	}
	return d, nil
}

// sides says which sides of cfg a process with --only runs.
func sides(cfg *plugin.Config, only string) (wantSource, wantSink bool, err error) {
	switch only {
	case "", "source", "sink":
	default:
		return false, false, fmt.Errorf("--only must be source or sink, not %q: %w", only, runtime.ErrConfig)
	}
	if only == "source" && cfg.Source == nil || only == "sink" && cfg.Sink == nil {
		return false, false, fmt.Errorf("--only %s: the config has no %s section: %w", only, only, runtime.ErrConfig)
	}
	return only != "sink" && cfg.Source != nil, only != "source" && cfg.Sink != nil, nil
}

// decodeConnectors decodes the source and sink sections the process runs
// and the transport, which takes the source's event format.
func (d *decoded) decodeConnectors(cfg *plugin.Config, only string, wantSource, wantSink bool) error {
	if wantSource {
		v, err := d.decode(plugin.KindSource, cfg.Source, cfg)
		if err != nil {
			return err
		}
		if c, ok := plugin.ConfigOf[binlog.Config](v); ok {
			d.source, d.codec = c, codecOptions(c)
		}
	}
	if wantSink {
		v, err := d.decode(plugin.KindSink, cfg.Sink, cfg)
		if err != nil {
			return err
		}
		d.sink, _ = plugin.ConfigOf[sink.Config](v)
	}
	if cfg.Transport.Type == "embedded" {
		if only != "" {
			return cfg.Transport.Err("type", "the embedded transport runs source and sink in one process: --only needs a broker transport (rocketmq or kafka)")
		}
		if cfg.Source == nil || cfg.Sink == nil {
			return cfg.Transport.Err("type", "the embedded transport needs both a source and a sink section")
		}
	}
	v, err := d.decode(plugin.KindTransport, cfg.Transport, cfg)
	if err != nil {
		return err
	}
	if c, ok := plugin.ConfigOf[embedded.Config](v); ok {
		d.embedded = c
		d.maxFlight, d.maxFlightBytes = c.MaxInFlight, int(c.MaxInFlightBytes)
		if d.maxFlight == 0 {
			d.maxFlight = embedded.DefaultMaxInFlight
		}
	}
	if c, ok := plugin.ConfigOf[rocketmq.Config](v); ok {
		return d.withRocketMQ(c, cfg, wantSink)
	}
	if c, ok := plugin.ConfigOf[kafka.Config](v); ok {
		d.kafka = c
		d.maxFlight, d.maxFlightBytes = c.MaxInFlight, int(c.MaxInFlightBytes)
		if d.source != nil && d.codec != converter.DefaultOptions() {
			c.Codec = converter.NewJSON(d.codec) // the source's event format, as on rocketmq
		}
	}
	return nil
}

// withRocketMQ keeps the RocketMQ transport's config, which publishes in
// the source's event format and must be told the topics of a sink alone.
func (d *decoded) withRocketMQ(c *rocketmq.Config, cfg *plugin.Config, wantSink bool) error {
	d.rocketmq = c
	d.maxFlight, d.maxFlightBytes = c.MaxCachedRecords, c.MaxCachedBytes
	if d.source != nil && d.codec != converter.DefaultOptions() {
		// the source's Debezium options choose the event format; a
		// sink decodes every format without them
		c.Codec = converter.NewJSON(d.codec)
	}
	if wantSink && d.source == nil && len(c.Topics) == 0 && c.TopicsRegex == "" {
		// A sink beside its source consumes what the source publishes;
		// a sink alone must be told.
		return cfg.Transport.Err("topics", "a sink on rocketmq without its source in the same process needs the topics to consume: "+
			rocketmq.TopicsHint(topicPrefix(c, cfg.Name), c.TopicMode))
	}
	return nil
}

// checkHistory checks a schema history kept in the database
// (history_store: database) and protects its table in the target.
func (d *decoded) checkHistory(cfg *plugin.Config, coordinated bool) error {
	if d.source == nil || d.source.HistoryStore != binlog.HistoryInDatabase {
		return nil
	}
	if d.positions.typ == "file" && !coordinated {
		return cfg.Source.Err("history_store", "database keeps the schema history in the positions database: give positions a type postgres or mysql and a dsn")
	}
	if err := storage.CheckHistoryTable(d.source.HistoryTable); err != nil {
		return cfg.Source.Explain(err, d.source)
	}
	table := d.source.HistoryTable
	if table == "" {
		table = storage.DefaultHistoryTable
	}
	d.protectInTarget(table)
	return nil
}

// protectInTarget adds table, kept in the positions database, to the
// sink's control tables when that database is the sink's target: no source
// table may land there.
func (d *decoded) protectInTarget(table string) {
	if d.sink != nil && d.positions.typ != "file" && d.positions.DSN == d.sink.DSN {
		d.sink.ControlTables = append(d.sink.ControlTables, table)
	}
}

// TaskOptions say which task of a config BuildTask makes and how
// (plugin.TaskOptions, which the connectors' constructors get).
type TaskOptions = plugin.TaskOptions

// Build makes the pipeline the config describes, connecting to the servers:
// BuildTask without a lease.
func Build(ctx context.Context, cfg *plugin.Config, only string, log *slog.Logger) (*engine.Pipeline, error) {
	return BuildTask(ctx, cfg, TaskOptions{Only: only, Log: log})
}

// BuildTask makes the task of the config that o names (a source task, a
// sink task, or both in one pipeline), connecting to the servers: each
// section's connector makes its part (plugin.Plugin's NewSource, NewSink,
// NewTransport).
func BuildTask(ctx context.Context, cfg *plugin.Config, o TaskOptions) (*engine.Pipeline, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	d, err := decodeTask(cfg, o.Only, o.HistoryDB != nil)
	if err != nil {
		return nil, err
	}
	srcPlugin, sinkPlugin, transPlugin := d.plugins[plugin.KindSource], d.plugins[plugin.KindSink], d.plugins[plugin.KindTransport]
	t := &plugin.Task{TaskOptions: o, Config: cfg, Sections: d.sections(), Source: srcPlugin != nil, Sink: sinkPlugin != nil}
	p := &engine.Pipeline{Name: cfg.Name, Log: o.Log, MaxInFlight: d.maxFlight, MaxInFlightBytes: d.maxFlightBytes}
	if srcPlugin != nil {
		if p.Source, err = srcPlugin.NewSource(ctx, d.configs[plugin.KindSource], t); err != nil {
			return nil, err
		}
		if o.HistoryDB == nil {
			store, err := openPositions(ctx, d.positions)
			if err != nil {
				return nil, err
			}
			p.Positions = store
		}
	}
	if sinkPlugin != nil {
		if p.Sink, err = sinkPlugin.NewSink(ctx, d.configs[plugin.KindSink], t); err != nil {
			return nil, err
		}
		if srcPlugin == nil && cfg.Source != nil {
			// A sink-only process checks the source's tables against its
			// control tables, and their shapes against its target, at
			// start too, when it can read the source section and reach
			// the source server (engine.Pipeline.Tables).
			if sd, err := decodeAll(cfg, "source"); err == nil {
				if sp := sd.plugins[plugin.KindSource]; sp != nil && sp.NewTables != nil {
					if tables, err := sp.NewTables(sd.configs[plugin.KindSource], t); err == nil {
						p.Tables = tables
					}
				}
			}
		}
	}
	if p.Publisher, p.Subscriber, err = transPlugin.NewTransport(ctx, d.configs[plugin.KindTransport], t); err != nil {
		return nil, err
	}
	p.OnClose = t.Closers()
	return p, nil
}
