package app

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink"
)

// jdbcPlugin is the PostgreSQL and MySQL sink: sink.Config.
func jdbcPlugin() plugin.Plugin {
	return plugin.Spec[sink.Config]{Kind: plugin.KindSink, Name: "jdbc", Types: []string{"postgres", "mysql"}, Aliases: []string{"postgresql", "mariadb"},
		// the defaults of absent boolean keys; the others' zero values
		// mean their defaults
		New: func() *sink.Config { return &sink.Config{AutoCreate: true, AutoEvolve: true, TimeAsInterval: true} },
		Validate: func(c *sink.Config, sec *plugin.Section, doc *plugin.Config) error {
			c.Dialect = sink.DialectPostgres
			if sec.Type == "mysql" || sec.Type == "mariadb" {
				c.Dialect = sink.DialectMySQL
			}
			c.Pipeline = doc.Name
			c.SSLCA, c.SSLCert, c.SSLKey = doc.Resolve(c.SSLCA), doc.Resolve(c.SSLCert), doc.Resolve(c.SSLKey)
			if err := loadTLS(sec, &c.TLSMode, &c.TLS, c.SSLCA, c.SSLCert, c.SSLKey); err != nil {
				return err
			}
			switch c.OnError {
			case "", sink.OnErrorFail, sink.OnErrorSkip:
			case sink.OnErrorDLQ:
				if doc.Transport != nil && doc.Transport.Type != "rocketmq" && doc.Transport.Type != "kafka" {
					return sec.Err("on_error", "dlq writes to a RocketMQ or Kafka topic: it needs the rocketmq or kafka transport")
				}
			default:
				return sec.Err("on_error", fmt.Sprintf("must be fail, skip or dlq, not %q", c.OnError))
			}
			// Every check sink.New makes before it connects.
			return sink.Validate(*c)
		},
		NewSink: newJDBCSink,
		Keys:    jdbcKeys}.Plugin()
}

// newJDBCSink is the jdbc plugin's constructor: the sink, protecting the
// coordinator's tables in a cluster, with its dead-letter producer on the
// RocketMQ or Kafka transport for on_error: dlq.
func newJDBCSink(ctx context.Context, c *sink.Config, t *plugin.Task) (runtime.Sink, error) {
	if t.HistoryDB != nil {
		src, _ := plugin.SectionConfig[binlog.Config](t, plugin.KindSource)
		if err := protectCoordinator(ctx, t.Config, src, c, t.TaskOptions); err != nil {
			return nil, err
		}
	}
	var dl deadLetter
	if c.OnError == sink.OnErrorDLQ {
		var err error
		if dl, err = newDeadLetter(ctx, t); err != nil {
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
		// closed after the sink, which stops sending to it first
		t.OnClose(dl.Close)
	}
	return s, nil
}

// deadLetter is a transport's dead-letter producer: *rocketmq.DeadLetter,
// *kafka.DeadLetter.
type deadLetter interface {
	Send(ctx context.Context, rec schema.Record, cause error) error
	Close() error
}

// newDeadLetter starts the dead-letter producer of t's transport.
func newDeadLetter(ctx context.Context, t *plugin.Task) (deadLetter, error) {
	log := t.Log.With("component", "dead-letter")
	if rc, ok := plugin.SectionConfig[rocketmq.Config](t, plugin.KindTransport); ok {
		return rocketmq.NewDeadLetter(ctx, *rc, log)
	}
	if kc, ok := plugin.SectionConfig[kafka.Config](t, plugin.KindTransport); ok {
		return kafka.NewDeadLetter(ctx, *kc, log)
	}
	return nil, fmt.Errorf("sink on_error dlq writes to a RocketMQ or Kafka topic: it needs the rocketmq or kafka transport: %w", runtime.ErrConfig)
}

// protectCoordinator adds the cluster's control tables and the schema
// history table (o.CoordinatorTables, HistoryDB) to the sink's protected
// tables when the sink writes into the coordinator's database, qualified
// with the coordinator's schema (PostgreSQL) or database (MySQL), where
// they were created. When the sink's server cannot be asked, they are
// protected anyway: refusing a source table of exactly such a name is
// safer than writing over a lease.
func protectCoordinator(ctx context.Context, cfg *plugin.Config, src *binlog.Config, snk *sink.Config, o TaskOptions) error {
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
			table = storage.DefaultHistoryTable
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

// jdbcKeys documents the jdbc sink's keys (sink.Config).
var jdbcKeys = plugin.KeyDocs{
	"dsn": {Doc: "Connection string of the target: a PostgreSQL URL or key=value DSN, or a MySQL DSN (user:password@tcp(host:port)/db)."},
	"ssl_mode": {Doc: "MySQL's ssl-mode for the target connections, both dialects; unset leaves TLS to the DSN.",
		Values: []string{"disabled", "preferred", "required", "verify_ca", "verify_identity"}},
	"ssl_ca":            {Doc: "PEM file of the CA that signs the target's certificate."},
	"ssl_cert":          {Doc: "PEM file of a client certificate, for targets that ask for one."},
	"ssl_key":           {Doc: "PEM file of the client certificate's key."},
	"lock_timeout":      {Doc: "How long a statement waits for another session's lock before the transaction is retried; negative keeps the server's.", Default: sink.DefaultLockTimeout.String()},
	"statement_timeout": {Doc: "Bound of each statement, DDL included (not MySQL, which has none for writes); negative keeps the server's.", Default: sink.DefaultStatementTimeout.String()},
	"schema":            {Doc: "Target schema (PostgreSQL) or database (MySQL); placeholders ${db} and ${table}, written $${db} in a config file.", Default: "${db}"},
	"table":             {Doc: "Target table; placeholders ${db} and ${table}, written $${table} in a config file.", Default: "${table}"},
	"auto_create":       {Doc: "Create missing schemas and tables, with the source's primary key."},
	"auto_evolve":       {Doc: "Add columns the records carry and widen columns safely (docs/type-mapping.md)."},
	"batch_size":        {Doc: "Rows per statement.", Default: "500"},
	"progress_table":    {Doc: "Table of the sink's progress (applied position per queue) in the connection's default schema or database.", Default: "sluice_progress"},
	"copy_threshold":    {Doc: "PostgreSQL: upserts of at least this many rows of one table go through COPY; negative disables.", Default: "256"},
	"time_as_interval":  {Doc: "PostgreSQL: map MySQL TIME to INTERVAL, which holds every value (TIME holds 00:00:00-24:00:00 only)."},
	"enum_check":        {Doc: "PostgreSQL: give ENUM columns (created as TEXT) a CHECK constraint admitting the source's labels."},
	"schema_changes": {Doc: "What schema-change records do: ignored, applied to the target, or fail the pipeline for review.",
		Default: sink.SchemaChangesIgnore, Values: []string{sink.SchemaChangesIgnore, sink.SchemaChangesApply, sink.SchemaChangesFail}},
	"on_error": {Doc: "What a row the target rejects for good does: fail the pipeline, be logged and skipped, or go to a dead-letter topic (rocketmq and kafka transports).",
		Default: sink.OnErrorFail, Values: []string{sink.OnErrorFail, sink.OnErrorSkip, sink.OnErrorDLQ}},
	"keyless_mode": {Doc: "Updates and deletes of tables without primary key: applied to the row equal to the before image, refused, or skipped (append only).",
		Default: "before_image", Values: []string{"before_image", "fail", "append"}},
	"transactional":    {Doc: "Apply each source transaction in one target transaction, even when a transport batch ends inside it."},
	"routes":           {Doc: "Routes of source tables to other schemas and names than schema/table (docs/routing.md); the first matching route wins, two source tables may not share a target table."},
	"routes[].match":   {Doc: "Regular expression (RE2) over the whole source name db.table; its groups are $1 … $9 in schema and table."},
	"routes[].schema":  {Doc: "Target schema or database: $0 (the whole name), $1 … $9 (one digit each), $${db}, $${table}; unset keeps schema."},
	"routes[].table":   {Doc: "Target table: $0, $1 … $9, $${db}, $${table}; unset keeps table."},
	"columns":          {Doc: "Column renames and drops per source table (docs/routing.md); the first matching rule applies."},
	"columns[].match":  {Doc: "Regular expression (RE2) over the whole source name db.table."},
	"columns[].rename": {Doc: "Source column name to target column name."},
	"columns[].drop":   {Doc: "Source columns never written nor created in the target; a key column is refused."},
}
