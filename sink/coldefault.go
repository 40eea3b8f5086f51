package sink

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// What older rows read in a column added to a table: the source gives
// them the column's DEFAULT, or for a NOT NULL column without one its
// implicit value (0, '', an ENUM's first label). The sink adds the column
// with that default, under every schema_changes mode, so that the target's
// older rows read the same.

// implicitDefault is the value MySQL gives older rows in a NOT NULL column
// of schema s added without a DEFAULT: 0 for numbers, ” for text and SET,
// the first label of an ENUM. Temporal columns (MySQL's zero date, which
// records carry as NULL), binary strings and JSON get none.
func implicitDefault(s *schema.Schema) (*schema.Default, bool) {
	switch {
	case s.Logical == schema.Enum:
		if l := dialect.EnumLabels(s); len(l) > 0 {
			return &schema.Default{Value: l[0]}, true
		}
		return nil, false
	case s.Logical == schema.Set:
		return &schema.Default{Value: ""}, true
	case s.Logical == schema.Decimal || s.Logical == schema.Year:
		return &schema.Default{Value: "0"}, true
	case s.Logical != schema.None:
		return nil, false
	case s.Type >= schema.Int8 && s.Type <= schema.Float64:
		return &schema.Default{Value: "0"}, true
	case s.Type == schema.String:
		return &schema.Default{Value: ""}, true
	}
	return nil, false
}

// addedDefault is the default a column added to an existing table gets:
// the definition's own (d.Default), else for a NOT NULL column that is no
// key, generated or AUTO_INCREMENT column its implicit value. implicit
// reports the latter.
func addedDefault(d schema.ColumnDef, key bool) (def *schema.Default, implicit bool) {
	if d.Default != nil || d.Type == nil || d.Type.Optional || key || d.Generated || d.AutoIncrement {
		return d.Default, false
	}
	def, ok := implicitDefault(d.Type)
	return def, ok
}

// fieldDefault is the default of a column AutoEvolve adds for field f: the
// field schema's default (the source's DEFAULT, as a value of the schema's
// Go representation) as text, else for a field that is not optional its
// implicit value; nil for none or one it cannot write.
func fieldDefault(f schema.Field) *schema.Default {
	s := f.Schema
	if s == nil {
		return nil
	}
	if s.Default == nil {
		def, _ := addedDefault(schema.ColumnDef{Name: f.Name, Type: s}, false)
		return def
	}
	var text string
	switch v := s.Default.(type) {
	case string:
		text = v
	case schema.Dec:
		text = v.String()
	case int8:
		text = strconv.FormatInt(int64(v), 10)
	case int16:
		text = strconv.FormatInt(int64(v), 10)
	case int32:
		if s.Logical == schema.Date {
			text = time.Unix(int64(v)*86400, 0).UTC().Format("2006-01-02")
		} else {
			text = strconv.FormatInt(int64(v), 10)
		}
	case int64:
		switch s.Logical {
		case schema.Timestamp:
			text = time.UnixMicro(v).UTC().Format("2006-01-02 15:04:05.999999")
		case schema.None, schema.Year:
			text = strconv.FormatInt(v, 10)
		default: // a zoned timestamp or a time: no literal the dialects share
			return nil
		}
	case uint64:
		text = strconv.FormatUint(v, 10)
	case float32:
		text = strconv.FormatFloat(float64(v), 'g', -1, 32)
	case float64:
		text = strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return nil
	}
	return &schema.Default{Value: text}
}

// warnIgnoredGenerated notes (schema_changes: ignore) the generated columns
// the schema changes in recs add: AutoEvolve adds them with their first
// row as plain columns, and then computes them in the rows written before
// (fillIgnoredGenerated) where their expression is integer arithmetic
// (fillGenerated). It warns, once per column (the change reaches every
// queue), of those it cannot compute: their older target rows hold NULL.
func (cat *catalog) warnIgnoredGenerated(recs []schema.Record) {
	for i := range recs {
		r := &recs[i]
		if r.Op != schema.OpSchemaChange || r.Change == nil {
			continue
		}
		for _, tc := range r.Change.Tables {
			for _, cc := range tc.Columns {
				if cc.Kind != schema.AddColumn || cc.Column == nil || !cc.Column.Generated {
					continue
				}
				t := cat.cfg.target(tc.Table)
				k := "generated\x00" + t.String() + "\x00" + cc.Name
				cat.ddlMu.Lock() // typeWarned is warnType's, under ddlMu
				if d := *cc.Column; computable(d) {
					if cat.ignoredGen == nil {
						cat.ignoredGen = map[string]schema.ColumnDef{}
					}
					d.Name = cc.Name
					cat.ignoredGen[cat.genKey(t, cc.Name)] = d
				} else if !cat.typeWarned[k] {
					if cat.typeWarned == nil {
						cat.typeWarned = map[string]bool{}
					}
					cat.typeWarned[k] = true
					cat.warnGenerated(t, cc.Name)
				}
				cat.ddlMu.Unlock()
			}
		}
	}
}

// addEvolvedColumn adds column c (AutoEvolve) for field f to t with the
// default older rows read on the source (fieldDefault). Where the target
// refuses that default (MySQL takes none on TEXT, BLOB and JSON columns)
// it adds the column without one and warns.
func (cat *catalog) addEvolvedColumn(ctx context.Context, t target, f schema.Field, typ string, c colDef) error {
	plain := c
	def := fieldDefault(f)
	lit, ok := cat.defaultLiteral(schema.ColumnDef{Name: f.Name, Type: f.Schema, Default: def}, typ)
	if ok {
		c.Default = lit
	}
	_, err := cat.db.ExecContext(ctx, cat.d.AddColumn(t, c))
	if err != nil && ok && !errIs(err, dialect.CondColumnExists) && !retriableDDL(err) && ctx.Err() == nil {
		cat.log.Warn("column added without the default older rows read on the source: the target refused it; older target rows hold NULL",
			"table", t.String(), "column", f.Name, "default", def.Value, "reason", err.Error())
		_, err = cat.db.ExecContext(ctx, cat.d.AddColumn(t, plain))
	}
	if err != nil && !errIs(err, dialect.CondColumnExists) { // added meanwhile
		return fmt.Errorf("sink: add column %q to %s: %w", f.Name, t, wrapDB(err))
	}
	return nil
}

// fillGenerated is the UPDATE that gives every row of t the value of the
// generated column d (schema_changes: apply), when its expression is
// integer arithmetic both dialects evaluate alike: integer columns of the
// table, integer literals, +, -, * and parentheses. false otherwise (the
// caller warns), or when d is no generated integer column.
func (cat *catalog) fillGenerated(t target, tt *targetTable, d schema.ColumnDef) (ddlStatement, bool) {
	if !computable(d) {
		return ddlStatement{}, false
	}
	expr, ok := cat.portableExpr(d.Expression, tt)
	if !ok {
		return ddlStatement{}, false
	}
	q := "UPDATE " + qualified(cat.d, t) + " SET " + cat.d.Quote(d.Name) + " = (" + expr + ")"
	// Not in the transaction on MySQL: it runs after the ADD COLUMN, which
	// commits on its own, and a transaction begun before that would be
	// refused (1412 Table definition has changed). Repeating it is harmless.
	return ddlStatement{what: "compute generated column", sql: q, table: t}, true
}

// computable reports a generated integer column with an expression, which
// fillGenerated may compute in older rows (when portableExpr takes it).
func computable(d schema.ColumnDef) bool {
	return d.Generated && d.Expression != "" && d.Type != nil && d.Type.Logical == schema.None && d.Type.Type >= schema.Int8 && d.Type.Type <= schema.Uint64
}

// genKey names a column of t in Sink.ignoredGen.
func (cat *catalog) genKey(t target, col string) string { return t.String() + "\x00" + cat.fold(col) }

// fillIgnoredGenerated computes, right after AutoEvolve added column col
// to t (whose columns are now cols), a generated column a schema change
// added under schema_changes: ignore in the rows written before, as
// schema_changes: apply does (fillGenerated): the target's older rows then
// read what the source computed for them. It warns where it cannot. ddlMu
// held.
func (cat *catalog) fillIgnoredGenerated(ctx context.Context, t target, cols map[string]colInfo, col string) error {
	k := cat.genKey(t, col)
	d, ok := cat.ignoredGen[k]
	if !ok {
		return nil
	}
	fill, ok := cat.fillGenerated(t, &targetTable{cols: cols}, d)
	if !ok {
		delete(cat.ignoredGen, k)
		cat.warnGenerated(t, col)
		return nil
	}
	if _, err := cat.db.ExecContext(ctx, fill.sql); err != nil {
		return fmt.Errorf("sink: %s %q of %s: %w", fill.what, col, t, wrapDB(err))
	}
	delete(cat.ignoredGen, k)
	cat.log.Info("generated column computed in the rows written before it was added", "table", t.String(), "column", col)
	return nil
}

// portableExpr rewrites a MySQL expression of integer arithmetic on the
// integer columns of tt for the target (identifiers quoted by the
// dialect); false for anything else: a function, a string, a division
// (integer on PostgreSQL, decimal on MySQL), an unknown column.
func (cat *catalog) portableExpr(expr string, tt *targetTable) (string, bool) {
	var b strings.Builder
	isIdent := func(c byte) bool {
		return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	column := func(name string) bool {
		c, ok := tt.cols[cat.fold(name)]
		if !ok {
			return false
		}
		typ := strings.ToLower(c.Type)
		return strings.Contains(typ, "int") && !strings.Contains(typ, "interval") && !strings.Contains(typ, "point")
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ':
			i++
		case strings.IndexByte("+-*()", c) >= 0:
			b.WriteByte(c)
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(expr) && expr[j] >= '0' && expr[j] <= '9' {
				j++
			}
			if j < len(expr) && isIdent(expr[j]) || j < len(expr) && expr[j] == '.' {
				return "", false
			}
			b.WriteString(expr[i:j])
			i = j
		case c == '`':
			j := i + 1
			var name strings.Builder
			for {
				if j >= len(expr) {
					return "", false
				}
				if expr[j] == '`' {
					if j+1 < len(expr) && expr[j+1] == '`' {
						name.WriteByte('`')
						j += 2
						continue
					}
					break
				}
				name.WriteByte(expr[j])
				j++
			}
			if !column(name.String()) {
				return "", false
			}
			b.WriteString(cat.d.Quote(name.String()))
			i = j + 1
		case isIdent(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			if !column(expr[i:j]) {
				return "", false // a function, a keyword, another table's column
			}
			b.WriteString(cat.d.Quote(expr[i:j]))
			i = j
		default:
			return "", false
		}
	}
	return b.String(), b.Len() > 0
}
