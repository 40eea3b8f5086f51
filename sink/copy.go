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
func (s *Sink) copyUpsert(ctx context.Context, tx *txn, cp dialect.Copier, t target, g *rowGroup) error {
	if s.tryDirectCopy(ctx, tx, cp, t, g) {
		return nil
	}
	if rm, ok := s.d.(dialect.RowsetMerger); ok && !s.stagingMerge && len(g.recs) <= rowsetMaxRows && s.rowsetOK(rm, t, g) {
		return s.rowsetUpsert(ctx, tx, rm, t, g)
	}
	stage := s.d.Quote("sluice_stage_" + strconv.FormatUint(stageSeq.Add(1), 10))
	if _, err := tx.ExecContext(ctx, cp.StageTable(stage, t, g.cols)); err != nil {
		return fmt.Errorf("sink: create staging table for %s: %w", t, wrapDB(err))
	}
	if err := s.copyInto(ctx, tx, cp, stage, t, g); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, cp.UpsertFromSelect(t, g.cols, g.keyCols, stage)); err != nil {
		return s.rowsError(ctx, err, t, g, g.recs, true)
	}
	if _, err := tx.ExecContext(ctx, "DROP TABLE "+stage); err != nil {
		return fmt.Errorf("sink: drop staging table for %s: %w", t, wrapDB(err))
	}
	return nil
}

// copyInto COPYs the after images of g into the table named into, through
// the driver connection.
func (s *Sink) copyInto(ctx context.Context, tx *txn, cp dialect.Copier, into string, t target, g *rowGroup) error {
	var vals []any // one row's, reused: CopyIn is done with a row before asking for the next
	err := tx.conn.Raw(func(dc any) error {
		return cp.CopyIn(ctx, dc, into, g.cols, len(g.recs), func(i int) ([]any, error) {
			r := g.recs[i]
			vals = slices.Grow(vals[:0], len(r.ValueSchema.Fields))[:len(r.ValueSchema.Fields)]
			for j, f := range r.ValueSchema.Fields {
				v, err := s.value(g.view, f, r.After[j])
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
		return s.rowsError(ctx, end.Err, t, g, g.recs, true)
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
func (s *Sink) tryDirectCopy(ctx context.Context, tx *txn, cp dialect.Copier, t target, g *rowGroup) bool {
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
	if err := s.copyInto(ctx, tx, cp, qualified(s.d, t), t, g); err != nil {
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

// rowsetOK reports whether every column of g takes its values from a
// rowset document exactly (RowsetMerger.RowsetColumnOK), and the table's
// rowset statement never refused it.
func (s *Sink) rowsetOK(rm dialect.RowsetMerger, t target, g *rowGroup) bool {
	s.mu.Lock()
	refused := s.noRowset[t]
	s.mu.Unlock()
	if refused {
		return false
	}
	for _, c := range g.cols {
		if !rm.RowsetColumnOK(g.view.colType(s.fold(c))) {
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
func (s *Sink) rowsetUpsert(ctx context.Context, tx *txn, rm dialect.RowsetMerger, t target, g *rowGroup) error {
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
				s.mu.Lock()
				if s.noRowset == nil {
					s.noRowset = map[target]bool{}
				}
				s.noRowset[t] = true
				s.mu.Unlock()
				s.log.Info("table has a column a rowset merge cannot fill exactly; merging it through COPY", "table", t.String())
				return fmt.Errorf("sink: merge into %s: %w", t, wrapDB(err)) // an undefined table: retried
			}
			return s.rowsError(ctx, err, t, g, g.recs[first:end], true)
		}
		s.rowsetMerges.Add(1)
		buf, first = buf[:0], end
		return nil
	}
	for i, r := range g.recs {
		for j, f := range r.ValueSchema.Fields {
			v, err := s.value(g.view, f, r.After[j])
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
