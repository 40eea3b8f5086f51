// Package mysql is the sink's MySQL and MariaDB dialect: its SQL, its type
// registry, value conversion and the meaning of go-sql-driver/mysql's
// errors.
package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// Dialect builds MySQL and MariaDB SQL.
type Dialect struct {
	// coll is the target's collations, read by Verify; nil in a
	// Dialect{} literal (collation.go).
	coll *collations
	// ids is where InnoDB's table ids are read, found by Verify; nil in
	// a Dialect{} literal (no identities then).
	ids *innodbIDs
}

// New returns the MySQL dialect; it has no options.
func New(dialect.Options) Dialect { return Dialect{coll: &collations{}, ids: &innodbIDs{}} }

var (
	_ dialect.Dialect  = Dialect{}
	_ dialect.Collator = Dialect{}
)

type target = dialect.Target

func (Dialect) Name() string           { return "mysql" }
func (Dialect) TransactionalDDL() bool { return false }

// CurrentTimestamp has the fractional precision of the column: MySQL
// refuses another one (1067 Invalid default value; MariaDB takes it).
func (Dialect) CurrentTimestamp(colType string) string {
	if t, ok := dialect.ParseMySQLType(colType); ok && len(t.Args) == 1 && t.Args[0] > 0 && t.Args[0] <= 6 {
		return "CURRENT_TIMESTAMP(" + strconv.Itoa(t.Args[0]) + ")"
	}
	return "CURRENT_TIMESTAMP"
}

// IdentTooLong: MySQL counts characters.
func (Dialect) IdentTooLong(name string) (int, bool) { return 64, len([]rune(name)) > 64 }

// StringLiteral doubles quotes and backslashes (the default sql_mode reads
// backslash escapes).
func (Dialect) StringLiteral(v string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(v, "'", "''"), `\`, `\\`) + "'"
}

// DropColumn has no IF EXISTS: a missing column (1091) is taken as done.
func (d Dialect) DropColumn(t target, col string) string {
	return "ALTER TABLE " + dialect.Qualified(d, t) + " DROP COLUMN " + d.Quote(col)
}

// DropNotNull would need MODIFY COLUMN, which restates the whole column.
func (Dialect) DropNotNull(target, string) (string, bool) { return "", false }

// RenameTable may fail with 1146 (gone) or 1050 (there): done before.
func (d Dialect) RenameTable(from, to target) []string {
	return []string{"RENAME TABLE " + dialect.Qualified(d, from) + " TO " + dialect.Qualified(d, to)}
}

// DeleteAny: MySQL has no array parameter.
func (Dialect) DeleteAny(target, string, []any) (string, any, bool) { return "", nil, false }

func (d Dialect) PendingDDL(table string) string {
	return "CREATE TABLE IF NOT EXISTS " + d.Quote(table) + " (pipeline VARCHAR(255) NOT NULL, topic VARCHAR(255) NOT NULL, queue INT NOT NULL, tx_id VARCHAR(255) NOT NULL, records INT NOT NULL, data LONGBLOB NOT NULL, updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (pipeline, topic, queue)) DEFAULT CHARSET=utf8mb4"
}

func (d Dialect) PendingUpsert(table string) string {
	return "INSERT INTO " + d.Quote(table) + " (pipeline, topic, queue, tx_id, records, data, updated_at) VALUES (?, ?, ?, ?, ?, ?, CURRENT_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE tx_id = VALUES(tx_id), records = VALUES(records), data = VALUES(data), updated_at = CURRENT_TIMESTAMP(6)"
}

func (d Dialect) BarrierDDL(b, a string) []string {
	return []string{
		"CREATE TABLE IF NOT EXISTS " + d.Quote(b) + " (pipeline VARCHAR(191) NOT NULL, barrier CHAR(64) NOT NULL, description TEXT NOT NULL, copies INT NOT NULL, applied BOOLEAN NOT NULL DEFAULT false, created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), applied_at TIMESTAMP(6) NULL, PRIMARY KEY (pipeline, barrier)) DEFAULT CHARSET=utf8mb4",
		"CREATE TABLE IF NOT EXISTS " + d.Quote(a) + " (pipeline VARCHAR(191) NOT NULL, barrier CHAR(64) NOT NULL, topic VARCHAR(255) NOT NULL, broker VARCHAR(128) NOT NULL, queue INT NOT NULL, arrived_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (pipeline, barrier, topic, broker, queue)) DEFAULT CHARSET=utf8mb4",
	}
}

func (d Dialect) TablesDDL(table string) string {
	return "CREATE TABLE IF NOT EXISTS " + d.Quote(table) + " (pipeline VARCHAR(191) NOT NULL, tbl_schema VARCHAR(64) NOT NULL, tbl_name VARCHAR(64) NOT NULL, ident VARCHAR(64) NULL, created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (pipeline, tbl_schema, tbl_name)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
}

func (d Dialect) InsertIgnore(table string, cols []string) string {
	return "INSERT IGNORE INTO " + d.Quote(table) + " (" + strings.Join(cols, ", ") + ") VALUES (" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
}

// UniqueKeysQuery reads the unique indexes on whole columns (a prefix or
// functional key part leaves its index out).
func (Dialect) UniqueKeysQuery() string {
	return "SELECT INDEX_NAME, COALESCE(COLUMN_NAME, ''), SUB_PART IS NULL AND COLUMN_NAME IS NOT NULL FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND NON_UNIQUE = 0"
}

// MySQL writes no CHECK constraints of its own.
func (Dialect) ChecksQuery() string                                        { return "" }
func (Dialect) ParseEnumCheck(string, string, bool) ([]string, bool, bool) { return nil, false, false }
func (Dialect) EnumCheckLabels(*schema.Schema) []string                    { return nil }
func (Dialect) EnumCheck(schema.Field) (string, error)                     { return "", nil }
func (Dialect) AlterEnumCheck(target, string, string, []string) (string, error) {
	return "", fmt.Errorf("sink: MySQL has no ENUM CHECK of sluice's")
}

// MySQL has no array columns; SET values are text.
func (Dialect) IsArray(string) bool       { return false }
func (Dialect) ArrayValue(set string) any { return set }

// ColumnFits: a MySQL column takes what MySQL's source held.
func (Dialect) ColumnFits(target, schema.Field, string) error { return nil }

// Verify refuses a DSN without a default database (it holds the progress
// table), reads the target's collations and returns that database.
func (d Dialect) Verify(ctx context.Context, db *sql.DB, progressTable string) (string, error) {
	var name sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&name); err != nil {
		return "", fmt.Errorf("sink: query default database: %w", err)
	}
	if !name.Valid || name.String == "" {
		return "", schema.Fatal(fmt.Errorf("%w: the MySQL DSN must name a database (it holds the progress table %s)", dialect.ErrConfig, progressTable))
	}
	if err := d.loadCollations(ctx, db); err != nil {
		return "", err
	}
	d.findInnoDBIDs(ctx, db, name.String)
	return name.String, nil
}

// DurableTx: MySQL has no per-transaction durability setting.
func (Dialect) DurableTx() string { return "" }

// Durability reports a server that acknowledges commits before they are on
// disk: innodb_flush_log_at_trx_commit other than 1 (the redo log is
// flushed once a second), or, with the binary log on, sync_binlog other
// than 1 (a crash can drop transactions from the binary log, and InnoDB's
// recovery then rolls them back). A crash of such a server loses
// transactions the sink has committed and acknowledged.
func (Dialect) Durability(ctx context.Context, db *sql.DB) (string, error) {
	var flush, logBin, syncBinlog sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT @@innodb_flush_log_at_trx_commit, @@log_bin, @@sync_binlog").Scan(&flush, &logBin, &syncBinlog); err != nil {
		return "", fmt.Errorf("sink: read the target's durability settings: %w", err)
	}
	var bad []string
	if flush.String != "1" {
		bad = append(bad, "innodb_flush_log_at_trx_commit="+flush.String)
	}
	if (logBin.String == "1" || strings.EqualFold(logBin.String, "ON")) && syncBinlog.String != "1" {
		bad = append(bad, "sync_binlog="+syncBinlog.String+" with the binary log on")
	}
	if len(bad) == 0 {
		return "", nil
	}
	return strings.Join(bad, " and ") + ": a crash of the target server can lose transactions the sink committed and acknowledged (they are not applied again); set innodb_flush_log_at_trx_commit=1 and sync_binlog=1", nil
}

func (Dialect) Quote(id string) string     { return "`" + strings.ReplaceAll(id, "`", "``") + "`" }
func (Dialect) Placeholder(int) string     { return "?" }
func (Dialect) MaxParams() int             { return 65535 }
func (Dialect) FoldCase() bool             { return true }
func (d Dialect) Truncate(t target) string { return "DELETE FROM " + dialect.Qualified(d, t) } // TRUNCATE would commit the transaction

func (d Dialect) Upsert(t target, cols, keyCols []string, rows int) string {
	var b strings.Builder
	b.WriteString(dialect.InsertSQL(d, t, cols, rows))
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
		q := d.Quote(c)
		b.WriteString(q + "=VALUES(" + q + ")")
	}
	for _, c := range cols {
		if dialect.IsKey(keyCols, c) {
			continue
		}
		q := d.Quote(c)
		b.WriteString("," + q + "=VALUES(" + q + ")")
	}
	return b.String()
}

func (d Dialect) CreateSchema(name string) string {
	return "CREATE DATABASE IF NOT EXISTS " + d.Quote(name) + " DEFAULT CHARACTER SET utf8mb4"
}

func (d Dialect) CreateTable(t target, cols []dialect.ColDef, keyCols []string) string {
	cols = slices.Clone(cols)
	for i := range cols {
		cols[i] = exprDefault(cols[i])
	}
	return dialect.CreateTableSQL(d, t, cols, keyCols, " DEFAULT CHARSET=utf8mb4")
}

// addColumn has no IF NOT EXISTS (MySQL 8 lacks it): a duplicate column
// error (1060) is taken as success by the caller.
func (d Dialect) AddColumn(t target, c dialect.ColDef) string {
	return "ALTER TABLE " + dialect.Qualified(d, t) + " ADD COLUMN " + dialect.ColumnDef(d, exprDefault(c))
}

// exprDefault writes the default of a TEXT, BLOB or JSON column as an
// expression, DEFAULT ('x'): MySQL takes no literal default there (1101;
// MariaDB takes both forms).
func exprDefault(c dialect.ColDef) dialect.ColDef {
	if c.Default == "" || strings.HasPrefix(c.Default, "(") {
		return c
	}
	base, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(c.Type)), " ")
	base, _, _ = strings.Cut(base, "(")
	switch base {
	case "tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob", "json":
		c.Default = "(" + c.Default + ")"
	}
	return c
}

const myLastID = "last_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''"

func (d Dialect) ProgressDDL(table string) string {
	return "CREATE TABLE IF NOT EXISTS " + d.Quote(table) + " (pipeline VARCHAR(255) NOT NULL, topic VARCHAR(255) NOT NULL, queue INT NOT NULL, " + myLastID + ", updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (pipeline, topic, queue)) DEFAULT CHARSET=utf8mb4"
}

func (d Dialect) ProgressMigrate(table string) string {
	return "ALTER TABLE " + d.Quote(table) + " ADD COLUMN " + myLastID + ", ALTER COLUMN last_offset SET DEFAULT -1"
}

func (d Dialect) ProgressSelect(table string) string {
	return "SELECT last_id FROM " + d.Quote(table) + " WHERE pipeline = ? AND topic = ? AND queue = ?"
}

func (d Dialect) ProgressUpsert(table string) string {
	return "INSERT INTO " + d.Quote(table) + " (pipeline, topic, queue, last_id, updated_at) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE last_id = GREATEST(last_id, VALUES(last_id)), updated_at = CURRENT_TIMESTAMP(6)"
}

func (Dialect) TableColumns() string {
	return "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?"
}

func (Dialect) ColumnsQuery() string {
	return "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE = 'NO', COLUMN_DEFAULT, EXTRA, CHARACTER_SET_NAME, COLLATION_NAME, COLUMN_COMMENT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?"
}

func (Dialect) Widen(cur, want string) dialect.TypeChange { return widenMySQL(cur, want) }

// alterType is MODIFY COLUMN, which restates the whole column: NULL or NOT
// NULL, character set and collation of text columns, AUTO_INCREMENT and a
// default that is a plain number (the catalogue's text of it, as both
// servers show a numeric default: digits, no quotes) are repeated as they
// were. Another default, a comment or another EXTRA (generated column, ON
// UPDATE) would have to be restated from the catalogue's text: such
// columns are left to the operator.
func (d Dialect) AlterType(t target, col, want string, c dialect.ColInfo) (string, string) {
	def := ""
	if c.HasDefault {
		def = strings.Trim(c.Default, "'") // MariaDB quotes literals
		if !plainNumber.MatchString(def) {
			def = ""
		}
	}
	switch {
	case c.HasDefault && def == "":
		return "", "the column has a default, which MODIFY COLUMN would have to restate"
	case c.Comment:
		return "", "the column has a comment, which MODIFY COLUMN would have to restate"
	case c.Extra != "" && !strings.EqualFold(c.Extra, "auto_increment"):
		return "", "the column has " + c.Extra + ", which MODIFY COLUMN would have to restate"
	}
	typ := strings.TrimSpace(want)
	if len(typ) > 5 && strings.EqualFold(typ[len(typ)-5:], " NULL") {
		typ = strings.TrimSpace(typ[:len(typ)-5])
	}
	q := "ALTER TABLE " + dialect.Qualified(d, t) + " MODIFY COLUMN " + d.Quote(col) + " " + typ
	if w, ok := dialect.ParseMySQLType(typ); ok && isMySQLText(w.Base) && c.Charset != "" && c.Collation != "" {
		if !plainName(c.Charset) || !plainName(c.Collation) {
			return "", "its character set or collation has an unexpected name"
		}
		q += " CHARACTER SET " + c.Charset + " COLLATE " + c.Collation
	}
	if c.NotNull {
		q += " NOT NULL"
	} else {
		q += " NULL"
	}
	if def != "" {
		q += " DEFAULT " + def
	}
	if c.Extra != "" {
		q += " AUTO_INCREMENT"
	}
	return q, ""
}

// plainNumber is a numeric default as the catalogue shows it.
var plainNumber = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

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
func (d Dialect) ColumnType(col string, s *schema.Schema, key bool) (string, error) {
	if t, ok := extColumnType(s); ok {
		return t, nil
	}
	if st := s.Param(schema.ParamSourceType); st != "" && s.Logical != schema.Geometry && safeSourceType(st) && !(key && unindexable(st)) {
		return withErrorLabel(st), nil
	}
	switch s.Logical {
	case schema.Decimal:
		p, sc, err := dialect.PrecisionScale(s)
		if err != nil {
			return "", fmt.Errorf("column %q: %w", col, err)
		}
		if p <= 0 || p > 65 || sc > 30 {
			return "", fmt.Errorf("%w: column %q: DECIMAL(%d,%d) does not fit MySQL's DECIMAL(65,30)", dialect.ErrSchema, col, p, sc)
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
		return fmt.Sprintf("BIT(%d)", dialect.BitLength(s)), nil
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
	return "", fmt.Errorf("%w: column %q: no MySQL type for %s", dialect.ErrSchema, col, s)
}

// withErrorLabel gives an ENUM type the label ” first, unless it has it.
// A source in a non-strict sql_mode stores an invalid ENUM value as the
// error value: index 0, read as ”. The source's type has no such label,
// so a strict target refuses the row (1265 Data truncated); an
// enum(”, …) column takes it, and ” sorts before every label as index 0
// does on the source (the target's number for each label is one more).
// Labels added at the end later keep widening the column.
func withErrorLabel(st string) string {
	t, ok := dialect.ParseMySQLType(st)
	if !ok || t.Base != "enum" || slices.Contains(t.Labels, "") {
		return st
	}
	i := strings.IndexByte(st, '(')
	return st[:i+1] + "''," + st[i+1:]
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

// extColumnType is the target type of a string column that holds a
// MariaDB UUID, INET6 or INET4 value as text (source.type uuid, inet6,
// inet4): a string just long enough (a MariaDB target would take UUID
// itself, but MySQL has no such type).
func extColumnType(s *schema.Schema) (string, bool) {
	if s.Type != schema.String {
		return "", false
	}
	switch strings.ToLower(strings.TrimSpace(s.Param(schema.ParamSourceType))) {
	case "uuid":
		return "CHAR(36)", true
	case "inet6":
		return "VARCHAR(45)", true // ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255 is 45
	case "inet4":
		return "VARCHAR(15)", true
	}
	return "", false
}

// UpdateOne and DeleteOne match one row of a table without key by its
// before image, NULL-safe (<=>), and touch one row (LIMIT 1): of rows
// equal in every column any one is the same as another. Text columns are
// compared by their bytes, both sides in utf8mb4 (whatever the column's and
// the connection's character sets), rather than by their collation, which would take 'a' for 'A' and
// 'a ' for 'a' (PAD SPACE) and change the wrong row.
func (d Dialect) UpdateOne(t target, set []string, match []dialect.Match) string {
	return "UPDATE " + dialect.Qualified(d, t) + " SET " + dialect.SetList(d, set) + d.matchOne(match)
}

func (d Dialect) DeleteOne(t target, match []dialect.Match) string {
	return "DELETE FROM " + dialect.Qualified(d, t) + d.matchOne(match)
}

func (d Dialect) matchOne(match []dialect.Match) string {
	var b strings.Builder
	b.WriteString(" WHERE ")
	for i, m := range match {
		if i > 0 {
			b.WriteString(" AND ")
		}
		q := d.Quote(m.Col)
		if ct, ok := dialect.ParseMySQLType(m.Type); ok && isMySQLText(ct.Base) {
			b.WriteString("CAST(CONVERT(" + q + " USING utf8mb4) AS BINARY) <=> CAST(CONVERT(? USING utf8mb4) AS BINARY)")
		} else {
			b.WriteString(q + " <=> ?")
		}
	}
	b.WriteString(" LIMIT 1")
	return b.String()
}

// ExactMatch: every type of MySQL's own compares exactly with <=> against
// the value the sink writes (integers, DECIMAL, BIT, the date and time
// types at their stored precision; FLOAT and DOUBLE too, since the value
// is the column's own float sent as a double and MySQL widens the stored
// float exactly; text by its bytes, see UpdateOne; ENUM and SET by label).
// Not JSON, a MySQL server's binary JSON, whose comparison is by JSON
// value (1 = 1.0, keys in any order) against text the sink did not
// normalise (MariaDB's JSON is LONGTEXT and passes), nor the spatial and
// other types this dialect does not know.
func (Dialect) ExactMatch(typ string) bool {
	ct, ok := dialect.ParseMySQLType(typ)
	if !ok || ct.Base == "json" {
		return false
	}
	return dialect.KnownMySQLBase(ct.Base)
}
