package sink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The sink's table registry (a control table named after the progress
// table, <progress_table>_tables) lists, per pipeline, the target tables it
// has written or created and not dropped itself. A table listed there and
// missing from the target was dropped behind the sink's back: the rows it
// applied there are gone, and the source will not send them again, so
// creating the table afresh would leave it short of rows for good. The
// sink refuses to write on (a fatal error) instead. The list is kept in
// the target, so a restart knows it too.
//
// Each listed table also has its identity there (ident, the dialect's
// TableIdentity: PostgreSQL's relfilenode, InnoDB's table id): what it is
// when the sink lists the table, and again after each change the sink
// makes itself that can move it (its TRUNCATE, its DDL). A table whose
// identity differs when the sink writes it was truncated, or dropped and
// created again, behind the sink: the rows applied there are gone, and
// upserting on would leave it short of them for good, so the sink refuses
// (fatal) instead. A rewrite that keeps the rows (VACUUM FULL, CLUSTER,
// OPTIMIZE TABLE, an ALTER TABLE that copies the table, run by hand) moves
// the identity too and is refused the same way: the message says how to
// accept the table as it is (ident set to NULL: the next write records
// the current one).

func (b *backend) registryTable() string { return b.cfg.ProgressTable + "_tables" }

// createRegistry makes the registry table (at New).
func (cat *catalog) createRegistry(ctx context.Context) error {
	t := cat.registryTable()
	if err := createTable(ctx, cat.db.DB, cat.d.TablesDDL(t), cat.d.Quote(t)); err != nil {
		return fmt.Errorf("sink: create table registry %s: %w", t, wrapDB(err))
	}
	cols, err := cat.controlColumns(ctx, t)
	if err != nil {
		return fmt.Errorf("sink: read the columns of table registry %s: %w", t, err)
	}
	if !cols["ident"] {
		if _, err := cat.db.ExecContext(ctx, cat.d.TablesMigrate(t)); err != nil {
			return fmt.Errorf("sink: add the ident column to table registry %s: %w", t, wrapDB(err))
		}
	}
	return nil
}

// registryWhere is the registry's condition on one table of the pipeline,
// its placeholders numbered from n.
func (cat *catalog) registryWhere(n int) string {
	return " WHERE pipeline = " + cat.d.Placeholder(n) + " AND tbl_schema = " + cat.d.Placeholder(n+1) + " AND tbl_name = " + cat.d.Placeholder(n+2)
}

// recordIdentity stores t's current identity in the registry, through ex
// (the transaction that changed the table, when it is transactional), after
// a change the sink made itself; onlyUnknown keeps one already stored.
func (cat *catalog) recordIdentity(ctx context.Context, ex execer, t target, onlyUnknown bool) error {
	id := cat.d.TableIdentity(t)
	if id == "" {
		return nil
	}
	q := "UPDATE " + cat.d.Quote(cat.registryTable()) + " SET ident = " + id + cat.registryWhere(1)
	if onlyUnknown {
		q += " AND ident IS NULL"
	}
	if _, err := ex.ExecContext(ctx, q, cat.cfg.Pipeline, t.Schema, t.Table); err != nil {
		return fmt.Errorf("sink: record the identity of %s in the table registry %s: %w", t, cat.registryTable(), wrapDB(err))
	}
	return nil
}

// recordIdentities is recordIdentity for every table in ts.
func (cat *catalog) recordIdentities(ctx context.Context, ex execer, ts []target) error {
	for _, t := range ts {
		if err := cat.recordIdentity(ctx, ex, t, false); err != nil {
			return err
		}
	}
	return nil
}

// execer runs a statement: the pool or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// identityEvery is how often a table's identity is checked against the
// registry (per table, per Sink): a table truncated behind the sink is
// refused at the first write this long after.
const identityEvery = time.Second

// checkIdentities refuses (fatal) tables of ts whose identity differs from
// the one in the registry: truncated, or dropped and created again, behind
// the sink. It reads through q (the write's transaction) before the write.
// A mismatch is read again once, a moment later, from the pool: another
// sink process that has just changed the table itself (its DDL) records
// the new identity right after.
func (cat *catalog) checkIdentities(ctx context.Context, q queryer, ts []target) error {
	now := time.Now()
	var due []target
	cat.mu.Lock()
	for _, t := range ts {
		if cat.d.TableIdentity(t) != "" && now.Sub(cat.identityChecked[t]) >= cat.identityEvery {
			due = append(due, t)
		}
	}
	cat.mu.Unlock()
	if len(due) == 0 {
		return nil
	}
	changed, err := cat.changedIdentities(ctx, q, due)
	if err != nil || len(changed) == 0 {
		if err == nil {
			cat.mu.Lock()
			for _, t := range due {
				cat.identityChecked[t] = now
			}
			cat.mu.Unlock()
		}
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Second):
	}
	still, err := cat.changedIdentities(ctx, cat.db, changed)
	if err != nil || len(still) == 0 {
		return err
	}
	t := still[0]
	reg, p := cat.registryTable(), cat.cfg.Pipeline
	return fatal(fmt.Errorf("%w: target table %s was truncated, or dropped and created again, behind the sink (its identity in the target changed, and pipeline %q did not change it itself): rows the sink applied there may be gone, and writing on would leave it short of them for good. "+
		"If its rows are all there (a VACUUM FULL, CLUSTER, OPTIMIZE TABLE or table-copying ALTER TABLE was run on it by hand), accept it as it is (UPDATE %s SET ident = NULL WHERE pipeline = '%s' AND tbl_schema = '%s' AND tbl_name = '%s') and restart the pipeline; "+
		"otherwise copy it afresh from the source: empty it, drop the pipeline's rows from %s (DELETE FROM %s WHERE pipeline = '%s') and take a new snapshot (sluice positions reset)",
		ErrTargetChanged, t, p, reg, p, t.Schema, t.Table, reg, reg, p))
}

// changedIdentities returns the tables of ts whose current identity is not
// the registry's. A table missing from the target, or not listed, is not
// one (dropping is checked elsewhere); one listed without an identity (new,
// or accepted by hand) gets its current one.
func (cat *catalog) changedIdentities(ctx context.Context, q queryer, ts []target) ([]target, error) {
	var b strings.Builder
	args := make([]any, 0, 3*len(ts))
	for i, t := range ts {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		fmt.Fprintf(&b, "SELECT %d, ident, %s FROM %s%s", i, cat.d.TableIdentity(t), cat.d.Quote(cat.registryTable()), cat.registryWhere(3*i+1))
		args = append(args, cat.cfg.Pipeline, t.Schema, t.Table)
	}
	rows, err := q.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("sink: read the identities of target tables: %w", wrapDB(err))
	}
	defer rows.Close()
	var changed, unknown []target
	for rows.Next() {
		var i int
		var recorded, current sql.NullString
		if err := rows.Scan(&i, &recorded, &current); err != nil {
			return nil, fmt.Errorf("sink: read the identities of target tables: %w", wrapDB(err))
		}
		switch {
		case i < 0 || i >= len(ts) || !current.Valid:
		case !recorded.Valid:
			unknown = append(unknown, ts[i])
		case recorded.String != current.String:
			changed = append(changed, ts[i])
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sink: read the identities of target tables: %w", wrapDB(err))
	}
	rows.Close()
	for _, t := range unknown {
		if err := cat.recordIdentity(ctx, cat.db, t, true); err != nil {
			return nil, err
		}
	}
	return changed, nil
}

// registerTable lists t in the registry, once per Sink.
func (cat *catalog) registerTable(ctx context.Context, t target) error {
	cat.mu.Lock()
	done := cat.registered[t]
	cat.mu.Unlock()
	if done {
		return nil
	}
	q := cat.d.InsertIgnore(cat.registryTable(), []string{"pipeline", "tbl_schema", "tbl_name"})
	if _, err := cat.db.ExecContext(ctx, q, cat.cfg.Pipeline, t.Schema, t.Table); err != nil {
		return fmt.Errorf("sink: list %s in the table registry %s: %w", t, cat.registryTable(), wrapDB(err))
	}
	if err := cat.recordIdentity(ctx, cat.db, t, true); err != nil {
		return err
	}
	cat.mu.Lock()
	cat.registered[t] = true
	cat.mu.Unlock()
	return nil
}

// unregisterTables takes tables the sink itself is about to drop or rename
// off the registry. It runs before their DDL, on its own: should the DDL
// then fail, a table still there is listed again when next written.
func (cat *catalog) unregisterTables(ctx context.Context, ts []target) error {
	q := "DELETE FROM " + cat.d.Quote(cat.registryTable()) + cat.registryWhere(1)
	for _, t := range ts {
		cat.mu.Lock()
		delete(cat.registered, t)
		cat.mu.Unlock()
		if _, err := cat.db.ExecContext(ctx, q, cat.cfg.Pipeline, t.Schema, t.Table); err != nil {
			return fmt.Errorf("sink: take %s off the table registry %s: %w", t, cat.registryTable(), wrapDB(err))
		}
	}
	return nil
}

// droppedBehind returns a fatal error when t, missing from the target, is
// listed in the registry: someone else dropped it.
func (cat *catalog) droppedBehind(ctx context.Context, t target) error {
	q := "SELECT 1 FROM " + cat.d.Quote(cat.registryTable()) + cat.registryWhere(1)
	var one int
	err := cat.db.QueryRowContext(ctx, q, cat.cfg.Pipeline, t.Schema, t.Table).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("sink: read the table registry %s: %w", cat.registryTable(), wrapDB(err))
	}
	// The table restored by hand, as the error asks, is taken as it is:
	// its identity is recorded afresh when it is next written.
	if _, err := cat.db.ExecContext(ctx, "UPDATE "+cat.d.Quote(cat.registryTable())+" SET ident = NULL"+cat.registryWhere(1), cat.cfg.Pipeline, t.Schema, t.Table); err != nil {
		return fmt.Errorf("sink: clear the identity of %s in the table registry %s: %w", t, cat.registryTable(), wrapDB(err))
	}
	return fatal(fmt.Errorf("%w: target table %s was dropped behind the sink (pipeline %q wrote rows into it and did not drop it): the rows applied there are lost, and creating it empty would leave it short of them for good. "+
		"Restore the table (with its rows) and restart the pipeline; or, to copy it afresh from the source, drop the pipeline's rows from %s (DELETE FROM %s WHERE pipeline = '%s') and take a new snapshot (sluice positions reset)",
		ErrTargetChanged, t, cat.cfg.Pipeline, cat.registryTable(), cat.registryTable(), cat.cfg.Pipeline))
}
