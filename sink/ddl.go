package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/sluicecdc/sluice/schema"
)

// Schema changes the sink can apply (Config.SchemaChanges = "apply"). The
// DDL text is only ever parsed into identifiers; the statements the sink runs
// are built from those identifiers, quoted, never from the text itself.

type ddlKind int

const (
	ddlNone         ddlKind = iota
	ddlTruncate             // TRUNCATE [TABLE] t
	ddlDropTable            // DROP TABLE [IF EXISTS] t [, t …]
	ddlDropColumn           // ALTER TABLE t DROP [COLUMN] [IF EXISTS] c
	ddlRenameColumn         // ALTER TABLE t RENAME COLUMN a TO b
)

func (k ddlKind) String() string {
	return [...]string{"none", "truncate", "drop table", "drop column", "rename column"}[k]
}

// ddlAction is a parsed schema change.
type ddlAction struct {
	kind   ddlKind
	tables []schema.TableID
	col    string // dropped or renamed column
	newCol string // new name of a renamed column
}

type ddlToken struct {
	text   string
	quoted bool // a `quoted` identifier: never a keyword
	punct  byte // '.', ',', ';' or 0 for identifiers
}

// ddlTokens splits MySQL DDL into identifiers and the punctuation the
// supported forms need. Comments are skipped, except executable ones
// (/*! … */, /*M! … */) whose content the server runs. Anything else (a
// string literal, parentheses, an operator) makes the statement
// unsupported: ok is false.
func ddlTokens(q string) (toks []ddlToken, ok bool) {
	i := 0
	for i < len(q) {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			if strings.HasPrefix(q[i:], "/*!") || strings.HasPrefix(q[i:], "/*M!") {
				return nil, false
			}
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return nil, false
			}
			i += 2 + end + 2
		case c == '#' || (c == '-' && strings.HasPrefix(q[i:], "-- ")):
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				i = len(q)
			} else {
				i += end + 1
			}
		case c == '`':
			var b strings.Builder
			i++
			for {
				if i >= len(q) {
					return nil, false
				}
				if q[i] == '`' {
					if i+1 < len(q) && q[i+1] == '`' {
						b.WriteByte('`')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(q[i])
				i++
			}
			if b.Len() == 0 {
				return nil, false
			}
			toks = append(toks, ddlToken{text: b.String(), quoted: true})
		case c == '.' || c == ',' || c == ';':
			toks = append(toks, ddlToken{punct: c})
			i++
		case c == '_' || c == '$' || c >= 0x80 || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z'):
			start := i
			for i < len(q) {
				c = q[i]
				if c == '_' || c == '$' || c >= 0x80 || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z') {
					i++
					continue
				}
				break
			}
			toks = append(toks, ddlToken{text: q[start:i]})
		default:
			return nil, false
		}
		if len(toks) > 4096 {
			return nil, false
		}
	}
	return toks, true
}

type ddlParser struct {
	toks []ddlToken
	pos  int
}

func (p *ddlParser) peekWord(w string) bool {
	if p.pos >= len(p.toks) {
		return false
	}
	t := p.toks[p.pos]
	return t.punct == 0 && !t.quoted && strings.EqualFold(t.text, w)
}

func (p *ddlParser) word(w string) bool {
	if p.peekWord(w) {
		p.pos++
		return true
	}
	return false
}

func (p *ddlParser) punct(c byte) bool {
	if p.pos < len(p.toks) && p.toks[p.pos].punct == c {
		p.pos++
		return true
	}
	return false
}

// ident takes one identifier (quoted or bare).
func (p *ddlParser) ident() (string, bool) {
	if p.pos >= len(p.toks) || p.toks[p.pos].punct != 0 {
		return "", false
	}
	t := p.toks[p.pos]
	p.pos++
	return t.text, true
}

// tableName takes [db.]table, filling in db.
func (p *ddlParser) tableName(db string) (schema.TableID, bool) {
	a, ok := p.ident()
	if !ok {
		return schema.TableID{}, false
	}
	if p.punct('.') {
		b, ok := p.ident()
		if !ok {
			return schema.TableID{}, false
		}
		return schema.TableID{Database: a, Table: b}, true
	}
	if db == "" {
		return schema.TableID{}, false
	}
	return schema.TableID{Database: db, Table: a}, true
}

// end accepts an optional ';' and then nothing.
func (p *ddlParser) end() bool {
	p.punct(';')
	return p.pos == len(p.toks)
}

// Words after DROP that name something other than a column.
var dropNotColumn = map[string]bool{"PRIMARY": true, "INDEX": true, "KEY": true, "FOREIGN": true, "CONSTRAINT": true,
	"CHECK": true, "PARTITION": true, "SYSTEM": true, "PERIOD": true, "DEFAULT": true}

// parseDDL recognises the forms the sink applies; db is the session's
// database, for unqualified names. ok is false for anything else, which the
// caller logs and ignores (ALTER TABLE … ADD COLUMN among them: AutoEvolve
// adds the column when a record carries it).
func parseDDL(q, db string) (ddlAction, bool) {
	toks, ok := ddlTokens(q)
	if !ok || len(toks) == 0 {
		return ddlAction{}, false
	}
	p := &ddlParser{toks: toks}
	switch {
	case p.word("TRUNCATE"):
		p.word("TABLE")
		t, ok := p.tableName(db)
		if !ok || !p.end() {
			return ddlAction{}, false
		}
		return ddlAction{kind: ddlTruncate, tables: []schema.TableID{t}}, true
	case p.word("DROP"):
		if !p.word("TABLE") {
			return ddlAction{}, false // DROP TEMPORARY TABLE, DROP DATABASE, DROP INDEX …
		}
		if p.word("IF") && !p.word("EXISTS") {
			return ddlAction{}, false
		}
		a := ddlAction{kind: ddlDropTable}
		for {
			t, ok := p.tableName(db)
			if !ok {
				return ddlAction{}, false
			}
			a.tables = append(a.tables, t)
			if !p.punct(',') {
				break
			}
		}
		if !p.word("RESTRICT") {
			p.word("CASCADE")
		}
		if !p.end() {
			return ddlAction{}, false
		}
		return a, true
	case p.word("ALTER"):
		p.word("ONLINE")
		p.word("IGNORE")
		if !p.word("TABLE") {
			return ddlAction{}, false
		}
		if p.word("IF") && !p.word("EXISTS") {
			return ddlAction{}, false
		}
		t, ok := p.tableName(db)
		if !ok {
			return ddlAction{}, false
		}
		switch {
		case p.word("DROP"):
			explicit := p.word("COLUMN")
			if p.word("IF") && !p.word("EXISTS") {
				return ddlAction{}, false
			}
			if !explicit && p.pos < len(p.toks) && !p.toks[p.pos].quoted && dropNotColumn[strings.ToUpper(p.toks[p.pos].text)] {
				return ddlAction{}, false
			}
			c, ok := p.ident()
			if !ok {
				return ddlAction{}, false
			}
			if !p.word("RESTRICT") {
				p.word("CASCADE")
			}
			if !p.end() {
				return ddlAction{}, false
			}
			return ddlAction{kind: ddlDropColumn, tables: []schema.TableID{t}, col: c}, true
		case p.word("RENAME"):
			if !p.word("COLUMN") {
				return ddlAction{}, false // RENAME TO, RENAME INDEX …
			}
			a, ok1 := p.ident()
			to := p.word("TO")
			b, ok2 := p.ident()
			if !ok1 || !to || !ok2 || !p.end() {
				return ddlAction{}, false
			}
			return ddlAction{kind: ddlRenameColumn, tables: []schema.TableID{t}, col: a, newCol: b}, true
		}
	}
	return ddlAction{}, false
}

// describeDDL names a schema-change record for logs and errors, with the
// statement cut to a readable length.
func describeDDL(r *schema.Record) string {
	if r.Change == nil {
		return "schema change without DDL on " + r.Table.String()
	}
	q := r.Change.DDL
	if len(q) > 200 {
		q = q[:200] + "…"
	}
	return fmt.Sprintf("schema change %s on database %q: %q", r.Change.Kind, r.Table.Database, q)
}

// ddlStatement is one statement a schema change runs on the target.
type ddlStatement struct {
	sql   string
	inTx  bool // transactional on this dialect (PostgreSQL DDL, MySQL DELETE)
	ok    func(err error) bool
	table target
}

// applySchemaChange applies one schema-change record (SchemaChanges
// "apply") and saves its progress. On PostgreSQL the statements and the
// progress commit together; on MySQL the DDL commits on its own first, and
// every statement is written to be harmless when repeated (the record is
// redelivered if the progress did not commit).
func (s *Sink) applySchemaChange(ctx context.Context, r *schema.Record) error {
	maxOff := offsetsOf([]schema.Record{*r})
	var changed []target
	err := s.inTx(ctx, func(tx *txn) error {
		var err error
		if changed, err = s.schemaChangeIn(ctx, tx, r); err != nil {
			return err
		}
		return s.saveProgress(ctx, tx, maxOff)
	})
	s.forgetTargets(changed)
	if err != nil {
		s.forgetProgress(maxOff)
		return err
	}
	s.noteProgress(maxOff)
	return nil
}

// schemaChangeIn applies one schema-change (or, for a barrier, TRUNCATE)
// record: on PostgreSQL inside tx, on MySQL the DDL on a connection of its
// own first (it commits implicitly) and what is transactional inside tx.
// Every statement is harmless when repeated. It returns the tables changed,
// whose cached metadata the caller drops once tx has ended.
func (s *Sink) schemaChangeIn(ctx context.Context, tx *txn, r *schema.Record) ([]target, error) {
	var a ddlAction
	ok := false
	switch {
	case r.Op == schema.OpTruncate:
		a, ok = ddlAction{kind: ddlTruncate, tables: []schema.TableID{r.Table}}, true
	case r.Change != nil:
		a, ok = parseDDL(r.Change.DDL, r.Table.Database)
	}
	var stmts []ddlStatement
	if !ok {
		s.log.Info("schema change not applied: only TRUNCATE, DROP TABLE and ALTER TABLE … DROP COLUMN / RENAME COLUMN are (added columns arrive through auto_evolve)", "ddl", describeDDL(r))
	} else {
		var err error
		if stmts, err = s.ddlStatements(ctx, a); err != nil {
			return nil, err
		}
	}
	var changed []target
	for _, st := range stmts {
		changed = append(changed, st.table)
	}
	s.forgetTargets(changed)
	_, pg := s.d.(postgres)
	for _, st := range stmts {
		if st.inTx || pg {
			continue
		}
		if _, err := s.db.ExecContext(ctx, st.sql); err != nil && (st.ok == nil || !st.ok(err)) {
			return changed, fmt.Errorf("sink: apply %s to %s: %w", a.kind, st.table, wrapDB(err))
		}
	}
	for _, st := range stmts {
		if !st.inTx && !pg {
			continue
		}
		if _, err := tx.ExecContext(ctx, st.sql); err != nil {
			return changed, fmt.Errorf("sink: apply %s to %s: %w", a.kind, st.table, wrapDB(err))
		}
	}
	if len(stmts) > 0 && r.Op == schema.OpSchemaChange {
		s.log.Info("applied schema change", "action", a.kind.String(), "ddl", describeDDL(r))
	}
	return changed, nil
}

// forgetTargets drops the cached metadata of ts.
func (s *Sink) forgetTargets(ts []target) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range ts {
		delete(s.tables, t)
	}
}

// ddlStatements turns a parsed change into statements on the target,
// looking at the target's current columns so that a repeated change is a
// no-op: a missing table or column is skipped, a rename already done is
// not redone.
func (s *Sink) ddlStatements(ctx context.Context, a ddlAction) ([]ddlStatement, error) {
	_, pg := s.d.(postgres)
	var out []ddlStatement
	for _, id := range a.tables {
		t := s.cfg.target(id)
		if s.checkIdent("table", t.Table) != nil || (t.Schema != "" && s.checkIdent("schema", t.Schema) != nil) {
			s.log.Warn("schema change names a table the target cannot have; ignored", "table", t.String())
			continue
		}
		m, err := s.loadMeta(ctx, t)
		if err != nil {
			return nil, err
		}
		if m == nil {
			continue // nothing to truncate, drop or alter
		}
		q := qualified(s.d, t)
		switch a.kind {
		case ddlTruncate:
			out = append(out, ddlStatement{sql: s.d.truncate(t), inTx: true, table: t})
		case ddlDropTable:
			out = append(out, ddlStatement{sql: "DROP TABLE IF EXISTS " + q, table: t})
		case ddlDropColumn:
			if _, has := m.cols[s.fold(a.col)]; !has {
				continue
			}
			st := ddlStatement{sql: "ALTER TABLE " + q + " DROP COLUMN " + s.d.quote(a.col), table: t}
			if pg {
				st.sql = "ALTER TABLE " + q + " DROP COLUMN IF EXISTS " + s.d.quote(a.col)
			} else {
				st.ok = func(err error) bool { return mysqlErrno(err) == 1091 } // already gone
			}
			out = append(out, st)
		case ddlRenameColumn:
			_, hasOld := m.cols[s.fold(a.col)]
			_, hasNew := m.cols[s.fold(a.newCol)]
			if s.checkIdent("column", a.newCol) != nil {
				s.log.Warn("rename column not applied: the new name does not fit the target", "table", t.String(), "to", a.newCol)
				continue
			}
			if !hasOld || hasNew {
				if hasOld && hasNew {
					s.log.Warn("rename column not applied: the target already has both columns", "table", t.String(), "from", a.col, "to", a.newCol)
				}
				continue
			}
			out = append(out, ddlStatement{sql: "ALTER TABLE " + q + " RENAME COLUMN " + s.d.quote(a.col) + " TO " + s.d.quote(a.newCol), table: t})
		}
	}
	return out, nil
}

func mysqlErrno(err error) uint16 {
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
