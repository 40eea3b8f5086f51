// Package dialect is the contract between the sink's core and one target
// database: the SQL it speaks, its type registry (schema to column type),
// value conversion, the reading of its catalogue and the meaning of its
// driver's errors. The core (package sink) holds a Dialect and never asks
// which one it has; sink/postgres and sink/mysql implement it, as
// Debezium's JDBC sink has a dialect per database with its own types.
package dialect

import (
	"context"
	"crypto/tls"
	"database/sql"
	"strings"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// Options are the sink settings that change what a dialect writes.
type Options struct {
	// TimeAsInterval maps schema.Time to PostgreSQL INTERVAL instead of
	// TIME(6) (sink Config.TimeAsInterval).
	TimeAsInterval bool
	// EnumCheck gives PostgreSQL ENUM columns a CHECK constraint (sink
	// Config.EnumCheck).
	EnumCheck bool
}

// ConnConfig is what opening a target's pool needs.
type ConnConfig struct {
	DSN              string
	TLSMode          string // one of the TLS* modes, "" for the DSN's own
	TLS              *tls.Config
	LockTimeout      time.Duration
	StatementTimeout time.Duration
	// Ping checks a new pool and classifies its failure (the core's:
	// TLS problems, refused logins); Open calls it before it queries.
	Ping func(ctx context.Context, db *sql.DB) error
}

// Dialect builds the SQL of one target kind. Every identifier goes through
// Quote; every value travels as a bound parameter.
type Dialect interface {
	SQL
	Types
	Catalog
	Control
	Conn
	// Explain says what a driver error means (Errors).
	Explain(err error) ErrInfo
}

// Quoter quotes identifiers and numbers placeholders.
type Quoter interface {
	Quote(id string) string
	Placeholder(n int) string // n is 1-based
}

// SQL renders the statements that write rows and change tables.
type SQL interface {
	Name() string // "postgres", "mysql": for logs and messages
	Quoter
	MaxParams() int
	// IdentTooLong reports a table, schema or column name the target
	// would cut, with the limit it has.
	IdentTooLong(name string) (limit int, tooLong bool)
	Upsert(t Target, cols, keyCols []string, rows int) string
	// DeleteAny deletes by a one-column key with a single array parameter
	// built from vals (converted values); ok is false when the dialect has
	// no such form, and the core uses an IN list.
	DeleteAny(t Target, col string, vals []any) (q string, arg any, ok bool)
	CreateSchema(name string) string
	CreateTable(t Target, cols []ColDef, keyCols []string) string
	// AddColumn may fail with CondColumnExists when the column is there
	// already (MySQL has no IF NOT EXISTS): the core takes that for success.
	AddColumn(t Target, c ColDef) string
	// DropColumn may fail with CondUndefinedColumn when it is gone.
	DropColumn(t Target, col string) string
	// DropNotNull relaxes a NOT NULL column; ok is false when the dialect
	// would have to restate the column (MySQL's MODIFY).
	DropNotNull(t Target, col string) (q string, ok bool)
	// RenameTable renames from to to; its statements may fail with
	// CondUndefinedTable or CondExists when done already.
	RenameTable(from, to Target) []string
	Truncate(t Target) string
	// UpdateOne updates one row of a table without key: the first row
	// whose every column of match equals the before image exactly
	// (NULL-safe; see Types.ExactMatch). Parameters: set's values, then
	// match's.
	UpdateOne(t Target, set []string, match []Match) string
	// DeleteOne deletes one such row. Parameters: match's values.
	DeleteOne(t Target, match []Match) string
	// TransactionalDDL reports DDL that runs inside a transaction
	// (PostgreSQL); else DDL commits implicitly and runs alone (MySQL).
	TransactionalDDL() bool
	// CurrentTimestamp is the default expression of a timestamp column of
	// type colType whose source default is CURRENT_TIMESTAMP.
	CurrentTimestamp(colType string) string
	// StringLiteral quotes v as a string literal of the target.
	StringLiteral(v string) string
}

// Types is the dialect's type registry and value conversion.
type Types interface {
	// ColumnType maps a field's schema to a column type of the target;
	// key columns get types the target can index.
	ColumnType(col string, s *schema.Schema, key bool) (string, error)
	// Convert turns a value of the schema's Go representation
	// (schema/doc.go) into a driver parameter; nil stays nil.
	Convert(col string, s *schema.Schema, v any) (any, error)
	// ArrayValue turns a converted SET value (the labels joined by commas)
	// into the parameter of an array column of typ (IsArray).
	ArrayValue(set string) any
	// IsArray reports an array column type (PostgreSQL's SET as TEXT[]).
	IsArray(typ string) bool
	// Widen decides what changing a column of type cur into want means.
	Widen(cur, want string) TypeChange
	// AlterType changes column col to type want, keeping what the column
	// has besides its type; why is set instead when that cannot be done
	// safely.
	AlterType(t Target, col, want string, c ColInfo) (stmt, why string)
	// ColumnFits refuses, for a column the sink does not evolve, a
	// column of type typ that the field's values cannot be written into,
	// saying what to run; nil when it fits or the dialect cannot tell.
	ColumnFits(t Target, f schema.Field, typ string) error
	// ExactMatch reports whether a target column of type typ (its full
	// type, as ColumnsQuery reads it) can be compared exactly with a
	// value, as UpdateOne and DeleteOne do: equal exactly when the stored
	// values are the same. Tables without key refuse other columns.
	ExactMatch(typ string) bool
	// EnumCheck is the column constraint that restricts an ENUM field to
	// its labels (PostgreSQL with Options.EnumCheck); "" for none.
	EnumCheck(f schema.Field) (string, error)
	// EnumCheckLabels are the values EnumCheck's constraint admits for an
	// ENUM schema; nil when the dialect writes no such constraint.
	EnumCheckLabels(s *schema.Schema) []string
	// AlterEnumCheck replaces the constraint old of col by one for labels.
	AlterEnumCheck(t Target, col, old string, labels []string) (string, error)
}

// Catalog reads the target's tables.
type Catalog interface {
	// FoldCase reports column names that compare case-insensitively.
	FoldCase() bool
	// ColumnsQuery reads a table's columns. Args: schema ("" = default),
	// table. Rows: name, full type, not null, default, extra, character
	// set, collation, comment (the last four for MySQL's MODIFY COLUMN;
	// '' or NULL on PostgreSQL, whose default is 'default' for a column
	// with a default, an identity or a generated value, else NULL).
	ColumnsQuery() string
	// UniqueKeysQuery reads the columns of a table's primary key and
	// unique indexes that can arbitrate an upsert (no partial, expression
	// or prefix ones). Args as ColumnsQuery; rows: index name, column
	// name, whether the key part is the whole column (an index with a
	// part that is not cannot arbitrate and is left out).
	UniqueKeysQuery() string
	// ChecksQuery reads a table's one-column CHECK constraints, "" when
	// the dialect writes none (args as ColumnsQuery; rows: constraint
	// name, column name, definition, standard_conforming_strings).
	ChecksQuery() string
	// ParseEnumCheck takes the labels out of a constraint EnumCheck made;
	// ours is false for a constraint of another name.
	ParseEnumCheck(name, def string, scs bool) (labels []string, ours, ok bool)
	// TableColumns reads the column names of a table of the default
	// schema (one arg: the table).
	TableColumns() string
}

// Control renders the statements of the sink's own tables.
type Control interface {
	ProgressDDL(table string) string
	ProgressMigrate(table string) string
	ProgressSelect(table string) string
	ProgressUpsert(table string) string
	PendingDDL(table string) string
	PendingUpsert(table string) string
	BarrierDDL(barriers, arrivals string) []string
	// TablesDDL creates the table registry: pipeline, tbl_schema,
	// tbl_name, the three its key.
	TablesDDL(table string) string
	// TablesMigrate adds the ident column to a table registry made
	// before it had one.
	TablesMigrate(table string) string
	// TableIdentity is a scalar SQL expression, text, naming the storage
	// t's rows live in (NULL when t is missing): it changes when t is
	// truncated or dropped and created again (PostgreSQL: the
	// relfilenode; MySQL and MariaDB: InnoDB's table id), and also when
	// its rows are rewritten (VACUUM FULL, CLUSTER, OPTIMIZE, an ALTER
	// TABLE that copies). "" when the dialect cannot tell for t.
	TableIdentity(t Target) string
	// InsertIgnore is an INSERT of one row of n columns into table that
	// does nothing when its key exists.
	InsertIgnore(table string, cols []string) string
	// DurableTx is the statement that begins every sink transaction so
	// that its commit is on disk when acknowledged, whatever the server's
	// default (PostgreSQL's synchronous_commit); "" when the dialect has
	// no such setting per transaction (MySQL: see Conn.Durability).
	DurableTx() string
}

// Conn opens and checks the target.
type Conn interface {
	// CheckDSN parses a DSN without connecting; the error never repeats
	// the DSN.
	CheckDSN(dsn string) error
	// CheckTargetDSN is CheckDSN plus what the sink needs of it (MySQL: a
	// database, which holds the progress table).
	CheckTargetDSN(dsn, progressTable string) error
	// DSNExample is a DSN of the dialect's form, for messages.
	DSNExample() string
	// Open opens the pool with the TLS mode and the timeouts applied, and
	// checks it with c.Ping.
	Open(ctx context.Context, c ConnConfig) (*sql.DB, error)
	// Verify checks a new pool's server (its version, a default database)
	// and returns the connection's default schema or database.
	Verify(ctx context.Context, db *sql.DB, progressTable string) (defaultSchema string, err error)
	// Durability reads the server settings that decide whether a commit
	// survives the server's crash, and says what is not durable and how
	// to fix it; "" when commits are durable or DurableTx makes them so.
	Durability(ctx context.Context, db *sql.DB) (string, error)
}

// Collator is a dialect whose text columns have a character set and a
// collation, which decide which keys are equal (MySQL). The core gives new
// text columns the clause Collate makes and refuses to write into an
// existing key column that KeyMerges says could merge rows.
type Collator interface {
	// Collate is the clause appended to type typ (ColumnType's) of a new
	// column of field schema s; "" for none.
	Collate(typ string, s *schema.Schema, key bool) string
	// KeyMerges reports whether a key column of collation cur may take
	// values the source keeps apart (schema.ParamCollation of s) as
	// equal, and the collation it should have instead.
	KeyMerges(s *schema.Schema, cur string) (want string, merges bool)
}

// Copier is the bulk path of a dialect that has one (PostgreSQL's COPY).
type Copier interface {
	// StageTable creates a temporary table stage shaped like t's cols,
	// dropped at commit.
	StageTable(stage string, t Target, cols []string) string
	// UpsertFromSelect upserts the rows of stage into t.
	UpsertFromSelect(t Target, cols, keyCols []string, stage string) string
	// CopyIn streams n rows into the table into (quoted) over the driver
	// connection dc (from sql.Conn.Raw). row(i) returns row i's converted
	// values, or an error the core made, which CopyIn returns as it is;
	// the slice is the caller's again at the next call (CopyIn keeps no
	// reference to it). The server's refusal at the end comes wrapped in
	// CopyEndError.
	CopyIn(ctx context.Context, dc any, into string, cols []string, n int, row func(i int) ([]any, error)) error
}

// RowsetMerger is a dialect that upserts a batch of rows sent as one
// document parameter, the statement typing each value by the target's own
// columns when it runs (PostgreSQL's json_populate_recordset): no staging
// table, no per-connection state, one statement.
type RowsetMerger interface {
	// RowsetUpsert upserts into t the rows of the document in parameter
	// 1, each row an object of cols.
	RowsetUpsert(t Target, cols, keyCols []string) string
	// RowsetColumnOK reports whether a column of type typ (the full type
	// the target reports) takes its values from the document exactly as
	// from COPY's text.
	RowsetColumnOK(typ string) bool
	// AppendRowsetRow appends row (converted values of cols) to the
	// document being built in buf (empty before the first row).
	AppendRowsetRow(buf []byte, cols []string, row []any) ([]byte, error)
	// EndRowset closes the document in buf.
	EndRowset(buf []byte) []byte
	// RowsetRefused reports an error of RowsetUpsert's statement saying
	// the table has a column the document cannot fill exactly (found in
	// the catalog as the statement ran): merge it another way. The error
	// is an undefined table, so the sink retries the transaction.
	RowsetRefused(err error) bool
}

// CopyEndError is the server's answer to the end of a COPY: what it
// refused of the rows sent, to be diagnosed row by row.
type CopyEndError struct{ Err error }

func (e CopyEndError) Error() string { return e.Err.Error() }
func (e CopyEndError) Unwrap() error { return e.Err }

// Target is a table of the target database.
type Target struct {
	Schema string // database (MySQL) or schema (PostgreSQL); "" = the connection's default
	Table  string
}

func (t Target) String() string {
	if t.Schema == "" {
		return t.Table
	}
	return t.Schema + "." + t.Table
}

// ColDef is a column to create.
type ColDef struct {
	Name    string
	Type    string
	Default string // the DEFAULT, a literal the core rendered; "" for none
	NotNull bool
	Check   string // a column constraint, e.g. an ENUM's CHECK
}

// Match is a column of a table without key compared by UpdateOne and
// DeleteOne: its name and its full target type.
type Match struct {
	Col  string
	Type string
}

// ColInfo is a target column as the database describes it.
type ColInfo struct {
	Type    string // full type: format_type on PostgreSQL, COLUMN_TYPE on MySQL
	NotNull bool
	// MySQL only: what MODIFY COLUMN would have to repeat.
	HasDefault bool
	Default    string // the catalogue's text of the default (COLUMN_DEFAULT), when HasDefault
	Extra      string // EXTRA: auto_increment, on update …, generated …
	Charset    string
	Collation  string
	Comment    bool
}

// Qualified is t's quoted name.
func Qualified(d Quoter, t Target) string {
	if t.Schema == "" {
		return d.Quote(t.Table)
	}
	return d.Quote(t.Schema) + "." + d.Quote(t.Table)
}

// ColumnList quotes cols, comma-separated.
func ColumnList(d Quoter, cols []string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d.Quote(c))
	}
	return b.String()
}

// ValuesList renders rows groups of n placeholders: (…),(…).
func ValuesList(d Quoter, rows, n int) string {
	var b strings.Builder
	p := 1
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := 0; c < n; c++ {
			if c > 0 {
				b.WriteByte(',')
			}
			b.WriteString(d.Placeholder(p))
			p++
		}
		b.WriteByte(')')
	}
	return b.String()
}

// InsertSQL is a multi-row INSERT of cols.
func InsertSQL(d Quoter, t Target, cols []string, rows int) string {
	return "INSERT INTO " + Qualified(d, t) + " (" + ColumnList(d, cols) + ") VALUES " + ValuesList(d, rows, len(cols))
}

// SetList renders "c1"=p1,"c2"=p2,… for an UPDATE, placeholders from 1.
func SetList(d Quoter, cols []string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d.Quote(c) + "=" + d.Placeholder(i+1))
	}
	return b.String()
}

// DeleteSQL deletes rows by key with a row-value IN list (or a plain IN list
// for one key column): rows × len(keyCols) parameters.
func DeleteSQL(d Quoter, t Target, keyCols []string, rows int) string {
	var b strings.Builder
	b.WriteString("DELETE FROM " + Qualified(d, t) + " WHERE ")
	if len(keyCols) == 1 {
		b.WriteString(d.Quote(keyCols[0]) + " IN (")
		for r := 0; r < rows; r++ {
			if r > 0 {
				b.WriteByte(',')
			}
			b.WriteString(d.Placeholder(r + 1))
		}
		b.WriteByte(')')
		return b.String()
	}
	b.WriteString("(" + ColumnList(d, keyCols) + ") IN (" + ValuesList(d, rows, len(keyCols)) + ")")
	return b.String()
}

// IsKey reports whether c is one of keyCols.
func IsKey(keyCols []string, c string) bool {
	for _, k := range keyCols {
		if k == c {
			return true
		}
	}
	return false
}

// ColumnDef renders a column definition: name, type, default, NOT NULL,
// constraint.
func ColumnDef(d Quoter, c ColDef) string {
	s := d.Quote(c.Name) + " " + c.Type
	if c.Default != "" {
		s += " DEFAULT " + c.Default
	}
	if c.NotNull {
		s += " NOT NULL"
	}
	if c.Check != "" {
		s += " " + c.Check
	}
	return s
}

// CreateTableSQL is CREATE TABLE IF NOT EXISTS with cols, the primary key
// and suffix (table options).
func CreateTableSQL(d Quoter, t Target, cols []ColDef, keyCols []string, suffix string) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + Qualified(d, t) + " (")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ColumnDef(d, c))
	}
	if len(keyCols) > 0 {
		b.WriteString(", PRIMARY KEY (" + ColumnList(d, keyCols) + ")")
	}
	b.WriteString(")" + suffix)
	return b.String()
}
