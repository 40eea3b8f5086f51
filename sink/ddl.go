package sink

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// Schema changes the sink applies (Config.SchemaChanges = "apply") come as
// structure (schema.SchemaChange.Tables), read by the source's DDL parser:
// the sink never parses a source's SQL. The statements it runs are built
// from identifiers, quoted, and from literals it renders itself.

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
	what  string // for logs and errors: "add column", "rename table" …
	sql   string
	inTx  bool // transactional on this dialect (PostgreSQL DDL, MySQL DELETE)
	ok    func(err error) bool
	table target
	also  target // a second table the statement changes (rename)
	alone bool   // run outside the transaction on every dialect (CREATE, which may race AutoCreate)
}

// schemaChangeIn applies one schema-change (or, for a barrier, TRUNCATE)
// record from its structure: on PostgreSQL inside tx, on MySQL the DDL on a
// connection of its own first (it commits implicitly) and what is
// transactional inside tx; CREATE (which may race AutoCreate) runs alone on
// both. Every statement is harmless when repeated. It returns the tables
// changed, whose cached metadata the caller drops once tx has ended.
func (cat *catalog) schemaChangeIn(ctx context.Context, tx *txn, r *schema.Record) ([]target, error) {
	var stmts []ddlStatement
	switch {
	case r.Op == schema.OpTruncate:
		t := cat.cfg.target(r.Table)
		m, err := cat.loadMeta(ctx, t)
		if err != nil {
			return nil, err
		}
		if m != nil {
			stmts = append(stmts, ddlStatement{what: "truncate", sql: cat.d.Truncate(t), inTx: true, table: t})
		}
	case r.Change == nil || len(r.Change.Tables) == 0:
		cat.log.Info("schema change not applied: it carries no table change (an index, a view, or a statement the source left out)", "ddl", describeDDL(r))
	default:
		var err error
		if stmts, err = cat.ddlStatements(ctx, r.Change.Tables); err != nil {
			return nil, err
		}
	}
	var changed []target
	for _, st := range stmts {
		changed = append(changed, st.table)
		if st.also != (target{}) {
			changed = append(changed, st.also)
		}
	}
	cat.forgetTargets(changed)
	if err := cat.unregisterTables(ctx, droppedBy(cat.cfg.target, r)); err != nil {
		return nil, err
	}
	txDDL := cat.d.TransactionalDDL()
	for _, st := range stmts {
		if !st.alone && (st.inTx || txDDL) {
			continue
		}
		if _, err := cat.db.ExecContext(ctx, st.sql); err != nil && (st.ok == nil || !st.ok(err)) {
			return changed, fmt.Errorf("sink: apply %s to %s: %w", st.what, st.table, wrapDB(err))
		}
	}
	for _, st := range stmts {
		if st.alone || !st.inTx && !txDDL {
			continue
		}
		if _, err := tx.ExecContext(ctx, st.sql); err != nil {
			return changed, fmt.Errorf("sink: apply %s to %s: %w", st.what, st.table, wrapDB(err))
		}
	}
	// The identities the sink's own TRUNCATE and DDL gave the tables:
	// with the DDL's transaction where it has one, else at once.
	var ex execer = cat.db
	if txDDL {
		ex = tx
	}
	if err := cat.recordIdentities(ctx, ex, changed); err != nil {
		return changed, err
	}
	if r.Op == schema.OpSchemaChange {
		for _, st := range stmts {
			cat.log.Info("applied schema change", "action", st.what, "table", st.table.String(), "ddl", describeDDL(r))
		}
	}
	return changed, nil
}

// droppedBy lists the target tables a schema change drops or renames away
// (also when the target lacks them: the source's table is gone).
func droppedBy(mapping func(schema.TableID) target, r *schema.Record) []target {
	if r.Op != schema.OpSchemaChange || r.Change == nil {
		return nil
	}
	var out []target
	for _, c := range r.Change.Tables {
		if c.Kind == schema.DropTable || c.Kind == schema.RenameTable || (c.Kind == schema.CreateTable && c.OrReplace) {
			out = append(out, mapping(c.Table))
		}
	}
	return out
}

// forgetTargets drops the cached metadata of ts.
func (cat *catalog) forgetTargets(ts []target) {
	cat.mu.Lock()
	defer cat.mu.Unlock()
	for _, t := range ts {
		delete(cat.tables, t)
	}
}

// targetTable is what ddlStatements knows of a target table while it
// plans: its columns (folded names), nil when it does not exist.
type targetTable struct {
	cols map[string]colInfo
}

// ddlStatements turns structured changes into statements on the target,
// looking at the target's current tables and columns (and at what the
// statements before do to them) so that a repeated change is a no-op: a
// missing table or column is skipped, a rename already done is not redone.
func (cat *catalog) ddlStatements(ctx context.Context, changes []schema.TableChange) ([]ddlStatement, error) {
	known := map[target]*targetTable{}
	look := func(t target) (*targetTable, error) {
		if tt, ok := known[t]; ok {
			return tt, nil
		}
		m, err := cat.loadMeta(ctx, t)
		if err != nil {
			return nil, err
		}
		var tt *targetTable
		if m != nil {
			tt = &targetTable{cols: m.cols}
		}
		known[t] = tt
		return tt, nil
	}
	valid := func(t target) bool {
		if cat.checkIdent("table", t.Table) != nil || (t.Schema != "" && cat.checkIdent("schema", t.Schema) != nil) {
			cat.log.Warn("schema change names a table the target cannot have; ignored", "table", t.String())
			return false
		}
		return true
	}
	var out []ddlStatement
	for _, c := range changes {
		t := cat.cfg.target(c.Table)
		if !valid(t) {
			continue
		}
		tt, err := look(t)
		if err != nil {
			return nil, err
		}
		q := qualified(cat.d, t)
		switch c.Kind {
		case schema.DropTable:
			if tt != nil {
				out = append(out, ddlStatement{what: "drop table", sql: "DROP TABLE IF EXISTS " + q, table: t})
				known[t] = nil
			}
		case schema.CreateTable:
			if tt != nil && c.OrReplace {
				out = append(out, ddlStatement{what: "drop table", sql: "DROP TABLE IF EXISTS " + q, table: t})
				tt, known[t] = nil, nil
			}
			if tt != nil {
				continue // it exists already (IF NOT EXISTS, or a redelivery)
			}
			st, cols, ok := cat.createFromChange(t, c)
			if ok {
				out = append(out, st...)
				known[t] = &targetTable{cols: cols}
			}
		case schema.RenameTable:
			to := cat.cfg.target(c.NewTable)
			if !valid(to) || to == t {
				continue
			}
			dst, err := look(to)
			if err != nil {
				return nil, err
			}
			if tt == nil || dst != nil {
				if tt != nil {
					cat.log.Warn("rename table not applied: the target already has both tables", "from", t.String(), "to", to.String())
				}
				continue
			}
			for _, q := range cat.d.RenameTable(t, to) {
				out = append(out, ddlStatement{what: "rename table", sql: q, table: t, also: to,
					ok: func(err error) bool { return errIs(err, dialect.CondUndefinedTable) || errIs(err, dialect.CondExists) }})
			}
			known[to], known[t] = tt, nil
		case schema.AlterTable:
			if tt == nil {
				continue // nothing to alter: records arriving later create it
			}
			for _, cc := range c.Columns {
				if st, ok := cat.columnStatement(t, tt, cc); ok {
					out = append(out, st...)
				}
			}
			if c.DropPrimaryKey || c.PrimaryKey != nil {
				cat.log.Warn("primary key change not applied to the target: change its key by hand if it must follow", "table", t.String(), "key", strings.Join(c.PrimaryKey, ","))
			}
		}
	}
	return out, nil
}

// createFromChange builds CREATE TABLE from a table's structure. A change
// without its columns (CREATE TABLE … LIKE without a schema history) is
// left to AutoCreate, at the table's first record.
func (cat *catalog) createFromChange(t target, c schema.TableChange) ([]ddlStatement, map[string]colInfo, bool) {
	var defs []schema.ColumnDef
	keys := c.PrimaryKey
	if c.Shape != nil {
		defs, keys = c.Shape.Columns, c.Shape.PrimaryKey
	} else {
		for _, cc := range c.Columns {
			if cc.Kind == schema.AddColumn && cc.Column != nil {
				defs = append(defs, *cc.Column)
			}
		}
	}
	if len(defs) == 0 {
		cat.log.Info("create table not applied: the change lists no columns; the table is created with its first record (AutoCreate)", "table", t.String())
		return nil, nil, false
	}
	cols := make([]colDef, 0, len(defs))
	infos := map[string]colInfo{}
	for _, d := range defs {
		key := isKey(keys, d.Name)
		cd, ok := cat.columnFromDef(t, d, key)
		if !ok {
			return nil, nil, false
		}
		cols = append(cols, cd)
		infos[cat.fold(d.Name)] = colInfo{Type: cd.Type}
	}
	var out []ddlStatement
	if t.Schema != "" {
		out = append(out, ddlStatement{what: "create schema", sql: cat.d.CreateSchema(t.Schema), table: t, alone: true, ok: concurrentCreate})
	}
	out = append(out, ddlStatement{what: "create table", sql: cat.d.CreateTable(t, cols, keys), table: t, alone: true, ok: concurrentCreate})
	return out, infos, true
}

// columnFromDef maps a column definition to the target: its type as
// AutoEvolve would give it, NOT NULL only for key columns or with a
// default (older target rows must be able to hold it), the default (for a
// NOT NULL column without one, its implicit value: what older rows read
// on the source).
func (cat *catalog) columnFromDef(t target, d schema.ColumnDef, key bool) (colDef, bool) {
	if cat.checkIdent("column", d.Name) != nil || d.Type == nil {
		cat.log.Warn("schema change names a column the target cannot have; ignored", "table", t.String(), "column", d.Name)
		return colDef{}, false
	}
	f := schema.Field{Name: d.Name, Schema: d.Type}
	typ, err := cat.d.ColumnType(d.Name, d.Type, key)
	if err != nil {
		cat.log.Warn("schema change not applied: no target type for the column", "table", t.String(), "column", d.Name, "error", err.Error())
		return colDef{}, false
	}
	check, err := cat.enumCheck(f)
	if err != nil {
		cat.log.Warn("schema change not applied: no CHECK for the column", "table", t.String(), "column", d.Name, "error", err.Error())
		return colDef{}, false
	}
	cd := colDef{Name: d.Name, Type: typ + cat.collate(typ, d.Type, key), NotNull: key, Check: check}
	def, implicit := addedDefault(d, key)
	withDef := d
	withDef.Default = def
	if lit, ok := cat.defaultLiteral(withDef, typ); ok {
		cd.Default = lit
		// MySQL's TIMESTAMP type is written "… NULL" (no implicit default)
		cd.NotNull = cd.NotNull || !d.Type.Optional && !strings.HasSuffix(typ, " NULL")
	} else if def != nil {
		what := "column default not applied: the target has no equivalent"
		if implicit {
			what = "column added without the value older rows read on the source (NOT NULL without DEFAULT): older target rows hold NULL"
		}
		cat.log.Warn(what, "table", t.String(), "column", d.Name, "default", def.Value)
	}
	return cd, true
}

// warnGenerated says that a generated column becomes a plain column whose
// older target rows hold NULL where the source computes a value: the
// sink does not evaluate the source's expression.
func (cat *catalog) warnGenerated(t target, col string) {
	cat.log.Warn("generated column added as a plain column: rows written before it hold NULL in the target where the source computes a value; new and changed rows carry the value. Fill the older rows by hand (UPDATE with the column's expression) or snapshot the table again",
		"table", t.String(), "column", col)
}

// columnStatement plans one column change on an existing target table.
func (cat *catalog) columnStatement(t target, tt *targetTable, cc schema.ColumnChange) ([]ddlStatement, bool) {
	q := qualified(cat.d, t)
	cur, has := tt.cols[cat.fold(cc.Name)]
	switch cc.Kind {
	case schema.AddColumn:
		if cc.Column == nil {
			return nil, false
		}
		d := *cc.Column
		d.Name = cc.Name
		if has { // added already (redelivery, or AutoEvolve); a generated column's values are computed again
			if fill, ok := cat.fillGenerated(t, tt, d); ok {
				return []ddlStatement{fill}, true
			}
			return nil, false
		}
		cd, ok := cat.columnFromDef(t, d, false)
		if !ok {
			return nil, false
		}
		st := ddlStatement{what: "add column", sql: cat.d.AddColumn(t, cd), table: t,
			ok: func(err error) bool { return errIs(err, dialect.CondColumnExists) }} // added already
		tt.cols[cat.fold(cc.Name)] = colInfo{Type: cd.Type}
		if fill, ok := cat.fillGenerated(t, tt, d); ok {
			return []ddlStatement{st, fill}, true
		} else if d.Generated {
			cat.warnGenerated(t, d.Name)
		}
		return []ddlStatement{st}, true
	case schema.DropColumn:
		if !has {
			return nil, false
		}
		st := ddlStatement{what: "drop column", sql: cat.d.DropColumn(t, cc.Name), table: t,
			ok: func(err error) bool { return errIs(err, dialect.CondUndefinedColumn) }} // already gone
		delete(tt.cols, cat.fold(cc.Name))
		return []ddlStatement{st}, true
	case schema.RenameColumn, schema.ModifyColumn:
		var out []ddlStatement
		name := cc.Name
		if cc.NewName != "" && cat.fold(cc.NewName) != cat.fold(cc.Name) {
			_, hasNew := tt.cols[cat.fold(cc.NewName)]
			switch {
			case cat.checkIdent("column", cc.NewName) != nil:
				cat.log.Warn("rename column not applied: the new name does not fit the target", "table", t.String(), "to", cc.NewName)
				return nil, false
			case has && hasNew:
				cat.log.Warn("rename column not applied: the target already has both columns", "table", t.String(), "from", cc.Name, "to", cc.NewName)
				return nil, false
			case has:
				out = append(out, ddlStatement{what: "rename column", sql: "ALTER TABLE " + q + " RENAME COLUMN " + cat.d.Quote(cc.Name) + " TO " + cat.d.Quote(cc.NewName), table: t})
				delete(tt.cols, cat.fold(cc.Name))
				tt.cols[cat.fold(cc.NewName)] = cur
			case !hasNew:
				return nil, false // neither: nothing to rename
			}
			name = cc.NewName
			cur = tt.cols[cat.fold(name)]
			has = true
		}
		if cc.Kind == schema.ModifyColumn && has && cc.Column != nil {
			out = append(out, cat.modifyStatements(t, name, cur, *cc.Column)...)
		}
		return out, len(out) > 0
	case schema.AlterDefault:
		if !has || cc.Column == nil {
			return nil, false
		}
		return []ddlStatement{cat.defaultStatement(t, cc.Name, cur.Type, *cc.Column)}, true
	}
	return nil, false
}

// modifyStatements follows MODIFY/CHANGE: the type when the target's is a
// safe widening of it (as AutoEvolve), nullability relaxed, the default.
func (cat *catalog) modifyStatements(t target, name string, cur colInfo, d schema.ColumnDef) []ddlStatement {
	var out []ddlStatement
	if d.Type != nil {
		if want, err := cat.d.ColumnType(name, d.Type, false); err == nil && cur.Type != "" {
			switch cat.d.Widen(cur.Type, want) {
			case typeWiden:
				if sql, why := cat.d.AlterType(t, name, want, cur); why == "" {
					out = append(out, ddlStatement{what: "modify column", sql: sql, table: t})
				} else {
					cat.warnType(t, name, cur.Type, want, why)
				}
			case typeDiffer:
				cat.warnType(t, name, cur.Type, want, "not a safe widening")
			}
		}
		if d.Type.Optional && cur.NotNull {
			if q, ok := cat.d.DropNotNull(t, name); ok {
				out = append(out, ddlStatement{what: "modify column", sql: q, table: t})
			} else {
				cat.log.Warn("column stays NOT NULL in the target: MODIFY it by hand to follow the source", "table", t.String(), "column", name)
			}
		}
	}
	return append(out, cat.defaultStatement(t, name, cur.Type, d))
}

// defaultStatement sets (or drops) the default of a column of type typ.
func (cat *catalog) defaultStatement(t target, name, typ string, d schema.ColumnDef) ddlStatement {
	q := "ALTER TABLE " + qualified(cat.d, t) + " ALTER COLUMN " + cat.d.Quote(name)
	if lit, ok := cat.defaultLiteral(d, typ); ok {
		return ddlStatement{what: "set default", sql: q + " SET DEFAULT " + lit, table: t}
	}
	return ddlStatement{what: "drop default", sql: q + " DROP DEFAULT", table: t}
}

var (
	numberText   = regexp.MustCompile(`^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$`)
	temporalText = regexp.MustCompile(`^[0-9]{1,6}[-0-9: .]*$`)
)

// defaultLiteral renders a column's default as a literal of the target
// column of type typ, or false when there is none it can write: numbers as
// digits, text, ENUM, SET, JSON and temporal values quoted,
// CURRENT_TIMESTAMP on temporal columns; other expressions and binary
// values are not carried.
func (cat *catalog) defaultLiteral(d schema.ColumnDef, typ string) (string, bool) {
	if d.Default == nil || d.Type == nil {
		return "", false
	}
	v := d.Default.Value
	temporal := d.Type.Logical == schema.Timestamp || d.Type.Logical == schema.ZonedTimestamp || d.Type.Logical == schema.Date || d.Type.Logical == schema.Time
	if d.Default.Expr {
		u := strings.ToUpper(strings.TrimSpace(v))
		stamp := d.Type.Logical == schema.Timestamp || d.Type.Logical == schema.ZonedTimestamp
		if stamp && (strings.HasPrefix(u, "CURRENT_TIMESTAMP") || strings.HasPrefix(u, "NOW(") || strings.HasPrefix(u, "LOCALTIMESTAMP")) {
			return cat.d.CurrentTimestamp(typ), true
		}
		return "", false
	}
	switch {
	case d.Type.Logical == schema.Decimal || d.Type.Logical == schema.Year:
		return v, numberText.MatchString(v)
	case d.Type.Logical == schema.None && d.Type.Type >= schema.Int8 && d.Type.Type <= schema.Float64:
		return v, numberText.MatchString(v)
	case temporal:
		if !temporalText.MatchString(v) || strings.HasPrefix(v, "0000") {
			return "", false
		}
		return "'" + v + "'", true
	case d.Type.Type == schema.String:
		if strings.IndexByte(v, 0) >= 0 {
			return "", false
		}
		return cat.d.StringLiteral(v), true
	}
	return "", false
}
