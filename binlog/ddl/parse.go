// Package ddl reads the DDL statements of the binlog source into structure:
// a statement's kind, the tables it names, and its changes to table shapes
// as schema.TableChange (columns added, dropped, modified, renamed; keys;
// charsets), and applies those changes to the table shapes a schema
// history keeps. It also tells row changes logged as statements (DML).
//
// Statements are parsed by the TiDB parser (MySQL grammar). What the parser
// rejects (some MariaDB syntax: WITH SYSTEM VERSIONING, EXCHANGE PARTITION,
// …) is refused with an error wrapping ErrSyntax, never guessed at.
//
// A column's value schema and source type come from the caller (TypeFunc):
// the source builds them as it builds the columns of a table map, so a
// column declared in DDL and the same column in a row event agree. The
// package imports nothing of sluice's but schema.
package ddl

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	tidbcharset "github.com/pingcap/tidb/pkg/parser/charset"
	"github.com/pingcap/tidb/pkg/parser/format"
	tmysql "github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // literal values in the AST
	"github.com/pingcap/tidb/pkg/parser/types"

	"github.com/sluicecdc/sluice/schema"
)

// The character sets the reader names itself (the source's names).
const (
	csBinary  = "binary"
	csUTF8MB4 = "utf8mb4"
	csUTF8MB3 = "utf8mb3"
)

// ErrSyntax is wrapped by every error of a statement the reader cannot
// follow: text the parser rejects, a form whose effect it cannot know
// (CREATE TABLE … SELECT), or a change to a table or column the history
// does not have.
var ErrSyntax = errors.New("statement not understood")

// ColumnType is a column's type as the statement declares it, for a
// TypeFunc.
type ColumnType struct {
	Name string
	// Field is the type's code in the TiDB parser's mysql package
	// (pkg/parser/mysql: TypeLong, TypeVarchar, TypeGeometry, …).
	Field byte
	// Length and Decimals are the declared length (or display width) and
	// decimals; negative when the statement gives none.
	Length, Decimals int
	Unsigned         bool
	Nullable         bool
	// Charset is the text column's charset ("binary" for binary strings);
	// "" when not known yet (the history fills it in from the table).
	Charset string
	// Collation is the COLLATE the statement gave a text column, as it
	// spells it; "" when none (the table's or the charset's default
	// applies).
	Collation string
	Labels    []string // ENUM/SET
}

// TypeFunc gives a column's value schema and source type
// (schema.ColumnDef's Type and SourceType). Its error is returned as it
// is by Read and Apply: it must wrap ErrSyntax.
type TypeFunc func(ColumnType) (*schema.Schema, string, error)

// Column is one column as the schema history knows it: what a table map
// without full metadata lacks, and the definition for schema changes.
type Column struct {
	Name     string
	Type     string // base type, lower case ("varchar", "int", "enum", ...)
	Unsigned bool
	Charset  string   // text and ENUM/SET columns ("binary" for binary strings); "" otherwise
	Labels   []string // ENUM/SET
	def      schema.ColumnDef
	// collation is the COLLATE the statement gave a text column; ""
	// when it gave none (the table's or the charset's default applies).
	collation string
	// the parsed type, to rebuild def.Type once the charset is known
	tp        byte
	flen, dec int
	nullable  bool
}

// Table is one table's shape in the schema history.
type Table struct {
	Cols    []Column
	PK      []string
	Charset string // the table's default charset; "" when not stated
}

func (t *Table) clone() *Table {
	return &Table{Cols: slices.Clone(t.Cols), PK: slices.Clone(t.PK), Charset: t.Charset}
}

// Index returns the position of the column named name (in any case), or
// -1.
func (t *Table) Index(name string) int {
	for i, c := range t.Cols {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// shape is t as a schema.TableShape.
func (t *Table) shape() *schema.TableShape {
	s := &schema.TableShape{Columns: make([]schema.ColumnDef, len(t.Cols)), PrimaryKey: slices.Clone(t.PK), Charset: t.Charset}
	for i, c := range t.Cols {
		s.Columns[i] = c.def
		s.Columns[i].Name = c.Name
	}
	return s
}

// Change is the effect of one statement on a history's tables.
type Change struct {
	Set    map[schema.TableID]*Table // created or changed tables
	Drop   []schema.TableID          // dropped (or renamed away) tables
	DropDB string                    // DROP DATABASE
}

// Statement is one statement as the parser read it.
type Statement struct {
	Kind     string           // the statement's first word, upper case
	Tables   []schema.TableID // the tables it names, for filtering
	DropDB   string           // DROP DATABASE / SCHEMA
	Truncate bool             // TRUNCATE TABLE
	changes  []tableEdit      // its effect on table shapes, in order
	typ      TypeFunc
}

// tableEdit is one schema.TableChange with what the history needs besides.
type tableEdit struct {
	schema.TableChange
	cols    []Column // per Columns entry: the history's view of the new definition
	like    *schema.TableID
	charset string // table default charset set by the statement
	convert bool   // CONVERT TO CHARACTER SET charset
}

var parsers = sync.Pool{New: func() any { return parser.New() }}

// The TiDB parser refuses the MySQL character sets TiDB does not implement
// (cp1251, big5, …) though it knows them: they are registered, since the
// source server accepted them and only their names matter here.
func init() {
	for _, name := range []string{"big5", "dec8", "cp850", "hp8", "koi8r", "latin1", "latin2", "swe7", "ascii", "ujis",
		"sjis", "hebrew", "tis620", "euckr", "koi8u", "gb2312", "greek", "cp1250", "gbk", "latin5", "armscii8", "utf8",
		"ucs2", "cp866", "keybcs2", "macce", "macroman", "cp852", "latin7", "utf8mb4", "cp1251", "utf16", "utf16le",
		"cp1256", "cp1257", "utf32", "binary", "geostd8", "cp932", "eucjpms", "gb18030"} {
		if c, err := tidbcharset.GetCharsetInfo(name); c != nil && err != nil {
			tidbcharset.AddCharset(c)
		}
	}
}

// collateClause finds COLLATE names, for replacing those the parser does
// not know (MariaDB's utf8mb4_uca1400_ai_ci and the like).
var collateClause = regexp.MustCompile("(?i)\\bCOLLATE(\\s*=\\s*|\\s+)([`'\"]?)([A-Za-z0-9_]+)([`'\"]?)")

// knownCollations replaces each collation the parser does not know by the
// default collation of its character set (the name's prefix), which is
// all the history reads of it.
func knownCollations(q string) (string, bool) {
	changed := false
	out := collateClause.ReplaceAllStringFunc(q, func(m string) string {
		sub := collateClause.FindStringSubmatch(m)
		name := sub[3]
		if _, err := tidbcharset.GetCollationByName(name); err == nil {
			return m
		}
		cs, _, _ := strings.Cut(strings.ToLower(name), "_")
		def, err := tidbcharset.GetDefaultCollation(cs)
		if err != nil {
			def = "utf8mb4_general_ci"
		}
		changed = true
		return "COLLATE" + sub[1] + sub[2] + def + sub[4]
	})
	return out, changed
}

// orReplace is MariaDB's CREATE OR REPLACE, which the TiDB parser lacks.
var orReplace = regexp.MustCompile(`(?is)^\s*CREATE\s+OR\s+REPLACE\s+`)

// alterOnline is MariaDB's ALTER ONLINE TABLE (same as ALTER TABLE … LOCK=NONE).
var alterOnline = regexp.MustCompile(`(?is)^\s*ALTER\s+ONLINE\s+`)

// ctasStart is the end MySQL (8.0.21+) gives the CREATE TABLE it logs for
// CREATE TABLE … SELECT: the columns spelled out, the rows in the same
// transaction.
var ctasStart = regexp.MustCompile(`(?is)^(\s*CREATE\s+TABLE\b.*?)\s+START\s+TRANSACTION\s*$`)

// preprocess rewrites the MariaDB forms the TiDB parser lacks but that have
// a MySQL equivalent: /*M!NNNNNN … */ becomes /*! … */ (the server ran it:
// its version is at least the one named; MariaDB's six digits would not
// read as MySQL's five), CREATE OR REPLACE loses OR REPLACE (reported as
// replace), ALTER ONLINE loses ONLINE; and MySQL's CREATE TABLE … START
// TRANSACTION (a CREATE TABLE … SELECT in the binlog) loses START
// TRANSACTION.
func preprocess(q string) (out string, replace bool) {
	if m := ctasStart.FindStringSubmatch(q); m != nil {
		q = m[1]
	}
	if strings.Contains(q, "/*M!") {
		q, _ = rewriteCode(q, func(q string, i int) (string, int) {
			if !strings.HasPrefix(q[i:], "/*M!") {
				return "", 0
			}
			j := i + 4
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			return "/*! ", j - i
		})
	}
	if loc := orReplace.FindStringIndex(q); loc != nil {
		return "CREATE " + q[loc[1]:], true
	}
	if loc := alterOnline.FindStringIndex(q); loc != nil {
		return "ALTER " + q[loc[1]:], false
	}
	return q, false
}

// rewriteCode copies q, offering f each position outside quoted strings,
// quoted identifiers and plain comments (executable /*! comments are code):
// f returns a replacement and the length it replaces, or 0 to copy on.
func rewriteCode(q string, f func(q string, i int) (string, int)) (string, bool) {
	var b strings.Builder
	changed := false
	for i := 0; i < len(q); {
		if repl, n := f(q, i); n > 0 {
			b.WriteString(repl)
			i += n
			changed = true
			continue
		}
		j := i + 1
		switch c := q[i]; {
		case c == '\'' || c == '"' || c == '`':
			for j < len(q) && q[j] != c {
				if q[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			j = min(j+1, len(q))
		case strings.HasPrefix(q[i:], "/*") && !strings.HasPrefix(q[i:], "/*!") && !strings.HasPrefix(q[i:], "/*M!"):
			end := strings.Index(q[i+2:], "*/")
			j = len(q)
			if end >= 0 {
				j = i + end + 4
			}
		}
		b.WriteString(q[i:j])
		i = j
	}
	return b.String(), changed
}

// Column types the TiDB parser lacks: spatial types and MariaDB's INET4,
// INET6 and UUID. When a statement fails to parse, they are replaced by a
// type it reads and a marker comment (sluice-type:NAME) that columnDef
// turns back into the type; a column or table so named stays unparsed.
// The same retry drops the spatial syntax around them that changes no row
// image: MySQL's SRID n column attribute (also inside SHOW CREATE TABLE's
// /*!80003 … */), SPATIAL before INDEX or KEY, and ALTER [COLUMN] c SET
// [IN]VISIBLE (an invisible column is still in every row image), which
// becomes the no-op ALGORITHM=DEFAULT.
var substituted = map[string]string{"geometry": "LONGBLOB", "point": "LONGBLOB", "linestring": "LONGBLOB",
	"polygon": "LONGBLOB", "multipoint": "LONGBLOB", "multilinestring": "LONGBLOB", "multipolygon": "LONGBLOB",
	"geometrycollection": "LONGBLOB", "geomcollection": "LONGBLOB",
	"inet6": "BINARY(16)", "uuid": "BINARY(16)", "inet4": "BINARY(4)"}

const typeMarker = "sluice-type:"

func substituteTypes(q string) (string, bool) {
	word := func(c byte) bool {
		return c == '_' || c == '$' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z'
	}
	return rewriteCode(q, func(q string, i int) (string, int) {
		if !word(q[i]) || i > 0 && (word(q[i-1]) || q[i-1] == '.') {
			return "", 0
		}
		j := i
		for j < len(q) && word(q[j]) {
			j++
		}
		w := strings.ToLower(q[i:j])
		next := strings.TrimLeft(q[j:], " \t\r\n")
		if t, ok := substituted[w]; ok && !strings.HasPrefix(next, "(") { // uuid() is a function
			return t + " COMMENT '" + typeMarker + w + "'", j - i
		}
		if droppedAttributes[w] {
			return "", j - i
		}
		switch w {
		case "srid":
			if m := sridAttr.FindStringIndex(q[i:]); m != nil {
				return "", m[1]
			}
		case "spatial":
			if m := spatialKey.FindStringIndex(q[i:]); m != nil {
				return "", j - i
			}
		case "alter":
			if m := setVisible.FindStringIndex(q[i:]); m != nil {
				return "ALGORITHM=DEFAULT", m[1]
			}
		}
		return "", 0
	})
}

var (
	sridAttr   = regexp.MustCompile(`(?i)^SRID\s+[0-9]+`)
	spatialKey = regexp.MustCompile(`(?i)^SPATIAL\s+(INDEX|KEY)\b`)
	setVisible = regexp.MustCompile("(?i)^ALTER\\s+(COLUMN\\s+)?(`[^`]+`|[A-Za-z0-9_$]+)\\s+SET\\s+(IN)?VISIBLE\\b")
)

// droppedAttributes are MariaDB column attributes the TiDB parser lacks
// that change neither the column's type nor the row images: left out on the
// retry. (WITH SYSTEM VERSIONING is not among them: it adds columns.)
var droppedAttributes = map[string]bool{"invisible": true, "compressed": true}

// Read parses one statement (several, separated by ';', are read in
// order). defaultDB qualifies unqualified names; typ gives the columns
// their types (and is kept for Apply). A statement that changes no table
// shape gives no changes; one the parser rejects gives an error wrapping
// ErrSyntax (and a Statement with its Kind only).
func Read(q, defaultDB string, typ TypeFunc) (res Statement, err error) {
	res.typ = typ
	if f := strings.Fields(q); len(f) > 0 {
		res.Kind = strings.ToUpper(f[0])
	}
	text, replace := preprocess(q)
	defer func() {
		if r := recover(); r != nil { // the parser must not stop the source
			res, err = Statement{Kind: res.Kind, typ: typ}, fmt.Errorf("%w: parser failure: %v", ErrSyntax, r)
		}
	}()
	var perr error
	withParser(func(p *parser.Parser) {
		var stmts []ast.StmtNode
		stmts, _, perr = p.Parse(text, "", "")
		if perr != nil {
			alt, ok1 := knownCollations(text)
			alt, ok2 := substituteTypes(alt)
			if ok1 || ok2 {
				if st, _, err := p.Parse(alt, "", ""); err == nil {
					stmts, perr = st, nil
				}
			}
		}
		if perr != nil {
			return
		}
		if len(stmts) > 0 {
			res.Kind = firstWord(stmts[0])
		}
		for _, st := range stmts {
			if err = res.add(st, defaultDB, replace); err != nil {
				return
			}
		}
	})
	if perr != nil {
		return Statement{Kind: res.Kind, typ: typ}, fmt.Errorf("%w: %v", ErrSyntax, perr)
	}
	if err != nil {
		return Statement{Kind: res.Kind, typ: typ}, err
	}
	return res, nil
}

// withParser runs fn with a parser of the pool. The statements a parser
// returns live in its memory until its next Parse, so fn must have copied
// out what it needs when it returns (another goroutine may take the parser
// then); a parser that panicked is not put back.
func withParser(fn func(p *parser.Parser)) {
	p := parsers.Get().(*parser.Parser)
	fn(p)
	parsers.Put(p)
}

func firstWord(st ast.StmtNode) string {
	switch st.(type) {
	case *ast.CreateTableStmt, *ast.CreateIndexStmt, *ast.CreateDatabaseStmt, *ast.CreateViewStmt:
		return "CREATE"
	case *ast.AlterTableStmt, *ast.AlterDatabaseStmt:
		return "ALTER"
	case *ast.DropTableStmt, *ast.DropIndexStmt, *ast.DropDatabaseStmt:
		return "DROP"
	case *ast.RenameTableStmt:
		return "RENAME"
	case *ast.TruncateTableStmt:
		return "TRUNCATE"
	}
	if f := strings.Fields(st.Text()); len(f) > 0 {
		return strings.ToUpper(f[0])
	}
	return ""
}

func tableID(n *ast.TableName, defaultDB string) (schema.TableID, error) {
	id := schema.TableID{Database: n.Schema.O, Table: n.Name.O}
	if id.Database == "" {
		id.Database = defaultDB
	}
	if id.Database == "" {
		return id, fmt.Errorf("%w: table %s without a database", ErrSyntax, id.Table)
	}
	if id.Table == "" { // `` parses; MySQL refuses it ("Incorrect table name")
		return id, fmt.Errorf("%w: a table with an empty name", ErrSyntax)
	}
	return id, nil
}

func (res *Statement) name(n *ast.TableName, defaultDB string) (schema.TableID, error) {
	id, err := tableID(n, defaultDB)
	if err == nil {
		res.Tables = append(res.Tables, id)
	}
	return id, err
}

func (res *Statement) add(st ast.StmtNode, defaultDB string, replace bool) error {
	switch s := st.(type) {
	case *ast.TruncateTableStmt:
		_, err := res.name(s.Table, defaultDB)
		res.Truncate = true
		return err
	case *ast.DropDatabaseStmt:
		res.DropDB = s.Name.O
	case *ast.CreateIndexStmt:
		_, err := res.name(s.Table, defaultDB)
		return err
	case *ast.DropIndexStmt:
		_, err := res.name(s.Table, defaultDB)
		return err
	case *ast.DropTableStmt:
		if s.IsView || s.TemporaryKeyword != ast.TemporaryNone {
			return nil
		}
		for _, n := range s.Tables {
			id, err := res.name(n, defaultDB)
			if err != nil {
				return err
			}
			res.changes = append(res.changes, tableEdit{TableChange: schema.TableChange{Kind: schema.DropTable, Table: id}})
		}
	case *ast.RenameTableStmt:
		for _, tt := range s.TableToTables {
			from, err := res.name(tt.OldTable, defaultDB)
			if err != nil {
				return err
			}
			to, err := res.name(tt.NewTable, defaultDB)
			if err != nil {
				return err
			}
			res.changes = append(res.changes, tableEdit{TableChange: schema.TableChange{Kind: schema.RenameTable, Table: from, NewTable: to}})
		}
	case *ast.CreateTableStmt:
		id, err := res.name(s.Table, defaultDB)
		if err != nil || s.TemporaryKeyword != ast.TemporaryNone {
			return err // a temporary table is not replicated as rows
		}
		e := tableEdit{TableChange: schema.TableChange{Kind: schema.CreateTable, Table: id, IfNotExists: s.IfNotExists, OrReplace: replace}}
		if s.ReferTable != nil {
			like, err := res.name(s.ReferTable, defaultDB)
			if err != nil {
				return err
			}
			e.like = &like
			res.changes = append(res.changes, e)
			return nil
		}
		e.charset = tableCharset(s.Options)
		colCS := e.charset
		if colCS == "" {
			colCS = csUTF8MB4 // the server's default here
		}
		for _, cd := range s.Cols {
			c, pk, err := columnDef(cd, colCS, res.typ)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(e.cols, func(x Column) bool { return strings.EqualFold(x.Name, c.Name) }) {
				return fmt.Errorf("%w: column %s twice", ErrSyntax, c.Name)
			}
			if pk {
				e.PrimaryKey = []string{c.Name}
			}
			e.add(schema.ColumnChange{Kind: schema.AddColumn, Name: c.Name}, c)
		}
		for _, con := range s.Constraints {
			if con.Tp == ast.ConstraintPrimaryKey {
				e.PrimaryKey = keyNames(con)
			}
		}
		if s.Select != nil {
			return fmt.Errorf("%w: CREATE TABLE … SELECT (the columns of the query are not known)", ErrSyntax)
		}
		for _, k := range e.PrimaryKey {
			if !slices.ContainsFunc(e.cols, func(x Column) bool { return strings.EqualFold(x.Name, k) }) {
				return fmt.Errorf("%w: primary key column %s is not a column of %s", ErrSyntax, k, id)
			}
		}
		e.Shape = &schema.TableShape{PrimaryKey: slices.Clone(e.PrimaryKey), Charset: e.charset}
		for _, c := range e.cols {
			e.Shape.Columns = append(e.Shape.Columns, c.def)
		}
		res.changes = append(res.changes, e)
	case *ast.AlterTableStmt:
		id, err := res.name(s.Table, defaultDB)
		if err != nil {
			return err
		}
		e := tableEdit{TableChange: schema.TableChange{Kind: schema.AlterTable, Table: id}}
		var renames []tableEdit
		for _, sp := range s.Specs {
			r, err := e.spec(sp, defaultDB, res.typ)
			if err != nil {
				return err
			}
			if r != nil {
				res.Tables = append(res.Tables, *r)
				renames = append(renames, tableEdit{TableChange: schema.TableChange{Kind: schema.RenameTable, Table: id, NewTable: *r}})
			}
		}
		if len(e.Columns) > 0 || e.PrimaryKey != nil || e.DropPrimaryKey || e.charset != "" {
			res.changes = append(res.changes, e)
		}
		// a RENAME TO among the clauses takes effect after the others
		if len(renames) > 0 {
			last := renames[len(renames)-1]
			res.changes = append(res.changes, last)
		}
	}
	return nil
}

func (e *tableEdit) add(cc schema.ColumnChange, c Column) {
	if cc.Kind == schema.AddColumn || cc.Kind == schema.ModifyColumn {
		d := c.def
		cc.Column = &d
	}
	e.Columns = append(e.Columns, cc)
	e.cols = append(e.cols, c)
}

func place(cc *schema.ColumnChange, p *ast.ColumnPosition) {
	if p == nil {
		return
	}
	switch p.Tp {
	case ast.ColumnPositionFirst:
		cc.First = true
	case ast.ColumnPositionAfter:
		cc.After = p.RelativeColumn.Name.O
	}
}

// spec reads one ALTER TABLE clause; it returns the new name of RENAME TO.
func (e *tableEdit) spec(sp *ast.AlterTableSpec, defaultDB string, typ TypeFunc) (*schema.TableID, error) {
	switch sp.Tp {
	case ast.AlterTableAddColumns:
		for _, cd := range sp.NewColumns {
			c, pk, err := columnDef(cd, "", typ)
			if err != nil {
				return nil, err
			}
			cc := schema.ColumnChange{Kind: schema.AddColumn, Name: c.Name, IfExists: sp.IfNotExists}
			if len(sp.NewColumns) == 1 {
				place(&cc, sp.Position)
			}
			e.add(cc, c)
			if pk {
				e.PrimaryKey = []string{c.Name}
			}
		}
	case ast.AlterTableDropColumn:
		e.add(schema.ColumnChange{Kind: schema.DropColumn, Name: sp.OldColumnName.Name.O, IfExists: sp.IfExists}, Column{})
	case ast.AlterTableModifyColumn, ast.AlterTableChangeColumn:
		if len(sp.NewColumns) != 1 {
			return nil, fmt.Errorf("%w: MODIFY/CHANGE without one column", ErrSyntax)
		}
		c, pk, err := columnDef(sp.NewColumns[0], "", typ)
		if err != nil {
			return nil, err
		}
		cc := schema.ColumnChange{Kind: schema.ModifyColumn, Name: c.Name, IfExists: sp.IfExists}
		if sp.Tp == ast.AlterTableChangeColumn {
			cc.Name = sp.OldColumnName.Name.O
			if !strings.EqualFold(cc.Name, c.Name) || cc.Name != c.Name {
				cc.NewName = c.Name
			}
		}
		place(&cc, sp.Position)
		e.add(cc, c)
		if pk {
			e.PrimaryKey = []string{c.Name}
		}
	case ast.AlterTableRenameColumn:
		e.add(schema.ColumnChange{Kind: schema.RenameColumn, Name: sp.OldColumnName.Name.O, NewName: sp.NewColumnName.Name.O}, Column{})
	case ast.AlterTableAlterColumn:
		if len(sp.NewColumns) != 1 {
			return nil, nil
		}
		cd := sp.NewColumns[0]
		cc := schema.ColumnChange{Kind: schema.AlterDefault, Name: cd.Name.Name.O, Column: &schema.ColumnDef{Name: cd.Name.Name.O}}
		// SET DEFAULT x carries x as an option's expression; DROP DEFAULT none
		if len(cd.Options) > 0 && cd.Options[0].Expr != nil {
			cc.Column.Default = defaultOf(cd.Options[0].Expr)
		}
		e.Columns = append(e.Columns, cc)
		e.cols = append(e.cols, Column{})
	case ast.AlterTableAddConstraint:
		if sp.Constraint != nil && sp.Constraint.Tp == ast.ConstraintPrimaryKey {
			e.PrimaryKey = keyNames(sp.Constraint)
		}
	case ast.AlterTableDropPrimaryKey:
		e.DropPrimaryKey, e.PrimaryKey = true, nil
	case ast.AlterTableRenameTable:
		id, err := tableID(sp.NewTable, defaultDB)
		return &id, err
	case ast.AlterTableExchangePartition:
		return nil, fmt.Errorf("%w: EXCHANGE PARTITION swaps rows with another table", ErrSyntax)
	case ast.AlterTableOption:
		for _, o := range sp.Options {
			switch o.Tp {
			case ast.TableOptionCharset:
				e.charset = normCharset(o.StrValue)
				e.convert = e.convert || o.UintValue == ast.TableOptionCharsetWithConvertTo
			case ast.TableOptionCollate:
				if e.charset == "" {
					e.charset = charsetOfCollation(o.StrValue)
				}
			}
		}
	}
	return nil, nil
}

func keyNames(c *ast.Constraint) []string {
	var out []string
	for _, k := range c.Keys {
		if k.Column != nil {
			out = append(out, k.Column.Name.O)
		}
	}
	return out
}

func tableCharset(opts []*ast.TableOption) string {
	cs := ""
	for _, o := range opts {
		switch o.Tp {
		case ast.TableOptionCharset:
			cs = normCharset(o.StrValue)
		case ast.TableOptionCollate:
			if cs == "" {
				cs = charsetOfCollation(o.StrValue)
			}
		}
	}
	return cs
}

func normCharset(cs string) string {
	cs = strings.ToLower(cs)
	if cs == "utf8" {
		return csUTF8MB3
	}
	return cs
}

func charsetOfCollation(coll string) string {
	coll = strings.ToLower(coll)
	if coll == "binary" {
		return csBinary
	}
	cs, _, _ := strings.Cut(coll, "_")
	return normCharset(cs)
}

var textTypes = map[byte]bool{tmysql.TypeVarchar: true, tmysql.TypeString: true, tmysql.TypeVarString: true,
	tmysql.TypeTinyBlob: true, tmysql.TypeBlob: true, tmysql.TypeMediumBlob: true, tmysql.TypeLongBlob: true,
	tmysql.TypeEnum: true, tmysql.TypeSet: true}

// columnDef converts one column definition; tableCS is the table's default
// charset when the statement gives it (CREATE TABLE), "" otherwise: the
// history fills it in from the table. pk says PRIMARY KEY was inline.
func columnDef(cd *ast.ColumnDef, tableCS string, typ TypeFunc) (c Column, pk bool, err error) {
	c.Name = cd.Name.Name.O
	ft := cd.Tp
	if ft == nil {
		return c, false, fmt.Errorf("%w: column %s without a type", ErrSyntax, c.Name)
	}
	tp := ft.GetType()
	c.Unsigned = tmysql.HasUnsignedFlag(ft.GetFlag()) || tmysql.HasZerofillFlag(ft.GetFlag())
	cs, coll := ft.GetCharset(), ft.GetCollate()
	if cs == "" && ft.GetCollate() != "" {
		cs = charsetOfCollation(ft.GetCollate())
	}
	if tmysql.HasBinaryFlag(ft.GetFlag()) && textTypes[tp] && tp != tmysql.TypeEnum && tp != tmysql.TypeSet && (cs == "" || cs == csBinary) {
		cs = csBinary
	}
	nullable := true
	marked := "" // a type substituteTypes replaced
	d := schema.ColumnDef{Name: c.Name}
	for _, o := range cd.Options {
		switch o.Tp {
		case ast.ColumnOptionNotNull:
			nullable = false
		case ast.ColumnOptionNull:
			nullable = true
		case ast.ColumnOptionPrimaryKey:
			pk, nullable = true, false
		case ast.ColumnOptionAutoIncrement:
			d.AutoIncrement = true
		case ast.ColumnOptionDefaultValue:
			d.Default = defaultOf(o.Expr)
		case ast.ColumnOptionGenerated:
			d.Generated = true
			d.Expression = restore(o.Expr)
		case ast.ColumnOptionComment:
			if v, ok := o.Expr.(ast.ValueExpr); ok {
				s, _ := v.GetValue().(string)
				if name, ok := strings.CutPrefix(s, typeMarker); ok {
					marked = name
				} else {
					d.Comment = s
				}
			}
		case ast.ColumnOptionCollate:
			if cs == "" || cs != csBinary {
				cs = charsetOfCollation(o.StrValue)
			}
			coll = o.StrValue
		}
	}
	if textTypes[tp] {
		if cs == "" {
			cs = tableCS
		}
		c.Charset = normCharset(cs)
		if c.Charset != csBinary && coll != "" {
			c.collation = coll
		}
	}
	c.Type = types.TypeToStr(tp, c.Charset)
	if tp == tmysql.TypeTiny && ft.GetFlen() == 1 && strings.HasPrefix(strings.ToLower(restore(cd.Tp)), "bool") {
		c.Type = "tinyint"
	}
	if marked != "" {
		c.Type, c.Charset = marked, csBinary
		if tp == tmysql.TypeLongBlob {
			tp, c.Charset = tmysql.TypeGeometry, ""
		}
	}
	if tp == tmysql.TypeEnum || tp == tmysql.TypeSet {
		c.Labels = slices.Clone(ft.GetElems())
		if c.Labels == nil {
			c.Labels = []string{}
		}
	}
	d.Labels = c.Labels
	d.Charset = c.Charset
	c.def = d
	c.tp, c.flen, c.dec, c.nullable = tp, ft.GetFlen(), ft.GetDecimal(), nullable
	switch tp {
	case tmysql.TypeTiny, tmysql.TypeShort, tmysql.TypeInt24, tmysql.TypeLong, tmysql.TypeLonglong:
		c.def.Length = max(c.flen, 0) // the display width, as Debezium's length
	case tmysql.TypeFloat, tmysql.TypeDouble:
		if c.flen > 0 && c.dec >= 0 {
			c.def.Length, c.def.Scale = c.flen, c.dec
		}
	}
	return c, pk, c.fillType(typ)
}

// fillType gives c.def its value schema and source type through typ.
func (c *Column) fillType(typ TypeFunc) error {
	sch, src, err := typ(ColumnType{Name: c.Name, Field: c.tp, Length: c.flen, Decimals: c.dec, Unsigned: c.Unsigned,
		Nullable: c.nullable, Charset: c.Charset, Collation: c.collation, Labels: c.Labels})
	if err != nil {
		return err
	}
	c.def.Type, c.def.SourceType = sch, src
	return nil
}

// restore renders an AST node back as SQL text.
func restore(n interface {
	Restore(*format.RestoreCtx) error
}) string {
	var b strings.Builder
	if err := n.Restore(format.NewRestoreCtx(format.DefaultRestoreFlags|format.RestoreStringWithoutCharset, &b)); err != nil {
		return ""
	}
	return b.String()
}

// defaultOf reads a DEFAULT expression: a literal as its value's text, a
// negative number as such, NULL as none, anything else as an expression.
func defaultOf(x ast.ExprNode) *schema.Default {
	neg := ""
	if u, ok := x.(*ast.UnaryOperationExpr); ok && u.Op == opcode.Minus {
		neg, x = "-", u.V
	}
	if v, ok := x.(ast.ValueExpr); ok {
		switch val := v.GetValue().(type) {
		case nil:
			if neg == "" {
				return nil
			}
		case string:
			if neg == "" {
				return &schema.Default{Value: val}
			}
		case int64:
			return negate(neg, strconv.FormatInt(val, 10))
		case uint64:
			return negate(neg, strconv.FormatUint(val, 10))
		case float64:
			return negate(neg, strconv.FormatFloat(val, 'g', -1, 64))
		case fmt.Stringer:
			if _, bin := x.(interface{ GetBinaryLiteral() []byte }); !bin && isDecimal(val.String()) {
				return negate(neg, val.String())
			}
		}
	}
	if neg != "" {
		return &schema.Default{Value: "-" + restore(x), Expr: true}
	}
	return &schema.Default{Value: restore(x), Expr: true}
}

func negate(neg, s string) *schema.Default {
	if neg != "" && strings.HasPrefix(s, "-") {
		return &schema.Default{Value: s[1:]}
	}
	return &schema.Default{Value: neg + s}
}

var decimalText = regexp.MustCompile(`^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$`)

func isDecimal(s string) bool { return decimalText.MatchString(s) }

// Apply applies the structured changes of the statement to the tables of
// hist (which it does not change) and returns the changed tables. Each of
// the statement's changes with a known result gets its Shape (and a CREATE
// TABLE … LIKE its columns and key), as Changes returns them afterwards. A
// change it cannot follow (an ALTER of a table hist lacks, a column that
// is not there) gives an error wrapping ErrSyntax.
func (res *Statement) Apply(hist map[schema.TableID]*Table) (Change, error) {
	ch := Change{Set: map[schema.TableID]*Table{}, DropDB: res.DropDB}
	cur := func(id schema.TableID) *Table {
		if t, ok := ch.Set[id]; ok {
			return t
		}
		if slices.Contains(ch.Drop, id) {
			return nil
		}
		return hist[id]
	}
	drop := func(id schema.TableID) {
		delete(ch.Set, id)
		if !slices.Contains(ch.Drop, id) {
			ch.Drop = append(ch.Drop, id)
		}
	}
	set := func(id schema.TableID, t *Table) {
		ch.Set[id] = t
		ch.Drop = slices.DeleteFunc(ch.Drop, func(x schema.TableID) bool { return x == id })
	}
	for i := range res.changes {
		e := &res.changes[i]
		switch e.Kind {
		case schema.DropTable:
			if t := cur(e.Table); t != nil {
				e.Shape = t.shape() // the table's last shape, as Debezium reports a DROP
			}
			drop(e.Table)
		case schema.RenameTable:
			t := cur(e.Table)
			drop(e.Table)
			if t != nil {
				set(e.NewTable, t)
				e.Shape = t.shape()
			}
		case schema.CreateTable:
			if e.IfNotExists && cur(e.Table) != nil {
				e.Shape = cur(e.Table).shape()
				continue
			}
			if e.like != nil {
				src := cur(*e.like)
				if src == nil {
					return ch, fmt.Errorf("%w: CREATE TABLE ... LIKE %s, a table the history does not know", ErrSyntax, *e.like)
				}
				t := src.clone()
				set(e.Table, t)
				e.Shape = t.shape()
				e.PrimaryKey = slices.Clone(t.PK)
				for _, c := range t.Cols {
					d := c.def
					e.Columns = append(e.Columns, schema.ColumnChange{Kind: schema.AddColumn, Name: c.Name, Column: &d})
				}
				continue
			}
			t := &Table{Cols: slices.Clone(e.cols), PK: slices.Clone(e.PrimaryKey), Charset: e.charset}
			set(e.Table, t)
		case schema.AlterTable:
			old := cur(e.Table)
			if old == nil {
				return ch, fmt.Errorf("%w: ALTER TABLE %s, a table the history does not know", ErrSyntax, e.Table)
			}
			t := old.clone()
			if err := e.alter(t, res.typ); err != nil {
				return ch, err
			}
			for _, k := range t.PK {
				if t.Index(k) < 0 {
					return ch, fmt.Errorf("%w: primary key column %s is not a column of %s", ErrSyntax, k, e.Table)
				}
			}
			set(e.Table, t)
			e.Shape = t.shape()
		}
	}
	return ch, nil
}

// alter applies an ALTER's column changes to t.
func (e *tableEdit) alter(t *Table, typ TypeFunc) error {
	if e.charset != "" {
		t.Charset = e.charset
		if e.convert {
			for i := range t.Cols {
				if t.Cols[i].Charset != "" && t.Cols[i].Charset != csBinary {
					t.Cols[i].Charset = e.charset
					t.Cols[i].def.Charset = e.charset
					if t.Cols[i].collation != "" { // the statement's COLLATE is not the column's any more
						t.Cols[i].collation = ""
						if err := t.Cols[i].fillType(typ); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	renamePK := func(from, to string) {
		for i, k := range t.PK {
			if strings.EqualFold(k, from) {
				t.PK[i] = to
			}
		}
	}
	for i, cc := range e.Columns {
		k := t.Index(cc.Name)
		switch cc.Kind {
		case schema.AddColumn, schema.ModifyColumn:
			c := e.cols[i]
			if textTypes[c.tp] && c.Charset == "" {
				c.Charset = t.Charset
				if c.Charset == "" {
					c.Charset = csUTF8MB4
				}
				c.def.Charset = c.Charset
				if err := c.fillType(typ); err != nil {
					return err
				}
			}
			if cc.Kind == schema.AddColumn {
				if k >= 0 {
					if cc.IfExists {
						continue
					}
					return fmt.Errorf("%w: ADD COLUMN %s: the column exists", ErrSyntax, cc.Name)
				}
			} else {
				if k < 0 {
					if cc.IfExists {
						continue
					}
					return fmt.Errorf("%w: MODIFY/CHANGE: no column %s", ErrSyntax, cc.Name)
				}
				t.Cols = slices.Delete(t.Cols, k, k+1)
				renamePK(cc.Name, c.Name)
			}
			at := len(t.Cols)
			if k >= 0 {
				at = k
			}
			if cc.First {
				at = 0
			} else if cc.After != "" {
				a := t.Index(cc.After)
				if a < 0 {
					return fmt.Errorf("%w: AFTER %s: no such column", ErrSyntax, cc.After)
				}
				at = a + 1
			}
			t.Cols = slices.Insert(t.Cols, at, c)
		case schema.DropColumn:
			if k < 0 {
				if cc.IfExists {
					continue
				}
				return fmt.Errorf("%w: DROP COLUMN %s: no such column", ErrSyntax, cc.Name)
			}
			t.Cols = slices.Delete(t.Cols, k, k+1)
			t.PK = slices.DeleteFunc(t.PK, func(s string) bool { return strings.EqualFold(s, cc.Name) })
		case schema.RenameColumn:
			if k < 0 {
				return fmt.Errorf("%w: RENAME COLUMN %s: no such column", ErrSyntax, cc.Name)
			}
			t.Cols[k].Name = cc.NewName
			t.Cols[k].def.Name = cc.NewName
			renamePK(cc.Name, cc.NewName)
		case schema.AlterDefault:
			if k < 0 {
				return fmt.Errorf("%w: ALTER COLUMN %s: no such column", ErrSyntax, cc.Name)
			}
			t.Cols[k].def.Default = cc.Column.Default
		}
	}
	if e.DropPrimaryKey {
		t.PK = nil
	}
	if e.PrimaryKey != nil {
		t.PK = slices.Clone(e.PrimaryKey)
	}
	return nil
}

// Changes returns the statement's changes as the record carries them.
func (res *Statement) Changes() []schema.TableChange {
	if len(res.changes) == 0 {
		return nil
	}
	out := make([]schema.TableChange, len(res.changes))
	for i, e := range res.changes {
		out[i] = e.TableChange
	}
	return out
}

// Created returns the table of a statement that is one CREATE TABLE, with
// its columns, key and default charset as the statement gives them; false
// for any other statement.
func (res *Statement) Created() (*Table, bool) {
	if len(res.changes) != 1 || res.changes[0].Kind != schema.CreateTable {
		return nil, false
	}
	e := res.changes[0]
	return &Table{Cols: e.cols, PK: e.PrimaryKey, Charset: e.charset}, true
}
