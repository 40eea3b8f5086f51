package sink

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/secure"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// Check verifies that a sink with cfg can run against its target, for
// `sluice check`: the target is reachable and takes the login, and in the
// connection's default schema (the progress table's) and in the schema
// every table of tables maps to, the account may create a table (and the
// schema, under AutoCreate) and add a column to it. The probe leaves
// nothing behind: on PostgreSQL it runs in a transaction rolled back; on
// MySQL, whose DDL commits, it drops the table (and a database it made).
// Then every table of tables whose target table exists is compared with
// what the sink writes into it (checkShape). A table with no Columns is
// only mapped (its shape unknown). It returns nil when every check passes.
func Check(ctx context.Context, cfg Config, tables []schema.Table) []schema.Problem {
	var out []schema.Problem
	fail := func(check, detail, fix string) {
		out = append(out, schema.Problem{Check: check, Detail: detail, Fix: fix})
	}
	if err := cfg.normalize(); err != nil {
		fail("target_config", err.Error(), "correct the sink section of the config")
		return out
	}
	d, err := newDialect(&cfg)
	if err != nil {
		fail("target_config", err.Error(), "correct the sink section of the config")
		return out
	}
	db, err := connect(ctx, d, &cfg)
	if err != nil {
		err = secure.RedactDSNError(err, cfg.DSN)
		if explainErr(err).Login || errors.Is(err, ErrConfig) {
			fail("target_login", err.Error(), "fix the user, password or database of sink.dsn, or the TLS keys")
		} else {
			fail("target_reachable", err.Error(), "check the host and port of sink.dsn and that the server is up")
		}
		return out
	}
	defer db.Close()
	def, err := d.Verify(ctx, db.DB, cfg.ProgressTable)
	if err != nil {
		fail("target_server", secure.RedactDSNError(err, cfg.DSN).Error(), "use a supported server and name a database in sink.dsn")
		return out
	}
	if tables, err = cfg.routing.routeTables(tables); err != nil {
		fail("target_columns", err.Error(), "keep the table's key columns (sink.columns drop)")
		return out
	}
	for _, tb := range tables {
		if err := cfg.routing.claim(tb.ID, cfg.target(tb.ID), d.FoldCase()); err != nil {
			fail("target_routes", err.Error(), "give each source table its own target table (sink.routes)")
		}
	}
	schemas := []string{""} // the progress and barrier tables'
	for _, tb := range tables {
		if s := cfg.target(tb.ID).Schema; !slices.Contains(schemas, s) {
			schemas = append(schemas, s)
		}
	}
	for _, s := range schemas {
		if err := probeDDL(ctx, db.DB, d, cfg, s); err != nil {
			name := s
			if name == "" {
				name = def
			}
			fail("target_privileges", fmt.Sprintf("cannot create and alter a table in %s %q: %v", d.Name(), name, err),
				"grant the sink's user the right to create tables (and schemas, under auto_create) there and to alter them, or change sink.schema")
		}
	}
	sk := newCatalog(backend{cfg: &cfg, db: db, d: d})
	for _, tb := range tables {
		if len(tb.Columns) == 0 {
			continue
		}
		ps, err := sk.checkShape(ctx, tb)
		if err != nil {
			fail("target_tables", secure.RedactDSNError(err, cfg.DSN).Error(), "check that the sink's user may read the target's catalogue")
			break
		}
		out = append(out, ps...)
	}
	return out
}

// checkShape compares the target table source table tb maps to, when it
// exists, with what the sink writes into it, through the sink's own type
// mapping (Dialect.ColumnType, Widen, ColumnFits): FAIL for what would stop
// the pipeline or lose rows (the source's key without a unique index on
// exactly its columns, or with one on part of them; a missing column or a
// narrower type the sink may not change; a NOT NULL column without default
// the source does not fill; a key collation that merges keys; a keyless
// table the sink cannot match), WARN for what runs (a column the sink adds
// or widens at its first row, a type that differs otherwise, NOT NULL
// where the source has NULLs).
func (cat *catalog) checkShape(ctx context.Context, tb schema.Table) ([]schema.Problem, error) {
	t := cat.cfg.target(tb.ID)
	m, err := cat.loadMeta(ctx, t)
	if err != nil || m == nil {
		return nil, err // absent: the sink creates it, as probed above
	}
	var out []schema.Problem
	name := t.String()
	if name != tb.ID.String() {
		name += " (from " + tb.ID.String() + ")"
	}
	add := func(warn bool, detail, fix string) {
		out = append(out, schema.Problem{Check: "target_table", Warning: warn, Detail: name + ": " + detail, Fix: fix})
	}
	q := qualified(cat.d, t)
	if len(tb.PrimaryKey) == 0 {
		if cat.cfg.KeylessMode == KeylessBeforeImage {
			var bad []string
			for _, c := range tb.Columns {
				bad = cat.uncomparable(m, c.Name, bad)
			}
			if err := cat.keylessRefusal(t, bad); err != nil {
				add(false, err.Error(), "one of the three the message names")
			}
		}
	} else if err := cat.checkShapeKey(ctx, t, m, tb, add); err != nil {
		return nil, err
	}
	src := map[string]bool{}
	for _, c := range tb.Columns {
		src[cat.fold(c.Name)] = true
		key := slices.Contains(tb.PrimaryKey, c.Name)
		want, err := cat.d.ColumnType(c.Name, c.Schema, key)
		if err != nil {
			continue // the source names a column it cannot send
		}
		tc, ok := m.cols[cat.fold(c.Name)]
		switch {
		case !ok && !cat.cfg.AutoEvolve:
			add(false, fmt.Sprintf("no column %q, and auto_evolve is off: the first row stops the pipeline", c.Name),
				fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s, or set auto_evolve: true", q, cat.d.Quote(c.Name), want))
		case !ok:
			add(true, fmt.Sprintf("no column %q: the sink adds it as %s at the table's first row, and rows already in the target get its default, not the source's values", c.Name, want),
				"none needed if the target's rows are all written by this pipeline; else snapshot the table again")
		default:
			cat.checkShapeType(t, c, key, tc, want, add)
		}
	}
	for name, tc := range m.cols {
		if !src[name] && tc.NotNull && !tc.HasDefault && !strings.Contains(strings.ToLower(tc.Extra), "auto_increment") && !strings.Contains(strings.ToLower(tc.Extra), "generated") {
			add(false, fmt.Sprintf("column %q is NOT NULL without a default and the source has no such column: every insert fails", name),
				fmt.Sprintf("give %s.%s a DEFAULT, drop its NOT NULL, or map another table", q, cat.d.Quote(name)))
		}
	}
	return out, nil
}

// checkShapeKey is checkShape's part for the source's primary key: its
// columns exist, a unique index covers exactly them (the upsert's
// arbiter: PostgreSQL's ON CONFLICT refuses a statement without one, and
// MySQL's ON DUPLICATE KEY UPDATE inserts a second row for an update), no
// unique index covers part of them (rows of different keys would be one),
// and their collation keeps apart what the source's does.
func (cat *catalog) checkShapeKey(ctx context.Context, t target, m *tableMeta, tb schema.Table, add func(bool, string, string)) error {
	q := qualified(cat.d, t)
	var missing []string
	for _, k := range tb.PrimaryKey {
		if _, ok := m.cols[cat.fold(k)]; !ok {
			missing = append(missing, k)
		}
	}
	keyList := columnList(cat.d, tb.PrimaryKey)
	if len(missing) > 0 {
		add(false, fmt.Sprintf("no column %s of the source's primary key (%s): its rows cannot be matched", strings.Join(missing, ", "), strings.Join(tb.PrimaryKey, ", ")),
			"drop the table and let the sink create it, or add the columns and ALTER TABLE "+q+" ADD PRIMARY KEY ("+keyList+")")
		return nil
	}
	idx, err := cat.uniqueKeys(ctx, t)
	if err != nil {
		return err
	}
	key := map[string]bool{}
	for _, k := range tb.PrimaryKey {
		key[cat.fold(k)] = true
	}
	exact := false
	for _, name := range slices.Sorted(maps.Keys(idx)) {
		cols := idx[name]
		in := 0
		for _, c := range cols {
			if key[c] {
				in++
			}
		}
		switch {
		case in == len(cols) && in == len(key):
			exact = true
		case in == len(cols):
			add(false, fmt.Sprintf("unique index %s on (%s) covers only part of the source's primary key (%s): rows of different keys would overwrite each other", name, strings.Join(cols, ", "), strings.Join(tb.PrimaryKey, ", ")),
				"drop the unique index, or drop the table and let the sink create it")
		}
	}
	if !exact {
		what := "ON CONFLICT refuses every upsert"
		if cat.cfg.Dialect == DialectMySQL {
			what = "ON DUPLICATE KEY UPDATE would insert a second row for each update"
		}
		add(false, fmt.Sprintf("no primary key or unique index on exactly the source's primary key (%s): %s", strings.Join(tb.PrimaryKey, ", "), what),
			"ALTER TABLE "+q+" ADD PRIMARY KEY ("+keyList+") (or a UNIQUE index on them), or drop the table and let the sink create it")
	}
	c, ok := cat.d.(dialect.Collator)
	if !ok {
		return nil
	}
	for _, col := range tb.Columns {
		tc := m.cols[cat.fold(col.Name)]
		if !key[cat.fold(col.Name)] || tc.Collation == "" || col.Schema == nil {
			continue
		}
		if want, merges := c.KeyMerges(col.Schema, tc.Collation); merges {
			add(false, fmt.Sprintf("key column %q has collation %s, which takes keys that the source's %s keeps apart as one: their rows would merge", col.Name, tc.Collation, col.Schema.Param(schema.ParamCollation)),
				fmt.Sprintf("ALTER TABLE %s MODIFY %s with COLLATE %s, or drop the table and let the sink create it", q, cat.d.Quote(col.Name), want))
		}
	}
	return nil
}

// checkShapeType is checkShape's part for column c of the source, which
// the target has as tc and the sink would create as want.
func (cat *catalog) checkShapeType(t target, c schema.Column, key bool, tc colInfo, want string, add func(bool, string, string)) {
	f := schema.Field{Name: c.Name, Schema: c.Schema}
	if !cat.cfg.AutoEvolve {
		if err := cat.d.ColumnFits(t, f, tc.Type); err != nil {
			add(false, err.Error(), "change the column as the message says, or set auto_evolve: true")
			return
		}
	}
	if tc.NotNull && !key && c.Schema.Optional {
		add(true, fmt.Sprintf("column %q is NOT NULL but the source's may hold NULL: such a row is refused (on_error decides)", c.Name),
			fmt.Sprintf("ALTER TABLE %s ALTER or MODIFY %s to allow NULL", qualified(cat.d, t), cat.d.Quote(c.Name)))
	}
	switch cat.d.Widen(tc.Type, want) {
	case typeSame, typeKeep:
		return
	case typeWiden:
		stmt, why := cat.d.AlterType(t, c.Name, want, tc)
		if cat.cfg.AutoEvolve && why == "" {
			add(true, fmt.Sprintf("column %q is %s, narrower than the source's %s: the sink widens it at the table's first row (%s)", c.Name, tc.Type, want, stmt), "none needed")
			return
		}
		if stmt == "" {
			stmt = "change it to " + want
		} else {
			stmt = "run " + stmt
		}
		add(false, fmt.Sprintf("column %q is %s, narrower than the source's %s: a value that does not fit is refused or cut", c.Name, tc.Type, want), stmt)
	default:
		if cat.d.Widen(want, tc.Type) == typeWiden {
			return // wider than needed: every value fits
		}
		add(true, fmt.Sprintf("column %q is %s where the sink makes %s: values are converted by the target, and one it refuses stops the pipeline or is skipped (on_error)", c.Name, tc.Type, want),
			"check that the types are compatible, or change the column to "+want)
	}
}

// uniqueKeys reads the columns (folded) of the unique indexes of t that
// can arbitrate an upsert, by index name.
func (cat *catalog) uniqueKeys(ctx context.Context, t target) (map[string][]string, error) {
	rows, err := cat.db.QueryContext(ctx, cat.d.UniqueKeysQuery(), t.Schema, t.Table)
	if err != nil {
		return nil, fmt.Errorf("sink: read the unique indexes of %s: %w", t, wrapDB(err))
	}
	defer rows.Close()
	out := map[string][]string{}
	partial := map[string]bool{}
	for rows.Next() {
		var name, col string
		var whole bool
		if err := rows.Scan(&name, &col, &whole); err != nil {
			return nil, fmt.Errorf("sink: read the unique indexes of %s: %w", t, wrapDB(err))
		}
		partial[name] = partial[name] || !whole
		out[name] = append(out[name], cat.fold(col))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sink: read the unique indexes of %s: %w", t, wrapDB(err))
	}
	for name := range partial {
		if partial[name] {
			delete(out, name)
		}
	}
	return out, nil
}

// probeDDL creates a table in schema s (the default schema for ""; s
// itself first under AutoCreate) and adds a column to it, then undoes both.
func probeDDL(ctx context.Context, db *sql.DB, d dialect.Dialect, cfg Config, s string) error {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	t := dialect.Target{Schema: s, Table: "sluice_check_" + hex.EncodeToString(b)}
	q := dialect.Qualified(d, t)
	stmts := []string{"CREATE TABLE " + q + " (id INT PRIMARY KEY)", "ALTER TABLE " + q + " ADD COLUMN v INT"}
	if cfg.Dialect == DialectPostgres { // DDL is transactional: roll it all back
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if s != "" && cfg.AutoCreate {
			stmts = append([]string{d.CreateSchema(s)}, stmts...)
		}
		for _, st := range stmts {
			if _, err := tx.ExecContext(ctx, st); err != nil {
				return err
			}
		}
		return nil
	}
	undo := []string{"DROP TABLE IF EXISTS " + q}
	if s != "" {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", s).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if !cfg.AutoCreate {
				return fmt.Errorf("the database does not exist and auto_create is off")
			}
			stmts = append([]string{"CREATE DATABASE " + d.Quote(s)}, stmts...)
			undo = append(undo, "DROP DATABASE IF EXISTS "+d.Quote(s))
		}
	}
	defer func() {
		for _, st := range undo {
			_, _ = db.ExecContext(context.WithoutCancel(ctx), st)
		}
	}()
	for i, st := range stmts {
		if _, err := db.ExecContext(ctx, st); err != nil {
			if i == 0 && len(undo) == 2 {
				undo = undo[:1] // the database was not made here: leave it
			}
			return err
		}
	}
	return nil
}
