package sink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// catalog is the sink's picture of its target tables, and what changes
// them: it reads a table's columns, creates and evolves tables as
// configured (AutoCreate, AutoEvolve, schema changes), and keeps the table
// registry that notices a table truncated or dropped behind the sink
// (registry.go). ddlMu serialises creation and evolution; mu guards the
// caches.
type catalog struct {
	backend

	ddlMu sync.Mutex // serialises table creation and evolution
	// typeWarned holds (table, column, current, wanted) already warned
	// about (under ddlMu).
	typeWarned map[string]bool
	// ignoredGen holds the generated columns schema changes add under
	// SchemaChanges "ignore", by genKey, until AutoEvolve adds them and
	// computes them in older rows (under ddlMu).
	ignoredGen map[string]schema.ColumnDef

	mu     sync.Mutex
	tables map[target]*tableMeta
	// registered holds the tables this Sink has listed in the table
	// registry (registry.go).
	registered map[target]bool
	// identityChecked is when each table's identity was last checked
	// against the registry (registry.go), at most every identityEvery.
	identityChecked map[target]time.Time
	identityEvery   time.Duration
}

func newCatalog(b backend) *catalog {
	return &catalog{backend: b, tables: map[target]*tableMeta{}, registered: map[target]bool{},
		identityChecked: map[target]time.Time{}, identityEvery: identityEvery}
}

// prepareTables makes sure every table the plan writes exists and has every
// column its records carry, creating and evolving as configured. DDL runs
// outside the data transaction (MySQL commits implicitly on DDL). It returns
// one view per p.tables; nil means the table is absent and the plan only
// deletes from or truncates it, which is then a no-op.
func (cat *catalog) prepareTables(ctx context.Context, p *plan) ([]*tableView, error) {
	cat.ddlMu.Lock()
	defer cat.ddlMu.Unlock()
	out := make([]*tableView, len(p.tables))
	for i, tp := range p.tables {
		m, err := cat.prepareTable(ctx, tp)
		if err != nil {
			return nil, err
		}
		if m != nil {
			out[i] = m.view
		}
	}
	return out, nil
}

func (tp *tablePlan) writers() []*schema.Record {
	var recs []*schema.Record
	for _, c := range tp.changes {
		if !c.del {
			recs = append(recs, c.rec)
		}
	}
	for _, r := range tp.inserts {
		if r.Op != schema.OpDelete {
			recs = append(recs, r)
		}
	}
	return recs
}

func (cat *catalog) checkIdent(kind, name string) error {
	if name == "" {
		return fatal(fmt.Errorf("%w: empty %s name (check the sink's schema and table templates)", ErrSchema, kind))
	}
	if strings.IndexByte(name, 0) >= 0 {
		return fatal(fmt.Errorf("%w: %s name %q contains a NUL byte", ErrSchema, kind, name))
	}
	if limit, long := cat.d.IdentTooLong(name); long {
		return fatal(fmt.Errorf("%w: %s name %q is longer than %d (the target would truncate it)", ErrSchema, kind, name, limit))
	}
	return nil
}

func (cat *catalog) prepareTable(ctx context.Context, tp *tablePlan) (*tableMeta, error) {
	t := tp.target
	cat.mu.Lock()
	m := cat.tables[t]
	cat.mu.Unlock()
	writers := tp.writers()
	if m == nil {
		if err := cat.checkIdent("table", t.Table); err != nil {
			return nil, err
		}
		if t.Schema != "" {
			if err := cat.checkIdent("schema", t.Schema); err != nil {
				return nil, err
			}
		}
		var err error
		if m, err = cat.loadMeta(ctx, t); err != nil {
			return nil, err
		}
		if m == nil {
			if err := cat.droppedBehind(ctx, t); err != nil {
				return nil, err
			}
			if len(writers) == 0 {
				return nil, nil
			}
			if !cat.cfg.AutoCreate {
				return nil, fatal(fmt.Errorf("%w: table %s does not exist: create it or set auto_create: true in the sink config", ErrSchema, t))
			}
			cat.mu.Lock()
			delete(cat.registered, t) // another sink process may have dropped it and taken it off
			cat.mu.Unlock()
			if err := cat.createTable(ctx, t, writers[0]); err != nil {
				return nil, err
			}
			if m, err = cat.loadMeta(ctx, t); err != nil {
				return nil, err
			}
			if m == nil {
				return nil, fmt.Errorf("sink: table %s still missing after CREATE TABLE", t)
			}
		}
		if err := cat.registerTable(ctx, t); err != nil {
			return nil, err
		}
		cat.mu.Lock()
		cat.tables[t] = m
		cat.mu.Unlock()
	}
	if err := cat.checkKeyCollations(t, m, tp); err != nil {
		return nil, err
	}
	keylessCheck := len(tp.inserts) > 0 && cat.cfg.KeylessMode == KeylessBeforeImage
	if keylessCheck { // the columns there already, before evolving them
		if err := cat.checkKeyless(t, m, tp.inserts); err != nil {
			return nil, err
		}
	}
	for _, r := range writers {
		if m.checked[r.ValueSchema] {
			continue
		}
		if len(m.checked) >= 256 {
			// Decoded records may each carry their own schema pointer:
			// keep the cache bounded.
			clear(m.checked)
		}
		var keyCols []string
		if r.KeySchema != nil {
			keyCols = keyColumns(r)
		}
		changed := false // DDL ran: read the columns again
		for _, f := range r.ValueSchema.Fields {
			if c, ok := m.cols[cat.fold(f.Name)]; ok {
				if cat.cfg.AutoEvolve {
					ch, err := cat.evolveColumn(ctx, t, m, f, isKey(keyCols, f.Name), c)
					if err != nil {
						return nil, err
					}
					changed = changed || ch
				} else if err := cat.timeColumnFits(t, f, c); err != nil {
					return nil, err
				}
				continue
			}
			if !cat.cfg.AutoEvolve {
				return nil, fatal(fmt.Errorf("%w: table %s has no column %q: add it or set auto_evolve: true in the sink config", ErrSchema, t, f.Name))
			}
			if err := cat.checkIdent("column", f.Name); err != nil {
				return nil, err
			}
			typ, err := cat.d.ColumnType(f.Name, f.Schema, false)
			if err != nil {
				return nil, fatal(fmt.Errorf("sink: table %s: %w", t, err))
			}
			c := colDef{Name: f.Name, Type: typ + cat.collate(typ, f.Schema, false)}
			if c.Check, err = cat.enumCheck(f); err != nil {
				return nil, fatal(fmt.Errorf("sink: table %s: %w", t, err))
			}
			if err := cat.addEvolvedColumn(ctx, t, f, typ, c); err != nil {
				return nil, err
			}
			cat.log.Info("added column", "table", t.String(), "column", f.Name, "type", typ)
			m.cols[cat.fold(f.Name)] = colInfo{Type: typ}
			if err := cat.fillIgnoredGenerated(ctx, t, m.cols, f.Name); err != nil {
				return nil, err
			}
			changed = true
		}
		if changed {
			n, err := cat.loadMeta(ctx, t)
			if err != nil {
				return nil, err
			}
			if n == nil {
				return nil, fmt.Errorf("sink: table %s vanished while its columns were changed", t)
			}
			if err := cat.recordIdentity(ctx, cat.db, t, false); err != nil { // a copying ALTER moves it
				return nil, err
			}
			m.cols, m.checks = n.cols, n.checks
			m.refreshView(cat.d.IsArray)
		}
		cat.mu.Lock()
		m.checked[r.ValueSchema] = true
		cat.mu.Unlock()
	}
	if keylessCheck { // and the columns added or changed
		if err := cat.checkKeyless(t, m, tp.inserts); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// checkKeyless refuses a table without key (KeylessMode "before_image")
// that has a column the dialect cannot compare exactly: its updates and
// deletes would miss their row or change another. It runs whenever the
// table is written, before any row of the batch, so the refusal comes with
// the first insert or snapshot row, not at the first update; CheckShapes
// makes the same check at start.
func (cat *catalog) checkKeyless(t target, m *tableMeta, recs []*schema.Record) error {
	var bad, names []string
	var last *schema.Schema
	for _, r := range recs {
		if r.ValueSchema == nil || r.ValueSchema == last || (last != nil && sameNames(r.ValueSchema, names)) {
			continue
		}
		last, names = r.ValueSchema, names[:0]
		for _, f := range r.ValueSchema.Fields {
			names = append(names, f.Name)
			bad = cat.uncomparable(m, f.Name, bad)
		}
	}
	return cat.keylessRefusal(t, bad)
}

// uncomparable appends "name (type)" to bad when the target column name
// exists and the dialect cannot compare its type exactly.
func (cat *catalog) uncomparable(m *tableMeta, name string, bad []string) []string {
	c, ok := m.cols[cat.fold(name)]
	if !ok || cat.d.ExactMatch(c.Type) {
		return bad
	}
	if d := fmt.Sprintf("%s (%s)", name, c.Type); !slices.Contains(bad, d) {
		bad = append(bad, d)
	}
	return bad
}

// keylessRefusal is checkKeyless's fatal error for table t and its
// columns bad; nil when bad is empty.
func (cat *catalog) keylessRefusal(t target, bad []string) error {
	if len(bad) == 0 {
		return nil
	}
	return fatal(fmt.Errorf("%w: table %s has no primary key, and its updates and deletes find their row by comparing every column, but %s cannot compare column %s exactly: add a primary key to the source table, change the target column's type, or set keyless_mode: %s (skip updates and deletes) or %s in the sink config",
		ErrSchema, t, cat.d.Name(), strings.Join(bad, ", "), KeylessAppend, KeylessFail))
}

// checkShapes is CheckShapes.
func (cat *catalog) checkShapes(ctx context.Context, tables []schema.Table) error {
	if cat.cfg.KeylessMode != KeylessBeforeImage {
		return nil
	}
	var errs []error
	for _, tb := range tables {
		if len(tb.PrimaryKey) > 0 {
			continue
		}
		t := cat.cfg.target(tb.ID)
		m, err := cat.loadMeta(ctx, t)
		if err != nil {
			return err
		}
		if m == nil {
			continue
		}
		var bad []string
		for _, c := range tb.Columns {
			bad = cat.uncomparable(m, c.Name, bad)
		}
		if err := cat.keylessRefusal(t, bad); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) <= 1 {
		return errors.Join(errs...)
	}
	return fatal(errors.Join(errs...))
}

// loadMeta reads the table's columns (and, for PostgreSQL with EnumCheck,
// the ENUM CHECK constraints); nil when the table does not exist.
func (cat *catalog) loadMeta(ctx context.Context, t target) (*tableMeta, error) {
	rows, err := cat.db.QueryContext(ctx, cat.d.ColumnsQuery(), t.Schema, t.Table)
	if err != nil {
		return nil, fmt.Errorf("sink: read columns of %s: %w", t, wrapDB(err))
	}
	defer rows.Close()
	m := &tableMeta{cols: map[string]colInfo{}, checked: map[*schema.Schema]bool{}, typed: map[string]bool{}, checks: map[string]enumCheckInfo{}}
	for rows.Next() {
		var name string
		var c colInfo
		var def, extra, charset, collation, comment sql.NullString
		if err := rows.Scan(&name, &c.Type, &c.NotNull, &def, &extra, &charset, &collation, &comment); err != nil {
			return nil, fmt.Errorf("sink: read columns of %s: %w", t, wrapDB(err))
		}
		// MariaDB shows "no default" as the text NULL, MySQL as NULL.
		c.HasDefault = def.Valid && !strings.EqualFold(def.String, "NULL")
		if c.HasDefault {
			c.Default = def.String
		}
		c.Extra, c.Charset, c.Collation, c.Comment = strings.TrimSpace(extra.String), charset.String, collation.String, comment.String != ""
		m.cols[cat.fold(name)] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sink: read columns of %s: %w", t, wrapDB(err))
	}
	if len(m.cols) == 0 {
		return nil, nil
	}
	if q := cat.d.ChecksQuery(); q != "" {
		if err := cat.loadEnumChecks(ctx, q, t, m); err != nil {
			return nil, err
		}
	}
	m.refreshView(cat.d.IsArray)
	return m, nil
}

// loadEnumChecks fills m.checks with the CHECK constraints enumCheck made.
func (cat *catalog) loadEnumChecks(ctx context.Context, query string, t target, m *tableMeta) error {
	rows, err := cat.db.QueryContext(ctx, query, t.Schema, t.Table)
	if err != nil {
		return fmt.Errorf("sink: read CHECK constraints of %s: %w", t, wrapDB(err))
	}
	defer rows.Close()
	for rows.Next() {
		var name, col, def string
		var scs bool
		if err := rows.Scan(&name, &col, &def, &scs); err != nil {
			return fmt.Errorf("sink: read CHECK constraints of %s: %w", t, wrapDB(err))
		}
		labels, ours, ok := cat.d.ParseEnumCheck(name, def, scs)
		if !ours {
			continue
		}
		m.checks[cat.fold(col)] = enumCheckInfo{name: name, labels: labels, ok: ok}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sink: read CHECK constraints of %s: %w", t, wrapDB(err))
	}
	return nil
}

// timeColumnFits refuses, without AutoEvolve, a column the dialect says
// the field's values cannot be written into (TimeAsInterval's INTERVAL
// text into a PostgreSQL TIME column made before the option was set),
// saying what to run.
func (cat *catalog) timeColumnFits(t target, f schema.Field, c colInfo) error {
	return cat.d.ColumnFits(t, f, c.Type)
}

// enumCheck returns the CHECK constraint of a new column for field f
// (PostgreSQL with EnumCheck: ENUM fields whose schema lists the labels).
func (cat *catalog) enumCheck(f schema.Field) (string, error) {
	return cat.d.EnumCheck(f)
}

// evolveColumn compares an existing column with the type field f wants
// (AutoEvolve): a safe widening is applied, anything else is left as it is
// with one warning. With EnumCheck, an ENUM's CHECK follows labels added.
// changed reports DDL run on the table.
func (cat *catalog) evolveColumn(ctx context.Context, t target, m *tableMeta, f schema.Field, key bool, c colInfo) (changed bool, err error) {
	want, err := cat.d.ColumnType(f.Name, f.Schema, key)
	if err != nil {
		return false, nil // no type to compare with; the writes report what does not fit
	}
	col := cat.fold(f.Name)
	seen := col + "\x00" + c.Type + "\x00" + want
	if !m.typed[seen] {
		if len(m.typed) >= 1024 {
			clear(m.typed)
		}
		if changed, err = cat.widenColumn(ctx, t, f.Name, c, want); err != nil {
			return false, err
		}
		m.typed[seen] = true
	}
	if f.Schema.Logical != schema.Enum {
		return changed, nil
	}
	seen = col + "\x00enum\x00" + f.Schema.Param(schema.ParamSourceType) + "\x00" + f.Schema.Param(schema.ParamAllowed)
	if m.typed[seen] {
		return changed, nil
	}
	ch, err := cat.evolveEnumCheck(ctx, t, m, f)
	if err != nil {
		return false, err
	}
	m.typed[seen] = true
	return changed || ch, nil
}

// widenColumn alters column name from c's type to want when that is a safe
// widening; changed reports that it did.
func (cat *catalog) widenColumn(ctx context.Context, t target, name string, c colInfo, want string) (changed bool, err error) {
	switch cat.d.Widen(c.Type, want) {
	case typeSame, typeKeep:
		return false, nil
	case typeDiffer:
		cat.warnType(t, name, c.Type, want, "not a safe widening")
		return false, nil
	}
	q, why := cat.d.AlterType(t, name, want, c)
	if why != "" {
		cat.warnType(t, name, c.Type, want, why)
		return false, nil
	}
	if err := cat.ddl(ctx, q); err != nil {
		if isFatal(err) {
			cat.warnType(t, name, c.Type, want, "the target refused: "+err.Error())
			return false, nil
		}
		return false, fmt.Errorf("sink: widen column %q of %s to %s: %w", name, t, want, err)
	}
	cat.log.Info("widened column", "table", t.String(), "column", name, "from", c.Type, "to", want)
	return true, nil
}

// ddl runs a statement that changes a table for AutoEvolve. The error is
// fatal when the server refused it for good (a view depends on the
// column, a value does not fit, …): retrying the Write would not help;
// else retriable.
func (cat *catalog) ddl(ctx context.Context, q string) error {
	_, err := cat.db.ExecContext(ctx, q)
	if err == nil {
		return nil
	}
	return classifyDB(err, !retriableDDL(err) && ctx.Err() == nil)
}

// warnType logs once per (table, column, current, wanted) that a column
// keeps a type other than the one records want.
func (cat *catalog) warnType(t target, col, cur, want, why string) {
	k := strings.Join([]string{t.String(), col, cur, want}, "\x00")
	if cat.typeWarned[k] {
		return
	}
	if cat.typeWarned == nil {
		cat.typeWarned = map[string]bool{}
	}
	cat.typeWarned[k] = true
	cat.log.Warn("column type not changed: alter the target column by hand if its values need the wanted type",
		"table", t.String(), "column", col, "current", cur, "wanted", want, "reason", why)
}

// evolveEnumCheck replaces the CHECK of an ENUM column (PostgreSQL with
// EnumCheck) when the record's labels add to the constraint's; changed
// reports that it did.
func (cat *catalog) evolveEnumCheck(ctx context.Context, t target, m *tableMeta, f schema.Field) (changed bool, err error) {
	cur, has := m.checks[cat.fold(f.Name)]
	if !has {
		return false, nil // no constraint of ours: the column is the operator's
	}
	labels := cat.d.EnumCheckLabels(f.Schema)
	if labels == nil {
		return false, nil
	}
	old := strings.Join(cur.labels, ",")
	if cur.ok && sameLabels(cur.labels, labels) {
		return false, nil
	}
	wantText := "CHECK IN (" + strings.Join(labels, ",") + ")"
	curText := "CHECK IN (" + old + ")"
	if !cur.ok {
		curText = "CHECK " + cur.name + " (not one sluice writes)"
	}
	if !cur.ok || !addsLabels(cur.labels, labels) {
		cat.warnType(t, f.Name, curText, wantText, "ENUM labels removed or the constraint changed by hand")
		return false, nil
	}
	q, err := cat.d.AlterEnumCheck(t, f.Name, cur.name, labels)
	if err != nil {
		return false, fatal(fmt.Errorf("sink: table %s: %w", t, err))
	}
	if err := cat.ddl(ctx, q); err != nil {
		if isFatal(err) {
			cat.warnType(t, f.Name, curText, wantText, "the target refused: "+err.Error())
			return false, nil
		}
		return false, fmt.Errorf("sink: replace CHECK of column %q of %s: %w", f.Name, t, err)
	}
	cat.log.Info("ENUM labels added to the column's CHECK", "table", t.String(), "column", f.Name, "from", old, "to", strings.Join(labels, ","))
	return true, nil
}

// sameLabels reports the same set of labels.
func sameLabels(a, b []string) bool { return containsAll(a, b) && containsAll(b, a) }

// addsLabels reports whether want holds every label of cur and more.
func addsLabels(cur, want []string) bool {
	return containsAll(want, cur) && !containsAll(cur, want)
}

func containsAll(set, sub []string) bool {
	have := make(map[string]bool, len(set))
	for _, l := range set {
		have[l] = true
	}
	for _, l := range sub {
		if !have[l] {
			return false
		}
	}
	return true
}

// retriableDDL reports DDL errors worth retrying the Write for: no answer
// from the server, or a lock conflict. Other refusals (a view depends on
// the column, a value does not fit) stay until someone acts.
func retriableDDL(err error) bool {
	info := explainErr(err)
	return !info.Driver || info.Class == schema.ClassRetriable
}

// concurrentCreate reports that CREATE TABLE IF NOT EXISTS lost a race with
// another session creating the same table (PostgreSQL reports it as a
// unique violation in its catalog): the table exists, which is the goal.
func concurrentCreate(err error) bool { return errIs(err, dialect.CondExists) }

// createTable creates t from the schemas of r: all columns nullable except
// the primary key, whose columns are NOT NULL.
func (cat *catalog) createTable(ctx context.Context, t target, r *schema.Record) error {
	var keyCols []string
	if r.KeySchema != nil {
		keyCols = keyColumns(r)
	}
	cols := make([]colDef, 0, len(r.ValueSchema.Fields))
	// Each default on its own, should CREATE TABLE with them be refused.
	type setDefault struct {
		column string
		st     ddlStatement
	}
	var setDefaults []setDefault
	for _, f := range r.ValueSchema.Fields {
		if err := cat.checkIdent("column", f.Name); err != nil {
			return err
		}
		key := isKey(keyCols, f.Name)
		typ, err := cat.d.ColumnType(f.Name, f.Schema, key)
		if err != nil {
			return fatal(fmt.Errorf("sink: create table %s: %w", t, err))
		}
		check, err := cat.enumCheck(f)
		if err != nil {
			return fatal(fmt.Errorf("sink: create table %s: %w", t, err))
		}
		c := colDef{Name: f.Name, Type: typ + cat.collate(typ, f.Schema, key), NotNull: key, Check: check}
		if !key {
			// Rows of this table that reach the sink later with an older
			// schema (from another queue, or replayed) lack the columns
			// added since; on the source they read the column's default,
			// and so they do here.
			def := schema.ColumnDef{Name: f.Name, Type: f.Schema, Default: fieldDefault(f)}
			if lit, ok := cat.defaultLiteral(def, typ); ok {
				c.Default = lit
				setDefaults = append(setDefaults, setDefault{f.Name, cat.defaultStatement(t, f.Name, typ, def)})
			}
		}
		cols = append(cols, c)
	}
	for _, k := range keyCols {
		if r.ValueSchema.FieldIndex(k) < 0 {
			return fatal(fmt.Errorf("%w: create table %s: key column %q is not a column", ErrSchema, t, k))
		}
	}
	if t.Schema != "" {
		if _, err := cat.db.ExecContext(ctx, cat.d.CreateSchema(t.Schema)); err != nil {
			return fmt.Errorf("sink: create schema %q: %w", t.Schema, wrapDB(err))
		}
	}
	q := cat.d.CreateTable(t, cols, keyCols)
	_, err := cat.db.ExecContext(ctx, q)
	if err != nil && !concurrentCreate(err) && !retriableDDL(err) && ctx.Err() == nil && len(setDefaults) > 0 {
		// A default the target refuses (MySQL takes none on some types):
		// the table without defaults, then each default on its own.
		plain := slices.Clone(cols)
		for i := range plain {
			plain[i].Default = ""
		}
		if _, err = cat.db.ExecContext(ctx, cat.d.CreateTable(t, plain, keyCols)); err == nil {
			for _, sd := range setDefaults {
				if _, err := cat.db.ExecContext(ctx, sd.st.sql); err != nil {
					if ctx.Err() != nil {
						return fmt.Errorf("sink: create table %s: %w", t, wrapDB(err))
					}
					cat.log.Warn("column created without the default older rows read on the source: the target refused it; rows that reach the table with an older schema hold NULL there",
						"table", t.String(), "column", sd.column, "reason", err.Error())
				}
			}
		}
	}
	if err != nil && !concurrentCreate(err) {
		return fmt.Errorf("sink: create table %s: %w", t, wrapDB(err))
	}
	cat.log.Info("created table", "table", t.String(), "columns", len(cols), "key", strings.Join(keyCols, ","))
	return nil
}

// tableMeta is the sink's picture of a target table, read and changed under
// ddlMu.
type tableMeta struct {
	cols    map[string]colInfo // column name (lower-cased where the dialect folds case) -> column
	checked map[*schema.Schema]bool
	// typed holds (column, current type, wanted type) already compared,
	// and the ENUM labels already compared with a column's CHECK.
	typed map[string]bool
	// checks: PostgreSQL with EnumCheck, the ENUM CHECK constraint of a
	// column (by folded name), as the sink names them.
	checks map[string]enumCheckInfo
	view   *tableView // rebuilt whenever cols change; never modified
}

// enumCheckInfo is an ENUM column's CHECK constraint: its name and labels
// (ok false when its definition is not one the sink writes).
type enumCheckInfo struct {
	name   string
	labels []string
	ok     bool
}

// tableView is what writing rows needs to know of a table's columns. It is
// immutable, so writers use it without locks while DDL replaces it.
type tableView struct {
	arrays map[string]bool   // folded names of array columns (PostgreSQL SET columns as TEXT[])
	types  map[string]string // folded name -> full column type
}

func (v *tableView) array(col string) bool { return v != nil && v.arrays[col] }

// colType is a column's full type ("" when unknown).
func (v *tableView) colType(col string) string {
	if v == nil {
		return ""
	}
	return v.types[col]
}

func (m *tableMeta) refreshView(isArray func(typ string) bool) {
	v := &tableView{types: make(map[string]string, len(m.cols))}
	for name, c := range m.cols {
		v.types[name] = c.Type
		if isArray(c.Type) {
			if v.arrays == nil {
				v.arrays = map[string]bool{}
			}
			v.arrays[name] = true
		}
	}
	m.view = v
}

func (cat *catalog) forgetTables(p *plan) {
	cat.mu.Lock()
	defer cat.mu.Unlock()
	for _, tp := range p.tables {
		delete(cat.tables, tp.target)
	}
}

// forgetAllTables drops all cached table metadata.
func (cat *catalog) forgetAllTables() {
	cat.mu.Lock()
	defer cat.mu.Unlock()
	clear(cat.tables)
}
