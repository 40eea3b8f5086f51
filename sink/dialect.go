package sink

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// dialect builds the SQL of one target kind. Every identifier goes through
// quote; every value travels as a bound parameter.
type dialect interface {
	quote(id string) string
	placeholder(n int) string // n is 1-based
	maxParams() int
	columnType(col string, s *schema.Schema, key bool) (string, error)
	convert(col string, s *schema.Schema, v any) (any, error)
	upsert(t target, cols, keyCols []string, rows int) string
	createSchema(name string) string
	createTable(t target, cols []colDef, keyCols []string) string
	addColumn(t target, c colDef) string
	truncate(t target) string
	progressDDL(table string) string
	progressMigrate(table string) string
	tableColumns() string // column names of a table of the default schema ($1)
	progressSelect(table string) string
	progressUpsert(table string) string
	// columnsQuery reads a table's columns. Args: schema ("" = default),
	// table. Rows: name, full type, not null, default, extra, character set,
	// collation, comment (the last five for MySQL's MODIFY COLUMN; NULL or
	// '' on PostgreSQL).
	columnsQuery() string
	foldCase() bool // column names compare case-insensitively
	// widen decides what changing a column of type cur into want means.
	widen(cur, want string) typeChange
	// alterType changes column col to type want, keeping what the column
	// has besides its type; why is set instead when that cannot be done
	// safely.
	alterType(t target, col, want string, c colInfo) (stmt, why string)
}

type colDef struct {
	Name    string
	Type    string
	NotNull bool
	Check   string // a column constraint, e.g. an ENUM's CHECK
}

// colInfo is a target column as the database describes it.
type colInfo struct {
	typ     string // full type: format_type on PostgreSQL, COLUMN_TYPE on MySQL
	notNull bool
	// MySQL only: what MODIFY COLUMN would have to repeat.
	hasDefault bool
	extra      string // EXTRA: auto_increment, on update …, generated …
	charset    string
	collation  string
	comment    bool
}

func qualified(d dialect, t target) string {
	if t.Schema == "" {
		return d.quote(t.Table)
	}
	return d.quote(t.Schema) + "." + d.quote(t.Table)
}

func columnList(d dialect, cols []string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d.quote(c))
	}
	return b.String()
}

// valuesList renders rows groups of n placeholders: (…),(…).
func valuesList(d dialect, rows, n int) string {
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
			b.WriteString(d.placeholder(p))
			p++
		}
		b.WriteByte(')')
	}
	return b.String()
}

func insertSQL(d dialect, t target, cols []string, rows int) string {
	return "INSERT INTO " + qualified(d, t) + " (" + columnList(d, cols) + ") VALUES " + valuesList(d, rows, len(cols))
}

// deleteSQL deletes rows by key with a row-value IN list (or a plain IN list
// for one key column): rows × len(keyCols) parameters.
func deleteSQL(d dialect, t target, keyCols []string, rows int) string {
	var b strings.Builder
	b.WriteString("DELETE FROM " + qualified(d, t) + " WHERE ")
	if len(keyCols) == 1 {
		b.WriteString(d.quote(keyCols[0]) + " IN (")
		for r := 0; r < rows; r++ {
			if r > 0 {
				b.WriteByte(',')
			}
			b.WriteString(d.placeholder(r + 1))
		}
		b.WriteByte(')')
		return b.String()
	}
	b.WriteString("(" + columnList(d, keyCols) + ") IN (" + valuesList(d, rows, len(keyCols)) + ")")
	return b.String()
}

func isKey(keyCols []string, c string) bool {
	for _, k := range keyCols {
		if k == c {
			return true
		}
	}
	return false
}

// ---- PostgreSQL ----

// postgres builds PostgreSQL SQL. interval maps schema.Time to INTERVAL
// (Config.TimeAsInterval) instead of TIME(6); checkEnums gives ENUM
// columns a CHECK constraint (Config.EnumCheck).
type postgres struct{ interval, checkEnums bool }

func (postgres) quote(id string) string   { return `"` + strings.ReplaceAll(id, `"`, `""`) + `"` }
func (postgres) placeholder(n int) string { return "$" + strconv.Itoa(n) }
func (postgres) maxParams() int           { return 65535 }
func (postgres) foldCase() bool           { return false }

func (d postgres) upsert(t target, cols, keyCols []string, rows int) string {
	var b strings.Builder
	b.WriteString(insertSQL(d, t, cols, rows))
	b.WriteString(" ON CONFLICT (" + columnList(d, keyCols) + ") DO ")
	n := 0
	for _, c := range cols {
		if isKey(keyCols, c) {
			continue
		}
		if n == 0 {
			b.WriteString("UPDATE SET ")
		} else {
			b.WriteByte(',')
		}
		q := d.quote(c)
		b.WriteString(q + "=EXCLUDED." + q)
		n++
	}
	if n == 0 {
		b.WriteString("NOTHING")
	}
	return b.String()
}

func (d postgres) createSchema(name string) string {
	return "CREATE SCHEMA IF NOT EXISTS " + d.quote(name)
}

func (d postgres) createTable(t target, cols []colDef, keyCols []string) string {
	return createTableSQL(d, t, cols, keyCols, "")
}

func (d postgres) addColumn(t target, c colDef) string {
	return "ALTER TABLE " + qualified(d, t) + " ADD COLUMN IF NOT EXISTS " + columnDef(d, c)
}

func (d postgres) truncate(t target) string { return "TRUNCATE TABLE " + qualified(d, t) }

// The progress table holds per queue the text form of the last applied
// record ID (schema.ID.String, which sorts like IDs under a binary
// collation); the empty string means nothing applied.
const pgLastID = `last_id TEXT COLLATE "C" NOT NULL DEFAULT ''`

func (d postgres) progressDDL(table string) string {
	return "CREATE TABLE IF NOT EXISTS " + d.quote(table) + ` (pipeline TEXT NOT NULL, topic TEXT NOT NULL, queue INTEGER NOT NULL, ` + pgLastID + `, updated_at TIMESTAMPTZ(6) NOT NULL DEFAULT now(), PRIMARY KEY (pipeline, topic, queue))`
}

// progressMigrate turns a progress table of the shape before record IDs
// (last_offset BIGINT) into the current one: its offsets are not IDs, so
// every queue starts with nothing applied.
func (d postgres) progressMigrate(table string) string {
	return "ALTER TABLE " + d.quote(table) + " ADD COLUMN IF NOT EXISTS " + pgLastID + ", ALTER COLUMN last_offset SET DEFAULT -1"
}

func (d postgres) progressSelect(table string) string {
	return "SELECT last_id FROM " + d.quote(table) + " WHERE pipeline = $1 AND topic = $2 AND queue = $3"
}

func (d postgres) progressUpsert(table string) string {
	q := d.quote(table)
	return "INSERT INTO " + q + " (pipeline, topic, queue, last_id, updated_at) VALUES ($1, $2, $3, $4, now()) ON CONFLICT (pipeline, topic, queue) DO UPDATE SET last_id = GREATEST(" + q + ".last_id, EXCLUDED.last_id), updated_at = now()"
}

func (postgres) tableColumns() string {
	return "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1"
}

func (postgres) columnsQuery() string {
	return `SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, NULL, '', NULL, NULL, ''
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = COALESCE(NULLIF($1, ''), current_schema()) AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'f', 'm')
AND a.attnum > 0 AND NOT a.attisdropped`
}

// checksQuery reads a table's one-column CHECK constraints. Args as
// columnsQuery; rows: constraint name, column name, definition,
// standard_conforming_strings.
func (postgres) checksQuery() string {
	return `SELECT con.conname, a.attname, pg_get_constraintdef(con.oid), current_setting('standard_conforming_strings') = 'on'
FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1]
WHERE n.nspname = COALESCE(NULLIF($1, ''), current_schema()) AND c.relname = $2 AND con.contype = 'c' AND cardinality(con.conkey) = 1`
}

func (postgres) widen(cur, want string) typeChange { return widenPG(cur, want) }

// alterType keeps defaults, NOT NULL and constraints: PostgreSQL changes
// only the type (rewriting the table when the storage changes).
func (d postgres) alterType(t target, col, want string, _ colInfo) (string, string) {
	return "ALTER TABLE " + qualified(d, t) + " ALTER COLUMN " + d.quote(col) + " TYPE " + want, ""
}

// alterEnumCheck replaces the CHECK constraint old of col by one for labels,
// in one statement.
func (d postgres) alterEnumCheck(t target, col, old string, labels []string) (string, error) {
	check, err := d.enumCheck(col, labels)
	if err != nil {
		return "", err
	}
	return "ALTER TABLE " + qualified(d, t) + " DROP CONSTRAINT " + d.quote(old) + ", ADD " + check, nil
}

// columnDef renders a column definition: name, type, NOT NULL, constraint.
func columnDef(d dialect, c colDef) string {
	s := d.quote(c.Name) + " " + c.Type
	if c.NotNull {
		s += " NOT NULL"
	}
	if c.Check != "" {
		s += " " + c.Check
	}
	return s
}

func createTableSQL(d dialect, t target, cols []colDef, keyCols []string, suffix string) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS " + qualified(d, t) + " (")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(columnDef(d, c))
	}
	if len(keyCols) > 0 {
		b.WriteString(", PRIMARY KEY (" + columnList(d, keyCols) + ")")
	}
	b.WriteString(")" + suffix)
	return b.String()
}

// columnType maps a schema to a PostgreSQL column type. Bits become
// BIT VARYING(n): the value is written as a bit string of exactly n digits,
// so it reads back with its width (BIGINT would lose it).
func (d postgres) columnType(col string, s *schema.Schema, key bool) (string, error) {
	if t, ok := extColumnType(true, s); ok {
		return t, nil
	}
	switch s.Logical {
	case schema.Decimal:
		p, sc, err := precisionScale(s)
		if err != nil {
			return "", fmt.Errorf("column %q: %w", col, err)
		}
		if p <= 0 {
			return "NUMERIC", nil
		}
		return fmt.Sprintf("NUMERIC(%d,%d)", p, sc), nil
	case schema.Date:
		return "DATE", nil
	case schema.Time:
		if d.interval {
			return "INTERVAL", nil
		}
		return fmt.Sprintf("TIME(%d)", fractionDigits(s)), nil
	case schema.Timestamp:
		return fmt.Sprintf("TIMESTAMP(%d)", fractionDigits(s)), nil
	case schema.ZonedTimestamp:
		return fmt.Sprintf("TIMESTAMPTZ(%d)", fractionDigits(s)), nil
	case schema.Json:
		return "JSONB", nil
	case schema.Enum:
		return "TEXT", nil
	case schema.Set:
		return "TEXT[]", nil
	case schema.Bits:
		return fmt.Sprintf("BIT VARYING(%d)", bitLength(s)), nil
	case schema.Year:
		return "SMALLINT", nil
	case schema.Geometry:
		return "BYTEA", nil
	}
	switch s.Type {
	case schema.Int8, schema.Int16:
		return "SMALLINT", nil
	case schema.Int32:
		return "INTEGER", nil
	case schema.Int64:
		return "BIGINT", nil
	case schema.Uint64:
		return "NUMERIC(20)", nil
	case schema.Float32:
		return "REAL", nil
	case schema.Float64:
		return "DOUBLE PRECISION", nil
	case schema.Bool:
		return "BOOLEAN", nil
	case schema.String:
		return "TEXT", nil
	case schema.Bytes:
		return "BYTEA", nil
	}
	return "", fmt.Errorf("%w: column %q: no PostgreSQL type for %s", ErrSchema, col, s)
}

// fractionDigits is the fractional-second precision of a TIME, DATETIME or
// TIMESTAMP column, read from its source type ("datetime(3)": 3; "datetime":
// 0, whole seconds); 6, every digit sluice keeps, when the record carries no
// source type (e.g. events of another producer).
func fractionDigits(s *schema.Schema) int {
	st := strings.ToLower(strings.TrimSpace(s.Param(schema.ParamSourceType)))
	if st == "" {
		return 6
	}
	word, rest, _ := strings.Cut(st, "(")
	switch strings.TrimSpace(word) {
	case "time", "datetime", "timestamp":
	default:
		return 6
	}
	if rest == "" {
		return 0
	}
	digits, _, ok := strings.Cut(rest, ")")
	n, err := strconv.Atoi(strings.TrimSpace(digits))
	if !ok || err != nil || n < 0 || n > 6 {
		return 6
	}
	return n
}

func precisionScale(s *schema.Schema) (int, int, error) {
	p, sc := 0, 0
	var err error
	if v := s.Param(schema.ParamPrecision); v != "" {
		if p, err = strconv.Atoi(v); err != nil || p < 0 || p > 1000 {
			return 0, 0, fmt.Errorf("%w: decimal precision %q", ErrSchema, v)
		}
	}
	if v := s.Param(schema.ParamScale); v != "" {
		if sc, err = strconv.Atoi(v); err != nil || sc < 0 || sc > 1000 || (p > 0 && sc > p) {
			return 0, 0, fmt.Errorf("%w: decimal scale %q", ErrSchema, v)
		}
	}
	return p, sc, nil
}

func bitLength(s *schema.Schema) int {
	n, err := strconv.Atoi(s.Param(schema.ParamLength))
	if err != nil || n <= 0 || n > 64 {
		return 64
	}
	return n
}

// ---- MySQL / MariaDB ----

type mysql struct{ mariadb bool }

func (mysql) quote(id string) string     { return "`" + strings.ReplaceAll(id, "`", "``") + "`" }
func (mysql) placeholder(int) string     { return "?" }
func (mysql) maxParams() int             { return 65535 }
func (mysql) foldCase() bool             { return true }
func (d mysql) truncate(t target) string { return "DELETE FROM " + qualified(d, t) } // TRUNCATE would commit the transaction

func (d mysql) upsert(t target, cols, keyCols []string, rows int) string {
	var b strings.Builder
	b.WriteString(insertSQL(d, t, cols, rows))
	b.WriteString(" ON DUPLICATE KEY UPDATE ")
	// The key columns first: a no-op when the duplicate is the key, while a
	// duplicate on another UNIQUE index would move that other row onto
	// this key, which fails (1062) when this key exists: the batch is then
	// applied in source order (unique.go) instead of silently updating the
	// wrong row.
	for i, c := range keyCols {
		if i > 0 {
			b.WriteByte(',')
		}
		q := d.quote(c)
		b.WriteString(q + "=VALUES(" + q + ")")
	}
	for _, c := range cols {
		if isKey(keyCols, c) {
			continue
		}
		q := d.quote(c)
		b.WriteString("," + q + "=VALUES(" + q + ")")
	}
	return b.String()
}

func (d mysql) createSchema(name string) string {
	return "CREATE DATABASE IF NOT EXISTS " + d.quote(name) + " DEFAULT CHARACTER SET utf8mb4"
}

func (d mysql) createTable(t target, cols []colDef, keyCols []string) string {
	return createTableSQL(d, t, cols, keyCols, " DEFAULT CHARSET=utf8mb4")
}

// addColumn has no IF NOT EXISTS (MySQL 8 lacks it): a duplicate column
// error (1060) is taken as success by the caller.
func (d mysql) addColumn(t target, c colDef) string {
	return "ALTER TABLE " + qualified(d, t) + " ADD COLUMN " + columnDef(d, c)
}

const myLastID = "last_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''"

func (d mysql) progressDDL(table string) string {
	return "CREATE TABLE IF NOT EXISTS " + d.quote(table) + " (pipeline VARCHAR(255) NOT NULL, topic VARCHAR(255) NOT NULL, queue INT NOT NULL, " + myLastID + ", updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (pipeline, topic, queue)) DEFAULT CHARSET=utf8mb4"
}

func (d mysql) progressMigrate(table string) string {
	return "ALTER TABLE " + d.quote(table) + " ADD COLUMN " + myLastID + ", ALTER COLUMN last_offset SET DEFAULT -1"
}

func (d mysql) progressSelect(table string) string {
	return "SELECT last_id FROM " + d.quote(table) + " WHERE pipeline = ? AND topic = ? AND queue = ?"
}

func (d mysql) progressUpsert(table string) string {
	return "INSERT INTO " + d.quote(table) + " (pipeline, topic, queue, last_id, updated_at) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE last_id = GREATEST(last_id, VALUES(last_id)), updated_at = CURRENT_TIMESTAMP(6)"
}

func (mysql) tableColumns() string {
	return "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?"
}

func (mysql) columnsQuery() string {
	return "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE = 'NO', COLUMN_DEFAULT, EXTRA, CHARACTER_SET_NAME, COLLATION_NAME, COLUMN_COMMENT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?"
}

func (mysql) widen(cur, want string) typeChange { return widenMySQL(cur, want) }

// alterType is MODIFY COLUMN, which restates the whole column: NULL or NOT
// NULL, character set and collation of text columns and AUTO_INCREMENT are
// repeated as they were. A default, a comment or another EXTRA (generated
// column, ON UPDATE) would have to be restated from the catalogue's text:
// such columns are left to the operator.
func (d mysql) alterType(t target, col, want string, c colInfo) (string, string) {
	switch {
	case c.hasDefault:
		return "", "the column has a default, which MODIFY COLUMN would have to restate"
	case c.comment:
		return "", "the column has a comment, which MODIFY COLUMN would have to restate"
	case c.extra != "" && !strings.EqualFold(c.extra, "auto_increment"):
		return "", "the column has " + c.extra + ", which MODIFY COLUMN would have to restate"
	}
	typ := strings.TrimSpace(want)
	if len(typ) > 5 && strings.EqualFold(typ[len(typ)-5:], " NULL") {
		typ = strings.TrimSpace(typ[:len(typ)-5])
	}
	q := "ALTER TABLE " + qualified(d, t) + " MODIFY COLUMN " + d.quote(col) + " " + typ
	if w, ok := parseMySQLType(typ); ok && isMySQLText(w.base) && c.charset != "" && c.collation != "" {
		if !plainName(c.charset) || !plainName(c.collation) {
			return "", "its character set or collation has an unexpected name"
		}
		q += " CHARACTER SET " + c.charset + " COLLATE " + c.collation
	}
	if c.notNull {
		q += " NOT NULL"
	} else {
		q += " NULL"
	}
	if c.extra != "" {
		q += " AUTO_INCREMENT"
	}
	return q, ""
}

func isMySQLText(base string) bool {
	switch base {
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set":
		return true
	}
	return false
}

// plainName reports a character set or collation name: letters, digits, _.
func plainName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return s != ""
}

// columnType keeps the source column type when the schema carries one that
// is safe to paste into DDL, else maps the schema. Key columns get bounded
// types (VARCHAR/VARBINARY) since MySQL cannot index TEXT/BLOB without a
// prefix length.
func (d mysql) columnType(col string, s *schema.Schema, key bool) (string, error) {
	if t, ok := extColumnType(false, s); ok {
		return t, nil
	}
	if st := s.Param(schema.ParamSourceType); st != "" && s.Logical != schema.Geometry && safeSourceType(st) && !(key && unindexable(st)) {
		return st, nil
	}
	switch s.Logical {
	case schema.Decimal:
		p, sc, err := precisionScale(s)
		if err != nil {
			return "", fmt.Errorf("column %q: %w", col, err)
		}
		if p <= 0 || p > 65 || sc > 30 {
			return "", fmt.Errorf("%w: column %q: DECIMAL(%d,%d) does not fit MySQL's DECIMAL(65,30)", ErrSchema, col, p, sc)
		}
		return fmt.Sprintf("DECIMAL(%d,%d)", p, sc), nil
	case schema.Date:
		return "DATE", nil
	case schema.Time:
		return "TIME(6)", nil
	case schema.Timestamp:
		return "DATETIME(6)", nil
	case schema.ZonedTimestamp:
		return "TIMESTAMP(6) NULL", nil
	case schema.Json:
		if key {
			return "VARCHAR(255)", nil
		}
		return "JSON", nil
	case schema.Enum, schema.Set:
		if key {
			return "VARCHAR(255)", nil
		}
		return "TEXT", nil
	case schema.Bits:
		return fmt.Sprintf("BIT(%d)", bitLength(s)), nil
	case schema.Year:
		return "SMALLINT", nil
	case schema.Geometry:
		if key {
			return "VARBINARY(255)", nil
		}
		return "LONGBLOB", nil
	}
	switch s.Type {
	case schema.Int8:
		return "TINYINT", nil
	case schema.Int16:
		return "SMALLINT", nil
	case schema.Int32:
		return "INT", nil
	case schema.Int64:
		return "BIGINT", nil
	case schema.Uint64:
		return "BIGINT UNSIGNED", nil
	case schema.Float32:
		return "FLOAT", nil
	case schema.Float64:
		return "DOUBLE", nil
	case schema.Bool:
		return "BOOLEAN", nil
	case schema.String:
		if key {
			return fmt.Sprintf("VARCHAR(%d)", keyLength(s)), nil
		}
		return "LONGTEXT", nil
	case schema.Bytes:
		if key {
			return fmt.Sprintf("VARBINARY(%d)", keyLength(s)), nil
		}
		return "LONGBLOB", nil
	}
	return "", fmt.Errorf("%w: column %q: no MySQL type for %s", ErrSchema, col, s)
}

// unindexable reports types MySQL cannot put in a primary key without a
// prefix length (TEXT, BLOB, JSON and their size variants).
func unindexable(sourceType string) bool {
	t := strings.ToLower(sourceType)
	return strings.Contains(t, "text") || strings.Contains(t, "blob") || strings.HasPrefix(t, "json")
}

func keyLength(s *schema.Schema) int {
	n, err := strconv.Atoi(s.Param(schema.ParamLength))
	if err != nil || n <= 0 || n > 768 {
		return 255
	}
	return n
}

// safeSourceType reports whether a source column type can be pasted into
// DDL: a word sequence with an optional parenthesised list of numbers or
// single-quoted strings (quotes doubled, no backslashes), then only words.
// Anything else (a semicolon, a comment, an unbalanced quote) is refused and
// the type is mapped from the schema instead.
func safeSourceType(t string) bool {
	if len(t) == 0 || len(t) > 4096 {
		return false
	}
	i, parens := 0, 0
	for i < len(t) {
		c := t[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == ' ', c == '_':
			i++
		case c == '(':
			if parens > 0 {
				return false
			}
			parens++
			i++
			// inside: numbers, commas, spaces, quoted strings
			for {
				if i >= len(t) {
					return false
				}
				c = t[i]
				if c == ')' {
					parens = 0
					i++
					break
				}
				switch {
				case c >= '0' && c <= '9', c == ',', c == ' ':
					i++
				case c == '\'':
					i++
					for {
						if i >= len(t) {
							return false
						}
						if t[i] == '\\' || t[i] == 0 {
							return false
						}
						if t[i] == '\'' {
							if i+1 < len(t) && t[i+1] == '\'' {
								i += 2
								continue
							}
							i++
							break
						}
						i++
					}
				default:
					return false
				}
			}
		default:
			return false
		}
	}
	return parens == 0
}
