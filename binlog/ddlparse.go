package binlog

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// This file is the schema history's DDL parser: a small, conservative
// reader of the statements that change a table's shape. What it does not
// understand it refuses (errDDLSyntax) rather than guesses.

// histCol is one column as the schema history knows it: what a table map
// without full metadata lacks.
type histCol struct {
	Name     string
	Type     string // base type, lower case ("varchar", "int", "enum", ...)
	Unsigned bool
	Charset  string   // text and ENUM/SET columns ("binary" for binary strings); "" otherwise
	Labels   []string // ENUM/SET
	pk       bool     // declared PRIMARY KEY inline (CREATE TABLE)
}

// histTable is one table's shape in the schema history.
type histTable struct {
	Cols    []histCol
	PK      []string
	Charset string // the table's default charset; "" when not stated
}

func (t *histTable) clone() *histTable {
	c := &histTable{Cols: slices.Clone(t.Cols), PK: slices.Clone(t.PK), Charset: t.Charset}
	return c
}

func (t *histTable) colIndex(name string) int {
	for i, c := range t.Cols {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

var errDDLSyntax = errors.New("statement not understood")

// ddlChange is the effect of one statement on the history's tables.
type ddlChange struct {
	set    map[schema.TableID]*histTable // created or changed tables
	drop   []schema.TableID              // dropped (or renamed away) tables
	dropDB string                        // DROP DATABASE
}

// sqlTok is a token of a DDL statement.
type sqlTok struct {
	text   string
	quoted bool // `identifier`
	str    bool // 'string' or "string" (text unescaped), also x'..', b'..', _cs'..'
	punct  bool // . , ( ) ; =
}

// sqlTokens splits a whole statement into tokens, skipping comments (the
// server keeps /*!...*/ version comments' content, and so do we).
func sqlTokens(q string) ([]sqlTok, error) {
	var out []sqlTok
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(q[i:], "/*!") || strings.HasPrefix(q[i:], "/*M!"):
			// executable comment: keep its body after the version number
			j := i + 3
			if q[i+2] == 'M' {
				j++
			}
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			end := strings.Index(q[j:], "*/")
			if end < 0 {
				return nil, errDDLSyntax
			}
			q = q[:i] + q[j:j+end] + " " + q[j+end+2:]
		case strings.HasPrefix(q[i:], "/*"):
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return nil, errDDLSyntax
			}
			i += end + 4
		case strings.HasPrefix(q[i:], "-- ") || c == '#':
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				i = len(q)
			} else {
				i += end + 1
			}
		case c == '`':
			var b strings.Builder
			j := i + 1
			for ; j < len(q); j++ {
				if q[j] == '`' {
					if j+1 < len(q) && q[j+1] == '`' {
						b.WriteByte('`')
						j++
						continue
					}
					break
				}
				b.WriteByte(q[j])
			}
			if j >= len(q) {
				return nil, errDDLSyntax
			}
			out = append(out, sqlTok{text: b.String(), quoted: true})
			i = j + 1
		case c == '\'' || c == '"':
			s, n, ok := readString(q[i:])
			if !ok {
				return nil, errDDLSyntax
			}
			out = append(out, sqlTok{text: s, str: true})
			i += n
		case strings.IndexByte(".,();=", c) >= 0:
			out = append(out, sqlTok{text: string(c), punct: true})
			i++
		default:
			j := i
			for j < len(q) && !strings.ContainsRune(" \t\r\n.,();=`'\"", rune(q[j])) && !strings.HasPrefix(q[j:], "/*") {
				j++
			}
			if j == i { // a lone character no rule takes
				j++
			}
			w := q[i:j]
			if j < len(q) && q[j] == '\'' {
				// x'..', b'..', N'..', _utf8mb4'..': one string literal
				s, n, ok := readString(q[j:])
				if !ok {
					return nil, errDDLSyntax
				}
				out = append(out, sqlTok{text: s, str: true})
				i = j + n
				continue
			}
			out = append(out, sqlTok{text: w})
			i = j
		}
	}
	return out, nil
}

// readString reads a quoted literal at the start of q and returns its
// unescaped text and length.
func readString(q string) (string, int, bool) {
	quote := q[0]
	var b strings.Builder
	for j := 1; j < len(q); j++ {
		switch {
		case q[j] == '\\' && j+1 < len(q):
			j++
			switch q[j] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '0':
				b.WriteByte(0)
			default:
				b.WriteByte(q[j])
			}
		case q[j] == quote:
			if j+1 < len(q) && q[j+1] == quote {
				b.WriteByte(quote)
				j++
				continue
			}
			return b.String(), j + 1, true
		default:
			b.WriteByte(q[j])
		}
	}
	return "", 0, false
}

// ddlParser walks the tokens of one statement.
type ddlParser struct {
	toks      []sqlTok
	i         int
	defaultDB string
}

func (p *ddlParser) done() bool {
	return p.i >= len(p.toks) || (p.toks[p.i].punct && p.toks[p.i].text == ";")
}

// is reports whether the token at i+off is one of the keywords ws.
func (p *ddlParser) is(off int, ws ...string) bool {
	j := p.i + off
	if j < 0 || j >= len(p.toks) || p.toks[j].quoted || p.toks[j].str || p.toks[j].punct {
		return false
	}
	for _, w := range ws {
		if strings.EqualFold(p.toks[j].text, w) {
			return true
		}
	}
	return false
}

// accept consumes the keyword sequence ws if it is next.
func (p *ddlParser) accept(ws ...string) bool {
	for k, w := range ws {
		if !p.is(k, w) {
			return false
		}
	}
	p.i += len(ws)
	return true
}

func (p *ddlParser) punct(s string) bool {
	return p.i < len(p.toks) && p.toks[p.i].punct && p.toks[p.i].text == s
}

func (p *ddlParser) acceptPunct(s string) bool {
	if p.punct(s) {
		p.i++
		return true
	}
	return false
}

// ident reads an identifier.
func (p *ddlParser) ident() (string, error) {
	if p.done() || p.toks[p.i].punct || p.toks[p.i].str {
		return "", errDDLSyntax
	}
	p.i++
	return p.toks[p.i-1].text, nil
}

// tableName reads [db.]table.
func (p *ddlParser) tableName() (schema.TableID, error) {
	a, err := p.ident()
	if err != nil {
		return schema.TableID{}, err
	}
	if p.acceptPunct(".") {
		b, err := p.ident()
		if err != nil {
			return schema.TableID{}, err
		}
		return schema.TableID{Database: a, Table: b}, nil
	}
	if p.defaultDB == "" {
		return schema.TableID{}, fmt.Errorf("%w: table %s without a database", errDDLSyntax, a)
	}
	return schema.TableID{Database: p.defaultDB, Table: a}, nil
}

// skipParens skips a balanced (...) group at the cursor.
func (p *ddlParser) skipParens() error {
	if !p.acceptPunct("(") {
		return errDDLSyntax
	}
	depth := 1
	for ; p.i < len(p.toks); p.i++ {
		t := p.toks[p.i]
		if t.punct && t.text == "(" {
			depth++
		} else if t.punct && t.text == ")" {
			depth--
			if depth == 0 {
				p.i++
				return nil
			}
		}
	}
	return errDDLSyntax
}

// skipItem skips to the next top-level comma or closing parenthesis (not
// consumed) or the end.
func (p *ddlParser) skipItem() error {
	for !p.done() {
		if p.punct(",") || p.punct(")") {
			return nil
		}
		if p.punct("(") {
			if err := p.skipParens(); err != nil {
				return err
			}
			continue
		}
		p.i++
	}
	return nil
}

// nameList reads (a, b(10), c DESC) and returns the names.
func (p *ddlParser) nameList() ([]string, error) {
	if !p.acceptPunct("(") {
		return nil, errDDLSyntax
	}
	var out []string
	for {
		n, err := p.ident()
		if err != nil {
			return nil, err
		}
		out = append(out, n)
		if p.punct("(") {
			if err := p.skipParens(); err != nil {
				return nil, err
			}
		}
		p.accept("ASC")
		p.accept("DESC")
		if p.acceptPunct(",") {
			continue
		}
		if p.acceptPunct(")") {
			return out, nil
		}
		return nil, errDDLSyntax
	}
}

var textTypes = map[string]bool{"char": true, "varchar": true, "tinytext": true, "text": true, "mediumtext": true,
	"longtext": true, "enum": true, "set": true, "json": false}
var binaryTypes = map[string]bool{"binary": true, "varbinary": true, "tinyblob": true, "blob": true, "mediumblob": true, "longblob": true}
var columnTypes = map[string]bool{"tinyint": true, "smallint": true, "mediumint": true, "int": true, "integer": true,
	"bigint": true, "float": true, "double": true, "real": true, "decimal": true, "numeric": true, "dec": true, "fixed": true,
	"bit": true, "bool": true, "boolean": true, "year": true, "date": true, "time": true, "datetime": true, "timestamp": true,
	"json": true, "geometry": true, "point": true, "linestring": true, "polygon": true, "multipoint": true,
	"multilinestring": true, "multipolygon": true, "geometrycollection": true, "geomcollection": true,
	"inet4": true, "inet6": true, "uuid": true, "vector": true, "serial": true}

// columnDef reads "name type [attributes]" up to the next top-level comma
// or closing parenthesis.
func (p *ddlParser) columnDef() (histCol, error) {
	var c histCol
	name, err := p.ident()
	if err != nil {
		return c, err
	}
	c.Name = name
	typ, err := p.ident()
	if err != nil {
		return c, err
	}
	c.Type = strings.ToLower(typ)
	switch c.Type {
	case "national", "nchar", "nvarchar":
		if c.Type == "national" {
			t, err := p.ident()
			if err != nil {
				return c, err
			}
			c.Type = strings.ToLower(t)
		}
		c.Type = strings.TrimPrefix(c.Type, "n")
		if c.Type == "char" && p.accept("VARYING") || c.Type == "nvarchar" {
			c.Type = "varchar"
		}
		c.Charset = csUTF8MB3
	case "character":
		c.Type = "char"
		if p.accept("VARYING") {
			c.Type = "varchar"
		}
	case "double":
		p.accept("PRECISION")
	case "long":
		c.Type = "mediumtext"
		if p.accept("VARBINARY") {
			c.Type = "mediumblob"
		} else {
			p.accept("VARCHAR")
		}
	case "bool", "boolean":
		c.Type = "tinyint"
	case "serial":
		c.Type, c.Unsigned = "bigint", true
	}
	if !textTypes[c.Type] && !binaryTypes[c.Type] && !columnTypes[c.Type] {
		return c, fmt.Errorf("%w: column %s has type %s", errDDLSyntax, c.Name, typ)
	}
	if binaryTypes[c.Type] {
		c.Charset = csBinary
	}
	if p.punct("(") {
		if c.Type == "enum" || c.Type == "set" {
			p.i++
			c.Labels = []string{}
			for {
				if p.done() || !p.toks[p.i].str {
					return c, fmt.Errorf("%w: labels of %s", errDDLSyntax, c.Name)
				}
				c.Labels = append(c.Labels, p.toks[p.i].text)
				p.i++
				if p.acceptPunct(",") {
					continue
				}
				if p.acceptPunct(")") {
					break
				}
				return c, errDDLSyntax
			}
		} else if err := p.skipParens(); err != nil {
			return c, err
		}
	}
	for !p.done() && !p.punct(",") && !p.punct(")") && !p.is(0, "FIRST", "AFTER") {
		switch {
		case p.accept("UNSIGNED"), p.accept("ZEROFILL"):
			c.Unsigned = true
		case p.accept("PRIMARY", "KEY"):
			c.pk = true
		case p.accept("SIGNED"), p.accept("NOT", "NULL"), p.accept("NULL"), p.accept("AUTO_INCREMENT"),
			p.accept("UNIQUE", "KEY"), p.accept("UNIQUE"), p.accept("KEY"),
			p.accept("INVISIBLE"), p.accept("VISIBLE"), p.accept("VIRTUAL"), p.accept("STORED"), p.accept("PERSISTENT"),
			p.accept("GENERATED", "ALWAYS"), p.accept("WITHOUT", "SYSTEM", "VERSIONING"), p.accept("WITH", "SYSTEM", "VERSIONING"),
			p.accept("BINARY"), p.accept("ASCII"), p.accept("UNICODE"), p.accept("BYTE"):
		case p.accept("CHARACTER", "SET"), p.accept("CHARSET"):
			p.acceptPunct("=")
			cs, err := p.ident()
			if err != nil {
				return c, err
			}
			if c.Charset != csBinary || strings.EqualFold(cs, "binary") {
				c.Charset = normCharset(cs)
			}
		case p.accept("COLLATE"):
			p.acceptPunct("=")
			coll, err := p.ident()
			if err != nil {
				return c, err
			}
			if c.Charset == "" {
				c.Charset = charsetOfCollation(coll)
			}
		case p.accept("DEFAULT"), p.accept("ON", "UPDATE"):
			if p.done() {
				return c, errDDLSyntax
			}
			if p.punct("(") { // (expression)
				if err := p.skipParens(); err != nil {
					return c, err
				}
				continue
			}
			p.i++ // a literal, a name, or a function name
			if p.punct("(") {
				if err := p.skipParens(); err != nil {
					return c, err
				}
			}
		case p.accept("COMMENT"), p.accept("COLUMN_FORMAT"), p.accept("STORAGE"), p.accept("COMPRESSED"):
			p.acceptPunct("=")
			if !p.done() && !p.punct(",") && !p.punct(")") {
				p.i++
			}
		case p.accept("AS"), p.accept("CHECK"):
			if err := p.skipParens(); err != nil {
				return c, err
			}
		case p.accept("REFERENCES"):
			return c, p.skipItem()
		default:
			return c, fmt.Errorf("%w: column %s: unknown attribute %q", errDDLSyntax, c.Name, p.toks[p.i].text)
		}
	}
	return c, nil
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

// tableOptions reads table options after a CREATE TABLE's element list or
// in an ALTER TABLE, keeping the default charset.
func (p *ddlParser) tableOption(t *histTable) (bool, error) {
	p.accept("DEFAULT")
	switch {
	case p.accept("CHARACTER", "SET"), p.accept("CHARSET"):
		p.acceptPunct("=")
		cs, err := p.ident()
		if err != nil {
			return true, err
		}
		t.Charset = normCharset(cs)
		return true, nil
	case p.accept("COLLATE"):
		p.acceptPunct("=")
		coll, err := p.ident()
		if err != nil {
			return true, err
		}
		if t.Charset == "" {
			t.Charset = charsetOfCollation(coll)
		}
		return true, nil
	}
	for _, o := range []string{"ENGINE", "AUTO_INCREMENT", "AVG_ROW_LENGTH", "CHECKSUM", "COMMENT", "COMPRESSION",
		"CONNECTION", "DATA", "INDEX", "DELAY_KEY_WRITE", "ENCRYPTED", "ENCRYPTION", "ENCRYPTION_KEY_ID", "IETF_QUOTES",
		"INSERT_METHOD", "KEY_BLOCK_SIZE", "MAX_ROWS", "MIN_ROWS", "PACK_KEYS", "PAGE_CHECKSUM", "PAGE_COMPRESSED",
		"PAGE_COMPRESSION_LEVEL", "PASSWORD", "ROW_FORMAT", "SEQUENCE", "STATS_AUTO_RECALC", "STATS_PERSISTENT",
		"STATS_SAMPLE_PAGES", "TABLESPACE", "TRANSACTIONAL", "UNION", "ALGORITHM", "LOCK", "STORAGE"} {
		if p.accept(o) {
			p.accept("DIRECTORY")
			p.acceptPunct("=")
			if p.punct("(") {
				return true, p.skipParens()
			}
			if !p.done() && !p.punct(",") {
				p.i++
			}
			return true, nil
		}
	}
	return false, nil
}

// parseDDL reads one statement and returns its effect on the tables of
// hist (which it does not change). A statement that changes no table
// shape gives an empty change; one it cannot follow gives an error
// wrapping errDDLSyntax.
func parseDDL(q, defaultDB string, hist map[schema.TableID]*histTable) (ddlChange, error) {
	ch, err := parseStatement(q, defaultDB, hist)
	if err != nil {
		return ch, err
	}
	// A key must name columns of its table: the server would have refused
	// anything else, so such a statement was not read right.
	for id, t := range ch.set {
		for _, k := range t.PK {
			if t.colIndex(k) < 0 {
				return ch, fmt.Errorf("%w: primary key column %s is not a column of %s", errDDLSyntax, k, id)
			}
		}
	}
	return ch, nil
}

func parseStatement(q, defaultDB string, hist map[schema.TableID]*histTable) (ddlChange, error) {
	ch := ddlChange{set: map[schema.TableID]*histTable{}}
	toks, err := sqlTokens(q)
	if err != nil {
		return ch, err
	}
	p := &ddlParser{toks: toks, defaultDB: defaultDB}
	switch {
	case p.accept("TRUNCATE"):
		return ch, nil
	case p.accept("RENAME", "TABLE"), p.accept("RENAME", "TABLES"):
		cur := func(id schema.TableID) *histTable {
			if t, ok := ch.set[id]; ok {
				return t
			}
			if slices.Contains(ch.drop, id) {
				return nil
			}
			return hist[id]
		}
		for {
			from, err := p.tableName()
			if err != nil {
				return ch, err
			}
			if !p.accept("TO") {
				return ch, errDDLSyntax
			}
			to, err := p.tableName()
			if err != nil {
				return ch, err
			}
			t := cur(from)
			delete(ch.set, from)
			ch.drop = append(ch.drop, from)
			if t != nil {
				ch.set[to] = t
				ch.drop = slices.DeleteFunc(ch.drop, func(x schema.TableID) bool { return x == to })
			}
			if !p.acceptPunct(",") {
				break
			}
		}
	case p.accept("DROP"):
		p.accept("TEMPORARY")
		if p.accept("DATABASE") || p.accept("SCHEMA") {
			p.accept("IF", "EXISTS")
			db, err := p.ident()
			if err != nil {
				return ch, err
			}
			ch.dropDB = db
			return ch, nil
		}
		if !p.accept("TABLE") && !p.accept("TABLES") {
			return ch, nil // DROP INDEX, VIEW, TRIGGER...: no table shape changes
		}
		p.accept("IF", "EXISTS")
		for {
			id, err := p.tableName()
			if err != nil {
				return ch, err
			}
			ch.drop = append(ch.drop, id)
			if !p.acceptPunct(",") {
				break
			}
		}
	case p.accept("CREATE"):
		p.accept("OR", "REPLACE")
		if p.accept("TEMPORARY") {
			return ch, nil // not replicated as rows
		}
		if !p.accept("TABLE") {
			return ch, nil // CREATE INDEX, VIEW, DATABASE...
		}
		ifNotExists := p.accept("IF", "NOT", "EXISTS")
		id, err := p.tableName()
		if err != nil {
			return ch, err
		}
		if ifNotExists && hist[id] != nil {
			return ch, nil
		}
		if p.accept("LIKE") || (p.punct("(") && p.is(1, "LIKE") && p.acceptPunct("(") && p.accept("LIKE")) {
			src, err := p.tableName()
			if err != nil {
				return ch, err
			}
			t := hist[src]
			if t == nil {
				return ch, fmt.Errorf("%w: CREATE TABLE ... LIKE %s, a table the history does not know", errDDLSyntax, src)
			}
			ch.set[id] = t.clone()
			return ch, nil
		}
		t := &histTable{}
		if !p.acceptPunct("(") {
			return ch, fmt.Errorf("%w: CREATE TABLE without a column list", errDDLSyntax)
		}
		for {
			if err := p.createElement(t); err != nil {
				return ch, err
			}
			if p.acceptPunct(",") {
				continue
			}
			if p.acceptPunct(")") {
				break
			}
			return ch, errDDLSyntax
		}
		for !p.done() {
			if p.acceptPunct(",") && p.done() {
				break // a trailing comma after the options
			}
			ok, err := p.tableOption(t)
			if err != nil {
				return ch, err
			}
			if !ok {
				if p.is(0, "PARTITION") {
					break
				}
				return ch, fmt.Errorf("%w: CREATE TABLE ... %s", errDDLSyntax, p.toks[p.i].text)
			}
		}
		fillCharsets(t, "")
		ch.set[id] = t
	case p.accept("ALTER"):
		p.accept("ONLINE")
		p.accept("IGNORE")
		if !p.accept("TABLE") {
			return ch, nil // ALTER DATABASE, VIEW, USER...
		}
		p.accept("IF", "EXISTS")
		id, err := p.tableName()
		if err != nil {
			return ch, err
		}
		old := hist[id]
		if old == nil {
			return ch, fmt.Errorf("%w: ALTER TABLE %s, a table the history does not know", errDDLSyntax, id)
		}
		t := old.clone()
		newID := id
		for !p.done() {
			renamed, err := p.alterSpec(t)
			if err != nil {
				return ch, err
			}
			if renamed != nil {
				newID = *renamed
			}
			if !p.acceptPunct(",") {
				break
			}
		}
		if !p.done() {
			return ch, fmt.Errorf("%w: ALTER TABLE ... %s", errDDLSyntax, p.toks[p.i].text)
		}
		ch.set[newID] = t
		if newID != id {
			ch.drop = append(ch.drop, id)
		}
	}
	return ch, nil
}

// fillCharsets gives text columns without a charset the table's default
// (utf8mb4 when the statement names none: the server's default here).
func fillCharsets(t *histTable, fallback string) {
	cs := t.Charset
	if cs == "" {
		cs = fallback
	}
	if cs == "" {
		cs = csUTF8MB4
	}
	for i := range t.Cols {
		if textTypes[t.Cols[i].Type] && t.Cols[i].Charset == "" {
			t.Cols[i].Charset = cs
		}
	}
}

// createElement reads one element of a CREATE TABLE list.
func (p *ddlParser) createElement(t *histTable) error {
	p.accept("CONSTRAINT")
	if p.i < len(p.toks) && !p.is(0, "PRIMARY", "UNIQUE", "FOREIGN", "CHECK") && p.is(-1, "CONSTRAINT") {
		p.i++ // the constraint's name
	}
	switch {
	case p.accept("PRIMARY", "KEY"):
		for !p.punct("(") && !p.done() {
			p.i++ // USING BTREE and the like
		}
		names, err := p.nameList()
		if err != nil {
			return err
		}
		t.PK = names
		return p.skipItem()
	case p.is(0, "KEY", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "PERIOD"):
		return p.skipItem()
	}
	c, err := p.columnDef()
	if err != nil {
		return err
	}
	if t.colIndex(c.Name) >= 0 {
		return fmt.Errorf("%w: column %s twice", errDDLSyntax, c.Name)
	}
	t.Cols = append(t.Cols, c)
	if c.pk {
		t.PK = []string{c.Name}
	}
	return nil
}

// alterSpec applies one ALTER TABLE specification to t; it returns the new
// name for RENAME [TO].
func (p *ddlParser) alterSpec(t *histTable) (*schema.TableID, error) {
	place := func(c histCol, from int) error {
		if from >= 0 {
			t.Cols = slices.Delete(t.Cols, from, from+1)
		}
		at := len(t.Cols)
		if p.accept("FIRST") {
			at = 0
		} else if p.accept("AFTER") {
			n, err := p.ident()
			if err != nil {
				return err
			}
			k := t.colIndex(n)
			if k < 0 {
				return fmt.Errorf("%w: AFTER %s: no such column", errDDLSyntax, n)
			}
			at = k + 1
		} else if from >= 0 {
			at = from
		}
		t.Cols = slices.Insert(t.Cols, at, c)
		return nil
	}
	def := func() (histCol, error) {
		c, err := p.columnDef()
		if err == nil && textTypes[c.Type] && c.Charset == "" {
			c.Charset = t.Charset
			if c.Charset == "" {
				c.Charset = csUTF8MB4
			}
		}
		return c, err
	}
	switch {
	case p.accept("ADD"):
		p.accept("CONSTRAINT")
		if p.is(0, "PRIMARY") || p.is(1, "PRIMARY") && p.is(-1, "CONSTRAINT") {
			if !p.is(0, "PRIMARY") {
				p.i++
			}
			if !p.accept("PRIMARY", "KEY") {
				return nil, fmt.Errorf("%w: ADD PRIMARY without KEY", errDDLSyntax)
			}
			for !p.punct("(") && !p.done() {
				p.i++
			}
			names, err := p.nameList()
			if err != nil {
				return nil, err
			}
			t.PK = names
			return nil, p.skipItem()
		}
		if p.is(0, "KEY", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "PERIOD", "PARTITION", "SYSTEM") || p.is(-1, "CONSTRAINT") {
			return nil, p.skipItem()
		}
		p.accept("COLUMN")
		p.accept("IF", "NOT", "EXISTS")
		if p.acceptPunct("(") {
			for {
				c, err := def()
				if err != nil {
					return nil, err
				}
				if t.colIndex(c.Name) < 0 {
					t.Cols = append(t.Cols, c)
				}
				if p.acceptPunct(",") {
					continue
				}
				if p.acceptPunct(")") {
					return nil, nil
				}
				return nil, errDDLSyntax
			}
		}
		c, err := def()
		if err != nil {
			return nil, err
		}
		if t.colIndex(c.Name) >= 0 {
			return nil, nil // IF NOT EXISTS of a present column
		}
		return nil, place(c, -1)
	case p.accept("DROP"):
		switch {
		case p.accept("PRIMARY", "KEY"):
			t.PK = nil
			return nil, nil
		case p.is(0, "INDEX", "KEY", "FOREIGN", "CONSTRAINT", "CHECK", "PARTITION", "SYSTEM", "PERIOD"):
			return nil, p.skipItem()
		}
		p.accept("COLUMN")
		ifExists := p.accept("IF", "EXISTS")
		n, err := p.ident()
		if err != nil {
			return nil, err
		}
		k := t.colIndex(n)
		if k < 0 {
			if ifExists {
				return nil, nil
			}
			return nil, fmt.Errorf("%w: DROP COLUMN %s: no such column", errDDLSyntax, n)
		}
		t.Cols = slices.Delete(t.Cols, k, k+1)
		t.PK = slices.DeleteFunc(t.PK, func(s string) bool { return strings.EqualFold(s, n) })
		p.accept("RESTRICT")
		p.accept("CASCADE")
		return nil, nil
	case p.accept("MODIFY"), p.accept("CHANGE"):
		change := strings.EqualFold(p.toks[p.i-1].text, "CHANGE")
		p.accept("COLUMN")
		p.accept("IF", "EXISTS")
		old := ""
		if change {
			n, err := p.ident()
			if err != nil {
				return nil, err
			}
			old = n
		}
		c, err := def()
		if err != nil {
			return nil, err
		}
		if !change {
			old = c.Name
		}
		k := t.colIndex(old)
		if k < 0 {
			return nil, fmt.Errorf("%w: %s: no column %s", errDDLSyntax, strings.ToUpper(p.toks[0].text), old)
		}
		for i, pk := range t.PK {
			if strings.EqualFold(pk, old) {
				t.PK[i] = c.Name
			}
		}
		return nil, place(c, k)
	case p.accept("RENAME", "COLUMN"):
		from, err := p.ident()
		if err != nil {
			return nil, err
		}
		if !p.accept("TO") {
			return nil, errDDLSyntax
		}
		to, err := p.ident()
		if err != nil {
			return nil, err
		}
		k := t.colIndex(from)
		if k < 0 {
			return nil, fmt.Errorf("%w: RENAME COLUMN %s: no such column", errDDLSyntax, from)
		}
		t.Cols[k].Name = to
		for i, pk := range t.PK {
			if strings.EqualFold(pk, from) {
				t.PK[i] = to
			}
		}
		return nil, nil
	case p.accept("RENAME", "INDEX"), p.accept("RENAME", "KEY"):
		return nil, p.skipItem()
	case p.accept("RENAME"):
		if !p.accept("TO") {
			p.accept("AS")
		}
		id, err := p.tableName()
		return &id, err
	case p.accept("ALTER"):
		p.accept("COLUMN")
		return nil, p.skipItem() // SET/DROP DEFAULT, (IN)VISIBLE
	case p.accept("CONVERT", "TO"):
		if !p.accept("CHARACTER", "SET") && !p.accept("CHARSET") {
			return nil, errDDLSyntax
		}
		cs, err := p.ident()
		if err != nil {
			return nil, err
		}
		t.Charset = normCharset(cs)
		for i := range t.Cols {
			if textTypes[t.Cols[i].Type] {
				t.Cols[i].Charset = t.Charset
			}
		}
		p.accept("COLLATE")
		return nil, p.skipItem()
	case p.accept("FORCE"), p.accept("ENABLE", "KEYS"), p.accept("DISABLE", "KEYS"), p.accept("ORDER", "BY"),
		p.accept("ADD", "PARTITION"), p.accept("REMOVE", "PARTITIONING"), p.accept("PARTITION", "BY"):
		return nil, p.skipItem()
	}
	ok, err := p.tableOption(t)
	if err != nil {
		return nil, err
	}
	if !ok {
		if p.done() {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: ALTER TABLE ... %s", errDDLSyntax, p.toks[p.i].text)
	}
	return nil, nil
}
