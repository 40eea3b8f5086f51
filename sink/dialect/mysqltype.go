package dialect

import (
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// MySQL column types as text: the source's (a record's source.type) and a
// MySQL target's (COLUMN_TYPE).

var myNames = map[string]string{
	"tinyint": "tinyint", "bool": "tinyint", "boolean": "tinyint",
	"smallint": "smallint", "mediumint": "mediumint", "int": "int", "integer": "int", "bigint": "bigint",
	"decimal": "decimal", "numeric": "decimal", "dec": "decimal", "fixed": "decimal",
	"float": "float", "double": "double", "double precision": "double", "real": "double",
	"char": "char", "varchar": "varchar",
	"tinytext": "tinytext", "text": "text", "mediumtext": "mediumtext", "longtext": "longtext",
	"binary": "binary", "varbinary": "varbinary",
	"tinyblob": "tinyblob", "blob": "blob", "mediumblob": "mediumblob", "longblob": "longblob",
	"bit":  "bit",
	"time": "time", "datetime": "datetime", "timestamp": "timestamp",
	"year": "year", "date": "date", "json": "json",
	"enum": "enum", "set": "set",
}

// ParseMySQLType parses a MySQL type as COLUMN_TYPE shows it or as the
// source declared it: "int(11) unsigned zerofill", "enum('a','it”s')",
// "TIMESTAMP(6) NULL". Display widths and zerofill are ignored.
func ParseMySQLType(s string) (ColType, bool) {
	w, inner, has, ok := SplitParens(strings.TrimSpace(s), true)
	if !ok {
		return ColType{}, false
	}
	fields := strings.Fields(strings.ToLower(w))
	var t ColType
	// Trailing attributes.
	for len(fields) > 1 {
		switch fields[len(fields)-1] {
		case "unsigned":
			t.Unsigned = true
		case "signed", "zerofill", "null":
		default:
			goto done
		}
		fields = fields[:len(fields)-1]
	}
done:
	w = strings.Join(fields, " ")
	if w == "" {
		return ColType{}, false
	}
	name, known := myNames[w]
	if !known {
		t.Base = w
		if has {
			t.Base += "(" + strings.ToLower(Words(inner)) + ")"
		}
		return t, true
	}
	t.Base = name
	if name == "enum" || name == "set" {
		if !has {
			return ColType{}, false
		}
		if t.Labels, ok = MySQLLabels(inner); !ok { // labels keep their case
			return ColType{}, false
		}
		return t, true
	}
	if has {
		if t.Args, ok = IntArgs(inner); !ok {
			return ColType{}, false
		}
	}
	switch name {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year",
		"tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob":
		t.Args = nil // display width; TEXT(n) picks the size class by n, which COLUMN_TYPE never shows
		if name == "year" && t.Unsigned {
			return ColType{}, false
		}
	case "decimal":
		switch len(t.Args) {
		case 0:
			t.Args = []int{10, 0}
		case 1:
			t.Args = append(t.Args, 0)
		}
	case "float":
		if len(t.Args) == 1 && t.Args[0] > 24 {
			t.Base = "double"
		}
		t.Args = nil
	case "double":
		t.Args = nil
	case "char", "binary", "bit":
		if t.Args == nil {
			t.Args = []int{1}
		}
		if len(t.Args) != 1 {
			return ColType{}, false
		}
	case "varchar", "varbinary":
		if len(t.Args) != 1 {
			return ColType{}, false
		}
	case "time", "datetime", "timestamp":
		if t.Args == nil {
			t.Args = []int{0}
		}
		if len(t.Args) != 1 {
			return ColType{}, false
		}
	default:
		if t.Args != nil {
			return ColType{}, false
		}
	}
	return t, true
}

// MySQLLabels parses a list of single-quoted strings: 'a','it”s','b\\c'.
func MySQLLabels(s string) ([]string, bool) {
	var out []string
	i := 0
	for {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) || s[i] != '\'' {
			return nil, false
		}
		i++
		var b strings.Builder
		for {
			if i >= len(s) {
				return nil, false
			}
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				b.WriteByte(unescapeMySQL(s[i+1]))
				i += 2
				continue
			}
			if c == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i += 2
					continue
				}
				i++
				break
			}
			b.WriteByte(c)
			i++
		}
		out = append(out, b.String())
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i == len(s) {
			return out, true
		}
		if s[i] != ',' {
			return nil, false
		}
		i++
	}
}

func unescapeMySQL(c byte) byte {
	switch c {
	case '0':
		return 0
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'Z':
		return 26
	case 'b':
		return '\b'
	}
	return c
}

// EnumLabels returns the labels of an ENUM column: from the source type
// when it lists them (a label may hold a comma there), else from the
// comma-separated ParamAllowed; nil when the schema names none.
func EnumLabels(s *schema.Schema) []string {
	if st := s.Param(schema.ParamSourceType); st != "" && !strings.Contains(st, `\`) {
		if t, ok := ParseMySQLType(st); ok && t.Base == "enum" {
			return t.Labels
		}
	}
	if a := s.Param(schema.ParamAllowed); a != "" {
		return strings.Split(a, ",")
	}
	return nil
}

// KnownMySQLBase reports a base type ParseMySQLType knows (one of MySQL's
// own; not a spatial type nor one of another server's).
func KnownMySQLBase(base string) bool {
	for _, b := range myNames {
		if b == base {
			return true
		}
	}
	return false
}
