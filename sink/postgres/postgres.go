// Package postgres is the sink's PostgreSQL dialect: its SQL, its type
// registry, value conversion, COPY and the meaning of lib/pq's errors.
package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// Dialect builds PostgreSQL SQL. interval maps schema.Time to INTERVAL
// (Options.TimeAsInterval) instead of TIME(6); checkEnums gives ENUM
// columns a CHECK constraint (Options.EnumCheck).
type Dialect struct{ interval, checkEnums bool }

// New returns the PostgreSQL dialect with opts.
func New(opts dialect.Options) Dialect {
	return Dialect{interval: opts.TimeAsInterval, checkEnums: opts.EnumCheck}
}

var (
	_ dialect.Dialect      = Dialect{}
	_ dialect.Copier       = Dialect{}
	_ dialect.RowsetMerger = Dialect{}
)

type target = dialect.Target

func (Dialect) Name() string                   { return "postgres" }
func (Dialect) Quote(id string) string         { return `"` + strings.ReplaceAll(id, `"`, `""`) + `"` }
func (Dialect) Placeholder(n int) string       { return "$" + strconv.Itoa(n) }
func (Dialect) MaxParams() int                 { return 65535 }
func (Dialect) FoldCase() bool                 { return false }
func (Dialect) TransactionalDDL() bool         { return true }
func (Dialect) CurrentTimestamp(string) string { return "CURRENT_TIMESTAMP" }

// IdentTooLong: PostgreSQL counts bytes and cuts longer names silently.
func (Dialect) IdentTooLong(name string) (int, bool) { return 63, len(name) > 63 }

// StringLiteral relies on standard_conforming_strings (on since 9.1):
// only the quote is doubled.
func (Dialect) StringLiteral(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }

func (d Dialect) Upsert(t target, cols, keyCols []string, rows int) string {
	var b strings.Builder
	b.WriteString(dialect.InsertSQL(d, t, cols, rows))
	b.WriteString(" ON CONFLICT (" + dialect.ColumnList(d, keyCols) + ") DO ")
	n := 0
	for _, c := range cols {
		if dialect.IsKey(keyCols, c) {
			continue
		}
		if n == 0 {
			b.WriteString("UPDATE SET ")
		} else {
			b.WriteByte(',')
		}
		q := d.Quote(c)
		b.WriteString(q + "=EXCLUDED." + q)
		n++
	}
	if n == 0 {
		b.WriteString("NOTHING")
	}
	return b.String()
}

func (d Dialect) CreateSchema(name string) string {
	return "CREATE SCHEMA IF NOT EXISTS " + d.Quote(name)
}

func (d Dialect) CreateTable(t target, cols []dialect.ColDef, keyCols []string) string {
	return dialect.CreateTableSQL(d, t, cols, keyCols, "")
}

func (d Dialect) AddColumn(t target, c dialect.ColDef) string {
	return "ALTER TABLE " + dialect.Qualified(d, t) + " ADD COLUMN IF NOT EXISTS " + dialect.ColumnDef(d, c)
}

func (d Dialect) DropColumn(t target, col string) string {
	return "ALTER TABLE " + dialect.Qualified(d, t) + " DROP COLUMN IF EXISTS " + d.Quote(col)
}

func (d Dialect) DropNotNull(t target, col string) (string, bool) {
	return "ALTER TABLE " + dialect.Qualified(d, t) + " ALTER COLUMN " + d.Quote(col) + " DROP NOT NULL", true
}

// RenameTable moves the table to the new schema first when it changes
// (ALTER TABLE … RENAME TO keeps the schema).
func (d Dialect) RenameTable(from, to target) []string {
	var out []string
	q := dialect.Qualified(d, from)
	if to.Schema != from.Schema {
		out = append(out, "ALTER TABLE "+q+" SET SCHEMA "+d.Quote(schemaOrPublic(to.Schema)))
		q = dialect.Qualified(d, target{Schema: to.Schema, Table: from.Table})
	}
	return append(out, "ALTER TABLE "+q+" RENAME TO "+d.Quote(to.Table))
}

func schemaOrPublic(s string) string {
	if s == "" {
		return "public"
	}
	return s
}

func (d Dialect) Truncate(t target) string { return "TRUNCATE TABLE " + dialect.Qualified(d, t) }

// The progress table holds per queue the text form of the last applied
// record ID (schema.ID.String, which sorts like IDs under a binary
// collation); the empty string means nothing applied.
const pgLastID = `last_id TEXT COLLATE "C" NOT NULL DEFAULT ''`

func (d Dialect) ProgressDDL(table string) string {
	return "CREATE TABLE IF NOT EXISTS " + d.Quote(table) + ` (pipeline TEXT NOT NULL, topic TEXT NOT NULL, queue INTEGER NOT NULL, ` + pgLastID + `, updated_at TIMESTAMPTZ(6) NOT NULL DEFAULT now(), PRIMARY KEY (pipeline, topic, queue))`
}

// ProgressMigrate turns a progress table of the shape before record IDs
// (last_offset BIGINT) into the current one: its offsets are not IDs, so
// every queue starts with nothing applied.
func (d Dialect) ProgressMigrate(table string) string {
	return "ALTER TABLE " + d.Quote(table) + " ADD COLUMN IF NOT EXISTS " + pgLastID + ", ALTER COLUMN last_offset SET DEFAULT -1"
}

func (d Dialect) ProgressSelect(table string) string {
	return "SELECT last_id FROM " + d.Quote(table) + " WHERE pipeline = $1 AND topic = $2 AND queue = $3"
}

func (d Dialect) ProgressUpsert(table string) string {
	q := d.Quote(table)
	return "INSERT INTO " + q + " (pipeline, topic, queue, last_id, updated_at) VALUES ($1, $2, $3, $4, now()) ON CONFLICT (pipeline, topic, queue) DO UPDATE SET last_id = GREATEST(" + q + ".last_id, EXCLUDED.last_id), updated_at = now()"
}

func (d Dialect) PendingDDL(table string) string {
	return "CREATE TABLE IF NOT EXISTS " + d.Quote(table) + " (pipeline TEXT NOT NULL, topic TEXT NOT NULL, queue INTEGER NOT NULL, tx_id TEXT NOT NULL, records INTEGER NOT NULL, data BYTEA NOT NULL, updated_at TIMESTAMPTZ(6) NOT NULL DEFAULT now(), PRIMARY KEY (pipeline, topic, queue))"
}

func (d Dialect) PendingUpsert(table string) string {
	return "INSERT INTO " + d.Quote(table) + " (pipeline, topic, queue, tx_id, records, data, updated_at) VALUES ($1, $2, $3, $4, $5, $6, now()) ON CONFLICT (pipeline, topic, queue) DO UPDATE SET tx_id = EXCLUDED.tx_id, records = EXCLUDED.records, data = EXCLUDED.data, updated_at = now()"
}

func (d Dialect) BarrierDDL(b, a string) []string {
	return []string{
		"CREATE TABLE IF NOT EXISTS " + d.Quote(b) + " (pipeline TEXT NOT NULL, barrier CHAR(64) NOT NULL, description TEXT NOT NULL, copies INTEGER NOT NULL, applied BOOLEAN NOT NULL DEFAULT false, created_at TIMESTAMPTZ(6) NOT NULL DEFAULT now(), applied_at TIMESTAMPTZ(6) NULL, PRIMARY KEY (pipeline, barrier))",
		"CREATE TABLE IF NOT EXISTS " + d.Quote(a) + " (pipeline TEXT NOT NULL, barrier CHAR(64) NOT NULL, topic TEXT NOT NULL, broker TEXT NOT NULL, queue INTEGER NOT NULL, arrived_at TIMESTAMPTZ(6) NOT NULL DEFAULT now(), PRIMARY KEY (pipeline, barrier, topic, broker, queue))",
	}
}

func (d Dialect) TablesDDL(table string) string {
	return "CREATE TABLE IF NOT EXISTS " + d.Quote(table) + " (pipeline TEXT NOT NULL, tbl_schema TEXT NOT NULL, tbl_name TEXT NOT NULL, ident TEXT, created_at TIMESTAMPTZ(6) NOT NULL DEFAULT now(), PRIMARY KEY (pipeline, tbl_schema, tbl_name))"
}

func (d Dialect) TablesMigrate(table string) string {
	return "ALTER TABLE " + d.Quote(table) + " ADD COLUMN IF NOT EXISTS ident TEXT"
}

// TableIdentity is the table's relfilenode: TRUNCATE gives the table a new
// one (also a TRUNCATE in the sink's own transaction, which then sees it).
// A partitioned table's own is 0 whatever its partitions go through.
func (d Dialect) TableIdentity(t target) string {
	return "(SELECT c.relfilenode::text FROM pg_class c WHERE c.oid = to_regclass(" + d.StringLiteral(dialect.Qualified(d, t)) + "))"
}

func (d Dialect) InsertIgnore(table string, cols []string) string {
	return "INSERT INTO " + d.Quote(table) + " (" + strings.Join(cols, ", ") + ") VALUES " + spaced(dialect.ValuesList(d, 1, len(cols))) + " ON CONFLICT DO NOTHING"
}

// DurableTx raises synchronous_commit from off (a server default that
// acknowledges commits before their WAL is flushed) to on, for this
// transaction only; any other value already flushes the WAL locally before
// the commit returns and is kept, so a stronger one (remote_apply) is not
// weakened.
func (Dialect) DurableTx() string {
	return "SELECT set_config('synchronous_commit', 'on', true) WHERE current_setting('synchronous_commit') = 'off'"
}

// Durability: DurableTx makes every sink commit durable. (fsync=off on the
// server would still lose commits in a crash; the server's operator chose
// that, and the server says so in its own log.)
func (Dialect) Durability(context.Context, *sql.DB) (string, error) { return "", nil }

// spaced puts a space after each comma of a placeholder list.
func spaced(s string) string { return strings.ReplaceAll(s, ",", ", ") }

func (Dialect) TableColumns() string {
	return "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1"
}

func (Dialect) ColumnsQuery() string {
	return `SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, CASE WHEN a.atthasdef OR a.attidentity <> '' THEN 'default' END, '', NULL, NULL, ''
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = COALESCE(NULLIF($1, ''), current_schema()) AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'f', 'm')
AND a.attnum > 0 AND NOT a.attisdropped`
}

// UniqueKeysQuery reads the unique indexes ON CONFLICT can use: immediate,
// not partial, on columns only.
func (Dialect) UniqueKeysQuery() string {
	return `SELECT i.relname, a.attname, true
FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(x.indkey)
WHERE n.nspname = COALESCE(NULLIF($1, ''), current_schema()) AND c.relname = $2
AND x.indisunique AND x.indimmediate AND x.indpred IS NULL AND NOT 0 = ANY(x.indkey)`
}

// ChecksQuery reads a table's one-column CHECK constraints, with EnumCheck.
func (d Dialect) ChecksQuery() string {
	if !d.checkEnums {
		return ""
	}
	return `SELECT con.conname, a.attname, pg_get_constraintdef(con.oid), current_setting('standard_conforming_strings') = 'on'
FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1]
WHERE n.nspname = COALESCE(NULLIF($1, ''), current_schema()) AND c.relname = $2 AND con.contype = 'c' AND cardinality(con.conkey) = 1`
}

func (Dialect) ParseEnumCheck(name, def string, scs bool) ([]string, bool, bool) {
	if !isEnumCheckName(name) {
		return nil, false, false
	}
	labels, ok := parseEnumCheck(def, scs)
	return labels, true, ok
}

func (Dialect) Widen(cur, want string) dialect.TypeChange { return widenPG(cur, want) }

// IsArray reports PostgreSQL array types (format_type ends them in []).
func (Dialect) IsArray(typ string) bool { return strings.HasSuffix(typ, "[]") }

// ArrayValue is the TEXT[] literal of a SET's labels.
func (Dialect) ArrayValue(set string) any { return setArrayLiteral(set) }

// AlterType keeps defaults, NOT NULL and constraints: PostgreSQL changes
// only the type (rewriting the table when the storage changes).
func (d Dialect) AlterType(t target, col, want string, _ dialect.ColInfo) (string, string) {
	return "ALTER TABLE " + dialect.Qualified(d, t) + " ALTER COLUMN " + d.Quote(col) + " TYPE " + want, ""
}

// AlterEnumCheck replaces the CHECK constraint old of col by one for
// labels, in one statement.
func (d Dialect) AlterEnumCheck(t target, col, old string, labels []string) (string, error) {
	check, err := d.enumCheck(col, labels)
	if err != nil {
		return "", err
	}
	return "ALTER TABLE " + dialect.Qualified(d, t) + " DROP CONSTRAINT " + d.Quote(old) + ", ADD " + check, nil
}

// EnumCheck returns the CHECK constraint of a new column for field f:
// with EnumCheck, ENUM fields whose schema lists the labels.
func (d Dialect) EnumCheck(f schema.Field) (string, error) {
	if !d.checkEnums || f.Schema.Logical != schema.Enum {
		return "", nil
	}
	labels := d.EnumCheckLabels(f.Schema)
	if labels == nil {
		return "", nil
	}
	return d.enumCheck(f.Name, labels)
}

// EnumCheckLabels are the schema's labels and ”, the error value a
// non-strict source stores for an invalid ENUM value (number 0).
func (d Dialect) EnumCheckLabels(s *schema.Schema) []string {
	labels := dialect.EnumLabels(s)
	if !d.checkEnums || labels == nil || slices.Contains(labels, "") {
		return labels
	}
	return append([]string{""}, labels...)
}

// ColumnFits refuses, without AutoEvolve, to write TimeAsInterval's
// INTERVAL text into a TIME column made before the option was set
// (PostgreSQL would fail on it with an unrelated "time zone displacement
// out of range"), saying what to run.
func (d Dialect) ColumnFits(t target, f schema.Field, typ string) error {
	if !d.interval || f.Schema.Logical != schema.Time {
		return nil
	}
	if ct, ok := parsePGType(typ); !ok || ct.Base != "time" {
		return nil
	}
	return schema.Fatal(fmt.Errorf("%w: column %q of %s is %s, made before time_as_interval was set; run ALTER TABLE %s ALTER COLUMN %s TYPE INTERVAL, or turn auto_evolve on to let the sink do it",
		dialect.ErrSchema, f.Name, t, typ, dialect.Qualified(d, t), d.Quote(f.Name)))
}

// Verify refuses servers older than 9.5 (INSERT … ON CONFLICT) and reads
// the default schema.
func (Dialect) Verify(ctx context.Context, db *sql.DB, _ string) (string, error) {
	var v int
	if err := db.QueryRowContext(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v); err != nil {
		return "", fmt.Errorf("sink: query server version: %w", err)
	}
	if v < 90500 {
		return "", schema.Fatal(fmt.Errorf("%w: PostgreSQL %d is too old: INSERT … ON CONFLICT needs 9.5 or newer", dialect.ErrConfig, v))
	}
	var name string
	if err := db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&name); err != nil {
		return "", fmt.Errorf("sink: query the default schema: %w", err)
	}
	return name, nil
}

// UpdateOne and DeleteOne match one row of a table without key by its
// before image and touch that row only, by its ctid. Each column is
// compared by its text form after the cast an INSERT applies to the value
// (CAST($n AS type)::text), NULL-safe: PostgreSQL's text output is one to
// one on stored values for the types ExactMatch admits, where its
// equality operators are not (numeric 1.0 = 1.00, interval '1 day' =
// '24 hours', jsonb by value, -0 = 0 for floats) or absent (json).
func (d Dialect) UpdateOne(t target, set []string, match []dialect.Match) string {
	return "UPDATE " + dialect.Qualified(d, t) + " SET " + dialect.SetList(d, set) + d.matchOne(t, match, len(set))
}

func (d Dialect) DeleteOne(t target, match []dialect.Match) string {
	return "DELETE FROM " + dialect.Qualified(d, t) + d.matchOne(t, match, 0)
}

func (d Dialect) matchOne(t target, match []dialect.Match, n int) string {
	var b strings.Builder
	b.WriteString(" WHERE ctid = (SELECT ctid FROM " + dialect.Qualified(d, t) + " WHERE ")
	for i, m := range match {
		if i > 0 {
			b.WriteString(" AND ")
		}
		n++
		b.WriteString(d.Quote(m.Col) + "::text IS NOT DISTINCT FROM CAST(" + d.Placeholder(n) + " AS " + m.Type + ")::text")
	}
	b.WriteString(" LIMIT 1 FOR UPDATE)")
	return b.String()
}

// exactTypes are the types whose text form is one to one on stored values
// (floats: PostgreSQL 12 and later print the shortest exact form), by the
// name format_type gives before any modifier.
var exactTypes = []string{
	"smallint", "integer", "bigint", "numeric", "real", "double precision", "boolean",
	"text", "character varying", "character", "bytea", "uuid", "inet", "cidr", "macaddr",
	"date", "time without time zone", "time with time zone", "timestamp without time zone",
	"timestamp with time zone", "interval", "json", "jsonb", "bit", "bit varying",
}

// ExactMatch admits PostgreSQL's own scalar types and their arrays. Other
// types (domains, enums of type, extension types, oid for large objects,
// whose value is a reference, money, whose text depends on lc_monetary)
// are refused: the dialect cannot vouch for their comparison.
func (Dialect) ExactMatch(typ string) bool {
	t := strings.TrimSuffix(strings.TrimSpace(typ), "[]")
	if i := strings.IndexByte(t, '('); i >= 0 {
		j := strings.IndexByte(t[i:], ')')
		if j < 0 {
			return false
		}
		t = strings.TrimSpace(t[:i] + t[i+j+1:])
	}
	return slices.Contains(exactTypes, strings.Join(strings.Fields(t), " "))
}
