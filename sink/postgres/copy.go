package postgres

import (
	"context"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/lib/pq"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// StageTable is a temporary table shaped like t's cols, dropped at commit.
func (d Dialect) StageTable(stage string, t target, cols []string) string {
	return "CREATE TEMP TABLE " + stage + " ON COMMIT DROP AS SELECT " + dialect.ColumnList(d, cols) + " FROM " + dialect.Qualified(d, t) + " WITH NO DATA"
}

// UpsertFromSelect is Upsert with the rows of stage instead of VALUES.
func (d Dialect) UpsertFromSelect(t target, cols, keyCols []string, stage string) string {
	q := d.Upsert(t, cols, keyCols, 1)
	// Replace the VALUES list of a one-row upsert with the SELECT.
	head := "INSERT INTO " + dialect.Qualified(d, t) + " (" + dialect.ColumnList(d, cols) + ") "
	tail := q[len(head)+len("VALUES ")+len(dialect.ValuesList(d, 1, len(cols))):]
	return head + "SELECT " + dialect.ColumnList(d, cols) + " FROM " + stage + tail
}

// CopyIn COPYs n rows into the table into. Rows are encoded here in COPY's
// text format and handed to lib/pq in chunks through the driver connection:
// going through database/sql a row at a time cost more client CPU than
// PostgreSQL spends storing the row.
func (d Dialect) CopyIn(ctx context.Context, dc any, into string, cols []string, n int, row func(i int) ([]any, error)) error {
	pc, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return schema.Fatal(fmt.Errorf("sink: the PostgreSQL driver %T cannot prepare COPY with a context (sluice needs lib/pq)", dc))
	}
	st, err := pc.PrepareContext(ctx, "COPY "+into+" ("+dialect.ColumnList(d, cols)+") FROM STDIN")
	if err != nil {
		return fmt.Errorf("sink: start COPY into %s: %w", into, err)
	}
	defer st.Close()
	w, ok := st.(copyDataWriter)
	if !ok {
		return schema.Fatal(fmt.Errorf("sink: the PostgreSQL driver's COPY statement %T takes no raw data (sluice needs the lib/pq version its go.mod names)", st))
	}
	buf := make([]byte, 0, copyChunk+4096)
	for i := 0; i < n; i++ {
		vals, err := row(i)
		if err != nil {
			return err
		}
		for j, v := range vals {
			if j > 0 {
				buf = append(buf, '\t')
			}
			if buf, err = appendCopyText(buf, v); err != nil {
				return err
			}
		}
		buf = append(buf, '\n')
		if len(buf) >= copyChunk {
			// CopyData adds the final newline itself.
			if _, err := w.CopyData(ctx, string(buf[:len(buf)-1])); err != nil {
				return fmt.Errorf("sink: COPY rows into %s (up to row %d of %d): %w", into, i+1, n, err)
			}
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		if _, err := w.CopyData(ctx, string(buf[:len(buf)-1])); err != nil {
			return fmt.Errorf("sink: COPY rows into %s: %w", into, err)
		}
	}
	// An empty Exec ends the COPY and reports what the server refused.
	if _, err := st.Exec(nil); err != nil { //nolint:staticcheck // lib/pq's COPY ends only through Exec
		return dialect.CopyEndError{Err: err}
	}
	return nil
}

// copyChunk is how many bytes of rows go to the driver at once.
const copyChunk = 64 << 10

// copyDataWriter is lib/pq's COPY statement: CopyData queues raw lines of
// COPY text.
type copyDataWriter interface {
	CopyData(ctx context.Context, line string) (driver.Result, error)
}

// appendCopyText appends v, a value as Convert returns it, in COPY's text
// format: NULL as \N; backslash, newline, carriage return and tab escaped;
// bytea in hex form.
func appendCopyText(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, `\N`...), nil
	case string:
		return appendCopyEscaped(buf, x), nil
	case int64:
		return strconv.AppendInt(buf, x, 10), nil
	case bool:
		return strconv.AppendBool(buf, x), nil
	case []byte:
		// \x then hex digits; the backslash itself is escaped for COPY.
		buf = append(buf, `\\x`...)
		return hex.AppendEncode(buf, x), nil
	case float64:
		return strconv.AppendFloat(buf, x, 'g', -1, 64), nil
	}
	return buf, fmt.Errorf("%w: no COPY text form for Go type %T", dialect.ErrValue, v)
}

func appendCopyEscaped(buf []byte, s string) []byte {
	last := 0
	for i := 0; i < len(s); i++ {
		var esc byte
		switch s[i] {
		case '\\':
			esc = '\\'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		case '\t':
			esc = 't'
		default:
			continue
		}
		buf = append(buf, s[last:i]...)
		buf = append(buf, '\\', esc)
		last = i + 1
	}
	return append(buf, s[last:]...)
}

// DeleteAny deletes by a single-column key with one array parameter:
// DELETE … WHERE k = ANY($1). The array travels as text; PostgreSQL parses
// it as an array of the column's type.
func (d Dialect) DeleteAny(t target, col string, vals []any) (string, any, bool) {
	var arg any
	ints := make(pq.Int64Array, 0, len(vals))
	for _, v := range vals {
		x, ok := v.(int64)
		if !ok {
			ints = nil
			break
		}
		ints = append(ints, x)
	}
	if ints != nil {
		arg = ints
	} else if _, isBytes := vals[0].([]byte); isBytes {
		a := make(pq.ByteaArray, 0, len(vals))
		for _, v := range vals {
			b, _ := v.([]byte)
			a = append(a, b)
		}
		arg = a
	} else {
		a := make(pq.StringArray, 0, len(vals))
		for _, v := range vals {
			a = append(a, textOf(v))
		}
		arg = a
	}
	return "DELETE FROM " + dialect.Qualified(d, t) + " WHERE " + d.Quote(col) + " = ANY($1)", arg, true
}

func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}
