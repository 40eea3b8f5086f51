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

// catalogShapes gives, without a schema history, the ALTER TABLE and
// RENAME TABLE changes of captured tables the shape of their table after
// the statement, as Debezium's tableChanges carry it: the server's SHOW
// CREATE TABLE now, which is that shape while the source keeps up with the
// binlog. A shape that contradicts the statement (a later DDL already ran:
// the source is behind) is left out, as is one the server cannot give.
func (m *mapper) catalogShapes(res *parsedDDL, tracked func(schema.TableID) bool) {
	for i := range res.changes {
		e := &res.changes[i]
		id := e.Table
		switch e.Kind {
		case schema.AlterTable:
		case schema.RenameTable:
			id = e.NewTable
		case schema.CreateTable:
			// The statement gives the shape; the table's default charset,
			// when it names none, is the database's, which the server knows.
			if e.Shape != nil && e.Shape.Charset == "" && e.like == nil && tracked(id) {
				if t, err := m.catalogTable(id); err == nil && t.sameColumns(e.Shape) {
					e.Shape.Charset = t.Charset
				}
			}
			continue
		default:
			continue
		}
		if e.Shape != nil || !tracked(id) {
			continue
		}
		t, err := m.catalogTable(id)
		if err != nil {
			if m.log != nil {
				m.log.Debug("binlog: no shape for the schema change's tableChanges", "table", id.String(), "err", err)
			}
			continue
		}
		if e.Kind == schema.AlterTable && !t.agrees(&e.TableChange) {
			if m.log != nil {
				m.log.Debug("binlog: the table's shape now is not the ALTER's (the source is behind the server): tableChanges left empty", "table", id.String())
			}
			continue
		}
		e.Shape = t.shape()
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

// agrees reports whether t can be the shape after the ALTER c: the columns
// it adds, renames to or modifies are there, those it drops or renames
// away are not, and its key is the one the ALTER sets or drops.
func (t *histTable) agrees(c *schema.TableChange) bool {
	has := func(name string) bool { return name != "" && t.colIndex(name) >= 0 }
	typed := func(name string, d *schema.ColumnDef) bool { // there, of the type the statement gives
		i := t.colIndex(name)
		return i >= 0 && (d == nil || strings.EqualFold(t.Cols[i].def.SourceType, d.SourceType))
	}
	for _, cc := range c.Columns {
		switch cc.Kind {
		case schema.AddColumn:
			if !typed(cc.Name, cc.Column) {
				return false
			}
		case schema.DropColumn:
			if has(cc.Name) && !cc.IfExists {
				return false
			}
		case schema.RenameColumn:
			if !has(cc.NewName) || (!strings.EqualFold(cc.Name, cc.NewName) && has(cc.Name)) {
				return false
			}
		case schema.ModifyColumn:
			name := cc.Name
			if cc.NewName != "" {
				name = cc.NewName
			}
			if !typed(name, cc.Column) {
				return false
			}
		}
	}
	switch {
	case c.DropPrimaryKey && len(c.PrimaryKey) == 0:
		return len(t.PK) == 0
	case len(c.PrimaryKey) > 0:
		return slices.EqualFunc(t.PK, c.PrimaryKey, strings.EqualFold)
	}
	return true
}

// sameColumns reports whether t has s's columns, by name and in order.
func (t *histTable) sameColumns(s *schema.TableShape) bool {
	return slices.EqualFunc(t.Cols, s.Columns, func(c histCol, d schema.ColumnDef) bool { return strings.EqualFold(c.Name, d.Name) })
}
