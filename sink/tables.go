package sink

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// prepareTables makes sure every table the plan writes exists and has every
// column its records carry, creating and evolving as configured. DDL runs
// outside the data transaction (MySQL commits implicitly on DDL). It returns
// one view per p.tables; nil means the table is absent and the plan only
// deletes from or truncates it, which is then a no-op.
func (s *Sink) prepareTables(ctx context.Context, p *plan) ([]*tableView, error) {
	s.ddlMu.Lock()
	defer s.ddlMu.Unlock()
	out := make([]*tableView, len(p.tables))
	for i, tp := range p.tables {
		m, err := s.prepareTable(ctx, tp)
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

func (s *Sink) checkIdent(kind, name string) error {
	if name == "" {
		return fatal(fmt.Errorf("%w: empty %s name (check the sink's schema and table templates)", ErrSchema, kind))
	}
	if strings.IndexByte(name, 0) >= 0 {
		return fatal(fmt.Errorf("%w: %s name %q contains a NUL byte", ErrSchema, kind, name))
	}
	if limit, long := s.d.IdentTooLong(name); long {
		return fatal(fmt.Errorf("%w: %s name %q is longer than %d (the target would truncate it)", ErrSchema, kind, name, limit))
	}
	return nil
}

func (s *Sink) prepareTable(ctx context.Context, tp *tablePlan) (*tableMeta, error) {
	t := tp.target
	s.mu.Lock()
	m := s.tables[t]
	s.mu.Unlock()
	writers := tp.writers()
	if m == nil {
		if err := s.checkIdent("table", t.Table); err != nil {
			return nil, err
		}
		if t.Schema != "" {
			if err := s.checkIdent("schema", t.Schema); err != nil {
				return nil, err
			}
		}
		var err error
		if m, err = s.loadMeta(ctx, t); err != nil {
			return nil, err
		}
		if m == nil {
			if err := s.droppedBehind(ctx, t); err != nil {
				return nil, err
			}
			if len(writers) == 0 {
				return nil, nil
			}
			if !s.cfg.AutoCreate {
				return nil, fatal(fmt.Errorf("%w: table %s does not exist: create it or set auto_create: true in the sink config", ErrSchema, t))
			}
			s.mu.Lock()
			delete(s.registered, t) // another sink process may have dropped it and taken it off
			s.mu.Unlock()
			if err := s.createTable(ctx, t, writers[0]); err != nil {
				return nil, err
			}
			if m, err = s.loadMeta(ctx, t); err != nil {
				return nil, err
			}
			if m == nil {
				return nil, fmt.Errorf("sink: table %s still missing after CREATE TABLE", t)
			}
		}
		if err := s.registerTable(ctx, t); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.tables[t] = m
		s.mu.Unlock()
	}
	if err := s.checkKeyCollations(t, m, tp); err != nil {
		return nil, err
	}
	keylessCheck := len(tp.inserts) > 0 && s.cfg.KeylessMode == KeylessBeforeImage
	if keylessCheck { // the columns there already, before evolving them
		if err := s.checkKeyless(t, m, tp.inserts); err != nil {
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
			if c, ok := m.cols[s.fold(f.Name)]; ok {
				if s.cfg.AutoEvolve {
					ch, err := s.evolveColumn(ctx, t, m, f, isKey(keyCols, f.Name), c)
					if err != nil {
						return nil, err
					}
					changed = changed || ch
				} else if err := s.timeColumnFits(t, f, c); err != nil {
					return nil, err
				}
				continue
			}
			if !s.cfg.AutoEvolve {
				return nil, fatal(fmt.Errorf("%w: table %s has no column %q: add it or set auto_evolve: true in the sink config", ErrSchema, t, f.Name))
			}
			if err := s.checkIdent("column", f.Name); err != nil {
				return nil, err
			}
			typ, err := s.d.ColumnType(f.Name, f.Schema, false)
			if err != nil {
				return nil, fatal(fmt.Errorf("sink: table %s: %w", t, err))
			}
			c := colDef{Name: f.Name, Type: typ + s.collate(typ, f.Schema, false)}
			if c.Check, err = s.enumCheck(f); err != nil {
				return nil, fatal(fmt.Errorf("sink: table %s: %w", t, err))
			}
			if err := s.addEvolvedColumn(ctx, t, f, typ, c); err != nil {
				return nil, err
			}
			s.log.Info("added column", "table", t.String(), "column", f.Name, "type", typ)
			m.cols[s.fold(f.Name)] = colInfo{Type: typ}
			if err := s.fillIgnoredGenerated(ctx, t, m.cols, f.Name); err != nil {
				return nil, err
			}
			changed = true
		}
		if changed {
			n, err := s.loadMeta(ctx, t)
			if err != nil {
				return nil, err
			}
			if n == nil {
				return nil, fmt.Errorf("sink: table %s vanished while its columns were changed", t)
			}
			if err := s.recordIdentity(ctx, s.db, t, false); err != nil { // a copying ALTER moves it
				return nil, err
			}
			m.cols, m.checks = n.cols, n.checks
			m.refreshView(s.d.IsArray)
		}
		s.mu.Lock()
		m.checked[r.ValueSchema] = true
		s.mu.Unlock()
	}
	if keylessCheck { // and the columns added or changed
		if err := s.checkKeyless(t, m, tp.inserts); err != nil {
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
func (s *Sink) checkKeyless(t target, m *tableMeta, recs []*schema.Record) error {
	var bad, names []string
	var last *schema.Schema
	for _, r := range recs {
		if r.ValueSchema == nil || r.ValueSchema == last || (last != nil && sameNames(r.ValueSchema, names)) {
			continue
		}
		last, names = r.ValueSchema, names[:0]
		for _, f := range r.ValueSchema.Fields {
			names = append(names, f.Name)
			bad = s.uncomparable(m, f.Name, bad)
		}
	}
	return s.keylessRefusal(t, bad)
}

// uncomparable appends "name (type)" to bad when the target column name
// exists and the dialect cannot compare its type exactly.
func (s *Sink) uncomparable(m *tableMeta, name string, bad []string) []string {
	c, ok := m.cols[s.fold(name)]
	if !ok || s.d.ExactMatch(c.Type) {
		return bad
	}
	if d := fmt.Sprintf("%s (%s)", name, c.Type); !slices.Contains(bad, d) {
		bad = append(bad, d)
	}
	return bad
}

// keylessRefusal is checkKeyless's fatal error for table t and its
// columns bad; nil when bad is empty.
func (s *Sink) keylessRefusal(t target, bad []string) error {
	if len(bad) == 0 {
		return nil
	}
	return fatal(fmt.Errorf("%w: table %s has no primary key, and its updates and deletes find their row by comparing every column, but %s cannot compare column %s exactly: add a primary key to the source table, change the target column's type, or set keyless_mode: %s (skip updates and deletes) or %s in the sink config",
		ErrSchema, t, s.d.Name(), strings.Join(bad, ", "), KeylessAppend, KeylessFail))
}

// CheckShapes makes checkKeyless's check at start (runtime.ShapeChecker),
// before anything is written, for the source tables without primary key
// whose target table exists: the runtime calls it with the shapes the
// source captures. A table the sink would create is checked when it is
// created, at its first row: the server decides the types it stores
// (MariaDB makes JSON a LONGTEXT, MySQL keeps a JSON the dialect cannot
// compare), and every type the sink creates on PostgreSQL compares
// exactly. The error names every refused
// table and is fatal; another error says a target table's columns could
// not be read.
// WantsShapes reports whether CheckShapes checks anything: only under
// keyless_mode before_image, so the source need not read its catalogue
// at start otherwise.
func (s *Sink) WantsShapes() bool { return s.cfg.KeylessMode == KeylessBeforeImage }

func (s *Sink) CheckShapes(ctx context.Context, tables []schema.Table) error {
	if s.cfg.KeylessMode != KeylessBeforeImage {
		return nil
	}
	var errs []error
	for _, tb := range tables {
		if len(tb.PrimaryKey) > 0 {
			continue
		}
		t := s.cfg.target(tb.ID)
		m, err := s.loadMeta(ctx, t)
		if err != nil {
			return err
		}
		if m == nil {
			continue
		}
		var bad []string
		for _, c := range tb.Columns {
			bad = s.uncomparable(m, c.Name, bad)
		}
		if err := s.keylessRefusal(t, bad); err != nil {
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
func (s *Sink) loadMeta(ctx context.Context, t target) (*tableMeta, error) {
	rows, err := s.db.QueryContext(ctx, s.d.ColumnsQuery(), t.Schema, t.Table)
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
		c.Extra, c.Charset, c.Collation, c.Comment = strings.TrimSpace(extra.String), charset.String, collation.String, comment.String != ""
		m.cols[s.fold(name)] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sink: read columns of %s: %w", t, wrapDB(err))
	}
	if len(m.cols) == 0 {
		return nil, nil
	}
	if q := s.d.ChecksQuery(); q != "" {
		if err := s.loadEnumChecks(ctx, q, t, m); err != nil {
			return nil, err
		}
	}
	m.refreshView(s.d.IsArray)
	return m, nil
}

// loadEnumChecks fills m.checks with the CHECK constraints enumCheck made.
func (s *Sink) loadEnumChecks(ctx context.Context, query string, t target, m *tableMeta) error {
	rows, err := s.db.QueryContext(ctx, query, t.Schema, t.Table)
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
		labels, ours, ok := s.d.ParseEnumCheck(name, def, scs)
		if !ours {
			continue
		}
		m.checks[s.fold(col)] = enumCheckInfo{name: name, labels: labels, ok: ok}
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
func (s *Sink) timeColumnFits(t target, f schema.Field, c colInfo) error {
	return s.d.ColumnFits(t, f, c.Type)
}

// enumCheck returns the CHECK constraint of a new column for field f
// (PostgreSQL with EnumCheck: ENUM fields whose schema lists the labels).
func (s *Sink) enumCheck(f schema.Field) (string, error) {
	return s.d.EnumCheck(f)
}

// evolveColumn compares an existing column with the type field f wants
// (AutoEvolve): a safe widening is applied, anything else is left as it is
// with one warning. With EnumCheck, an ENUM's CHECK follows labels added.
// changed reports DDL run on the table.
func (s *Sink) evolveColumn(ctx context.Context, t target, m *tableMeta, f schema.Field, key bool, c colInfo) (changed bool, err error) {
	want, err := s.d.ColumnType(f.Name, f.Schema, key)
	if err != nil {
		return false, nil // no type to compare with; the writes report what does not fit
	}
	col := s.fold(f.Name)
	seen := col + "\x00" + c.Type + "\x00" + want
	if !m.typed[seen] {
		if len(m.typed) >= 1024 {
			clear(m.typed)
		}
		if changed, err = s.widenColumn(ctx, t, f.Name, c, want); err != nil {
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
	ch, err := s.evolveEnumCheck(ctx, t, m, f)
	if err != nil {
		return false, err
	}
	m.typed[seen] = true
	return changed || ch, nil
}

// widenColumn alters column name from c's type to want when that is a safe
// widening; changed reports that it did.
func (s *Sink) widenColumn(ctx context.Context, t target, name string, c colInfo, want string) (changed bool, err error) {
	switch s.d.Widen(c.Type, want) {
	case typeSame, typeKeep:
		return false, nil
	case typeDiffer:
		s.warnType(t, name, c.Type, want, "not a safe widening")
		return false, nil
	}
	q, why := s.d.AlterType(t, name, want, c)
	if why != "" {
		s.warnType(t, name, c.Type, want, why)
		return false, nil
	}
	if err := s.ddl(ctx, q); err != nil {
		if isFatal(err) {
			s.warnType(t, name, c.Type, want, "the target refused: "+err.Error())
			return false, nil
		}
		return false, fmt.Errorf("sink: widen column %q of %s to %s: %w", name, t, want, err)
	}
	s.log.Info("widened column", "table", t.String(), "column", name, "from", c.Type, "to", want)
	return true, nil
}

// ddl runs a statement that changes a table for AutoEvolve. The error says
// Fatal() when the server refused it for good (a view depends on the
// column, a value does not fit, …): retrying the Write would not help.
func (s *Sink) ddl(ctx context.Context, q string) error {
	_, err := s.db.ExecContext(ctx, q)
	if err == nil {
		return nil
	}
	return dbError{err: err, terminal: !retriableDDL(err) && ctx.Err() == nil}
}

// warnType logs once per (table, column, current, wanted) that a column
// keeps a type other than the one records want.
func (s *Sink) warnType(t target, col, cur, want, why string) {
	k := strings.Join([]string{t.String(), col, cur, want}, "\x00")
	if s.typeWarned[k] {
		return
	}
	if s.typeWarned == nil {
		s.typeWarned = map[string]bool{}
	}
	s.typeWarned[k] = true
	s.log.Warn("column type not changed: alter the target column by hand if its values need the wanted type",
		"table", t.String(), "column", col, "current", cur, "wanted", want, "reason", why)
}

// evolveEnumCheck replaces the CHECK of an ENUM column (PostgreSQL with
// EnumCheck) when the record's labels add to the constraint's; changed
// reports that it did.
func (s *Sink) evolveEnumCheck(ctx context.Context, t target, m *tableMeta, f schema.Field) (changed bool, err error) {
	cur, has := m.checks[s.fold(f.Name)]
	if !has {
		return false, nil // no constraint of ours: the column is the operator's
	}
	labels := s.d.EnumCheckLabels(f.Schema)
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
		s.warnType(t, f.Name, curText, wantText, "ENUM labels removed or the constraint changed by hand")
		return false, nil
	}
	q, err := s.d.AlterEnumCheck(t, f.Name, cur.name, labels)
	if err != nil {
		return false, fatal(fmt.Errorf("sink: table %s: %w", t, err))
	}
	if err := s.ddl(ctx, q); err != nil {
		if isFatal(err) {
			s.warnType(t, f.Name, curText, wantText, "the target refused: "+err.Error())
			return false, nil
		}
		return false, fmt.Errorf("sink: replace CHECK of column %q of %s: %w", f.Name, t, err)
	}
	s.log.Info("ENUM labels added to the column's CHECK", "table", t.String(), "column", f.Name, "from", old, "to", strings.Join(labels, ","))
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
func (s *Sink) createTable(ctx context.Context, t target, r *schema.Record) error {
	var keyCols []string
	if r.KeySchema != nil {
		keyCols = keyColumns(r)
	}
	cols := make([]colDef, 0, len(r.ValueSchema.Fields))
	for _, f := range r.ValueSchema.Fields {
		if err := s.checkIdent("column", f.Name); err != nil {
			return err
		}
		key := isKey(keyCols, f.Name)
		typ, err := s.d.ColumnType(f.Name, f.Schema, key)
		if err != nil {
			return fatal(fmt.Errorf("sink: create table %s: %w", t, err))
		}
		check, err := s.enumCheck(f)
		if err != nil {
			return fatal(fmt.Errorf("sink: create table %s: %w", t, err))
		}
		cols = append(cols, colDef{Name: f.Name, Type: typ + s.collate(typ, f.Schema, key), NotNull: key, Check: check})
	}
	for _, k := range keyCols {
		if r.ValueSchema.FieldIndex(k) < 0 {
			return fatal(fmt.Errorf("%w: create table %s: key column %q is not a column", ErrSchema, t, k))
		}
	}
	if t.Schema != "" {
		if _, err := s.db.ExecContext(ctx, s.d.CreateSchema(t.Schema)); err != nil {
			return fmt.Errorf("sink: create schema %q: %w", t.Schema, wrapDB(err))
		}
	}
	q := s.d.CreateTable(t, cols, keyCols)
	if _, err := s.db.ExecContext(ctx, q); err != nil && !concurrentCreate(err) {
		return fmt.Errorf("sink: create table %s: %w", t, wrapDB(err))
	}
	s.log.Info("created table", "table", t.String(), "columns", len(cols), "key", strings.Join(keyCols, ","))
	return nil
}
