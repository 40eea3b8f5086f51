package sink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The sink's table registry (a control table named after the progress
// table, <progress_table>_tables) lists, per pipeline, the target tables it
// has written or created and not dropped itself. A table listed there and
// missing from the target was dropped behind the sink's back: the rows it
// applied there are gone, and the source will not send them again, so
// creating the table afresh would leave it short of rows for good. The
// sink refuses to write on (a fatal error) instead. The list is kept in
// the target, so a restart knows it too.

func (s *Sink) registryTable() string { return s.cfg.ProgressTable + "_tables" }

// createRegistry makes the registry table (at New).
func (s *Sink) createRegistry(ctx context.Context) error {
	t := s.registryTable()
	if err := createTable(ctx, s.db.DB, s.d.TablesDDL(t), s.d.Quote(t)); err != nil {
		return fmt.Errorf("sink: create table registry %s: %w", t, wrapDB(err))
	}
	return nil
}

// registerTable lists t in the registry, once per Sink.
func (s *Sink) registerTable(ctx context.Context, t target) error {
	s.mu.Lock()
	done := s.registered[t]
	s.mu.Unlock()
	if done {
		return nil
	}
	q := s.d.InsertIgnore(s.registryTable(), []string{"pipeline", "tbl_schema", "tbl_name"})
	if _, err := s.db.ExecContext(ctx, q, s.cfg.Pipeline, t.Schema, t.Table); err != nil {
		return fmt.Errorf("sink: list %s in the table registry %s: %w", t, s.registryTable(), wrapDB(err))
	}
	s.mu.Lock()
	s.registered[t] = true
	s.mu.Unlock()
	return nil
}

// unregisterTables takes tables the sink itself is about to drop or rename
// off the registry. It runs before their DDL, on its own: should the DDL
// then fail, a table still there is listed again when next written.
func (s *Sink) unregisterTables(ctx context.Context, ts []target) error {
	q := "DELETE FROM " + s.d.Quote(s.registryTable()) + " WHERE pipeline = " + s.d.Placeholder(1) +
		" AND tbl_schema = " + s.d.Placeholder(2) + " AND tbl_name = " + s.d.Placeholder(3)
	for _, t := range ts {
		s.mu.Lock()
		delete(s.registered, t)
		s.mu.Unlock()
		if _, err := s.db.ExecContext(ctx, q, s.cfg.Pipeline, t.Schema, t.Table); err != nil {
			return fmt.Errorf("sink: take %s off the table registry %s: %w", t, s.registryTable(), wrapDB(err))
		}
	}
	return nil
}

// droppedBehind returns a fatal error when t, missing from the target, is
// listed in the registry: someone else dropped it.
func (s *Sink) droppedBehind(ctx context.Context, t target) error {
	q := "SELECT 1 FROM " + s.d.Quote(s.registryTable()) + " WHERE pipeline = " + s.d.Placeholder(1) +
		" AND tbl_schema = " + s.d.Placeholder(2) + " AND tbl_name = " + s.d.Placeholder(3)
	var one int
	err := s.db.QueryRowContext(ctx, q, s.cfg.Pipeline, t.Schema, t.Table).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("sink: read the table registry %s: %w", s.registryTable(), wrapDB(err))
	}
	return fatal(fmt.Errorf("%w: target table %s was dropped behind the sink (pipeline %q wrote rows into it and did not drop it): the rows applied there are lost, and creating it empty would leave it short of them for good. "+
		"Restore the table (with its rows) and restart the pipeline; or, to copy it afresh from the source, drop the pipeline's rows from %s (DELETE FROM %s WHERE pipeline = '%s') and take a new snapshot (sluice positions reset)",
		ErrTargetChanged, t, s.cfg.Pipeline, s.registryTable(), s.registryTable(), s.cfg.Pipeline))
}
