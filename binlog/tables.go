package binlog

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-mysql-org/go-mysql/client"

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
	out, err := listCaptured(ctx, clientCatalog(conn), newFilter(s.cfg.Include, s.cfg.Exclude))
	if err != nil {
		return nil, fmt.Errorf("binlog: list the captured tables on %s: %w", s.addr(), err)
	}
	return out, nil
}

// catalogQuery runs a catalogue query with args and returns its rows as
// strings.
type catalogQuery func(ctx context.Context, query string, args ...any) ([][]string, error)

// clientCatalog is a catalogQuery on a go-mysql connection.
func clientCatalog(conn *client.Conn) catalogQuery {
	return func(_ context.Context, query string, args ...any) ([][]string, error) {
		r, err := conn.Execute(query, args...)
		if err != nil {
			return nil, err
		}
		rows := make([][]string, r.RowNumber())
		for i := range rows {
			for j := 0; j < r.ColumnNumber(); j++ {
				v, _ := r.GetString(i, j)
				rows[i] = append(rows[i], v)
			}
		}
		return rows, nil
	}
}

// listCaptured lists the base tables f captures, in (database, table)
// order, database by database as Debezium does: the databases first, then
// the tables of each database f may capture. A query on
// information_schema.TABLES that names no database opens every table of
// the server, which on a server with many databases outside include takes
// tens of seconds, at every start and every check.
func listCaptured(ctx context.Context, q catalogQuery, f filter) ([]schema.TableID, error) {
	dbs, err := q(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA")
	if err != nil {
		return nil, err
	}
	var out []schema.TableID
	for _, d := range dbs {
		if len(d) != 1 || !f.mayCapture(d[0]) {
			continue
		}
		rows, err := q(ctx, "SHOW FULL TABLES FROM "+quoteIdent(d[0]))
		if err != nil {
			if isUnknownDatabase(err) { // dropped since it was listed
				continue
			}
			return nil, err
		}
		for _, r := range rows {
			if len(r) != 2 || (r[1] != "BASE TABLE" && r[1] != "SYSTEM VERSIONED") {
				continue // views, sequences
			}
			if f.match(d[0], r[0]) {
				out = append(out, schema.TableID{Database: d[0], Table: r[0]})
			}
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
