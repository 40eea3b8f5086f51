package binlog

import (
	"context"
	"fmt"
	"slices"

	"github.com/sluicecdc/sluice/schema"
)

// CapturedTables lists the base tables the source's include and exclude
// capture now, in (database, table) order. The runtime hands them to the
// sink before anything is read, so that a table the sink cannot take (one
// mapping onto its control tables) stops the start, not the first record.
func (s *Source) CapturedTables(ctx context.Context) ([]schema.TableID, error) {
	conn, err := dialServer(ctx, &s.cfg, tlsFor(&s.cfg), nil)
	if err != nil {
		return nil, connectError(s.addr(), s.cfg.User, err)
	}
	defer conn.Close()
	r, err := conn.Execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED')")
	if err != nil {
		return nil, fmt.Errorf("binlog: list the captured tables on %s: %w", s.addr(), err)
	}
	f := newFilter(s.cfg.Include, s.cfg.Exclude)
	var out []schema.TableID
	for i := 0; i < r.RowNumber(); i++ {
		var id schema.TableID
		id.Database, _ = r.GetString(i, 0)
		id.Table, _ = r.GetString(i, 1)
		if f.match(id.Database, id.Table) {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, compareTableID)
	return out, nil
}

// CapturedShapes reads, from the server's catalogue, the shapes of the
// tables CapturedTables lists, as the snapshot reads them: the columns
// and value schemas their records carry (exclude_columns and masks
// applied) and the primary key. The runtime hands them to the sink before
// anything is read, so that a table the sink cannot take in that shape (a
// table without key it cannot match rows of) stops the start. A table
// whose shape the source cannot build (dropped since it was listed, a
// column it refuses) is left out: the source names it when it reads it.
func (s *Source) CapturedShapes(ctx context.Context) ([]schema.Table, error) {
	sn, err := s.openSnapshotter(ctx)
	if err != nil {
		return nil, err
	}
	defer sn.close()
	ids, err := sn.listTables(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]schema.Table, 0, len(ids))
	for _, id := range ids {
		st, err := sn.loadTable(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			s.log.Debug("cannot read the shape of a captured table before starting", "table", id.String(), "err", err)
			continue
		}
		if st != nil {
			out = append(out, *st.ti.table)
		}
	}
	return out, nil
}
