package sink

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/secure"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// Dialects.
const (
	DialectPostgres = "postgres"
	DialectMySQL    = "mysql"
)

// Config configures a Sink. Start from DefaultConfig. Its yaml tags are the
// keys of a pipeline's sink section (type postgres or mysql, which set
// Dialect); Validate checks it as New would.
type Config struct {
	Dialect  string // "postgres" or "mysql" (MySQL and MariaDB)
	DSN      string `yaml:"dsn" sluice:"required"` // lib/pq DSN or go-sql-driver DSN
	Pipeline string // pipeline name, the first key column of the progress table
	// TLSMode is MySQL's ssl-mode for the target connections, for both
	// dialects: "disabled", "preferred" (TLS when the server offers it; for
	// PostgreSQL lib/pq's sslmode=prefer, without a client certificate),
	// "required" (TLS, the certificate is not checked), "verify_ca" (signed
	// by a CA in TLS.RootCAs) or "verify_identity" (verify_ca, and the
	// certificate names the DSN's host). "" (the default) leaves TLS to the
	// DSN (PostgreSQL sslmode=..., MySQL tls=...); setting both is an error.
	TLSMode string `yaml:"ssl_mode"`
	// TLS holds RootCAs (nil: the system's roots) and Certificates (a
	// client certificate); the sink applies TLSMode's verification to a
	// copy. Nil is an empty config; verify_ca needs RootCAs.
	TLS *tls.Config
	// SSLCA, SSLCert and SSLKey name the PEM files TLS is loaded from when
	// it is nil (see secure.LoadClientTLS).
	SSLCA   string `yaml:"ssl_ca"`
	SSLCert string `yaml:"ssl_cert"`
	SSLKey  string `yaml:"ssl_key"`
	// LockTimeout bounds how long a statement waits for a lock another
	// session holds (PostgreSQL lock_timeout; MySQL and MariaDB
	// innodb_lock_wait_timeout and lock_wait_timeout, rounded up to whole
	// seconds). The transaction then fails with a retriable error and is
	// retried after the runtime's backoff. 0 means DefaultLockTimeout (30s),
	// negative leaves the server's setting. A value the DSN sets wins.
	LockTimeout time.Duration `yaml:"lock_timeout"`
	// StatementTimeout bounds each statement of the sink, DDL included
	// (PostgreSQL statement_timeout, MariaDB max_statement_time; MySQL has no
	// such limit for writes and ignores it). A statement over it fails the
	// transaction with a retriable error. 0 means DefaultStatementTimeout
	// (10m), negative leaves the server's setting. A value the DSN sets wins.
	StatementTimeout time.Duration `yaml:"statement_timeout"`
	// SchemaTemplate names the target schema (PostgreSQL) or database
	// (MySQL); placeholders ${db} (source database) and ${table} (source
	// table). Unset ("") means "${db}". To write into the connection's
	// default schema or database, name it (e.g. "public").
	SchemaTemplate string `yaml:"schema"`
	TableTemplate  string `yaml:"table"`       // target table name; default "${table}"
	AutoCreate     bool   `yaml:"auto_create"` // create missing schemas and tables (with primary key)
	// AutoEvolve adds columns that records carry and the table lacks, and
	// widens a column when a record's type is a safe widening of it (INT to
	// BIGINT, DECIMAL(5,2) to DECIMAL(10,2), VARCHAR(10) to VARCHAR(50),
	// labels added at the end of an ENUM or SET, …; see
	// docs/type-mapping.md). Other type differences are logged once per
	// column and type pair and left to the operator.
	AutoEvolve bool `yaml:"auto_evolve"`
	BatchSize  int  `yaml:"batch_size"` // rows per statement, default 500
	// ProgressTable is the name of the progress table in the connection's
	// default schema or database; default "sluice_progress".
	ProgressTable string `yaml:"progress_table"`
	// CopyThreshold enables the PostgreSQL fast path: upserts of at least
	// this many rows of one table and shape go through COPY into a temporary
	// table and one INSERT … SELECT … ON CONFLICT. Measured against
	// multi-row VALUES upserts of the same rows: 0.86× at 128 rows, 1.09× at
	// 256, 1.4× at 384-512, 1.6× at 1024. 0 means the default, 256 (the
	// RocketMQ consumer's default batch); a negative value disables it.
	CopyThreshold int `yaml:"copy_threshold"`
	// TimeAsInterval maps source TIME columns (schema.Time: durations that
	// may be negative or beyond 24 hours, MySQL's -838:59:59..838:59:59) to
	// PostgreSQL INTERVAL instead of TIME(fsp), so every value fits; on in
	// DefaultConfig (and in YAML unless time_as_interval: false), since no
	// PostgreSQL TIME holds every value of a MySQL TIME column. Off, values
	// outside 00:00:00..24:00:00 are a fatal ErrValue.
	// It applies to columns the sink creates or adds, and, with AutoEvolve,
	// alters existing TIME columns to INTERVAL (a widening); without
	// AutoEvolve such a column is a fatal ErrSchema giving the ALTER TABLE
	// to run. MySQL targets always use TIME(6), which holds the whole
	// source range.
	TimeAsInterval bool `yaml:"time_as_interval"`
	// EnumCheck gives ENUM columns that PostgreSQL tables get as TEXT a
	// named CHECK constraint (<column>_enum_<hash>) that admits the source's
	// labels and NULL, when the sink creates the table or adds the column.
	// With AutoEvolve, labels added by the source replace the constraint.
	// A row with another label (MySQL's '' for an invalid value, too) is
	// then rejected by PostgreSQL and handled by OnError. MySQL targets
	// ignore it: they keep the source's ENUM type.
	EnumCheck bool `yaml:"enum_check"`
	// SchemaChanges decides what schema-change records (schema.OpSchemaChange)
	// do: "ignore" (the default, also ""), "apply" (see the package doc:
	// the record's structured changes, schema.SchemaChange.Tables, are
	// applied to the target: tables created, dropped, renamed; columns
	// added with their default, dropped, renamed, modified) or "fail" (a Write carrying one fails with a
	// fatal ErrSchemaChange, for pipelines where a person reviews DDL).
	SchemaChanges string `yaml:"schema_changes"`
	// OnError decides what happens to a row the target rejects for good
	// (constraint, type, size; a value the sink cannot convert): "fail" (the
	// default, also "": the Write fails with a fatal error naming the row),
	// "skip" (the row is logged with table, key and the database's error and
	// left out; the rest of the batch commits) or "dlq" (the row is handed to
	// DeadLetter, then left out). Lost connections and other transient
	// errors are never skipped.
	OnError string `yaml:"on_error"`
	// DeadLetter receives the rows OnError "dlq" leaves out, before the
	// batch commits; an error from it fails the Write (retriable unless
	// schema.ClassOf says it is fatal). A retried Write may hand the same row
	// again: make the callback idempotent or accept duplicates. Required with
	// "dlq".
	DeadLetter func(ctx context.Context, rec schema.Record, cause error) error
	// KeylessMode decides what happens to updates and deletes of tables
	// without primary key (inserts and snapshot reads are always appended):
	// "before_image" (the default, also ""): each is applied to one target
	// row equal to its before image in every column, in source order; a
	// table with a column the dialect cannot compare exactly is refused
	// before any of its rows is written (fatal ErrSchema naming the table,
	// the columns and this option), by CheckShapes at start when its
	// target table exists then; "fail": a fatal ErrSchema at the first
	// update or delete; "append": they are skipped with a warning, so the
	// target holds every row ever inserted (an audit-style append-only
	// copy).
	KeylessMode string `yaml:"keyless_mode"`
	// Transactional applies the records of one source transaction (same
	// Transaction.ID) in one target transaction even when a transport batch
	// ends inside it: see "Transaction-consistent mode" in the package doc.
	Transactional bool `yaml:"transactional"`
	// PendingTable names the table that holds, in transactional mode, the
	// records of a source transaction whose end has not arrived yet; default
	// "sluice_pending", in the connection's default schema or database.
	PendingTable string
	// ControlTables names more tables of sluice's own in the target (the
	// positions table when positions are stored there), "table" in the
	// connection's default schema or database, or "schema.table". Like the
	// progress and pending tables, no source table may map onto one: the
	// sink refuses such a record instead of writing over it.
	ControlTables []string
	// Routes send source tables to other schemas and names than the
	// templates (Route); the first match wins.
	Routes []Route `yaml:"routes"`
	// Columns rename and drop columns per table (ColumnRule); the first
	// match applies.
	Columns []ColumnRule `yaml:"columns"`

	routing *routing // Routes and Columns compiled by normalize; nil without them
}

// Policies of Config.SchemaChanges, Config.OnError and Config.KeylessMode.
const (
	SchemaChangesIgnore = "ignore"
	SchemaChangesApply  = "apply"
	SchemaChangesFail   = "fail"

	OnErrorFail = "fail"
	OnErrorSkip = "skip"
	OnErrorDLQ  = "dlq"

	KeylessBeforeImage = "before_image"
	KeylessFail        = "fail"
	KeylessAppend      = "append"
)

// DefaultConfig returns a Config with the documented defaults; set Dialect,
// DSN and Pipeline.
func DefaultConfig() Config {
	return Config{
		SchemaTemplate:   "${db}",
		TableTemplate:    "${table}",
		AutoCreate:       true,
		AutoEvolve:       true,
		BatchSize:        500,
		ProgressTable:    "sluice_progress",
		CopyThreshold:    256,
		SchemaChanges:    SchemaChangesIgnore,
		OnError:          OnErrorFail,
		KeylessMode:      KeylessBeforeImage,
		PendingTable:     "sluice_pending",
		LockTimeout:      DefaultLockTimeout,
		StatementTimeout: DefaultStatementTimeout,
		TimeAsInterval:   true,
	}
}

func (c *Config) normalize() error {
	name, ok := dialectName(c.Dialect)
	if !ok {
		return fmt.Errorf("%w: dialect %q: use %q or %q", ErrConfig, c.Dialect, DialectPostgres, DialectMySQL)
	}
	c.Dialect = name
	if c.DSN == "" {
		return fmt.Errorf("%w: DSN is empty", ErrConfig)
	}
	if c.Pipeline == "" {
		return fmt.Errorf("%w: pipeline name is empty (it keys the progress table)", ErrConfig)
	}
	if c.SchemaTemplate == "" {
		c.SchemaTemplate = "${db}"
	}
	if c.TableTemplate == "" {
		c.TableTemplate = "${table}"
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 500
	}
	if c.ProgressTable == "" {
		c.ProgressTable = "sluice_progress"
	}
	if c.CopyThreshold == 0 {
		c.CopyThreshold = 256
	}
	if c.PendingTable == "" {
		c.PendingTable = "sluice_pending"
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = DefaultLockTimeout
	}
	if c.StatementTimeout == 0 {
		c.StatementTimeout = DefaultStatementTimeout
	}
	if err := c.LoadTLS(); err != nil {
		return err
	}
	var err error
	if c.TLSMode, err = normalizeTLSMode(c.TLSMode); err != nil {
		return err
	}
	if c.TLSMode == TLSVerifyCA && (c.TLS == nil || c.TLS.RootCAs == nil) {
		return fmt.Errorf("%w: TLSMode verify_ca needs the CA to verify against (TLS.RootCAs; ssl_ca in the config)", ErrConfig)
	}
	if c.SchemaChanges, err = oneOf("SchemaChanges", c.SchemaChanges, SchemaChangesIgnore, SchemaChangesApply, SchemaChangesFail); err != nil {
		return err
	}
	if c.OnError, err = oneOf("OnError", c.OnError, OnErrorFail, OnErrorSkip, OnErrorDLQ); err != nil {
		return err
	}
	if c.OnError == OnErrorDLQ && c.DeadLetter == nil {
		return fmt.Errorf("%w: OnError %q needs a DeadLetter callback", ErrConfig, OnErrorDLQ)
	}
	if c.KeylessMode, err = oneOf("KeylessMode", c.KeylessMode, KeylessBeforeImage, KeylessFail, KeylessAppend); err != nil {
		return err
	}
	for _, t := range []string{c.SchemaTemplate, c.TableTemplate} {
		if err := checkTemplate(t); err != nil {
			return err
		}
	}
	c.routing, err = compileRouting(c)
	return err
}

// LoadTLS checks TLSMode with SSLCA, SSLCert and SSLKey and loads the
// files into TLS, when TLS is nil; New does it too.
func (c *Config) LoadTLS() error {
	if c.TLS != nil {
		return nil
	}
	var err error
	if c.TLSMode, c.TLS, err = secure.LoadClientTLS(c.TLSMode, c.SSLCA, c.SSLCert, c.SSLKey); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return nil
}

// Validate reports the first setting New would refuse, without connecting:
// the checks New makes before it dials (policies, templates, the DSN's
// syntax). A DeadLetter callback is not required here.
func Validate(cfg Config) error {
	if cfg.OnError == OnErrorDLQ && cfg.DeadLetter == nil {
		cfg.DeadLetter = func(context.Context, schema.Record, error) error { return nil }
	}
	if err := cfg.normalize(); err != nil {
		return err
	}
	d, err := newDialect(&cfg)
	if err != nil {
		return err
	}
	return d.CheckTargetDSN(cfg.DSN, cfg.ProgressTable)
}

// CheckDSN parses a DSN of dialect "postgres" (a URL or key=value pairs,
// as lib/pq reads them) or "mysql" (go-sql-driver's form) without
// connecting.
func CheckDSN(name, dsn string) error {
	n, ok := dialectName(name)
	if !ok {
		n = DialectPostgres
	}
	return dialects[n](dialect.Options{}).CheckDSN(dsn)
}

// oneOf normalises a policy value: "" is the first (default) choice.
func oneOf(name, v string, choices ...string) (string, error) {
	if v == "" {
		return choices[0], nil
	}
	for _, c := range choices {
		if strings.EqualFold(v, c) {
			return c, nil
		}
	}
	return "", fmt.Errorf("%w: %s %q: use one of %s", ErrConfig, name, v, strings.Join(choices, ", "))
}

func checkTemplate(t string) error {
	rest := t
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			return nil
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return fmt.Errorf("%w: template %q has an unclosed ${", ErrConfig, t)
		}
		switch rest[i : i+j+1] {
		case "${db}", "${table}":
		default:
			return fmt.Errorf("%w: template %q: unknown placeholder %s (use ${db} or ${table})", ErrConfig, t, rest[i:i+j+1])
		}
		rest = rest[i+j+1:]
	}
}

func expand(t string, id schema.TableID) string {
	if !strings.Contains(t, "${") {
		return t
	}
	return strings.NewReplacer("${db}", id.Database, "${table}", id.Table).Replace(t)
}

func (c *Config) target(id schema.TableID) target {
	if c.routing != nil {
		if t, ok := c.routing.target(c, id); ok {
			return t
		}
	}
	return target{Schema: expand(c.SchemaTemplate, id), Table: expand(c.TableTemplate, id)}
}
