package postgres

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/lib/pq"

	"github.com/sluicecdc/sluice/sink/dialect"
)

// RowsetUpsert is Upsert with the rows of a JSON array of objects in $1
// instead of VALUES: json_populate_recordset types each value by the
// target's row type as the statement runs, feeding a JSON string's
// contents (and a number's or boolean's text) to the column type's input
// function with the column's modifier, as COPY does with its text. A
// staging table cost a CREATE and a DROP in the catalog per merge, more
// than the merge itself for a few hundred rows.
//
// Two kinds of column it treats otherwise. A json or jsonb column (or a
// domain over one) gets the JSON value itself, a string staying a string:
// the sink sends such groups through COPY (RowsetColumnOK). And every
// column the document lacks is run through its type's input as NULL, which
// a domain that refuses NULL refuses, where an INSERT would take the
// column's default. The sink's cached metadata cannot tell either for sure
// (a column may have changed behind it; a domain is known only by name),
// so the statement looks in the catalog first and fails as an undefined
// table named rowsetRefusal when one is there (RowsetRefused): the sink
// merges that table through COPY from then on. The INSERT holds its lock
// on t from parsing, so no ALTER can come between that look and the rows.
func (d Dialect) RowsetUpsert(t target, cols, keyCols []string) string {
	q := d.Upsert(t, cols, keyCols, 1)
	name := dialect.Qualified(d, t)
	head := "INSERT INTO " + name + " (" + dialect.ColumnList(d, cols) + ") "
	tail := q[len(head)+len("VALUES ")+len(dialect.ValuesList(d, 1, len(cols))):]
	var b strings.Builder
	b.WriteString(head + "SELECT ")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("r." + d.Quote(c))
	}
	b.WriteString(" FROM json_populate_recordset(NULL::" + name + ", $1) r WHERE CASE WHEN EXISTS (SELECT FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type ty ON ty.oid = a.atttypid" +
		" WHERE a.attrelid = " + d.StringLiteral(name) + "::regclass AND a.attnum > 0 AND NOT a.attisdropped AND CASE WHEN a.attname IN (")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.StringLiteral(c))
	}
	b.WriteString(") THEN ty.oid IN ('json'::regtype, 'jsonb'::regtype) OR ty.typbasetype IN ('json'::regtype, 'jsonb'::regtype) ELSE ty.typtype = 'd' END)" +
		" THEN " + d.StringLiteral(`pg_catalog."`+rowsetRefusal+`"`) + "::text::regclass IS NULL ELSE true END" + tail)
	return b.String()
}

// rowsetRefusal names the relation whose absence the rowset statement
// reports when the table has a column it cannot fill exactly.
const rowsetRefusal = "sluice: this table merges through COPY"

// RowsetRefused reports the rowset statement's refusal of the table.
func (Dialect) RowsetRefused(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "42P01" && strings.Contains(pe.Message, rowsetRefusal)
}

// RowsetColumnOK refuses JSON columns: json_populate_recordset copies a
// JSON value into a json or jsonb column as JSON (a string stays a JSON
// string) instead of parsing its text, so such groups go through COPY.
// Domains are known only by name: one whose name says json is refused too.
func (Dialect) RowsetColumnOK(typ string) bool {
	return typ != "" && !strings.Contains(strings.ToLower(typ), "json")
}

// AppendRowsetRow appends one JSON object: NULL as null, integers and
// booleans as JSON literals, everything else as a JSON string holding the
// text COPY would send (bytea in hex form). Invalid UTF-8 is written as
// it is, for the server to refuse as it refuses it in COPY.
func (Dialect) AppendRowsetRow(buf []byte, cols []string, row []any) ([]byte, error) {
	if len(buf) == 0 {
		buf = append(buf, '[')
	} else {
		buf = append(buf, ',')
	}
	buf = append(buf, '{')
	for j, v := range row {
		if j > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, cols[j])
		buf = append(buf, ':')
		switch x := v.(type) {
		case nil:
			buf = append(buf, "null"...)
		case string:
			buf = appendJSONString(buf, x)
		case int64:
			buf = strconv.AppendInt(buf, x, 10)
		case bool:
			buf = strconv.AppendBool(buf, x)
		case []byte:
			buf = append(buf, `"\\x`...)
			buf = hex.AppendEncode(buf, x)
			buf = append(buf, '"')
		case float64:
			// A string: NaN and the infinities are no JSON numbers.
			buf = append(buf, '"')
			buf = strconv.AppendFloat(buf, x, 'g', -1, 64)
			buf = append(buf, '"')
		default:
			return buf, fmt.Errorf("%w: no JSON form for Go type %T", dialect.ErrValue, v)
		}
	}
	return append(buf, '}'), nil
}

// EndRowset closes the JSON array.
func (Dialect) EndRowset(buf []byte) []byte { return append(buf, ']') }

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaping only the quote,
// the backslash and control characters; other bytes, valid UTF-8 or not,
// go as they are (encoding/json, and the converter's encoder, replace
// invalid bytes with U+FFFD: right for a message, silent damage here).
func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	last := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[last:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		}
		last = i + 1
	}
	buf = append(buf, s[last:]...)
	return append(buf, '"')
}
