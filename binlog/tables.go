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
