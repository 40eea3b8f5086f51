package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// What makes keys distinct: a text column's collation decides which
// values are equal, so a key column whose target collation is looser than
// the source's (utf8mb4_0900_ai_ci for utf8mb4_bin) takes rows the source
// keeps apart ('a', 'A', 'ä') as one row. New text columns get the
// source's collation; an existing key column that could merge is refused.

// collations is what Verify read of the target's collations.
type collations struct {
	charset map[string]string // collation name -> its character set
	noPad   map[string]bool   // collation name -> NO PAD (MySQL's PAD_ATTRIBUTE; MariaDB: the name)
}

// loadCollations reads the target's collations into d.coll.
func (d Dialect) loadCollations(ctx context.Context, db *sql.DB) error {
	if d.coll == nil {
		return nil
	}
	c := collations{charset: map[string]string{}, noPad: map[string]bool{}}
	read := func(q string, pad bool) error {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, cs, padAttr string
			dest := []any{&name, &cs}
			if pad {
				dest = append(dest, &padAttr)
			}
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			name, cs = strings.ToLower(name), strings.ToLower(cs)
			c.charset[name] = cs
			c.noPad[name] = strings.EqualFold(padAttr, "NO PAD") || !pad && namedNoPad(name)
		}
		return rows.Err()
	}
	// MySQL has PAD_ATTRIBUTE; MariaDB (10.11) does not, and lists its
	// charset-specific uca1400 collations only in the applicability table.
	if err := read("SELECT COLLATION_NAME, CHARACTER_SET_NAME, PAD_ATTRIBUTE FROM information_schema.COLLATIONS WHERE CHARACTER_SET_NAME IS NOT NULL", true); err != nil {
		if err := read("SELECT COLLATION_NAME, CHARACTER_SET_NAME FROM information_schema.COLLATIONS WHERE CHARACTER_SET_NAME IS NOT NULL", false); err != nil {
			return fmt.Errorf("sink: read the target's collations: %w", err)
		}
		if err := read("SELECT FULL_COLLATION_NAME, CHARACTER_SET_NAME FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY WHERE CHARACTER_SET_NAME IS NOT NULL AND FULL_COLLATION_NAME IS NOT NULL", false); err != nil && len(c.charset) == 0 {
			return fmt.Errorf("sink: read the target's collations: %w", err)
		}
	}
	*d.coll = c
	return nil
}

// namedNoPad tells a NO PAD collation by its name, for a server that does
// not say (MariaDB) and for the source's collation the target lacks.
func namedNoPad(name string) bool {
	return name == "binary" || strings.Contains(name, "_nopad_") || strings.HasPrefix(name, "utf8mb4_0900_")
}

// known reports whether the catalogue was read (a Dialect{} literal, as in
// unit tests, has none: every name is taken as the target's).
func (d Dialect) known() bool { return d.coll != nil && len(d.coll.charset) > 0 }

func (d Dialect) hasCollation(name string) bool {
	if !d.known() {
		return true
	}
	_, ok := d.coll.charset[name]
	return ok
}

// charsetOf is the character set of collation name.
func (d Dialect) charsetOf(name string) string {
	if d.known() {
		if cs, ok := d.coll.charset[name]; ok {
			return cs
		}
	}
	if name == "binary" {
		return "binary"
	}
	cs, _, _ := strings.Cut(name, "_")
	return cs
}

func (d Dialect) noPad(name string) bool {
	if d.known() {
		if p, ok := d.coll.noPad[name]; ok {
			return p
		}
	}
	return namedNoPad(name)
}

// binaryCollation is the target's strictest binary collation of character
// set cs (utf8mb4 when the target lacks cs): NO PAD where it has one
// (MariaDB's cs_nopad_bin, MySQL's utf8mb4_0900_bin), else cs_bin.
func (d Dialect) binaryCollation(cs string) string {
	if cs == "" || !d.hasCharset(cs) {
		cs = "utf8mb4"
	}
	for _, c := range []string{cs + "_nopad_bin", cs + "_0900_bin"} {
		if d.known() && d.hasCollation(c) {
			return c
		}
	}
	return cs + "_bin"
}

func (d Dialect) hasCharset(cs string) bool {
	if !d.known() {
		return true
	}
	for _, c := range d.coll.charset {
		if c == cs {
			return true
		}
	}
	return false
}

// wantCollation is the collation a new column of field schema s gets: the
// source's where the target has it, else a binary one of its character
// set; for a key column whose source collation is not known a binary one
// too (keys the source keeps apart stay apart); "" leaves the database's
// default (a column that is no key, of a source that did not say).
func (d Dialect) wantCollation(s *schema.Schema, key bool) string {
	src := strings.ToLower(s.Param(schema.ParamCollation))
	switch {
	case src != "" && plainName(src) && d.hasCollation(src):
		return src
	case src == "" && !key:
		return ""
	}
	return d.binaryCollation(strings.ToLower(s.Param(schema.ParamCharset)))
}

// Collate is the clause " CHARACTER SET cs COLLATE c" a new column of type
// typ (ColumnType's) for field schema s gets; "" for a type without
// collation and where the database's default is kept (wantCollation).
func (d Dialect) Collate(typ string, s *schema.Schema, key bool) string {
	ct, ok := dialect.ParseMySQLType(typ)
	if !ok || !isMySQLText(ct.Base) || s.Type != schema.String || s.Logical == schema.Json {
		return ""
	}
	c := d.wantCollation(s, key)
	if c == "" || !plainName(c) {
		return ""
	}
	return " CHARACTER SET " + d.charsetOf(c) + " COLLATE " + c
}

// KeyMerges reports whether an existing key column of collation cur may
// take values of field schema s that the source's collation keeps apart
// as equal: true unless cur is the source's collation, or a binary one
// at least as strict (NO PAD, or the source's pads too) in the source's
// character set or utf8mb4. It cannot tell without the source's
// collation, nor for a column without one (not text). want is the
// collation to change the column to.
func (d Dialect) KeyMerges(s *schema.Schema, cur string) (want string, merges bool) {
	src, cur := strings.ToLower(s.Param(schema.ParamCollation)), strings.ToLower(cur)
	if src == "" || cur == "" || src == cur {
		return "", false
	}
	binary := cur == "binary" || strings.HasSuffix(cur, "_bin")
	cs := d.charsetOf(cur)
	if binary && (d.noPad(cur) || !d.noPad(src)) && (cs == "utf8mb4" || cs == "binary" || cs == d.charsetOf(src)) {
		return "", false
	}
	return d.wantCollation(s, true), true
}
