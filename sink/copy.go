package sink

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/jmoiron/sqlx"

	"github.com/sluicecdc/sluice/schema"
)

var stageSeq atomic.Uint64

// copyUpsert is the PostgreSQL fast path for large groups: COPY the rows into
// a temporary table (dropped at commit) shaped like the target's columns,
// then one INSERT … SELECT … ON CONFLICT DO UPDATE. Keys are unique within a
// group (the reducer made them so), which ON CONFLICT requires.
func (s *Sink) copyUpsert(ctx context.Context, tx *sqlx.Tx, t target, g *rowGroup) error {
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

// copyInto COPYs the after images of g into the table named into.
func (s *Sink) copyInto(ctx context.Context, tx *sqlx.Tx, into, cols string, t target, g *rowGroup) error {
	stmt, err := tx.PrepareContext(ctx, "COPY "+into+" ("+cols+") FROM STDIN")
	if err != nil {
		return fmt.Errorf("sink: start COPY for %s: %w", t, wrapDB(err))
	}
	defer stmt.Close()
	row := make([]any, len(g.cols))
	for _, r := range g.recs {
		for j, f := range r.ValueSchema.Fields {
			v, err := s.d.convert(f.Name, f.Schema, r.After[j])
			if err != nil {
				return newRowError(r, t, err, fmt.Sprintf("sink: table %s, key %s", t, recKey(r)))
			}
			row[j] = v
		}
		if _, err := stmt.ExecContext(ctx, row...); err != nil {
			return fmt.Errorf("sink: COPY row into %s (key %s): %w", into, recKey(r), wrapDB(err))
		}
	}
	if _, err := stmt.ExecContext(ctx); err != nil {
		return s.rowsError(ctx, err, t, g, g.recs, true)
	}
	return nil
}

// tryDirectCopy is the fastest path, for groups of inserts only (a
// snapshot, a bulk load): COPY straight into the target under a savepoint.
// Any failure (typically a key that already exists, after a replay) rolls
// back to the savepoint and reports false, so the caller merges through a
// staging table instead; after a conflict the table is not tried again.
func (s *Sink) tryDirectCopy(ctx context.Context, tx *sqlx.Tx, t target, g *rowGroup, cols string) bool {
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
