package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/storage"
)

// codecOptions are the event format the source's Debezium options ask for.
func codecOptions(c *binlog.Config) converter.Options {
	return converter.Options{Schemas: true, DecimalMode: converter.DecimalMode(c.DecimalHandlingMode),
		BigintUnsignedMode: c.BigintUnsignedHandlingMode, TimePrecisionMode: c.TimePrecisionMode,
		BinaryMode: c.BinaryHandlingMode, OmitTransaction: !truthy(c.ProvideTransactionMetadata, true)}
}

func truthy(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// mysqlPlugin is the MySQL/MariaDB binlog source: binlog.Config.
func mysqlPlugin() plugin.Plugin {
	return plugin.Spec[binlog.Config]{Kind: plugin.KindSource, Name: "mysql", Types: []string{"mysql", "mariadb"},
		Validate: func(c *binlog.Config, sec *plugin.Section, doc *plugin.Config) error {
			if c.Flavor == "" {
				c.Flavor = sec.Type
			}
			if c.ServerName == "" {
				c.ServerName = doc.Name
			}
			c.HistoryFile = doc.Resolve(c.HistoryFile)
			c.SSLCA, c.SSLCert, c.SSLKey = doc.Resolve(c.SSLCA), doc.Resolve(c.SSLCert), doc.Resolve(c.SSLKey)
			if err := loadTLS(sec, &c.TLSMode, &c.TLS, c.SSLCA, c.SSLCert, c.SSLKey); err != nil {
				return err
			}
			if err := codecOptions(c).Validate(); err != nil {
				return err
			}
			if err := c.Validate(); err != nil {
				return err
			}
			// Every check NewSource makes (it does not connect), so that
			// validate refuses what run would.
			_, err := binlog.NewSource(*c, slog.New(slog.DiscardHandler))
			return err
		},
		NewSource: newBinlogSource,
		NewTables: binlogTables,
		Keys:      mysqlKeys}.Plugin()
}

// newBinlogSource is the mysql plugin's constructor: the binlog source,
// with its schema history in the database when history_store says so (in
// a cluster the coordinator's, else the positions database), fenced by the
// task's lease.
func newBinlogSource(ctx context.Context, c *binlog.Config, t *plugin.Task) (runtime.Source, error) {
	bc := *c
	if bc.HistoryStore == binlog.HistoryInDatabase {
		if t.HistoryDB != nil {
			h, err := storage.NewSQLHistory(ctx, t.HistoryDB, t.HistoryDialect, bc.HistoryTable, t.Config.Name, t.Lease)
			if err != nil {
				return nil, err
			}
			bc.History = dbHistory{h}
		} else {
			pos := positionsOf(t)
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
func binlogTables(c *binlog.Config, t *plugin.Task) (runtime.TableLister, error) {
	src, err := binlog.NewSource(*c, t.Log.With("component", "source-tables"))
	if err != nil {
		return nil, err
	}
	return src, nil
}

// binlogSource adds the runtime's optional capabilities to the binlog
// source: progress (snapshot progress in status and /metrics), backlog
// (how far the server is ahead, for status), signals and the incremental
// snapshot's progress.
type binlogSource struct{ *binlog.Source }

var (
	_ runtime.ProgressReporter    = binlogSource{}
	_ runtime.BacklogReporter     = binlogSource{}
	_ runtime.Signaler            = binlogSource{}
	_ runtime.IncrementalReporter = binlogSource{}
)

// IncrementalSnapshot is the newest incremental snapshot's progress (nil:
// none began since the source started).
func (b binlogSource) IncrementalSnapshot() *runtime.IncrementalSnapshotStatus {
	st := b.IncrementalStats()
	if st.Signal == "" {
		return nil
	}
	out := &runtime.IncrementalSnapshotStatus{Running: st.Running, Paused: st.Paused, Signal: st.Signal, Table: st.Table,
		Tables: st.Tables, TablesDone: st.TablesDone, Chunks: st.Chunks, Rows: st.Rows,
		TableRows: st.TableRows, TableEstimatedRows: st.TableEstimatedRows}
	if st.Running && st.StartedMs > 0 {
		out.ElapsedSeconds = float64(time.Now().UnixMilli()-st.StartedMs) / 1000
	}
	out.Derive()
	return out
}

func (b binlogSource) Progress() map[string]float64 {
	st := b.SnapshotStats()
	running, elapsed := 0.0, 0.0
	if st.Running {
		running = 1
		if st.StartedMs > 0 {
			elapsed = float64(time.Now().UnixMilli()-st.StartedMs) / 1000
		}
	}
	m := map[string]float64{"snapshot_rows": float64(st.Rows), "snapshot_tables": float64(st.Tables),
		"snapshot_tables_done": float64(st.TablesDone), "snapshot_running": running, "snapshot_estimated_rows": float64(st.EstimatedRows),
		"snapshot_elapsed_seconds": elapsed}
	if in := b.IncrementalSnapshot(); in != nil {
		m["incremental_snapshot_running"], m["incremental_snapshot_paused"] = oneIf(in.Running), oneIf(in.Paused)
		m["incremental_snapshot_tables"], m["incremental_snapshot_tables_done"] = float64(in.Tables), float64(in.TablesDone)
		m["incremental_snapshot_chunks"], m["incremental_snapshot_rows"] = float64(in.Chunks), float64(in.Rows)
		m["incremental_snapshot_table_rows"], m["incremental_snapshot_table_estimated_rows"] = float64(in.TableRows), float64(in.TableEstimatedRows)
	}
	return m
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (b binlogSource) Backlog(ctx context.Context, position []byte) (int64, int64, error) {
	bl, err := b.Behind(ctx, position)
	return bl.Bytes, bl.Transactions, err
}

// mysqlKeys documents the mysql source's keys (binlog.Config).
var mysqlKeys = plugin.KeyDocs{
	"host":        {Doc: "Host name or address of the MySQL or MariaDB server."},
	"port":        {Doc: "Port of the server.", Default: "3306"},
	"user":        {Doc: "User the source connects as (sluice check names the privileges it lacks)."},
	"password":    {Doc: "Password of user; write ${ENV} to read it from the environment."},
	"server_id":   {Doc: "Replica server id the source registers with: unique among the server's replicas and not the server's own."},
	"flavor":      {Doc: "Dialect of the server's replication protocol; default: the section's type.", Values: []string{binlog.FlavorMySQL, binlog.FlavorMariaDB}},
	"server_name": {Doc: "Logical name of the server: the source.name of every record and Debezium's topic.prefix; default: the pipeline's name."},
	"include":     {Doc: `"db.table" patterns of the tables to capture (* matches any run of characters); default: every table outside mysql, sys, information_schema and performance_schema.`},
	"exclude":     {Doc: `"db.table" patterns of tables left out; exclude wins over include.`},
	"zero_dates": {Doc: "What a zero date ('0000-00-00') becomes: NULL, the epoch, or NULL with the original text in a record header.",
		Default: "null", Values: []string{"null", "epoch", "keep"}},
	"snapshot": {Doc: "When the source copies the included tables whole before streaming the binlog.",
		Default: "initial", Values: []string{"never", "initial", "when_needed", "initial_only"}},
	"snapshot_chunk":       {Doc: "Rows read per query during a snapshot, and per chunk of an incremental snapshot; with snapshot_threads above 1 also the rows of each key range a reader takes.", Default: "2048"},
	"snapshot_chunk_bytes": {Doc: "Bytes of rows a snapshot reader holds at most (about; one row more), and of each chunk of an incremental snapshot: a query of wide rows ends there and the next goes on from its last key. The initial snapshot's rows read and not yet handed on stay below (snapshot_threads + 1) times this.", Default: "1MiB"},
	"snapshot_threads":     {Doc: "Connections that read one table of the initial snapshot in parallel, in key ranges of snapshot_chunk rows, all in the same consistent snapshot; records still leave in key order. Tables without a primary key that can be paged are read by one. 1 reads as one connection (docs/operations.md#parallel-snapshot-reads).", Default: "1"},
	"signal_table":         {Doc: `"db.table" of Debezium's signal table (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32), data TEXT) in the source: an INSERT of execute-snapshot, stop-snapshot, pause-snapshot or resume-snapshot acts on an incremental snapshot, and the source writes its chunk watermarks there (needs INSERT, DELETE on it; docs/incremental-snapshots.md). Unset: read-only mode, the watermarks are the server's GTID state and signals come over REST (sluice run) only.`},
	"snapshot_new_tables":  {Doc: "Snapshot incrementally, by itself while the others stream, every table that starts being captured: renamed into include while running (a created one's rows all come through the stream), or captured by an include or exclude changed since the saved position (docs/incremental-snapshots.md). False: only such a table's later changes are captured.", Default: "true"},
	"snapshot_truncate":    {Doc: "Send a TRUNCATE record for each table before its snapshot rows, so that rows deleted while no pipeline ran leave the target too."},
	"heartbeat":            {Doc: "How often an idle source emits a heartbeat carrying its position; negative disables.", Default: "10s"},
	"exclude_columns":      {Doc: `"db.table.column" patterns of columns left out of every record (not primary-key columns).`},
	"mask":                 {Doc: "Rules that replace the values of string and binary columns before they leave the source; the first matching rule applies."},
	"mask[].columns":       {Doc: `"db.table.column" pattern of the columns the rule masks (* matches any run of characters inside one part).`},
	"mask[].kind": {Doc: "hash: hex SHA-256 of salt and value; fixed: value instead of every non-NULL value; truncate: the first length characters.",
		Values: []string{binlog.MaskHash, binlog.MaskFixed, binlog.MaskTruncate}},
	"mask[].salt":   {Doc: "Salt put before the value when kind is hash."},
	"mask[].value":  {Doc: "Replacement of every non-NULL value when kind is fixed."},
	"mask[].length": {Doc: "Characters (bytes for binary columns) kept when kind is truncate."},
	"history_file":  {Doc: "File of the schema history (CREATE TABLE of each included table and later DDL), for servers whose table map lacks column names; relative to the config's folder."},
	"history_store": {Doc: "Where the schema history is kept: history_file, or a table of the positions database (a cluster's coordinator).",
		Default: binlog.HistoryInFile, Values: []string{binlog.HistoryInFile, binlog.HistoryInDatabase}},
	"history_table":          {Doc: "Table of the schema history when history_store is database.", Default: storage.DefaultHistoryTable},
	"skip_ddl":               {Doc: "DDL statements (exact text, or the GTID of their transaction) the DDL parser and the schema history leave out."},
	"skipped.operations":     {Doc: "Debezium's skipped.operations: ops whose records are not emitted, a list or comma-separated (c, u, d, t; none).", Default: "none"},
	"include.schema.changes": {Doc: "Debezium's include.schema.changes: emit a schema-change record for each DDL statement.", Default: "true"},
	"ssl_mode": {Doc: "MySQL's ssl-mode for every connection to the server.", Default: "disabled",
		Values: []string{"disabled", "preferred", "required", "verify_ca", "verify_identity"}},
	"ssl_ca":   {Doc: "PEM file of the CA that signs the server's certificate (verify_ca, verify_identity)."},
	"ssl_cert": {Doc: "PEM file of a client certificate, for servers that ask for one."},
	"ssl_key":  {Doc: "PEM file of the client certificate's key."},
	"decimal.handling.mode": {Doc: "Debezium's decimal.handling.mode: how DECIMAL values are written.",
		Default: "precise", Values: []string{"precise", "string", "double"}},
	"bigint.unsigned.handling.mode": {Doc: "Debezium's bigint.unsigned.handling.mode: how BIGINT UNSIGNED values are written (Debezium's default is long).",
		Default: "precise", Values: []string{"precise", "long"}},
	"time.precision.mode": {Doc: "Debezium's time.precision.mode: how temporal values are written.",
		Default: "adaptive_time_microseconds", Values: []string{"adaptive_time_microseconds", "connect"}},
	"binary.handling.mode": {Doc: "Debezium's binary.handling.mode: how binary values are written.",
		Default: "bytes", Values: []string{"bytes", "base64", "base64-url-safe", "hex"}},
	"provide.transaction.metadata": {Doc: "Debezium's provide.transaction.metadata: records carry their transaction (Debezium's default is false).", Default: "true"},
}
