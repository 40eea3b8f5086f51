package binlog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sluicecdc/sluice/binlog/charset"
	"github.com/sluicecdc/sluice/schema"
)

// MaskRule replaces the values of matching columns before they leave the
// source (Config.Mask). Masks apply only to string and binary columns
// (CHAR, VARCHAR, TEXT, BINARY, VARBINARY, BLOB, and MariaDB's UUID, INET6
// and INET4, which become the VARCHAR of their text); a rule that matches a
// column of another type (numbers, dates, ENUM, SET, JSON, geometry) stops
// the source with an ErrConfig error when the table is first seen, as does
// a "fixed" or "truncate" rule on a primary-key column (it would merge
// distinct rows). The column keeps its schema type; its length parameter
// and source type grow or shrink to fit the masked values.
type MaskRule struct {
	// Columns is a "db.table.column" pattern where * matches any run of
	// characters inside one part (e.g. "shop.*.email").
	Columns string `yaml:"columns"`
	// Kind is "hash" (lower-case hex SHA-256 of Salt followed by the
	// value's bytes: 64 characters), "fixed" (Value instead of every
	// non-NULL value) or "truncate" (the first Length characters; bytes
	// for binary columns). NULL stays NULL under every kind.
	Kind   string `yaml:"kind"`
	Salt   string `yaml:"salt"`
	Value  string `yaml:"value"`
	Length int    `yaml:"length"`
}

// Mask kinds (MaskRule.Kind).
const (
	MaskHash     = "hash"
	MaskFixed    = "fixed"
	MaskTruncate = "truncate"
)

// colPattern is a "db.table.column" pattern split into its three parts.
type colPattern [3]string

func parseColPattern(p string) (colPattern, error) {
	parts := strings.Split(p, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return colPattern{}, fmt.Errorf("%w: column pattern %q must have the form db.table.column (use * for any part)", ErrConfig, p)
	}
	var cp colPattern
	for i, s := range parts {
		cp[i] = globToPath(strings.ToLower(s))
		if _, err := path.Match(cp[i], "x"); err != nil {
			return colPattern{}, fmt.Errorf("%w: column pattern %q: %v", ErrConfig, p, err)
		}
	}
	return cp, nil
}

func (cp colPattern) match(db, table, col string) bool {
	for i, s := range [3]string{db, table, col} {
		if ok, _ := path.Match(cp[i], strings.ToLower(s)); !ok {
			return false
		}
	}
	return true
}

// columnRules is the compiled form of Config.ExcludeColumns and Config.Mask.
type columnRules struct {
	exclude []colPattern
	masks   []compiledMask
}

type compiledMask struct {
	pat  colPattern
	rule MaskRule
}

// compileColumnRules validates and compiles the column rules; nil when
// there are none.
func compileColumnRules(exclude []string, masks []MaskRule) (*columnRules, error) {
	if len(exclude) == 0 && len(masks) == 0 {
		return nil, nil
	}
	cr := &columnRules{}
	for _, p := range exclude {
		cp, err := parseColPattern(p)
		if err != nil {
			return nil, err
		}
		cr.exclude = append(cr.exclude, cp)
	}
	for i, m := range masks {
		cp, err := parseColPattern(m.Columns)
		if err != nil {
			return nil, fmt.Errorf("Mask[%d]: %w", i, err)
		}
		switch m.Kind {
		case MaskHash, MaskFixed:
		case MaskTruncate:
			if m.Length <= 0 {
				return nil, fmt.Errorf("%w: Mask[%d] (%s): truncate needs a Length above 0", ErrConfig, i, m.Columns)
			}
		default:
			return nil, fmt.Errorf("%w: Mask[%d] (%s): Kind %q must be hash, fixed or truncate", ErrConfig, i, m.Columns, m.Kind)
		}
		cr.masks = append(cr.masks, compiledMask{pat: cp, rule: m})
	}
	return cr, nil
}

func (cr *columnRules) excluded(id schema.TableID, col string) bool {
	for _, p := range cr.exclude {
		if p.match(id.Database, id.Table, col) {
			return true
		}
	}
	return false
}

// mask returns the first rule matching the column, or nil.
func (cr *columnRules) mask(id schema.TableID, col string) *MaskRule {
	for i := range cr.masks {
		if cr.masks[i].pat.match(id.Database, id.Table, col) {
			return &cr.masks[i].rule
		}
	}
	return nil
}

// apply restricts ti to the columns that are not excluded and sets up the
// masks; ti's schemas and table then describe the emitted rows. It fails
// on excluded key columns and on masks of unsupported columns.
func (cr *columnRules) apply(ti *tableInfo, serverName string) error {
	if err := ti.checkCharsets(cr); err != nil {
		return err
	}
	if cr == nil {
		return nil
	}
	isKey := make([]bool, len(ti.cols))
	for _, k := range ti.keyIdx {
		isKey[k] = true
	}
	var keep []int
	var masks []*MaskRule
	anyMask := false
	t := &schema.Table{ID: ti.id, PrimaryKey: ti.table.PrimaryKey}
	for i, c := range ti.cols {
		if cr.excluded(ti.id, c.name) {
			if isKey[i] {
				return fmt.Errorf("%w: exclude_columns removes %s.%s, a primary-key column; exclude the table instead or leave the column in", ErrConfig, ti.id, c.name)
			}
			continue
		}
		col := ti.table.Columns[i]
		m := cr.mask(ti.id, c.name)
		if m != nil {
			if c.kind == kUUID || c.kind == kInet6 || c.kind == kInet4 {
				col = extAsVarchar(col, c.kind) // masked values are no UUIDs/addresses
			} else if c.kind != kString && c.kind != kBytes {
				return fmt.Errorf("%w: mask %q (%s) matches %s.%s of type %s; masks apply only to string and binary columns", ErrConfig, m.Columns, m.Kind, ti.id, c.name, col.SourceType)
			}
			if isKey[i] && m.Kind != MaskHash {
				return fmt.Errorf("%w: mask %q (%s) matches primary-key column %s.%s; only hash keeps distinct keys distinct", ErrConfig, m.Columns, m.Kind, ti.id, c.name)
			}
			col = maskedColumn(col, m)
			anyMask = true
		}
		keep = append(keep, i)
		masks = append(masks, m)
		t.Columns = append(t.Columns, col)
	}
	if len(keep) == len(ti.cols) && !anyMask {
		return nil
	}
	ti.keep, ti.masks = keep, masks
	ti.outKey = nil
	for _, k := range ti.keyIdx {
		for j, src := range keep {
			if src == k {
				ti.outKey = append(ti.outKey, j)
			}
		}
	}
	ti.table = t
	prefix := serverName + "." + ti.id.Database + "." + ti.id.Table
	ti.valueSchema = t.ValueSchema(prefix + ".Value")
	ti.keySchema = t.KeySchema(prefix + ".Key")
	return nil
}

// checkCharsets fails on an emitted column whose charset sluice cannot
// decode (an excluded one is never decoded).
func (ti *tableInfo) checkCharsets(cr *columnRules) error {
	for _, c := range ti.cols {
		if c.charset == "" || charset.Supported(c.charset) || (cr != nil && cr.excluded(ti.id, c.name)) {
			continue
		}
		return schema.Fatal(fmt.Errorf("table %s column %s: %w", ti.id, c.name, errCharset(c.charset)))
	}
	return nil
}

// extAsVarchar describes a UUID, INET6 or INET4 column as the VARCHAR of
// its text, so that a mask fits the length and the target does not make a
// uuid/inet column for values that are no longer either.
func extAsVarchar(c schema.Column, k kind) schema.Column {
	n := map[kind]int{kUUID: 36, kInet6: 45, kInet4: 15}[k]
	s := *c.Schema
	s.Params = make(map[string]string, len(c.Schema.Params)+1)
	for key, v := range c.Schema.Params {
		s.Params[key] = v
	}
	s.Params[schema.ParamLength] = strconv.Itoa(n)
	c.Schema = &s
	c.SourceType = fmt.Sprintf("varchar(%d)", n)
	s.Params[schema.ParamSourceType] = c.SourceType
	return c
}

// maskedColumn returns the column's description after masking: the same
// type, with the length parameter and source type fitted to the masked
// values.
func maskedColumn(c schema.Column, m *MaskRule) schema.Column {
	s := *c.Schema
	s.Params = make(map[string]string, len(c.Schema.Params))
	for k, v := range c.Schema.Params {
		s.Params[k] = v
	}
	c.Schema = &s
	n, err := strconv.Atoi(s.Params[schema.ParamLength])
	if err != nil {
		return c // TEXT/BLOB: no length to fit
	}
	switch m.Kind {
	case MaskHash:
		n = max(n, 2*sha256.Size)
	case MaskFixed:
		n = max(n, utf8.RuneCountInString(m.Value), len(m.Value))
	case MaskTruncate:
		n = min(n, m.Length)
	}
	s.Params[schema.ParamLength] = strconv.Itoa(n)
	if name, _, ok := strings.Cut(c.SourceType, "("); ok {
		// CHAR(n)/BINARY(n) would pad shorter values: VARCHAR/VARBINARY
		switch name {
		case "char":
			name = "varchar"
		case "binary":
			name = "varbinary"
		}
		c.SourceType = fmt.Sprintf("%s(%d)", name, n)
	}
	s.Params[schema.ParamSourceType] = c.SourceType
	return c
}

// maskValue applies m to a converted value (string or []byte).
func maskValue(m *MaskRule, v any) any {
	switch x := v.(type) {
	case string:
		switch m.Kind {
		case MaskHash:
			h := sha256.Sum256([]byte(m.Salt + x))
			return hex.EncodeToString(h[:])
		case MaskFixed:
			return m.Value
		case MaskTruncate:
			n := 0
			for i := range x {
				if n == m.Length {
					return x[:i]
				}
				n++
			}
			return x
		}
	case []byte:
		switch m.Kind {
		case MaskHash:
			hh := sha256.New()
			hh.Write([]byte(m.Salt))
			hh.Write(x)
			return []byte(hex.EncodeToString(hh.Sum(nil)))
		case MaskFixed:
			return []byte(m.Value)
		case MaskTruncate:
			if len(x) > m.Length {
				return x[:m.Length]
			}
			return x
		}
	}
	return v
}

// project turns a row of all source columns into the emitted row: the
// kept columns, masked.
func (ti *tableInfo) project(row schema.Row) schema.Row {
	if ti.keep == nil {
		return row
	}
	out := make(schema.Row, len(ti.keep))
	for j, i := range ti.keep {
		v := row[i]
		if m := ti.masks[j]; m != nil && v != nil {
			v = maskValue(m, v)
		}
		out[j] = v
	}
	return out
}
