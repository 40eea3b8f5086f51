package binlog

import (
	"encoding/hex"
	"runtime/debug"
	"strconv"
	"strings"
)

// refineSourceType adds what the table map cannot say to a column's source
// type from information_schema's COLUMN_TYPE: FLOAT(M,D) (Debezium writes
// it as a double) and DOUBLE(M,D), whose M and D a MySQL target keeps, and
// the geometry subtype (POINT is Debezium's
// io.debezium.data.geometry.Point).
func refineSourceType(c *column, srcType, colType string) string {
	switch {
	case colType == "":
		return srcType
	case c.kind == kFloat32 && strings.HasPrefix(colType, "float(") && strings.Contains(colType, ","),
		c.kind == kFloat64 && strings.HasPrefix(colType, "double(") && strings.Contains(colType, ","):
		return colType
	case c.kind == kGeometry && srcType == "geometry":
		switch colType {
		case "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
			return colType
		}
	}
	return srcType
}

// columnDefault converts a column's COLUMN_DEFAULT (information_schema)
// into the column's value, as the schema's Default. ok is false for no
// default (NULL), an expression (CURRENT_TIMESTAMP, UUID(), ...) and text
// the column's kind cannot read: the schema then has no default. MariaDB
// writes literals quoted ('abc', b'1010' for BIT) and expressions bare;
// MySQL writes literals bare.
func columnDefault(c *column, def, flavor string) (any, bool) {
	lit := def
	quoted := false
	if flavor == FlavorMariaDB {
		switch {
		case def == "NULL":
			return nil, false
		case len(def) >= 2 && def[0] == '\'' && def[len(def)-1] == '\'':
			lit, quoted = strings.ReplaceAll(def[1:len(def)-1], "''", "'"), true
		case strings.HasPrefix(def, "b'") && strings.HasSuffix(def, "'"):
			lit = def[2 : len(def)-1]
			if c.kind != kBits {
				return nil, false
			}
			n, err := strconv.ParseUint(lit, 2, 64)
			if err != nil {
				return nil, false
			}
			v, err := mapValue(c, n, true)
			return v, err == nil && v != nil
		case strings.ContainsAny(def, "()") || !numeric(def):
			return nil, false // an expression
		}
	} else if strings.ContainsAny(def, "()") || strings.EqualFold(def, "CURRENT_TIMESTAMP") {
		return nil, false
	} else if c.kind == kBytes && strings.HasPrefix(def, "0x") {
		// MySQL writes a BINARY/VARBINARY default as a hex literal
		// without trailing zero bytes: BINARY(3) DEFAULT 'ab' reads 0x6162,
		// the column holds 0x616200.
		b, err := hex.DecodeString(def[2:])
		if err != nil {
			return nil, false
		}
		if len(b) < c.pad {
			b = append(b, make([]byte, c.pad-len(b))...)
		}
		return b, true
	}
	switch c.kind {
	case kString:
		return lit, true // information_schema's text is already UTF-8
	case kBits:
		if quoted { // MySQL gives BIT defaults as b'...' too
			return nil, false
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(lit, "b'"), "'"), 2, 64)
		if err != nil {
			return nil, false
		}
		v, err := mapValue(c, n, true)
		return v, err == nil && v != nil
	}
	v, err := textValue(c, csUTF8MB4, []byte(lit), true)
	if err != nil || v == nil {
		return nil, false
	}
	return v, true
}

func numeric(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// Version is every record's source.version: "sluice-" and the module
// version of the build ("sluice-devel" without one). Debezium writes its
// own version there ("3.4.0.Final").
var Version = func() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return "sluice-" + bi.Main.Version
	}
	return "sluice-devel"
}()
