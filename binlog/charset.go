package binlog

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/sluicecdc/sluice/binlog/charset"
	"github.com/sluicecdc/sluice/schema"
)

// Short names for the character sets the mapper and the DDL parser
// compare against; decoding lives in package charset.
const (
	csBinary  = charset.Binary
	csLatin1  = charset.Latin1
	csUTF8MB4 = charset.UTF8MB4
	csUTF8MB3 = charset.UTF8MB3
	csASCII   = charset.ASCII
	csUCS2    = charset.UCS2
	csUTF16   = charset.UTF16
	csUTF16LE = charset.UTF16LE
	csUTF32   = charset.UTF32
)

// normCollation names MySQL 5.7's and MariaDB's utf8_* collations as
// MySQL 8 and MariaDB 10.6+ do (utf8mb3_*).
func normCollation(coll string) string {
	coll = strings.ToLower(coll)
	if rest, ok := strings.CutPrefix(coll, "utf8_"); ok {
		return "utf8mb3_" + rest
	}
	return coll
}

// errCharset is the error for a column in a charset sluice cannot decode.
func errCharset(cs string) error {
	return fmt.Errorf("%w: character set %s cannot be decoded (supported: %s); convert the column (ALTER TABLE ... CONVERT TO CHARACTER SET utf8mb4) or leave it out with exclude_columns", ErrUnsupported, cs, charset.List())
}

// undecodableColumns lists the captured columns (included tables, columns
// not excluded) whose charset sluice cannot decode, as
// "db.table.column (charset)".
func undecodableColumns(conn *client.Conn, f filter, cr *columnRules) ([]string, error) {
	r, err := conn.Execute(`SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, CHARACTER_SET_NAME FROM information_schema.COLUMNS
  WHERE CHARACTER_SET_NAME IS NOT NULL AND CHARACTER_SET_NAME NOT IN ('utf8mb4', 'utf8mb3', 'utf8', 'latin1', 'ascii', 'binary')
  ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION`)
	if err != nil {
		return nil, fmt.Errorf("binlog: read the columns' character sets: %w", err)
	}
	var out []string
	for i := 0; i < r.RowNumber(); i++ {
		db, _ := r.GetString(i, 0)
		table, _ := r.GetString(i, 1)
		col, _ := r.GetString(i, 2)
		cs, _ := r.GetString(i, 3)
		if charset.Supported(cs) || !f.match(db, table) || (cr != nil && cr.excluded(schema.TableID{Database: db, Table: table}, col)) {
			continue
		}
		out = append(out, fmt.Sprintf("%s.%s.%s (%s)", db, table, col, cs))
	}
	return out, nil
}
