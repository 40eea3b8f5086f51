package sink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

var stageSeq atomic.Uint64

// copyUpsert is the bulk path for large groups of a dialect that has one
// (PostgreSQL's COPY): COPY the rows into a temporary table (dropped at
// commit) shaped like the target's columns, then one INSERT … SELECT … ON
// CONFLICT DO UPDATE. Keys are unique within a group (the reducer made
// them so), which ON CONFLICT requires.
func (ap *applier) copyUpsert(ctx context.Context, tx *txn, cp dialect.Copier, t target, g *rowGroup) error {
	if ap.tryDirectCopy(ctx, tx, cp, t, g) {
		return nil
	}
	if rm, ok := ap.d.(dialect.RowsetMerger); ok && !ap.stagingMerge && len(g.recs) <= rowsetMaxRows && ap.rowsetOK(rm, t, g) {
		return ap.rowsetUpsert(ctx, tx, rm, t, g)
	}
	stage := ap.d.Quote("sluice_stage_" + strconv.FormatUint(stageSeq.Add(1), 10))
	if _, err := tx.ExecContext(ctx, cp.StageTable(stage, t, g.cols)); err != nil {
		return fmt.Errorf("sink: create staging table for %s: %w", t, wrapDB(err))
	}
	if err := ap.copyInto(ctx, tx, cp, stage, t, g); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, cp.UpsertFromSelect(t, g.cols, g.keyCols, stage)); err != nil {
		return ap.rowsError(ctx, err, t, g, g.recs, true)
	}
	if _, err := tx.ExecContext(ctx, "DROP TABLE "+stage); err != nil {
		return fmt.Errorf("sink: drop staging table for %s: %w", t, wrapDB(err))
	}
	return nil
}

// copyInto COPYs the after images of g into the table named into, through
// the driver connection.
func (ap *applier) copyInto(ctx context.Context, tx *txn, cp dialect.Copier, into string, t target, g *rowGroup) error {
	var vals []any // one row's, reused: CopyIn is done with a row before asking for the next
	err := tx.conn.Raw(func(dc any) error {
		return cp.CopyIn(ctx, dc, into, g.cols, len(g.recs), func(i int) ([]any, error) {
			r := g.recs[i]
			vals = slices.Grow(vals[:0], len(r.ValueSchema.Fields))[:len(r.ValueSchema.Fields)]
			for j, f := range r.ValueSchema.Fields {
				v, err := ap.value(g.view, f, r.After[j])
				if err != nil {
					return nil, newRowError(r, t, err, fmt.Sprintf("sink: table %s, key %s", t, recKey(r)))
				}
				vals[j] = v
			}
			return vals, nil
		})
	})
	var end dialect.CopyEndError
	if errors.As(err, &end) {
		return ap.rowsError(ctx, end.Err, t, g, g.recs, true)
	}
	var re *rowError
	if err != nil && !errors.As(err, &re) {
		return fmt.Errorf("sink: COPY into %s: %w", t, wrapDB(err))
	}
	return err
}

// tryDirectCopy is the fastest path, for groups of inserts only (a
// snapshot, a bulk load): COPY straight into the target under a savepoint.
// Any failure (typically a key that already exists, after a replay) rolls
// back to the savepoint and reports false, so the caller merges through a
// staging table instead; after a conflict the table is not tried again.
func (ap *applier) tryDirectCopy(ctx context.Context, tx *txn, cp dialect.Copier, t target, g *rowGroup) bool {
	for _, r := range g.recs {
		if r.Op != schema.OpCreate && r.Op != schema.OpRead {
			return false
		}
	}
	ap.mu.Lock()
	skip := ap.noDirectCopy[t]
	ap.mu.Unlock()
	if skip {
		return false
	}
	if _, err := tx.ExecContext(ctx, "SAVEPOINT sluice_direct_copy"); err != nil {
		return false
	}
	if err := ap.copyInto(ctx, tx, cp, qualified(ap.d, t), t, g); err != nil {
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT sluice_direct_copy"); rerr != nil {
			return false // the caller's next statement reports the broken transaction
		}
		ap.mu.Lock()
		if ap.noDirectCopy == nil {
			ap.noDirectCopy = map[target]bool{}
		}
		ap.noDirectCopy[t] = true
		ap.mu.Unlock()
		ap.log.Debug("direct COPY refused; merging through a staging table from now on", "table", t.String(), "err", err)
		return false
	}
	_, _ = tx.ExecContext(ctx, "RELEASE SAVEPOINT sluice_direct_copy")
	return true
}

// rowsetOK reports whether every column of g takes its values from a
// rowset document exactly (RowsetMerger.RowsetColumnOK), and the table's
// rowset statement never refused it.
func (ap *applier) rowsetOK(rm dialect.RowsetMerger, t target, g *rowGroup) bool {
	ap.mu.Lock()
	refused := ap.noRowset[t]
	ap.mu.Unlock()
	if refused {
		return false
	}
	for _, c := range g.cols {
		if !rm.RowsetColumnOK(g.view.colType(ap.fold(c))) {
			return false
		}
	}
	return true
}

// rowsetMaxRows is the largest group merged through a rowset document:
// PostgreSQL parses a row of JSON at a higher cost than a row of COPY, and
// from about a thousand rows on the staging table's fixed cost is the
// smaller (BenchmarkMergePostgres, PostgreSQL backend CPU per row, staging
// over rowset: 1.49 at 100 rows, 1.28 at 300, 1.00 at 1,000, 0.80 at
// 3,000).
const rowsetMaxRows = 1000

// rowsetUpsert merges g with one statement per document of up to
// maxStatementBytes: the rows travel as one parameter, and the statement
// types them by the target's columns as it runs, so it keeps no state on
// the connection (a staging table or a prepared statement would have to be
// known per connection, and dropped when the table changes).
func (ap *applier) rowsetUpsert(ctx context.Context, tx *txn, rm dialect.RowsetMerger, t target, g *rowGroup) error {
	q := rm.RowsetUpsert(t, g.cols, g.keyCols)
	var buf []byte
	vals := make([]any, len(g.cols))
	first := 0
	flush := func(end int) error {
		if len(buf) == 0 {
			return nil
		}
		buf = rm.EndRowset(buf)
		if _, err := tx.ExecContext(ctx, q, string(buf)); err != nil {
			if rm.RowsetRefused(err) {
				ap.mu.Lock()
				if ap.noRowset == nil {
					ap.noRowset = map[target]bool{}
				}
				ap.noRowset[t] = true
				ap.mu.Unlock()
				ap.log.Info("table has a column a rowset merge cannot fill exactly; merging it through COPY", "table", t.String())
				return fmt.Errorf("sink: merge into %s: %w", t, wrapDB(err)) // an undefined table: retried
			}
			return ap.rowsError(ctx, err, t, g, g.recs[first:end], true)
		}
		ap.rowsetMerges.Add(1)
		buf, first = buf[:0], end
		return nil
	}
	for i, r := range g.recs {
		for j, f := range r.ValueSchema.Fields {
			v, err := ap.value(g.view, f, r.After[j])
			if err != nil {
				return newRowError(r, t, err, fmt.Sprintf("sink: table %s, key %s", t, recKey(r)))
			}
			vals[j] = v
		}
		var err error
		if buf, err = rm.AppendRowsetRow(buf, g.cols, vals); err != nil {
			return newRowError(r, t, err, fmt.Sprintf("sink: table %s, key %s", t, recKey(r)))
		}
		if len(buf) >= maxStatementBytes {
			if err := flush(i + 1); err != nil {
				return err
			}
		}
	}
	return flush(len(g.recs))
}
