package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/sluicecdc/sluice/schema"
)

// prepareTables makes sure every table the plan writes exists and has every
// column its records carry, creating and evolving as configured. DDL runs
// outside the data transaction (MySQL commits implicitly on DDL). It returns
// one entry per p.tables; nil means the table is absent and the plan only
// deletes from or truncates it, which is then a no-op.
func (s *Sink) prepareTables(ctx context.Context, p *plan) ([]*tableMeta, error) {
	s.ddlMu.Lock()
	defer s.ddlMu.Unlock()
	out := make([]*tableMeta, len(p.tables))
	for i, tp := range p.tables {
		m, err := s.prepareTable(ctx, tp)
		if err != nil {
			return nil, err
		}
		out[i] = m
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
	return append(recs, tp.inserts...)
}

func (s *Sink) checkIdent(kind, name string) error {
	if name == "" {
		return fatal(fmt.Errorf("%w: empty %s name (check SchemaTemplate/TableTemplate)", ErrSchema, kind))
	}
	if strings.IndexByte(name, 0) >= 0 {
		return fatal(fmt.Errorf("%w: %s name %q contains a NUL byte", ErrSchema, kind, name))
	}
	limit := 64 // MySQL: characters
	n := len([]rune(name))
	if _, ok := s.d.(postgres); ok {
		limit, n = 63, len(name) // PostgreSQL: bytes, longer names are cut silently
	}
	if n > limit {
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
			if len(writers) == 0 {
				return nil, nil
			}
			if !s.cfg.AutoCreate {
				return nil, fatal(fmt.Errorf("%w: table %s does not exist: create it or enable AutoCreate", ErrSchema, t))
			}
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
		s.mu.Lock()
		s.tables[t] = m
		s.mu.Unlock()
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
		for _, f := range r.ValueSchema.Fields {
			if _, ok := m.cols[s.fold(f.Name)]; ok {
				continue
			}
			if !s.cfg.AutoEvolve {
				return nil, fatal(fmt.Errorf("%w: table %s has no column %q: add it or enable AutoEvolve", ErrSchema, t, f.Name))
			}
			if err := s.checkIdent("column", f.Name); err != nil {
				return nil, err
			}
			typ, err := s.d.columnType(f.Name, f.Schema, false)
			if err != nil {
				return nil, fatal(fmt.Errorf("sink: table %s: %w", t, err))
			}
			c := colDef{Name: f.Name, Type: typ}
			if _, err := s.db.ExecContext(ctx, s.d.addColumn(t, c)); err != nil {
				var me *mysqldrv.MySQLError
				if !(errors.As(err, &me) && me.Number == 1060) { // duplicate column: added meanwhile
					return nil, fmt.Errorf("sink: add column %q to %s: %w", f.Name, t, wrapDB(err))
				}
			}
			s.log.Info("added column", "table", t.String(), "column", f.Name, "type", typ)
			s.mu.Lock()
			m.cols[s.fold(f.Name)] = typ
			s.mu.Unlock()
		}
		s.mu.Lock()
		m.checked[r.ValueSchema] = true
		s.mu.Unlock()
	}
	return m, nil
}

func (s *Sink) fold(name string) string {
	if s.d.foldCase() {
		return strings.ToLower(name)
	}
	return name
}

// loadMeta reads the table's columns; nil when the table does not exist.
func (s *Sink) loadMeta(ctx context.Context, t target) (*tableMeta, error) {
	rows, err := s.db.QueryContext(ctx, s.d.columnsQuery(), t.Schema, t.Table)
	if err != nil {
		return nil, fmt.Errorf("sink: read columns of %s: %w", t, wrapDB(err))
	}
	defer rows.Close()
	m := &tableMeta{cols: map[string]string{}, checked: map[*schema.Schema]bool{}}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, fmt.Errorf("sink: read columns of %s: %w", t, wrapDB(err))
		}
		m.cols[s.fold(name)] = typ
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sink: read columns of %s: %w", t, wrapDB(err))
	}
	if len(m.cols) == 0 {
		return nil, nil
	}
	return m, nil
}

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
		typ, err := s.d.columnType(f.Name, f.Schema, key)
		if err != nil {
			return fatal(fmt.Errorf("sink: create table %s: %w", t, err))
		}
		cols = append(cols, colDef{Name: f.Name, Type: typ, NotNull: key})
	}
	for _, k := range keyCols {
		if r.ValueSchema.FieldIndex(k) < 0 {
			return fatal(fmt.Errorf("%w: create table %s: key column %q is not a column", ErrSchema, t, k))
		}
	}
	if t.Schema != "" {
		if _, err := s.db.ExecContext(ctx, s.d.createSchema(t.Schema)); err != nil {
			return fmt.Errorf("sink: create schema %q: %w", t.Schema, wrapDB(err))
		}
	}
	q := s.d.createTable(t, cols, keyCols)
	if _, err := s.db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("sink: create table %s: %w", t, wrapDB(err))
	}
	s.log.Info("created table", "table", t.String(), "columns", len(cols), "key", strings.Join(keyCols, ","))
	return nil
}
