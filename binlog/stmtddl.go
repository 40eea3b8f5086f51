package binlog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	tmysql "github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/types"

	"github.com/sluicecdc/sluice/binlog/charset"
	"github.com/sluicecdc/sluice/binlog/ddl"
	"github.com/sluicecdc/sluice/schema"
)

// readDDL reads a statement (package ddl) with the source's column types.
func readDDL(q, defaultDB string) (ddl.Statement, error) {
	return ddl.Read(q, defaultDB, columnType)
}

// ddlTables finds the tables a DDL statement names, for filtering:
// TRUNCATE, CREATE/ALTER/DROP TABLE, RENAME TABLE and CREATE/DROP INDEX ...
// ON. parsed is false for other statements and for text the parser
// rejects; kind is the statement's first word, upper case.
func ddlTables(q, defaultDB string) (kind string, tables []schema.TableID, parsed bool) {
	res, err := readDDL(q, defaultDB)
	if err != nil || len(res.Tables) == 0 {
		return res.Kind, nil, false
	}
	if res.Truncate && len(res.Tables) != 1 {
		return res.Kind, nil, false
	}
	return res.Kind, res.Tables, true
}

// statementDDL is a DDL statement as the mapper reads it.
type statementDDL struct {
	res      ddl.Statement
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
	if len(res.Tables) == 0 {
		d.captured = m.filter.matchDatabase(defaultDB) || res.DropDB != "" && m.filter.matchDatabase(res.DropDB)
		if res.DropDB != "" {
			d.db = res.DropDB
		}
		return d, nil
	}
	for _, id := range res.Tables {
		if tracked(id) {
			if !d.captured {
				d.db = id.Database
			}
			d.captured = true
		}
	}
	if !d.captured || skipped || res.Truncate {
		return d, nil
	}
	if m.hist != nil {
		_, _ = res.Apply(m.hist.tables) // fills the shapes; the history reports errors
	}
	changes := res.Changes()
	if m.hist == nil && m.showCreate != nil {
		m.catalogShapes(changes, tracked)
	}
	for _, c := range changes {
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
// column from one a later ALTER added: its changes carry no shape without
// a history (history_file or history_store keep exact shapes). Nor does a
// CREATE TABLE … LIKE here.
func (m *mapper) catalogShapes(changes []schema.TableChange, tracked func(schema.TableID) bool) {
	for i := range changes {
		e := &changes[i]
		id := e.Table
		if e.Kind != schema.CreateTable || e.Shape == nil || e.Shape.Charset != "" || !tracked(id) {
			continue
		}
		if t, err := m.catalogTable(id); err == nil && sameColumns(t, e.Shape) {
			e.Shape.Charset = t.Charset
		}
	}
}

// catalogTable reads a table's shape from the server.
func (m *mapper) catalogTable(id schema.TableID) (*ddl.Table, error) {
	text, err := m.showCreate(id)
	if err != nil {
		return nil, err
	}
	res, err := readDDL(text, id.Database)
	if err != nil {
		return nil, err
	}
	t, ok := res.Created()
	if !ok {
		return nil, fmt.Errorf("SHOW CREATE TABLE %s gave %q", id, text)
	}
	return t, nil
}

// sameColumns reports whether t has s's columns, by name and in order.
func sameColumns(t *ddl.Table, s *schema.TableShape) bool {
	return slices.EqualFunc(t.Cols, s.Columns, func(c ddl.Column, d schema.ColumnDef) bool { return strings.EqualFold(c.Name, d.Name) })
}

// columnType is the source's ddl.TypeFunc: a column declared in DDL gets
// its value schema through the same builder as the columns of a table map,
// its parsed type written as the binlog's type byte and metadata. A text
// column without a charset yet gets utf8mb4 (the history refills it from
// the table).
func columnType(ct ddl.ColumnType) (*schema.Schema, string, error) {
	tp, flen, dec, nullable := ct.Field, ct.Length, ct.Decimals, ct.Nullable
	cs := ct.Charset
	if cs == "" {
		cs = csUTF8MB4
	}
	var typ byte
	var meta uint16
	switch tp {
	case tmysql.TypeTiny, tmysql.TypeShort, tmysql.TypeInt24, tmysql.TypeLong, tmysql.TypeLonglong,
		tmysql.TypeFloat, tmysql.TypeDouble, tmysql.TypeYear, tmysql.TypeDate, tmysql.TypeJSON, tmysql.TypeGeometry:
		typ = tp
	case tmysql.TypeNewDecimal:
		if flen <= 0 {
			flen = 10
		}
		if dec < 0 {
			dec = 0
		}
		typ, meta = mysql.MYSQL_TYPE_NEWDECIMAL, uint16(flen)<<8|uint16(dec)
	case tmysql.TypeBit:
		if flen <= 0 {
			flen = 1
		}
		typ, meta = mysql.MYSQL_TYPE_BIT, uint16(flen/8)<<8|uint16(flen%8)
	case tmysql.TypeDuration, tmysql.TypeDatetime, tmysql.TypeTimestamp:
		if dec < 0 {
			dec = 0
		}
		typ = map[byte]byte{tmysql.TypeDuration: mysql.MYSQL_TYPE_TIME2, tmysql.TypeDatetime: mysql.MYSQL_TYPE_DATETIME2,
			tmysql.TypeTimestamp: mysql.MYSQL_TYPE_TIMESTAMP2}[tp]
		meta = uint16(dec)
	case tmysql.TypeVarchar, tmysql.TypeVarString:
		if flen < 0 {
			flen = 1
		}
		typ, meta = mysql.MYSQL_TYPE_VARCHAR, uint16(min(flen*charset.MaxBytesPerChar(cs), 65535))
	case tmysql.TypeString:
		if flen < 0 {
			flen = 1
		}
		n := min(flen*charset.MaxBytesPerChar(cs), 1023)
		b0 := byte(0xce) | byte(((n>>4)&0x30)^0x30)
		typ, meta = mysql.MYSQL_TYPE_STRING, uint16(b0)<<8|uint16(n&0xff)
	case tmysql.TypeTinyBlob, tmysql.TypeBlob, tmysql.TypeMediumBlob, tmysql.TypeLongBlob:
		typ, meta = mysql.MYSQL_TYPE_BLOB, map[byte]uint16{tmysql.TypeTinyBlob: 1, tmysql.TypeBlob: 2, tmysql.TypeMediumBlob: 3, tmysql.TypeLongBlob: 4}[tp]
	case tmysql.TypeEnum:
		typ, meta = mysql.MYSQL_TYPE_STRING, uint16(mysql.MYSQL_TYPE_ENUM)<<8
	case tmysql.TypeSet:
		typ, meta = mysql.MYSQL_TYPE_STRING, uint16(mysql.MYSQL_TYPE_SET)<<8
	case tmysql.TypeTiDBVectorFloat32:
		typ = mysql.MYSQL_TYPE_VECTOR
	default:
		return nil, "", fmt.Errorf("%w: column %s has type %s", ddl.ErrSyntax, ct.Name, types.TypeStr(tp))
	}
	colType := "" // what information_schema would add: FLOAT(M,D) and DOUBLE(M,D)
	if (tp == tmysql.TypeFloat || tp == tmysql.TypeDouble) && flen > 0 && dec >= 0 {
		colType = fmt.Sprintf("%s(%d,%d)", map[byte]string{tmysql.TypeFloat: "float", tmysql.TypeDouble: "double"}[tp], flen, dec)
		if ct.Unsigned {
			colType += " unsigned"
		}
	}
	ti, err := buildTableSpecs(schema.TableID{}, []colSpec{{name: ct.Name, typ: typ, meta: meta, unsigned: ct.Unsigned,
		charset: cs, collation: normCollation(ct.Collation), nullable: nullable, labels: ct.Labels, colType: colType}}, nil, "")
	if err != nil {
		return nil, "", fmt.Errorf("%w: column %s: %v", ddl.ErrSyntax, ct.Name, err)
	}
	col := ti.table.Columns[0]
	return col.Schema, col.SourceType, nil
}
