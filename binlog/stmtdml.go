package binlog

import (
	"fmt"

	"github.com/sluicecdc/sluice/binlog/ddl"
)

// A session with binlog_format STATEMENT (or MIXED, for statements the
// server deems safe) logs its row changes as QUERY events holding the SQL
// text. The source reads row events only, so such a change would never
// reach the target: on a captured table (or one it cannot tell) it stops
// the source with this fatal error instead of dropping it.

// stmtDMLError returns the error for statement-logged DML q on a captured
// table, or nil when q is no row change or names only tables not captured.
func (m *mapper) stmtDMLError(q, defaultDB string) error {
	kind, tables, dml := ddl.DML(q, defaultDB)
	if !dml {
		return nil
	}
	where := "a table it cannot tell"
	if tables != nil {
		captured := false
		for _, id := range tables {
			if m.filter.match(id.Database, id.Table) {
				captured, where = true, id.String()
				break
			}
		}
		if !captured {
			return nil
		}
	}
	return fmt.Errorf("%w: %s on %s was logged as a statement, not as row events (the writing session has binlog_format STATEMENT or MIXED), so its rows cannot be captured: %q; "+
		"set binlog_format=ROW globally and in every writing session (SET GLOBAL binlog_format=ROW, then reconnect the clients), then snapshot the table again "+
		"(or move the pipeline past this statement with the offsets API, knowing the target misses its change)",
		ErrUnsupported, kind, where, truncate([]byte(q), 200))
}
