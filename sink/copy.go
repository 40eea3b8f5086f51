package sink

import (
	"context"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/sluicecdc/sluice/schema"
)

var stageSeq atomic.Uint64

// copyUpsert is the PostgreSQL fast path for large groups: COPY the rows into
// a temporary table (dropped at commit) shaped like the target's columns,
// then one INSERT … SELECT … ON CONFLICT DO UPDATE. Keys are unique within a
// group (the reducer made them so), which ON CONFLICT requires.
func (s *Sink) copyUpsert(ctx context.Context, tx *txn, t target, g *rowGroup) error {
	d := s.d
	cols := columnList(d, g.cols)
	if s.tryDirectCopy(ctx, tx, t, g, cols) {
		return nil
	}
	stage := d.quote("sluice_stage_" + strconv.FormatUint(stageSeq.Add(1), 10))
	if _, err := tx.ExecContext(ctx, "CREATE TEMP TABLE "+stage+" ON COMMIT DROP AS SELECT "+cols+" FROM "+qualified(d, t)+" WITH NO DATA"); err != nil {
		return fmt.Errorf("sink: create staging table for %s: %w", t, wrapDB(err))
	}
	if err := s.copyInto(ctx, tx, stage, cols, t, g); err != nil {
		return err
	}
	q := upsertFromSelect(d, t, g.cols, g.keyCols, stage)
	if _, err := tx.ExecContext(ctx, q); err != nil {
		return s.rowsError(ctx, err, t, g, g.recs, true)
	}
	if _, err := tx.ExecContext(ctx, "DROP TABLE "+stage); err != nil {
		return fmt.Errorf("sink: drop staging table for %s: %w", t, wrapDB(err))
	}
	return nil
}

// copyInto COPYs the after images of g into the table named into. Rows are
// encoded here in COPY's text format and handed to lib/pq in chunks through
// the driver connection: going through database/sql a row at a time cost
// more client CPU than PostgreSQL spends storing the row.
func (s *Sink) copyInto(ctx context.Context, tx *txn, into, cols string, t target, g *rowGroup) error {
	err := tx.conn.Raw(func(dc any) error {
		pc, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return fatal(fmt.Errorf("sink: the PostgreSQL driver %T cannot prepare COPY with a context (sluice needs lib/pq)", dc))
		}
		st, err := pc.PrepareContext(ctx, "COPY "+into+" ("+cols+") FROM STDIN")
		if err != nil {
			return fmt.Errorf("sink: start COPY for %s: %w", t, wrapDB(err))
		}
		defer st.Close()
		w, ok := st.(copyDataWriter)
		if !ok {
			return fatal(fmt.Errorf("sink: the PostgreSQL driver's COPY statement %T takes no raw data (sluice needs the lib/pq version its go.mod names)", st))
		}
		buf := make([]byte, 0, copyChunk+4096)
		for _, r := range g.recs {
			for j, f := range r.ValueSchema.Fields {
				v, err := s.value(g.view, f, r.After[j])
				if err == nil {
					if j > 0 {
						buf = append(buf, '\t')
					}
					buf, err = appendCopyText(buf, v)
				}
				if err != nil {
					return newRowError(r, t, err, fmt.Sprintf("sink: table %s, key %s", t, recKey(r)))
				}
			}
			buf = append(buf, '\n')
			if len(buf) >= copyChunk {
				// CopyData adds the final newline itself.
				if _, err := w.CopyData(ctx, string(buf[:len(buf)-1])); err != nil {
					return fmt.Errorf("sink: COPY rows into %s (from key %s): %w", into, recKey(r), wrapDB(err))
				}
				buf = buf[:0]
			}
		}
		if len(buf) > 0 {
			if _, err := w.CopyData(ctx, string(buf[:len(buf)-1])); err != nil {
				return fmt.Errorf("sink: COPY rows into %s: %w", into, wrapDB(err))
			}
		}
		// An empty Exec ends the COPY and reports what the server refused.
		if _, err := st.Exec(nil); err != nil { //nolint:staticcheck // lib/pq's COPY ends only through Exec
			return errCopyEnd{err}
		}
		return nil
	})
	var end errCopyEnd
	if errors.As(err, &end) {
		return s.rowsError(ctx, end.err, t, g, g.recs, true)
	}
	return err
}

// copyChunk is how many bytes of rows go to the driver at once.
const copyChunk = 64 << 10

// copyDataWriter is lib/pq's COPY statement: CopyData queues raw lines of
// COPY text.
type copyDataWriter interface {
	CopyData(ctx context.Context, line string) (driver.Result, error)
}

// errCopyEnd carries the server's answer to the end of a COPY out of the
// driver callback, to be diagnosed row by row.
type errCopyEnd struct{ err error }

func (e errCopyEnd) Error() string { return e.err.Error() }
func (e errCopyEnd) Unwrap() error { return e.err }

// appendCopyText appends v, a value as the PostgreSQL dialect's convert
// returns it, in COPY's text format: NULL as \N; backslash, newline,
// carriage return and tab escaped; bytea in hex form.
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
	return buf, fmt.Errorf("%w: no COPY text form for Go type %T", ErrValue, v)
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

// tryDirectCopy is the fastest path, for groups of inserts only (a
// snapshot, a bulk load): COPY straight into the target under a savepoint.
// Any failure (typically a key that already exists, after a replay) rolls
// back to the savepoint and reports false, so the caller merges through a
// staging table instead; after a conflict the table is not tried again.
func (s *Sink) tryDirectCopy(ctx context.Context, tx *txn, t target, g *rowGroup, cols string) bool {
	for _, r := range g.recs {
		if r.Op != schema.OpCreate && r.Op != schema.OpRead {
			return false
		}
	}
	s.mu.Lock()
	skip := s.noDirectCopy[t]
	s.mu.Unlock()
	if skip {
		return false
	}
	if _, err := tx.ExecContext(ctx, "SAVEPOINT sluice_direct_copy"); err != nil {
		return false
	}
	if err := s.copyInto(ctx, tx, qualified(s.d, t), cols, t, g); err != nil {
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT sluice_direct_copy"); rerr != nil {
			return false // the caller's next statement reports the broken transaction
		}
		s.mu.Lock()
		if s.noDirectCopy == nil {
			s.noDirectCopy = map[target]bool{}
		}
		s.noDirectCopy[t] = true
		s.mu.Unlock()
		s.log.Debug("direct COPY refused; merging through a staging table from now on", "table", t.String(), "err", err)
		return false
	}
	_, _ = tx.ExecContext(ctx, "RELEASE SAVEPOINT sluice_direct_copy")
	return true
}

func upsertFromSelect(d dialect, t target, cols, keyCols []string, stage string) string {
	pg := postgres{}
	q := pg.upsert(t, cols, keyCols, 1)
	// Replace the VALUES list of a one-row upsert with the SELECT.
	head := "INSERT INTO " + qualified(d, t) + " (" + columnList(d, cols) + ") "
	tail := q[len(head)+len("VALUES ")+len(valuesList(d, 1, len(cols))):]
	return head + "SELECT " + columnList(d, cols) + " FROM " + stage + tail
}
