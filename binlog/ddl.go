package binlog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/sluicecdc/sluice/schema"
)

// ddlTables finds the tables a DDL statement names, for filtering:
// TRUNCATE, CREATE/ALTER/DROP TABLE, RENAME TABLE and CREATE/DROP INDEX ...
// ON. parsed is false for other statements and for text the parser
// rejects; kind is the statement's first word, upper case.
func ddlTables(q, defaultDB string) (kind string, tables []schema.TableID, parsed bool) {
	res, err := readDDL(q, defaultDB)
	if err != nil || len(res.tables) == 0 {
		return res.kind, nil, false
	}
	if res.truncate && len(res.tables) != 1 {
		return res.kind, nil, false
	}
	return res.kind, res.tables, true
}

// statementDDL is a DDL statement as the mapper reads it.
type statementDDL struct {
	res      parsedDDL
	parsed   bool
	db       string               // the database the record is filed under
	captured bool                 // the statement concerns a captured table or database
	changes  []schema.TableChange // its effect on captured tables, with shapes where known
}

// readStatement parses a statement logged as its own transaction. A
// statement the parser rejects that may change a captured table stops the
// source (ErrUnparsedDDL, naming the ways on) unless skip_ddl lists it;
// with a schema history the history reports it (after the record), so that
// an equivalent statement recorded in the history file is used instead.
func (m *mapper) readStatement(h *replication.EventHeader, q, defaultDB string) (statementDDL, error) {
	d := statementDDL{db: defaultDB}
	res, err := readDDL(q, defaultDB)
	pos := Position{Version: PositionVersion, Flavor: m.flavor, File: m.file, Pos: h.LogPos}
	if err != nil && m.hist != nil {
		if e, ok := m.hist.entryAt(pos); ok { // fixed by hand in the history file
			res, err = readDDL(e.DDL, e.DB)
		}
	}
	d.res, d.parsed = res, err == nil
	tracked := func(id schema.TableID) bool {
		if id.Table == "" {
			return m.filter.matchDatabase(id.Database)
		}
		return m.filter.match(id.Database, id.Table)
	}
	skipped := m.skipDDL[q] || (m.txGTID != "" && m.skipDDL[m.txGTID])
	if err != nil {
		d.captured = m.filter.matchDatabase(defaultDB)
		if unparsedMatters(q, defaultDB, tracked) && !skipped && m.hist == nil {
			return d, unparsedError(q, defaultDB, pos, m.txGTID, "", err)
		}
		return d, nil
	}
	if len(res.tables) == 0 {
		d.captured = m.filter.matchDatabase(defaultDB) || res.dropDB != "" && m.filter.matchDatabase(res.dropDB)
		if res.dropDB != "" {
			d.db = res.dropDB
		}
		return d, nil
	}
	for _, id := range res.tables {
		if tracked(id) {
			if !d.captured {
				d.db = id.Database
			}
			d.captured = true
		}
	}
	if !d.captured || skipped || res.truncate {
		return d, nil
	}
	if m.hist != nil {
		_, _ = effect(&res, m.hist.tables) // fills the shapes; the history reports errors
	} else if m.showCreate != nil {
		m.catalogShapes(&res, tracked)
	}
	for _, c := range res.tableChanges() {
		if tracked(c.Table) || c.Kind == schema.RenameTable && tracked(c.NewTable) {
			d.changes = append(d.changes, c)
		}
	}
	return d, nil
}

// catalogShapes completes, without a schema history, what the server can
// tell exactly of a schema change: a CREATE TABLE that names no charset
// gets the table's default charset (the database's) from SHOW CREATE TABLE,
// when the server's columns are the statement's. An ALTER or RENAME gets
// no shape: the server's table now may already include later statements
// the source has not read yet (a source behind the binlog, or DDL in quick
// succession), and no check of the statement alone can tell an older
// column from one a later ALTER added. Its tableChanges stay empty without
// a history (history_file or history_store keep exact shapes).
func (m *mapper) catalogShapes(res *parsedDDL, tracked func(schema.TableID) bool) {
	for i := range res.changes {
		e := &res.changes[i]
		id := e.Table
		if e.Kind != schema.CreateTable || e.Shape == nil || e.Shape.Charset != "" || e.like != nil || !tracked(id) {
			continue
		}
		if t, err := m.catalogTable(id); err == nil && t.sameColumns(e.Shape) {
			e.Shape.Charset = t.Charset
		}
	}
}

// catalogTable reads a table's shape from the server.
func (m *mapper) catalogTable(id schema.TableID) (*histTable, error) {
	ddl, err := m.showCreate(id)
	if err != nil {
		return nil, err
	}
	res, err := readDDL(ddl, id.Database)
	if err != nil {
		return nil, err
	}
	if len(res.changes) != 1 || res.changes[0].Kind != schema.CreateTable {
		return nil, fmt.Errorf("SHOW CREATE TABLE %s gave %q", id, ddl)
	}
	e := res.changes[0]
	return &histTable{Cols: e.cols, PK: e.PrimaryKey, Charset: e.charset}, nil
}

// sameColumns reports whether t has s's columns, by name and in order.
func (t *histTable) sameColumns(s *schema.TableShape) bool {
	return slices.EqualFunc(t.Cols, s.Columns, func(c histCol, d schema.ColumnDef) bool { return strings.EqualFold(c.Name, d.Name) })
}
