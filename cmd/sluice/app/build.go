package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink"
)

// mysqlSource is the config of the MySQL/MariaDB binlog source.
type mysqlSource struct {
	Host       string   `yaml:"host" sluice:"required"`
	Port       int      `yaml:"port"`
	User       string   `yaml:"user" sluice:"required"`
	Password   string   `yaml:"password"`
	ServerID   uint32   `yaml:"server_id" sluice:"required"`
	Flavor     string   `yaml:"flavor"`
	ServerName string   `yaml:"server_name"`
	Include    []string `yaml:"include"`
	Exclude    []string `yaml:"exclude"`
	ZeroDates  string   `yaml:"zero_dates"` // null (default), epoch, or keep (NULL plus the original text in a header)
	// Snapshot: never (default) | initial | when_needed | initial_only.
	Snapshot      string `yaml:"snapshot"`
	SnapshotChunk int    `yaml:"snapshot_chunk"` // rows per keyset query, default 2048
	// SnapshotTruncate: a TRUNCATE of each table before its snapshot rows
	SnapshotTruncate bool          `yaml:"snapshot_truncate"`
	Heartbeat        time.Duration `yaml:"heartbeat"` // default 10s; negative disables
	// ExcludeColumns: "db.table.column" patterns of columns left out of records.
	ExcludeColumns []string   `yaml:"exclude_columns"`
	Mask           []maskRule `yaml:"mask"`
	// HistoryFile: schema history (JSON lines) for servers whose table maps
	// lack full metadata; SkipDDL: statements or GTIDs it leaves out.
	HistoryFile string   `yaml:"history_file"`
	SkipDDL     []string `yaml:"skip_ddl"`
	// TLS of every connection to the server (replication and queries),
	// see tlsOptions.
	SSLMode string `yaml:"ssl_mode"`
	SSLCA   string `yaml:"ssl_ca"`
	SSLCert string `yaml:"ssl_cert"`
	SSLKey  string `yaml:"ssl_key"`
	// Debezium's connector options, with Debezium's names and values (see
	// converter.Options and binlog.Config): how values are written on the
	// RocketMQ transport, and which events are emitted.
	DecimalHandlingMode        string `yaml:"decimal.handling.mode"`         // precise (default) | string | double
	BigintUnsignedHandlingMode string `yaml:"bigint.unsigned.handling.mode"` // precise (sluice's default) | long (Debezium's)
	TimePrecisionMode          string `yaml:"time.precision.mode"`           // adaptive_time_microseconds (default) | connect
	BinaryHandlingMode         string `yaml:"binary.handling.mode"`          // bytes (default) | base64 | base64-url-safe | hex
	ProvideTransactionMetadata *bool  `yaml:"provide.transaction.metadata"`  // sluice's default true; Debezium's false
	IncludeSchemaChanges       *bool  `yaml:"include.schema.changes"`        // default true
	SkippedOperations          string `yaml:"skipped.operations"`            // comma-separated c,u,d,t or none (sluice's default); Debezium's default t
}

// maskRule is one entry of a MySQL source's mask list (binlog.MaskRule).
type maskRule struct {
	Columns string `yaml:"columns"`
	Kind    string `yaml:"kind"` // hash | fixed | truncate
	Salt    string `yaml:"salt"`
	Value   string `yaml:"value"`
	Length  int    `yaml:"length"`
}

// jdbcSink is the config of the PostgreSQL and MySQL sinks.
type jdbcSink struct {
	DSN        string `yaml:"dsn" sluice:"required"`
	Schema     string `yaml:"schema"`
	Table      string `yaml:"table"`
	AutoCreate *bool  `yaml:"auto_create"`
	AutoEvolve *bool  `yaml:"auto_evolve"`
	BatchSize  int    `yaml:"batch_size"`
	OnError    string `yaml:"on_error"` // fail (default), skip, or dlq: rows the target rejects go to the RocketMQ topic <prefix>_dlq
	// CopyThreshold: rows of one table in a batch from which PostgreSQL
	// uses COPY (0: default 256; negative: never).
	CopyThreshold  int    `yaml:"copy_threshold"`
	ProgressTable  string `yaml:"progress_table"`
	TimeAsInterval *bool  `yaml:"time_as_interval"` // PostgreSQL: TIME columns as INTERVAL (default true: negative and >24h values); false: TIME(fsp)
	EnumCheck      bool   `yaml:"enum_check"`       // PostgreSQL: ENUM columns (TEXT) get a CHECK with the labels
	SchemaChanges  string `yaml:"schema_changes"`   // ignore | apply | fail
	KeylessMode    string `yaml:"keyless_mode"`     // fail | append
	Transactional  bool   `yaml:"transactional"`    // apply source transactions atomically
	// TLS of the target connections (tlsOptions); unset leaves TLS to the DSN.
	SSLMode string `yaml:"ssl_mode"`
	SSLCA   string `yaml:"ssl_ca"`
	SSLCert string `yaml:"ssl_cert"`
	SSLKey  string `yaml:"ssl_key"`
	// LockTimeout (default 30s) and StatementTimeout (default 10m) bound
	// the sink's statements; negative: the server's setting. See sink.Config.
	LockTimeout      time.Duration `yaml:"lock_timeout"`
	StatementTimeout time.Duration `yaml:"statement_timeout"`
}

type embeddedTransport struct {
	Queues   int           `yaml:"queues"`
	Depth    int           `yaml:"depth"`
	MaxBatch int           `yaml:"max_batch"` // records per sink transaction, default 2048
	Linger   time.Duration `yaml:"linger"`    // wait this long for a fuller batch, default 0
	// MaxInFlight and MaxInFlightBytes: the memory limits of every
	// transport, records read from the source and not yet acknowledged
	// (runtime.Pipeline.MaxInFlight, MaxInFlightBytes); on RocketMQ also
	// the messages the consumer holds pulled but not yet applied
	// (rocketmq.Config.MaxCachedRecords, MaxCachedBytes).
	MaxInFlight      int              `yaml:"max_in_flight"`
	MaxInFlightBytes runtime.ByteSize `yaml:"max_in_flight_bytes"`
}

type rocketmqTransport struct {
	NameServers []string `yaml:"name_servers" sluice:"required"`
	Queues      int      `yaml:"queues"`
	TopicMode   string   `yaml:"topic_mode"`
	TopicPrefix string   `yaml:"topic_prefix"`
	Group       string   `yaml:"group"`
	Cluster     string   `yaml:"cluster"`
	Topics      []string `yaml:"topics"`
	// MaxMessageBytes and OversizePolicy: see rocketmq.Config.
	MaxMessageBytes int    `yaml:"max_message_bytes"`
	OversizePolicy  string `yaml:"oversize_policy"`
	// BatchSize (records per sink transaction, default 256, at most 1024)
	// and Linger (pause between pulls of one queue, default 0): see
	// rocketmq.Config.
	BatchSize int           `yaml:"batch_size"`
	Linger    time.Duration `yaml:"linger"`
	// Format: json (default) or compact (schemas by reference); see
	// rocketmq.Config.
	Format string `yaml:"format"`
	// AccessKey and SecretKey: broker ACL credentials (both or neither).
	AccessKey string `yaml:"access_key"`
	SecretKey string `yaml:"secret_key"`
	// MaxInFlight and MaxInFlightBytes: see embeddedTransport.
	MaxInFlight      int              `yaml:"max_in_flight"`
	MaxInFlightBytes runtime.ByteSize `yaml:"max_in_flight_bytes"`
}

// positionsConfig is the positions section: type file (dir), or postgres
// or mysql (dsn, table: positions in a database, fenced per run).
type positionsConfig struct {
	Dir   string `yaml:"dir"`
	DSN   string `yaml:"dsn"`
	Table string `yaml:"table"`
	typ   string
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
	embedded  *embeddedTransport
	rocketmq  *rocketmq.Config
	positions positionsConfig
	maxFlight int
	// maxFlightBytes: the transport's max_in_flight_bytes (0: default).
	maxFlightBytes int
}

// inFlightLimits checks a transport's max_in_flight and
// max_in_flight_bytes and keeps them in d.
func (d *decoded) inFlightLimits(sec *runtime.Section, records int, bytes runtime.ByteSize) error {
	if records < 0 {
		return sec.Err("max_in_flight", fmt.Sprintf("%d is negative: use a number of records such as 8192, or leave it out for the default", records))
	}
	if bytes < 0 || bytes > 1<<40 {
		return sec.Err("max_in_flight_bytes", fmt.Sprintf("%s: use a size such as 16MiB, or leave it out for the default", bytes))
	}
	d.maxFlight, d.maxFlightBytes = records, int(bytes)
	return nil
}

func truthy(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// decodeAll decodes every section the process shape needs.
func decodeAll(cfg *runtime.Config, only string) (*decoded, error) {
	d := &decoded{positions: positionsConfig{Dir: "positions", typ: "file"}}
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
		switch cfg.Source.Type {
		case "mysql", "mariadb":
			var c mysqlSource
			if err := cfg.Source.Decode(&c); err != nil {
				return nil, err
			}
			flavor := c.Flavor
			if flavor == "" {
				flavor = cfg.Source.Type
			}
			if c.Port == 0 {
				c.Port = 3306
			}
			if c.ServerName == "" {
				c.ServerName = cfg.Name
			}
			bc := &binlog.Config{Host: c.Host, Port: c.Port, User: c.User, Password: c.Password, ServerID: c.ServerID,
				Flavor: flavor, ServerName: c.ServerName, Include: c.Include, Exclude: c.Exclude,
				Snapshot: c.Snapshot, SnapshotChunk: c.SnapshotChunk, SnapshotTruncate: c.SnapshotTruncate, Heartbeat: c.Heartbeat,
				ExcludeColumns: c.ExcludeColumns, HistoryFile: c.HistoryFile, SkipDDL: c.SkipDDL}
			var err error
			if bc.TLSMode, bc.TLS, err = (tlsOptions{c.SSLMode, c.SSLCA, c.SSLCert, c.SSLKey}).client(); err != nil {
				return nil, cfg.Source.Err("ssl_mode", err.Error())
			}
			for _, m := range c.Mask {
				bc.Mask = append(bc.Mask, binlog.MaskRule{Columns: m.Columns, Kind: m.Kind, Salt: m.Salt, Value: m.Value, Length: m.Length})
			}
			switch c.ZeroDates {
			case "", "null":
			case "epoch":
				f := false
				bc.ZeroDateAsNull = &f
			case "keep": // NULL in the row, the original text in a header
				bc.KeepZeroDates = true
			default:
				return nil, cfg.Source.Err("zero_dates", fmt.Sprintf("must be null, epoch or keep, not %q", c.ZeroDates))
			}
			d.codec = converter.Options{Schemas: true, DecimalMode: converter.DecimalMode(c.DecimalHandlingMode),
				BigintUnsignedMode: c.BigintUnsignedHandlingMode, TimePrecisionMode: c.TimePrecisionMode,
				BinaryMode: c.BinaryHandlingMode, OmitTransaction: !truthy(c.ProvideTransactionMetadata, true)}
			if err := d.codec.Validate(); err != nil {
				return nil, cfg.Source.Explain(err, &c)
			}
			bc.SkipSchemaChanges = !truthy(c.IncludeSchemaChanges, true)
			for _, op := range strings.Split(c.SkippedOperations, ",") {
				if op = strings.TrimSpace(op); op != "" {
					bc.SkippedOperations = append(bc.SkippedOperations, op)
				}
			}
			// Every check NewSource makes (it does not connect), so that
			// validate refuses what run would.
			if _, err := binlog.NewSource(*bc, slog.New(slog.DiscardHandler)); err != nil {
				return nil, cfg.Source.Explain(err, &c)
			}
			d.source = bc
		default:
			return nil, cfg.Source.Err("type", fmt.Sprintf("unknown source type %q (known: mysql, mariadb)", cfg.Source.Type))
		}
	}
	if wantSink {
		switch cfg.Sink.Type {
		case "postgres", "postgresql", "mysql", "mariadb":
			var c jdbcSink
			if err := cfg.Sink.Decode(&c); err != nil {
				return nil, err
			}
			dialect := "postgres"
			if cfg.Sink.Type == "mysql" || cfg.Sink.Type == "mariadb" {
				dialect = "mysql"
			}
			d.sink = &sink.Config{Dialect: dialect, DSN: c.DSN, Pipeline: cfg.Name, SchemaTemplate: c.Schema, TableTemplate: c.Table,
				AutoCreate: truthy(c.AutoCreate, true), AutoEvolve: truthy(c.AutoEvolve, true), BatchSize: c.BatchSize, OnError: c.OnError,
				CopyThreshold: c.CopyThreshold, ProgressTable: c.ProgressTable, TimeAsInterval: truthy(c.TimeAsInterval, true), EnumCheck: c.EnumCheck,
				SchemaChanges: c.SchemaChanges, KeylessMode: c.KeylessMode, Transactional: c.Transactional,
				LockTimeout: c.LockTimeout, StatementTimeout: c.StatementTimeout}
			var err error
			if d.sink.TLSMode, d.sink.TLS, err = (tlsOptions{c.SSLMode, c.SSLCA, c.SSLCert, c.SSLKey}).client(); err != nil {
				return nil, cfg.Sink.Err("ssl_mode", err.Error())
			}
			switch c.OnError {
			case "", sink.OnErrorFail, sink.OnErrorSkip:
			case sink.OnErrorDLQ:
				if cfg.Transport.Type != "rocketmq" {
					return nil, cfg.Sink.Err("on_error", "dlq writes to a RocketMQ topic: it needs the rocketmq transport")
				}
			default:
				return nil, cfg.Sink.Err("on_error", fmt.Sprintf("must be fail, skip or dlq, not %q", c.OnError))
			}
			// Every check sink.New makes before it connects.
			if err := sink.Validate(*d.sink); err != nil {
				return nil, cfg.Sink.Explain(err, &c)
			}
		default:
			return nil, cfg.Sink.Err("type", fmt.Sprintf("unknown sink type %q (known: postgres, mysql)", cfg.Sink.Type))
		}
	}
	switch cfg.Transport.Type {
	case "embedded":
		if only != "" {
			return nil, cfg.Transport.Err("type", "the embedded transport runs source and sink in one process: --only needs the rocketmq transport")
		}
		if cfg.Source == nil || cfg.Sink == nil {
			return nil, cfg.Transport.Err("type", "the embedded transport needs both a source and a sink section")
		}
		var c embeddedTransport
		if err := cfg.Transport.Decode(&c); err != nil {
			return nil, err
		}
		if c.Linger < 0 {
			return nil, cfg.Transport.Err("linger", fmt.Sprintf("%s is negative: use 0 (no wait) or a duration such as 5ms", c.Linger))
		}
		if err := d.inFlightLimits(cfg.Transport, c.MaxInFlight, c.MaxInFlightBytes); err != nil {
			return nil, err
		}
		d.embedded = &c
	case "rocketmq":
		var c rocketmqTransport
		if err := cfg.Transport.Decode(&c); err != nil {
			return nil, err
		}
		for _, a := range c.NameServers {
			if host, _, _ := strings.Cut(a, ":"); host != "127.0.0.1" && host != "localhost" {
				slog.Warn("name server is not on loopback", "address", a)
			}
		}
		d.rocketmq = &rocketmq.Config{NameServers: c.NameServers, Pipeline: cfg.Name, Queues: c.Queues, TopicMode: c.TopicMode,
			TopicPrefix: c.TopicPrefix, Group: c.Group, Cluster: c.Cluster, Topics: c.Topics,
			MaxMessageBytes: c.MaxMessageBytes, OversizePolicy: c.OversizePolicy, BatchSize: c.BatchSize, Linger: c.Linger,
			Format: c.Format, AccessKey: c.AccessKey, SecretKey: c.SecretKey}
		if d.source != nil && d.codec != converter.DefaultOptions() {
			// the source's Debezium options choose the event format; a
			// sink decodes every format without them
			d.rocketmq.Codec = converter.NewJSON(d.codec)
		}
		if err := d.inFlightLimits(cfg.Transport, c.MaxInFlight, c.MaxInFlightBytes); err != nil {
			return nil, err
		}
		d.rocketmq.MaxCachedRecords, d.rocketmq.MaxCachedBytes = d.maxFlight, d.maxFlightBytes
		if err := d.rocketmq.Validate(); err != nil {
			return nil, cfg.Transport.Explain(err, &c)
		}
		if wantSink && len(c.Topics) == 0 {
			return nil, cfg.Transport.Err("topics", "a sink on rocketmq needs the topics to consume")
		}
	default:
		return nil, cfg.Transport.Err("type", fmt.Sprintf("unknown transport type %q (known: embedded, rocketmq)", cfg.Transport.Type))
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
		if d.sink != nil && d.positions.typ != "file" && d.positions.DSN == d.sink.DSN {
			// positions kept in the target: no source table may land there
			table := d.positions.Table
			if table == "" {
				table = "sluice_positions"
			}
			d.sink.ControlTables = append(d.sink.ControlTables, table)
		}
	}
	return d, nil
}

// Build makes the pipeline the config describes, connecting to the servers.
func Build(ctx context.Context, cfg *runtime.Config, only string, log *slog.Logger) (*runtime.Pipeline, error) {
	d, err := decodeAll(cfg, only)
	if err != nil {
		return nil, err
	}
	p := &runtime.Pipeline{Name: cfg.Name, Log: log, MaxInFlight: d.maxFlight, MaxInFlightBytes: d.maxFlightBytes}
	if d.source != nil {
		src, err := binlog.NewSource(*d.source, log.With("component", "source"))
		if err != nil {
			return nil, err
		}
		p.Source = binlogSource{src}
		store, err := openPositions(ctx, d.positions)
		if err != nil {
			return nil, err
		}
		p.Positions = store
	}
	if d.sink != nil {
		var dl *rocketmq.DeadLetter
		if d.sink.OnError == sink.OnErrorDLQ {
			if dl, err = rocketmq.NewDeadLetter(ctx, *d.rocketmq, log.With("component", "dead-letter")); err != nil {
				return nil, err
			}
			d.sink.DeadLetter = dl.Send
		}
		s, err := sink.New(ctx, *d.sink, log.With("component", "sink"))
		if err != nil {
			if dl != nil {
				_ = dl.Close()
			}
			return nil, err
		}
		p.Sink = s
		if dl != nil {
			p.Sink = sinkWithDeadLetter{s, dl}
		}
		if d.source == nil && cfg.Source != nil {
			// A sink-only process checks the source's tables against its
			// control tables at start too, when it can read the source
			// section (runtime.Pipeline.Tables).
			if sd, err := decodeAll(cfg, "source"); err == nil && sd.source != nil {
				if src, err := binlog.NewSource(*sd.source, log.With("component", "source-tables")); err == nil {
					p.Tables = src
				}
			}
		}
	}
	switch {
	case d.embedded != nil:
		e := runtime.NewEmbedded(d.embedded.Queues, d.embedded.Depth)
		p.Publisher, p.Subscriber = e.Publisher(), e.LingerSubscriber(d.embedded.MaxBatch, d.embedded.Linger)
	case d.rocketmq != nil:
		if p.Source != nil {
			pub, err := rocketmq.NewPublisher(ctx, *d.rocketmq, log.With("component", "publisher"))
			if err != nil {
				return nil, err
			}
			p.Publisher = pub
		}
		if p.Sink != nil {
			sub, err := rocketmq.NewSubscriber(ctx, *d.rocketmq, log.With("component", "subscriber"))
			if err != nil {
				return nil, err
			}
			p.Subscriber = sub
		}
	}
	return p, nil
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
