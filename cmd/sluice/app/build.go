package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/embedded"
	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink"
)

// positionsConfig is the positions section: type file (dir), or postgres
// or mysql (dsn, table: positions in a database, fenced per run).
type positionsConfig struct {
	Dir   string `yaml:"dir"`
	DSN   string `yaml:"dsn"`
	Table string `yaml:"table"`
	typ   string
}

// where says where the positions are kept: the resolved folder, or the
// table (never the DSN, which may hold a password).
func (c positionsConfig) where() string {
	if c.typ == "file" || c.typ == "" {
		if abs, err := filepath.Abs(c.Dir); err == nil {
			return "folder " + abs
		}
		return "folder " + c.Dir
	}
	table := c.Table
	if table == "" {
		table = "sluice_positions"
	}
	return c.typ + " table " + table
}

// resettableStore is a position store that `positions reset` can clear.
type resettableStore interface {
	runtime.PositionStore
	Reset(ctx context.Context, pipeline string) error
}

// sqlStores holds one SQLStore per database and table for the process: a
// restarted pipeline reuses it (and claims again) instead of opening
// another connection pool.
var sqlStores sync.Map

// openPositions opens the configured position store.
func openPositions(ctx context.Context, c positionsConfig) (resettableStore, error) {
	if c.typ == "file" || c.typ == "" {
		return runtime.NewFileStore(c.Dir)
	}
	key := c.typ + "\x00" + c.DSN + "\x00" + c.Table
	if s, ok := sqlStores.Load(key); ok {
		return s.(*runtime.SQLStore), nil
	}
	s, err := runtime.NewSQLStore(ctx, c.typ, c.DSN, c.Table)
	if err != nil {
		// Drivers quote an unparseable DSN, password included.
		return nil, schema.RedactDSNError(err, c.DSN)
	}
	if prev, loaded := sqlStores.LoadOrStore(key, s); loaded {
		s.Close()
		return prev.(*runtime.SQLStore), nil
	}
	return s, nil
}

type decoded struct {
	source    *binlog.Config
	codec     converter.Options // the event format the source's options ask for
	sink      *sink.Config
	embedded  *embedded.Config
	rocketmq  *rocketmq.Config
	positions positionsConfig
	maxFlight int
	// maxFlightBytes: the transport's max_in_flight_bytes (0: default).
	maxFlightBytes int
	// plugins and configs: by kind, the connector each section's type
	// selected and its decoded config, which BuildTask hands to the
	// connector's constructor; the typed fields above point at the configs
	// of the connectors whose checks span sections.
	plugins map[string]*runtime.Plugin
	configs map[string]any
}

// decode decodes sec, the section of kind, with the connector its type
// selects (connectors), and keeps both for BuildTask; a connector that
// cannot make a task is refused.
func (d *decoded) decode(kind string, sec *runtime.Section, cfg *runtime.Config) (any, error) {
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
// (runtime.Task.Sections): by kind, and positions (a positionsConfig).
func (d *decoded) sections() map[string]any {
	m := map[string]any{"positions": d.positions}
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
func decodeAll(cfg *runtime.Config, only string) (*decoded, error) {
	return decodeTask(cfg, only, false)
}

// decodeTask is decodeAll; coordinated says the task runs in a cluster,
// whose coordinator database keeps what history_store: database keeps
// (TaskOptions.HistoryDB), so it needs no SQL positions.
func decodeTask(cfg *runtime.Config, only string, coordinated bool) (*decoded, error) {
	d := &decoded{positions: positionsConfig{Dir: "positions", typ: "file"}, plugins: map[string]*runtime.Plugin{}, configs: map[string]any{}}
	switch only {
	case "", "source", "sink":
	default:
		return nil, fmt.Errorf("--only must be source or sink, not %q: %w", only, runtime.ErrConfig)
	}
	wantSource := only != "sink" && cfg.Source != nil
	wantSink := only != "source" && cfg.Sink != nil
	if only == "source" && cfg.Source == nil || only == "sink" && cfg.Sink == nil {
		return nil, fmt.Errorf("--only %s: the config has no %s section: %w", only, only, runtime.ErrConfig)
	}
	if wantSource {
		v, err := d.decode(runtime.KindSource, cfg.Source, cfg)
		if err != nil {
			return nil, err
		}
		if c, ok := v.(*binlog.Config); ok {
			d.source, d.codec = c, codecOptions(c)
		}
	}
	if wantSink {
		v, err := d.decode(runtime.KindSink, cfg.Sink, cfg)
		if err != nil {
			return nil, err
		}
		d.sink, _ = v.(*sink.Config)
	}
	if cfg.Transport.Type == "embedded" {
		if only != "" {
			return nil, cfg.Transport.Err("type", "the embedded transport runs source and sink in one process: --only needs a broker transport (rocketmq or kafka)")
		}
		if cfg.Source == nil || cfg.Sink == nil {
			return nil, cfg.Transport.Err("type", "the embedded transport needs both a source and a sink section")
		}
	}
	v, err := d.decode(runtime.KindTransport, cfg.Transport, cfg)
	if err != nil {
		return nil, err
	}
	switch c := v.(type) {
	case *embedded.Config:
		d.embedded = c
		d.maxFlight, d.maxFlightBytes = c.MaxInFlight, int(c.MaxInFlightBytes)
		if d.maxFlight == 0 {
			d.maxFlight = embedded.DefaultMaxInFlight
		}
	case *rocketmq.Config:
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
			return nil, cfg.Transport.Err("topics", "a sink on rocketmq without its source in the same process needs the topics to consume: "+
				rocketmq.TopicsHint(topicPrefix(c, cfg.Name), c.TopicMode))
		}
	}
	if c, ok := v.(*kafka.Config); ok {
		d.maxFlight, d.maxFlightBytes = c.MaxInFlight, int(c.MaxInFlightBytes)
		if d.source != nil && d.codec != converter.DefaultOptions() {
			c.Codec = converter.NewJSON(d.codec) // as on rocketmq
		}
	}
	if cfg.Positions != nil {
		if err := cfg.Positions.Decode(&d.positions); err != nil {
			return nil, err
		}
		d.positions.typ = cfg.Positions.Type
		switch d.positions.typ {
		case "file":
			if d.positions.DSN != "" || d.positions.Table != "" {
				return nil, cfg.Positions.Err("type", "dsn and table are for positions of type postgres or mysql; type file takes dir")
			}
		case "postgres", "mysql":
			if d.positions.DSN == "" {
				return nil, cfg.Positions.Err("dsn", fmt.Sprintf("positions of type %s need a dsn (the sink's target is a good place)", d.positions.typ))
			}
			if err := sink.CheckDSN(d.positions.typ, d.positions.DSN); err != nil {
				return nil, cfg.Positions.Explain(err, &d.positions)
			}
			if err := runtime.CheckSQLStoreTable(d.positions.Table); err != nil {
				return nil, cfg.Positions.Explain(err, &d.positions)
			}
		default:
			return nil, cfg.Positions.Err("type", fmt.Sprintf("unknown positions type %q (known: file, postgres, mysql)", cfg.Positions.Type))
		}
	}
	d.positions.Dir = cfg.Resolve(d.positions.Dir)
	if cfg.Positions != nil {
		if d.sink != nil && d.positions.typ != "file" && d.positions.DSN == d.sink.DSN {
			// positions kept in the target: no source table may land there
			table := d.positions.Table
			if table == "" {
				table = "sluice_positions"
			}
			d.sink.ControlTables = append(d.sink.ControlTables, table)
		}
	}
	if d.source != nil && d.source.HistoryStore == binlog.HistoryInDatabase {
		if d.positions.typ == "file" && !coordinated {
			return nil, cfg.Source.Err("history_store", "database keeps the schema history in the positions database: give positions a type postgres or mysql and a dsn")
		}
		if err := runtime.CheckHistoryTable(d.source.HistoryTable); err != nil {
			return nil, cfg.Source.Explain(err, d.source)
		}
		if d.sink != nil && d.positions.typ != "file" && d.positions.DSN == d.sink.DSN {
			// kept in the target: no source table may land there
			table := d.source.HistoryTable
			if table == "" {
				table = runtime.DefaultHistoryTable
			}
			d.sink.ControlTables = append(d.sink.ControlTables, table)
		}
	}
	return d, nil
}

// TaskOptions say which task of a config BuildTask makes and how
// (runtime.TaskOptions, which the connectors' constructors get).
type TaskOptions = runtime.TaskOptions

// Build makes the pipeline the config describes, connecting to the servers:
// BuildTask without a lease.
func Build(ctx context.Context, cfg *runtime.Config, only string, log *slog.Logger) (*runtime.Pipeline, error) {
	return BuildTask(ctx, cfg, TaskOptions{Only: only, Log: log})
}

// BuildTask makes the task of the config that o names (a source task, a
// sink task, or both in one pipeline), connecting to the servers: each
// section's connector makes its part (runtime.Plugin's NewSource, NewSink,
// NewTransport).
func BuildTask(ctx context.Context, cfg *runtime.Config, o TaskOptions) (*runtime.Pipeline, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	d, err := decodeTask(cfg, o.Only, o.HistoryDB != nil)
	if err != nil {
		return nil, err
	}
	srcPlugin, sinkPlugin, transPlugin := d.plugins[runtime.KindSource], d.plugins[runtime.KindSink], d.plugins[runtime.KindTransport]
	t := &runtime.Task{TaskOptions: o, Config: cfg, Sections: d.sections(), Source: srcPlugin != nil, Sink: sinkPlugin != nil}
	p := &runtime.Pipeline{Name: cfg.Name, Log: o.Log, MaxInFlight: d.maxFlight, MaxInFlightBytes: d.maxFlightBytes}
	if srcPlugin != nil {
		if p.Source, err = srcPlugin.NewSource(ctx, d.configs[runtime.KindSource], t); err != nil {
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
		if p.Sink, err = sinkPlugin.NewSink(ctx, d.configs[runtime.KindSink], t); err != nil {
			return nil, err
		}
		if srcPlugin == nil && cfg.Source != nil {
			// A sink-only process checks the source's tables against its
			// control tables, and their shapes against its target, at
			// start too, when it can read the source section and reach
			// the source server (runtime.Pipeline.Tables).
			if sd, err := decodeAll(cfg, "source"); err == nil {
				if sp := sd.plugins[runtime.KindSource]; sp != nil && sp.NewTables != nil {
					if tables, err := sp.NewTables(sd.configs[runtime.KindSource], t); err == nil {
						p.Tables = tables
					}
				}
			}
		}
	}
	if p.Publisher, p.Subscriber, err = transPlugin.NewTransport(ctx, d.configs[runtime.KindTransport], t); err != nil {
		return nil, err
	}
	return p, nil
}

// newBinlogSource is the mysql plugin's constructor: the binlog source,
// with its schema history in the database when history_store says so (in
// a cluster the coordinator's, else the positions database), fenced by the
// task's lease.
func newBinlogSource(ctx context.Context, v any, t *runtime.Task) (runtime.Source, error) {
	bc := *v.(*binlog.Config)
	if bc.HistoryStore == binlog.HistoryInDatabase {
		if t.HistoryDB != nil {
			h, err := runtime.NewSQLHistory(ctx, t.HistoryDB, t.HistoryDialect, bc.HistoryTable, t.Config.Name, t.Lease)
			if err != nil {
				return nil, err
			}
			bc.History = dbHistory{h}
		} else {
			pos, _ := t.Sections["positions"].(positionsConfig)
			var err error
			if bc.History, err = openDBHistory(ctx, pos, bc.HistoryTable, t.Config.Name, t.Lease); err != nil {
				return nil, err
			}
		}
	}
	src, err := binlog.NewSource(bc, t.Log.With("component", "source"))
	if err != nil {
		return nil, err
	}
	return binlogSource{src}, nil
}

// binlogTables is the mysql plugin's table lister: a binlog source that is
// never opened.
func binlogTables(v any, t *runtime.Task) (runtime.TableLister, error) {
	src, err := binlog.NewSource(*v.(*binlog.Config), t.Log.With("component", "source-tables"))
	if err != nil {
		return nil, err
	}
	return src, nil
}

// newJDBCSink is the jdbc plugin's constructor: the sink, protecting the
// coordinator's tables in a cluster, with its dead-letter producer on the
// RocketMQ transport for on_error: dlq.
func newJDBCSink(ctx context.Context, v any, t *runtime.Task) (runtime.Sink, error) {
	c := v.(*sink.Config)
	if t.HistoryDB != nil {
		src, _ := t.Sections[runtime.KindSource].(*binlog.Config)
		if err := protectCoordinator(ctx, t.Config, src, c, t.TaskOptions); err != nil {
			return nil, err
		}
	}
	var dl *rocketmq.DeadLetter
	if c.OnError == sink.OnErrorDLQ {
		rc, ok := t.Sections[runtime.KindTransport].(*rocketmq.Config)
		if !ok {
			return nil, fmt.Errorf("sink on_error dlq writes to a RocketMQ topic: it needs the rocketmq transport: %w", runtime.ErrConfig)
		}
		var err error
		if dl, err = rocketmq.NewDeadLetter(ctx, *rc, t.Log.With("component", "dead-letter")); err != nil {
			return nil, err
		}
		c.DeadLetter = dl.Send
	}
	s, err := sink.New(ctx, *c, t.Log.With("component", "sink"))
	if err != nil {
		if dl != nil {
			_ = dl.Close()
		}
		return nil, err
	}
	if dl != nil {
		return sinkWithDeadLetter{s, dl}, nil
	}
	return s, nil
}

// newRocketMQ is the rocketmq plugin's constructor: a producer for the
// task's source, a consumer for its sink. With both in one process and no
// topics configured, the consumer reads the topics of the tables the source
// captures at start and of every table it publishes later.
func newRocketMQ(ctx context.Context, v any, t *runtime.Task) (runtime.Publisher, runtime.Subscriber, error) {
	c := *v.(*rocketmq.Config)
	var sub *rocketmq.Subscriber
	if t.Sink {
		sc := c
		if t.Source && len(c.Topics) == 0 && c.TopicsRegex == "" {
			tables, err := capturedTables(ctx, t)
			if err != nil {
				return nil, nil, err
			}
			sc.Tables, sc.TopicsFromPublisher = tables, true
		}
		s, err := rocketmq.NewSubscriber(ctx, sc, t.Log.With("component", "subscriber"))
		if err != nil {
			return nil, nil, err
		}
		sub = s
		if sc.TopicsFromPublisher {
			c.OnTopic = func(topic string) { s.AddTopics(topic) }
		}
	}
	var pub runtime.Publisher
	if t.Source {
		p, err := rocketmq.NewPublisher(ctx, c, t.Log.With("component", "publisher"))
		if err != nil {
			if sub != nil {
				_ = sub.Close(ctx)
			}
			return nil, nil, err
		}
		pub = p
	}
	if sub == nil {
		return pub, nil, nil
	}
	return pub, sub, nil
}

// newKafka is the kafka plugin's constructor: a producer for the task's
// source, a consumer for its sink. With both in one process, the consumer
// looks for each topic the producer creates at once.
func newKafka(ctx context.Context, v any, t *runtime.Task) (runtime.Publisher, runtime.Subscriber, error) {
	c := *v.(*kafka.Config)
	var sub *kafka.Subscriber
	if t.Sink {
		s, err := kafka.NewSubscriber(ctx, c, t.Log.With("component", "subscriber"))
		if err != nil {
			return nil, nil, err
		}
		sub = s
		c.OnTopic = s.TopicAdded
	}
	if !t.Source {
		return nil, sub, nil
	}
	p, err := kafka.NewPublisher(ctx, c, t.Log.With("component", "publisher"))
	if err != nil {
		if sub != nil {
			_ = sub.Close(ctx)
		}
		return nil, nil, err
	}
	if sub == nil {
		return p, nil, nil
	}
	return p, sub, nil
}

// capturedTables lists the tables the task's source captures now.
func capturedTables(ctx context.Context, t *runtime.Task) ([]schema.TableID, error) {
	bc, ok := t.Sections[runtime.KindSource].(*binlog.Config)
	if !ok {
		return nil, nil
	}
	lister, err := binlogTables(bc, t)
	if err != nil {
		return nil, err
	}
	tables, err := lister.CapturedTables(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the captured tables, whose topics the sink consumes: %w", err)
	}
	return tables, nil
}

// topicPrefix is the topic prefix of c in a pipeline named name.
func topicPrefix(c *rocketmq.Config, name string) string {
	if c.TopicPrefix != "" {
		return c.TopicPrefix
	}
	return name
}

// sinkWithDeadLetter closes the dead-letter producer with the sink.
type sinkWithDeadLetter struct {
	runtime.Sink
	dl *rocketmq.DeadLetter
}

func (s sinkWithDeadLetter) Close() error { return errors.Join(s.Sink.Close(), s.dl.Close()) }

// SplitsQueues passes the sink's answer on (runtime.QueueSplitter).
func (s sinkWithDeadLetter) SplitsQueues() bool {
	qs, ok := s.Sink.(runtime.QueueSplitter)
	return ok && qs.SplitsQueues()
}

// CheckTables passes the start check on to the sink (runtime.TableChecker).
func (s sinkWithDeadLetter) CheckTables(ids []schema.TableID) error {
	if c, ok := s.Sink.(runtime.TableChecker); ok {
		return c.CheckTables(ids)
	}
	return nil
}

// WantsShapes passes the sink's answer on (true when it does not say).
func (s sinkWithDeadLetter) WantsShapes() bool {
	if w, ok := s.Sink.(interface{ WantsShapes() bool }); ok {
		return w.WantsShapes()
	}
	return true
}

// CheckShapes passes the start check of shapes on to the sink
// (runtime.ShapeChecker).
func (s sinkWithDeadLetter) CheckShapes(ctx context.Context, tables []schema.Table) error {
	if c, ok := s.Sink.(runtime.ShapeChecker); ok {
		return c.CheckShapes(ctx, tables)
	}
	return nil
}

// binlogSource adds the runtime's optional capabilities to the binlog
// source: progress (snapshot progress in status and /metrics) and backlog
// (how far the server is ahead, for status).
type binlogSource struct{ *binlog.Source }

var (
	_ runtime.ProgressReporter = binlogSource{}
	_ runtime.BacklogReporter  = binlogSource{}
)

func (b binlogSource) Progress() map[string]float64 {
	st := b.SnapshotStats()
	running, elapsed := 0.0, 0.0
	if st.Running {
		running = 1
		if st.StartedMs > 0 {
			elapsed = float64(time.Now().UnixMilli()-st.StartedMs) / 1000
		}
	}
	return map[string]float64{"snapshot_rows": float64(st.Rows), "snapshot_tables": float64(st.Tables),
		"snapshot_tables_done": float64(st.TablesDone), "snapshot_running": running, "snapshot_estimated_rows": float64(st.EstimatedRows),
		"snapshot_elapsed_seconds": elapsed}
}

func (b binlogSource) Backlog(ctx context.Context, position []byte) (int64, int64, error) {
	bl, err := b.Behind(ctx, position)
	return bl.Bytes, bl.Transactions, err
}

// protectCoordinator adds the cluster's control tables and the schema
// history table (o.CoordinatorTables, HistoryDB) to the sink's protected
// tables when the sink writes into the coordinator's database, qualified
// with the coordinator's schema (PostgreSQL) or database (MySQL), where
// they were created. When the sink's server cannot be asked, they are
// protected anyway: refusing a source table of exactly such a name is
// safer than writing over a lease.
func protectCoordinator(ctx context.Context, cfg *runtime.Config, src *binlog.Config, snk *sink.Config, o TaskOptions) error {
	tables := append([]string(nil), o.CoordinatorTables...)
	hist := src
	if hist == nil && cfg.Source != nil {
		if sd, err := decodeTask(cfg, "source", true); err == nil {
			hist = sd.source
		}
	}
	if hist != nil && hist.HistoryStore == binlog.HistoryInDatabase {
		table := hist.HistoryTable
		if table == "" {
			table = runtime.DefaultHistoryTable
		}
		tables = append(tables, table)
	}
	if len(tables) == 0 || snk.Dialect != o.HistoryDialect {
		return nil
	}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cs, cschema, err := dbIdentity(qctx, o.HistoryDB, o.HistoryDialect)
	if err != nil {
		return schema.Retriable(fmt.Errorf("coordinator: ask which database it is (to protect its control tables from the sink): %w", err))
	}
	same := true
	if db, err := sql.Open(snk.Dialect, snk.DSN); err == nil {
		ss, _, err := dbIdentity(qctx, db, snk.Dialect)
		db.Close()
		same = err != nil || ss == cs
	}
	if !same {
		return nil
	}
	for _, t := range tables {
		snk.ControlTables = append(snk.ControlTables, cschema+"."+t)
	}
	return nil
}

// dbIdentity names the database a connection writes into (server and, on
// PostgreSQL, database: a MySQL connection reaches every database of its
// server) and the schema (PostgreSQL) or database (MySQL) that unqualified
// names resolve to. The server is named by what it reports of itself, not
// by the DSN, so two DSNs for one server (other user, host alias, options)
// compare equal.
func dbIdentity(ctx context.Context, db *sql.DB, dialect string) (server, defaultSchema string, err error) {
	var a, b, c string
	if dialect == "postgres" {
		err = db.QueryRowContext(ctx, "SELECT current_database(), COALESCE(current_schema(), ''), CAST(pg_postmaster_start_time() AS TEXT) || ':' || current_setting('port')").Scan(&a, &b, &c)
		return c + "/" + a, b, err
	}
	err = db.QueryRowContext(ctx, "SELECT COALESCE(DATABASE(), ''), CONCAT(@@hostname, ':', @@port, ':', @@datadir)").Scan(&b, &c)
	return c, b, err
}
