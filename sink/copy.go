package sink

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

var stageSeq atomic.Uint64

// copyUpsert is the PostgreSQL fast path for large groups: COPY the rows into
// a temporary table (dropped at commit) shaped like the target's columns,
// then one INSERT … SELECT … ON CONFLICT DO UPDATE. Keys are unique within a
// group (the reducer made them so), which ON CONFLICT requires.
func (s *Sink) copyUpsert(ctx context.Context, tx *sqlx.Tx, t target, g *rowGroup) error {
	d := s.d
	stage := d.quote("sluice_stage_" + strconv.FormatUint(stageSeq.Add(1), 10))
	cols := columnList(d, g.cols)
	if _, err := tx.ExecContext(ctx, "CREATE TEMP TABLE "+stage+" ON COMMIT DROP AS SELECT "+cols+" FROM "+qualified(d, t)+" WITH NO DATA"); err != nil {
		return fmt.Errorf("sink: create staging table for %s: %w", t, wrapDB(err))
	}
	stmt, err := tx.PrepareContext(ctx, "COPY "+stage+" ("+cols+") FROM STDIN")
	if err != nil {
		return fmt.Errorf("sink: start COPY for %s: %w", t, wrapDB(err))
	}
	defer stmt.Close()
	row := make([]any, len(g.cols))
	for _, r := range g.recs {
		for j, f := range r.ValueSchema.Fields {
			v, err := d.convert(f.Name, f.Schema, r.After[j])
			if err != nil {
				return newRowError(r, t, err, fmt.Sprintf("sink: table %s, key %s", t, recKey(r)))
			}
			row[j] = v
		}
		if _, err := stmt.ExecContext(ctx, row...); err != nil {
			return fmt.Errorf("sink: COPY row into staging for %s (key %s): %w", t, recKey(r), wrapDB(err))
		}
	}
	if _, err := stmt.ExecContext(ctx); err != nil {
		return s.rowsError(ctx, err, t, g, g.recs, true)
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

func upsertFromSelect(d dialect, t target, cols, keyCols []string, stage string) string {
	pg := postgres{}
	q := pg.upsert(t, cols, keyCols, 1)
	// Replace the VALUES list of a one-row upsert with the SELECT.
	head := "INSERT INTO " + qualified(d, t) + " (" + columnList(d, cols) + ") "
	tail := q[len(head)+len("VALUES ")+len(valuesList(d, 1, len(cols))):]
	return head + "SELECT " + columnList(d, cols) + " FROM " + stage + tail
}
