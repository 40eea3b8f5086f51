package sink

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sluicecdc/sluice/schema"
)

// Route sends the source tables whose "db.table" name matches Match to
// Schema and Table instead of the schema and table templates (the first
// matching route wins; docs/routing.md). Match is a regular expression
// (RE2) over the whole name. Schema and Table hold $0 (the whole name) and
// $1 … $9 (Match's groups, one digit each) besides the templates'
// placeholders ${db} and ${table}; an empty Schema or Table falls back to
// the template. Two source tables may not route to one target table: the
// sink refuses the second it meets.
type Route struct {
	Match  string `yaml:"match"`
	Schema string `yaml:"schema"`
	Table  string `yaml:"table"`
}

// ColumnRule renames and drops columns of the source tables whose
// "db.table" name matches Match (a regular expression over the whole name;
// the first matching rule applies): in rows, in the tables the sink creates
// and evolves, and in applied schema changes. A dropped column is never
// written nor created. Dropping a key column is refused.
type ColumnRule struct {
	Match  string            `yaml:"match"`
	Rename map[string]string `yaml:"rename"`
	Drop   []string          `yaml:"drop"`
}

// routing is the compiled Routes and Columns of a Config (nil without
// either), with the tables met so far.
type routing struct {
	routes []route
	cols   []colRule

	mu      sync.Mutex
	targets map[schema.TableID]*target  // the route's target of each table met; nil: none matches
	rules   map[schema.TableID]*colRule // the rule of each table met; nil: none
	claimed map[target]schema.TableID   // the source table of each routed target met (by its folded name)
}

type route struct {
	re            *regexp.Regexp
	schema, table string
}

type colRule struct {
	match  string
	re     *regexp.Regexp
	rename map[string]string
	drop   []string
}

// wholeName compiles a Match pattern anchored at both ends.
func wholeName(what string, i int, m string) (*regexp.Regexp, error) {
	if m == "" {
		return nil, fmt.Errorf("%w: %s[%d].Match is empty", ErrConfig, what, i)
	}
	if _, err := regexp.Compile(m); err != nil { // the error quotes the pattern as written
		return nil, fmt.Errorf("%w: %s[%d].Match %q: %v", ErrConfig, what, i, m, err)
	}
	return regexp.Compile("^(?:" + m + ")$")
}

// compileRouting checks and compiles c.Routes and c.Columns; nil when both
// are empty, so the default path is untouched.
func compileRouting(c *Config) (*routing, error) {
	if len(c.Routes) == 0 && len(c.Columns) == 0 {
		return nil, nil
	}
	r := &routing{targets: map[schema.TableID]*target{}, rules: map[schema.TableID]*colRule{}, claimed: map[target]schema.TableID{}}
	for i, rt := range c.Routes {
		re, err := wholeName("Routes", i, rt.Match)
		if err != nil {
			return nil, err
		}
		if rt.Schema == "" && rt.Table == "" {
			return nil, fmt.Errorf("%w: Routes[%d] names neither Schema nor Table", ErrConfig, i)
		}
		for _, f := range []struct{ key, t string }{{"Schema", rt.Schema}, {"Table", rt.Table}} {
			t := f.t
			if err := checkTemplate(t); err != nil {
				return nil, fmt.Errorf("Routes[%d].%s: %w", i, f.key, err)
			}
			for j := 0; j+1 < len(t); j++ {
				if t[j] == '$' && t[j+1] >= '0' && t[j+1] <= '9' && int(t[j+1]-'0') > re.NumSubexp() {
					return nil, fmt.Errorf("%w: Routes[%d].%s %q refers to $%c, but the pattern %q has %d group(s)", ErrConfig, i, f.key, t, t[j+1], rt.Match, re.NumSubexp())
				}
			}
		}
		r.routes = append(r.routes, route{re: re, schema: rt.Schema, table: rt.Table})
	}
	for i, cr := range c.Columns {
		re, err := wholeName("Columns", i, cr.Match)
		if err != nil {
			return nil, err
		}
		if len(cr.Rename) == 0 && len(cr.Drop) == 0 {
			return nil, fmt.Errorf("%w: Columns[%d] has neither Rename nor Drop", ErrConfig, i)
		}
		to := map[string]string{}
		for old, nw := range cr.Rename {
			if old == "" || nw == "" {
				return nil, fmt.Errorf("%w: Columns[%d].Rename %q to %q: a name is empty", ErrConfig, i, old, nw)
			}
			if slices.Contains(cr.Drop, old) {
				return nil, fmt.Errorf("%w: Columns[%d].Drop: column %q is both renamed and dropped", ErrConfig, i, old)
			}
			if o, ok := to[nw]; ok {
				return nil, fmt.Errorf("%w: Columns[%d].Rename: columns %q and %q are both renamed to %q", ErrConfig, i, o, old, nw)
			}
			to[nw] = old
		}
		r.cols = append(r.cols, colRule{match: cr.Match, re: re, rename: cr.Rename, drop: cr.Drop})
	}
	return r, nil
}

// target maps id through the first matching route; ok is false when none
// matches.
func (r *routing) target(c *Config, id schema.TableID) (target, bool) {
	if len(r.routes) == 0 {
		return target{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.targets[id]
	if !ok {
		t = r.route(c, id)
		r.targets[id] = t
	}
	if t == nil {
		return target{}, false
	}
	return *t, true
}

// route is the target of the first route matching id, nil when none does.
func (r *routing) route(c *Config, id schema.TableID) *target {
	name := id.Database + "." + id.Table
	for _, rt := range r.routes {
		m := rt.re.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		s, t := c.SchemaTemplate, c.TableTemplate
		if rt.schema != "" {
			s = rt.schema
		}
		if rt.table != "" {
			t = rt.table
		}
		return &target{Schema: expandRoute(s, id, m), Table: expandRoute(t, id, m)}
	}
	return nil
}

// expandRoute replaces ${db}, ${table} and $0 … $9 (m's groups) in t, in
// one pass: a name holding $ is not expanded again.
func expandRoute(t string, id schema.TableID, m []string) string {
	if !strings.Contains(t, "$") {
		return t
	}
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		switch {
		case t[i] != '$':
			b.WriteByte(t[i])
		case i+1 < len(t) && t[i+1] >= '0' && t[i+1] <= '9':
			b.WriteString(m[t[i+1]-'0'])
			i++
		case strings.HasPrefix(t[i:], "${db}"):
			b.WriteString(id.Database)
			i += len("${db}") - 1
		case strings.HasPrefix(t[i:], "${table}"):
			b.WriteString(id.Table)
			i += len("${table}") - 1
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// claim records that source table id writes into t (in lower case when
// the target folds names) and refuses a second source table there.
func (r *routing) claim(id schema.TableID, t target, fold bool) error {
	if r == nil || len(r.routes) == 0 {
		return nil
	}
	if fold {
		t = target{Schema: strings.ToLower(t.Schema), Table: strings.ToLower(t.Table)}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if other, ok := r.claimed[t]; ok && other != id {
		return fatal(fmt.Errorf("%w: source tables %s and %s both map to %s: routes may not merge tables (give each its own target table)", ErrConfig, other, id, t))
	}
	r.claimed[t] = id
	return nil
}

// release gives up the target tables source table id claimed: it was
// renamed or dropped at the source, so its target may be another's.
func (r *routing) release(id schema.TableID) {
	if r == nil || len(r.routes) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for t, held := range r.claimed {
		if held == id {
			delete(r.claimed, t)
		}
	}
}

// rule is the column rule of table id, nil when none matches.
func (r *routing) rule(id schema.TableID) *colRule {
	if r == nil || len(r.cols) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cr, ok := r.rules[id]
	if !ok {
		name := id.Database + "." + id.Table
		for i := range r.cols {
			if r.cols[i].re.MatchString(name) {
				cr = &r.cols[i]
				break
			}
		}
		r.rules[id] = cr
	}
	return cr
}

// name maps a source column: its target name, or ok false when dropped.
func (cr *colRule) name(col string) (string, bool) {
	if slices.Contains(cr.drop, col) {
		return "", false
	}
	if n, ok := cr.rename[col]; ok {
		return n, true
	}
	return col, true
}

// keyDropped refuses a rule that drops one of key's columns of table id.
func (cr *colRule) keyDropped(id schema.TableID, key []string) error {
	for _, k := range key {
		if _, ok := cr.name(k); !ok {
			return fatal(fmt.Errorf("%w: columns rule %q drops column %s of %s, which is in its primary key (%s): rows could not be matched; keep the column or exclude the table", ErrConfig, cr.match, k, id, strings.Join(key, ", ")))
		}
	}
	return nil
}

// keyNames maps the names of a key; the caller has checked keyDropped.
func (cr *colRule) keyNames(key []string) []string {
	if key == nil {
		return nil
	}
	out := make([]string, len(key))
	for i, k := range key {
		out[i], _ = cr.name(k)
	}
	return out
}

// structMap is a struct schema with the rule applied, and the source
// positions of its fields (nil: every field, in place).
type structMap struct {
	s    *schema.Schema
	keep []int
}

// structKey keys mapStruct's cache: one schema may serve tables of
// different rules.
type structKey struct {
	cr *colRule
	s  *schema.Schema
}

func (cr *colRule) mapStruct(s *schema.Schema, cache map[structKey]structMap) structMap {
	if s == nil {
		return structMap{}
	}
	if m, ok := cache[structKey{cr, s}]; ok {
		return m
	}
	out := *s
	out.Fields = make([]schema.Field, 0, len(s.Fields))
	keep := make([]int, 0, len(s.Fields))
	for i, f := range s.Fields {
		if n, ok := cr.name(f.Name); ok {
			f.Name = n
			out.Fields = append(out.Fields, f)
			keep = append(keep, i)
		}
	}
	m := structMap{s: &out}
	if len(keep) < len(s.Fields) {
		m.keep = keep
	}
	cache[structKey{cr, s}] = m
	return m
}

func (m structMap) row(r schema.Row) schema.Row {
	if r == nil || m.keep == nil {
		return r
	}
	out := make(schema.Row, len(m.keep))
	for i, j := range m.keep {
		if j < len(r) {
			out[i] = r[j]
		}
	}
	return out
}

// routeColumns applies the column rules to recs: a copy of recs when a rule
// matches any, else recs itself. The records' rows and schemas are not
// modified (another component may hold them).
func (s *Sink) routeColumns(recs []schema.Record) ([]schema.Record, error) {
	r := s.cfg.routing
	if r == nil || len(r.cols) == 0 {
		return recs, nil
	}
	var out []schema.Record
	cache := map[structKey]structMap{}
	for i := range recs {
		rec := &recs[i]
		var cr *colRule
		if rec.Op == schema.OpSchemaChange {
			if rec.Change == nil || !slices.ContainsFunc(rec.Change.Tables, func(tc schema.TableChange) bool { return r.rule(tc.Table) != nil || r.rule(tc.NewTable) != nil }) {
				continue
			}
		} else if cr = r.rule(rec.Table); cr == nil {
			continue
		}
		if out == nil {
			out = slices.Clone(recs)
		}
		o := &out[i]
		if rec.Op == schema.OpSchemaChange {
			ch, err := r.mapChange(rec.Change)
			if err != nil {
				return nil, err
			}
			o.Change = ch
			continue
		}
		if rec.KeySchema != nil {
			for _, f := range rec.KeySchema.Fields {
				if _, ok := cr.name(f.Name); !ok {
					return nil, cr.keyDropped(rec.Table, []string{f.Name})
				}
			}
			km := cr.mapStruct(rec.KeySchema, cache)
			o.KeySchema = km.s
		}
		vm := cr.mapStruct(rec.ValueSchema, cache)
		o.ValueSchema, o.Before, o.After = vm.s, vm.row(rec.Before), vm.row(rec.After)
	}
	if out == nil {
		return recs, nil
	}
	return out, nil
}

// mapChange applies the column rules to a schema change's table changes.
func (r *routing) mapChange(ch *schema.SchemaChange) (*schema.SchemaChange, error) {
	out := *ch
	out.Tables = make([]schema.TableChange, len(ch.Tables))
	for i, tc := range ch.Tables {
		out.Tables[i] = tc
		if cr := r.rule(tc.Table); cr != nil {
			if err := cr.mapTableChange(&out.Tables[i]); err != nil {
				return nil, err
			}
		}
		id := tc.Table
		if tc.Kind == schema.RenameTable {
			id = tc.NewTable
		}
		if cr := r.rule(id); cr != nil && tc.Shape != nil {
			if err := cr.keyDropped(id, tc.Shape.PrimaryKey); err != nil {
				return nil, err
			}
			sh := *tc.Shape
			sh.Columns = nil
			for _, c := range tc.Shape.Columns {
				if n, ok := cr.name(c.Name); ok {
					c.Name = n
					sh.Columns = append(sh.Columns, c)
				}
			}
			sh.PrimaryKey = cr.keyNames(tc.Shape.PrimaryKey)
			out.Tables[i].Shape = &sh
		}
	}
	return &out, nil
}

// mapTableChange renames the columns tc names and leaves out the changes of
// dropped columns. A rename between a kept and a dropped column has no
// target equivalent: it is refused.
func (cr *colRule) mapTableChange(tc *schema.TableChange) error {
	if err := cr.keyDropped(tc.Table, tc.PrimaryKey); err != nil {
		return err
	}
	tc.PrimaryKey = cr.keyNames(tc.PrimaryKey)
	cols := make([]schema.ColumnChange, 0, len(tc.Columns))
	for _, c := range tc.Columns {
		n, keep := cr.name(c.Name)
		if c.NewName != "" {
			nn, keepNew := cr.name(c.NewName)
			if keep != keepNew {
				return fatal(fmt.Errorf("%w: %s renames column %s to %s, and columns rule %q drops one of them: drop both names or neither", ErrSchemaChange, tc.Table, c.Name, c.NewName, cr.match))
			}
			c.NewName = nn
		}
		if !keep {
			continue
		}
		c.Name = n
		if c.Column != nil {
			def := *c.Column
			def.Name, _ = cr.name(def.Name)
			c.Column = &def
		}
		if c.After != "" {
			if a, ok := cr.name(c.After); ok {
				c.After = a
			} else {
				c.After = ""
			}
		}
		cols = append(cols, c)
	}
	tc.Columns = cols
	return nil
}

// routeTables applies the column rules to source table shapes (CheckShapes,
// Check), refusing a rule that drops a key column.
func (r *routing) routeTables(tables []schema.Table) ([]schema.Table, error) {
	if r == nil || len(r.cols) == 0 {
		return tables, nil
	}
	out := slices.Clone(tables)
	var errs []error
	for i := range out {
		tb := &out[i]
		cr := r.rule(tb.ID)
		if cr == nil {
			continue
		}
		if err := cr.keyDropped(tb.ID, tb.PrimaryKey); err != nil {
			errs = append(errs, err)
			continue
		}
		var cols []schema.Column
		for _, c := range tb.Columns {
			if n, ok := cr.name(c.Name); ok {
				c.Name = n
				cols = append(cols, c)
			}
		}
		tb.Columns, tb.PrimaryKey = cols, cr.keyNames(tb.PrimaryKey)
	}
	if len(errs) > 0 {
		return nil, fatal(errors.Join(errs...))
	}
	return out, nil
}
