package sink

import (
	"strconv"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// Column types as text: parsing what the database reports (PostgreSQL's
// format_type, MySQL's COLUMN_TYPE) and what columnType asks for, and
// deciding whether changing one into the other is a safe widening (every
// value of the current type is kept exactly by the wanted one). These
// functions are pure: the text comes from the database or from a record's
// schema, so anything they do not understand is "different", never a panic.

// colType is a parsed column type.
type colType struct {
	base     string   // canonical lower-case name, e.g. "integer", "varchar", "timestamptz"
	args     []int    // the numbers in parentheses, after defaults are applied; nil when unbounded
	labels   []string // MySQL ENUM/SET labels
	unsigned bool     // MySQL
	array    bool     // PostgreSQL: "[]" suffix
}

// typeChange is what turning a column of one type into another means.
type typeChange int

const (
	typeSame   typeChange = iota // the same type, or one the database treats as the same
	typeWiden                    // a strict, safe widening: alter the column
	typeKeep                     // different on purpose (an older mapping): keep it silently
	typeDiffer                   // anything else: not altered, the operator decides
)

func (c typeChange) String() string {
	return [...]string{"same", "widen", "keep", "differ"}[c]
}

func (t colType) equal(o colType) bool {
	if t.base != o.base || t.unsigned != o.unsigned || t.array != o.array || len(t.args) != len(o.args) || len(t.labels) != len(o.labels) {
		return false
	}
	for i := range t.args {
		if t.args[i] != o.args[i] {
			return false
		}
	}
	for i := range t.labels {
		if t.labels[i] != o.labels[i] {
			return false
		}
	}
	return true
}

// splitParens cuts s into the words outside the first
// parenthesised group and the text inside it. Quoted strings inside the group
// are skipped over (they may hold parentheses); backslash escapes them when
// backslashEsc. ok is false for unbalanced text.
func splitParens(s string, backslashEsc bool) (words, inner string, has, ok bool) {
	i := strings.IndexByte(s, '(')
	if i < 0 {
		return s, "", false, !strings.ContainsRune(s, ')')
	}
	j := i + 1
	for j < len(s) && s[j] != ')' {
		if s[j] == '\'' {
			j++
			for {
				if j >= len(s) {
					return "", "", false, false
				}
				if backslashEsc && s[j] == '\\' {
					j += 2
					continue
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						j += 2
						continue
					}
					break
				}
				j++
			}
		}
		j++
	}
	if j >= len(s) {
		return "", "", false, false
	}
	rest := s[j+1:]
	if strings.ContainsAny(rest, "()") {
		return "", "", false, false
	}
	return s[:i] + " " + rest, s[i+1 : j], true, true
}

// intArgs parses "10" or "10,2"; nil, false for anything else.
func intArgs(inner string) ([]int, bool) {
	parts := strings.Split(inner, ",")
	if len(parts) > 2 {
		return nil, false
	}
	out := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 1<<31-1 {
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

// words normalises whitespace: lower-case words joined by one space.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

// ---- PostgreSQL ----

var pgNames = map[string]string{
	"smallint": "smallint", "int2": "smallint",
	"integer": "integer", "int": "integer", "int4": "integer",
	"bigint": "bigint", "int8": "bigint",
	"numeric": "numeric", "decimal": "numeric",
	"real": "real", "float4": "real",
	"double precision": "double precision", "float8": "double precision", "float": "double precision",
	"character varying": "varchar", "varchar": "varchar",
	"character": "char", "char": "char", "bpchar": "char",
	"text": "text",
	"bit":  "bit", "bit varying": "varbit", "varbit": "varbit",
	"time": "time", "time without time zone": "time", "time with time zone": "timetz", "timetz": "timetz",
	"timestamp": "timestamp", "timestamp without time zone": "timestamp",
	"timestamp with time zone": "timestamptz", "timestamptz": "timestamptz",
	"boolean": "boolean", "bool": "boolean",
}

// parsePGType parses a PostgreSQL type as format_type prints it or as
// columnType writes it ("NUMERIC(5,2)", "TIMESTAMPTZ(6)", "TEXT[]").
// Types it does not know keep their normalised text as base, so they still
// compare equal to themselves.
func parsePGType(s string) (colType, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	var t colType
	for strings.HasSuffix(s, "]") {
		i := strings.LastIndexByte(s, '[')
		if i < 0 {
			return colType{}, false
		}
		s, t.array = strings.TrimSpace(s[:i]), true
	}
	w, inner, has, ok := splitParens(s, false)
	if !ok || strings.ContainsAny(w, "[]") {
		return colType{}, false
	}
	w = words(w)
	if w == "" {
		return colType{}, false
	}
	name, known := pgNames[w]
	if !known {
		t.base = w
		if has {
			t.base += "(" + words(inner) + ")"
		}
		return t, true
	}
	t.base = name
	if has {
		if t.args, ok = intArgs(inner); !ok {
			return colType{}, false
		}
	}
	switch name {
	case "numeric":
		if len(t.args) == 1 {
			t.args = append(t.args, 0)
		}
	case "time", "timetz", "timestamp", "timestamptz":
		if t.args == nil {
			t.args = []int{6} // no typmod: microseconds
		}
		if len(t.args) != 1 {
			return colType{}, false
		}
	case "char", "bit":
		if t.args == nil {
			t.args = []int{1}
		}
		if len(t.args) != 1 {
			return colType{}, false
		}
	case "varchar", "varbit":
		if len(t.args) > 1 {
			return colType{}, false
		}
	case "double precision":
		if w == "float" && len(t.args) == 1 {
			if t.args[0] <= 24 {
				t.base = "real"
			}
			t.args = nil
		}
		if t.args != nil {
			return colType{}, false
		}
	default:
		if t.args != nil {
			return colType{}, false
		}
	}
	if name == "varchar" && t.args == nil {
		t.base = "text" // unbounded varchar is text to PostgreSQL
	}
	return t, true
}

// intDigits is how many decimal digits the largest magnitude of an integer
// type needs, keyed by base (and unsignedness for MySQL).
func intDigits(base string, unsigned bool) int {
	switch base {
	case "tinyint":
		return 3
	case "smallint":
		return 5
	case "mediumint":
		if unsigned {
			return 8
		}
		return 7
	case "integer", "int":
		return 10
	case "bigint":
		if unsigned {
			return 20
		}
		return 19
	}
	return 0
}

// decimalHolds reports whether numeric/decimal want (args p,s; nil =
// unbounded) keeps every value of decimal cur.
func decimalHolds(cur, want []int) bool {
	if want == nil {
		return true
	}
	if cur == nil {
		return false
	}
	return want[1] >= cur[1] && want[0]-want[1] >= cur[0]-cur[1]
}

// compareTypes parses the type texts cur and want with parse; types that
// differ go to rules. Text it cannot parse is only the same as itself.
func compareTypes(cur, want string, parse func(string) (colType, bool), rules func(c, w colType) typeChange) typeChange {
	c, ok1 := parse(cur)
	w, ok2 := parse(want)
	if !ok1 || !ok2 {
		if strings.EqualFold(strings.TrimSpace(cur), strings.TrimSpace(want)) {
			return typeSame
		}
		return typeDiffer
	}
	if c.equal(w) {
		return typeSame
	}
	return rules(c, w)
}

// widenPG decides what turning a PostgreSQL column of type cur into want
// means; both are type texts.
func widenPG(cur, want string) typeChange { return compareTypes(cur, want, parsePGType, pgChange) }

func pgChange(c, w colType) typeChange {
	// SET columns became TEXT[]; tables made before keep text.
	if w.array && w.base == "text" && !c.array && (c.base == "text" || c.base == "varchar" || c.base == "char") {
		return typeKeep
	}
	if c.array || w.array {
		return typeDiffer
	}
	if pgWidens(c, w) {
		return typeWiden
	}
	// Times and timestamps made with six fraction digits before the
	// source's own precision was used hold every value of a narrower one.
	if fractional(c.base) && w.base == c.base && len(c.args) == 1 && len(w.args) == 1 && c.args[0] >= w.args[0] {
		return typeKeep
	}
	return typeDiffer
}

func fractional(base string) bool {
	switch base {
	case "time", "timetz", "timestamp", "timestamptz":
		return true
	}
	return false
}

func pgWidens(c, w colType) bool {
	rank := map[string]int{"smallint": 1, "integer": 2, "bigint": 3}
	switch c.base {
	case "smallint", "integer", "bigint":
		switch w.base {
		case "smallint", "integer", "bigint":
			return rank[w.base] > rank[c.base]
		case "numeric":
			return w.args == nil || w.args[0]-w.args[1] >= intDigits(c.base, false)
		case "double precision":
			return c.base != "bigint" // 53-bit mantissa
		case "real":
			return c.base == "smallint" // 24-bit mantissa
		}
	case "numeric":
		return w.base == "numeric" && decimalHolds(c.args, w.args)
	case "real":
		return w.base == "double precision"
	case "varchar":
		return w.base == "text" || (w.base == "varchar" && w.args[0] > c.args[0])
	case "char":
		switch w.base {
		case "text":
			return true
		case "varchar":
			return w.args[0] >= c.args[0]
		case "char":
			return w.args[0] > c.args[0]
		}
	case "varbit":
		return w.base == "varbit" && c.args != nil && (w.args == nil || w.args[0] > c.args[0])
	case "bit":
		// bit(n) into bit(m) pads or refuses: only bit varying keeps the bits.
		return w.base == "varbit" && (w.args == nil || w.args[0] >= c.args[0])
	case "time", "timetz", "timestamp", "timestamptz":
		if c.base == "time" && w.base == "interval" {
			// time_as_interval set after the table was made: every TIME
			// value is an INTERVAL (PostgreSQL casts it implicitly)
			return true
		}
		return w.base == c.base && len(c.args) == 1 && len(w.args) == 1 && w.args[0] > c.args[0]
	}
	return false
}

// ---- MySQL ----

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

// parseMySQLType parses a MySQL type as COLUMN_TYPE shows it or as the
// source declared it: "int(11) unsigned zerofill", "enum('a','it”s')",
// "TIMESTAMP(6) NULL". Display widths and zerofill are ignored.
func parseMySQLType(s string) (colType, bool) {
	w, inner, has, ok := splitParens(strings.TrimSpace(s), true)
	if !ok {
		return colType{}, false
	}
	fields := strings.Fields(strings.ToLower(w))
	var t colType
	// Trailing attributes.
	for len(fields) > 1 {
		switch fields[len(fields)-1] {
		case "unsigned":
			t.unsigned = true
		case "signed", "zerofill", "null":
		default:
			goto done
		}
		fields = fields[:len(fields)-1]
	}
done:
	w = strings.Join(fields, " ")
	if w == "" {
		return colType{}, false
	}
	name, known := myNames[w]
	if !known {
		t.base = w
		if has {
			t.base += "(" + strings.ToLower(words(inner)) + ")"
		}
		return t, true
	}
	t.base = name
	if name == "enum" || name == "set" {
		if !has {
			return colType{}, false
		}
		if t.labels, ok = mysqlLabels(inner); !ok { // labels keep their case
			return colType{}, false
		}
		return t, true
	}
	if has {
		if t.args, ok = intArgs(inner); !ok {
			return colType{}, false
		}
	}
	switch name {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year",
		"tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob":
		t.args = nil // display width; TEXT(n) picks the size class by n, which COLUMN_TYPE never shows
		if name == "year" && t.unsigned {
			return colType{}, false
		}
	case "decimal":
		switch len(t.args) {
		case 0:
			t.args = []int{10, 0}
		case 1:
			t.args = append(t.args, 0)
		}
	case "float":
		if len(t.args) == 1 && t.args[0] > 24 {
			t.base = "double"
		}
		t.args = nil
	case "double":
		t.args = nil
	case "char", "binary", "bit":
		if t.args == nil {
			t.args = []int{1}
		}
		if len(t.args) != 1 {
			return colType{}, false
		}
	case "varchar", "varbinary":
		if len(t.args) != 1 {
			return colType{}, false
		}
	case "time", "datetime", "timestamp":
		if t.args == nil {
			t.args = []int{0}
		}
		if len(t.args) != 1 {
			return colType{}, false
		}
	default:
		if t.args != nil {
			return colType{}, false
		}
	}
	return t, true
}

// mysqlLabels parses a list of single-quoted strings: 'a','it”s','b\\c'.
func mysqlLabels(s string) ([]string, bool) {
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

var myIntRank = map[string]int{"tinyint": 1, "smallint": 2, "mediumint": 3, "int": 4, "bigint": 5}

// myTextCap and myBlobCap are the byte capacities of the TEXT and BLOB
// size classes.
var myTextCap = map[string]int64{"tinytext": 255, "text": 65535, "mediumtext": 16777215, "longtext": 4294967295}
var myBlobCap = map[string]int64{"tinyblob": 255, "blob": 65535, "mediumblob": 16777215, "longblob": 4294967295}

// widenMySQL decides what turning a MySQL column of type cur into want
// means; both are type texts.
func widenMySQL(cur, want string) typeChange {
	return compareTypes(cur, want, parseMySQLType, myChange)
}

func myChange(c, w colType) typeChange {
	// MariaDB's JSON is LONGTEXT with a check: the same column.
	if c.base == "longtext" && w.base == "json" && !c.unsigned && !w.unsigned {
		return typeSame
	}
	if myWidens(c, w) {
		return typeWiden
	}
	return typeDiffer
}

func myWidens(c, w colType) bool {
	// Signed never becomes unsigned; unsigned may become signed when the
	// target is wider.
	if w.unsigned && !c.unsigned {
		return false
	}
	switch c.base {
	case "tinyint", "smallint", "mediumint", "int", "bigint":
		switch w.base {
		case "tinyint", "smallint", "mediumint", "int", "bigint":
			// A larger rank holds every value, signed or not, of a smaller
			// one (signed to unsigned is refused above).
			return myIntRank[w.base] > myIntRank[c.base]
		case "decimal":
			return w.args[0]-w.args[1] >= intDigits(c.base, c.unsigned)
		}
	case "decimal":
		return w.base == "decimal" && decimalHolds(c.args, w.args)
	case "float":
		return w.base == "double"
	case "char", "varchar":
		chars := int64(c.args[0])
		switch w.base {
		case "varchar":
			return w.args[0] > c.args[0] || (c.base == "char" && w.args[0] == c.args[0])
		case "char":
			return c.base == "char" && w.args[0] > c.args[0]
		}
		if capacity, ok := myTextCap[w.base]; ok {
			return chars*4 <= capacity // utf8mb4: up to 4 bytes a character
		}
	case "tinytext", "text", "mediumtext", "longtext":
		capacity, ok := myTextCap[w.base]
		return ok && capacity > myTextCap[c.base]
	case "binary", "varbinary":
		switch w.base {
		case "varbinary":
			// binary(n) holds n bytes exactly (zero-padded): varbinary(m ≥ n)
			// keeps them; binary(m > n) would pad further.
			return w.args[0] > c.args[0] || (c.base == "binary" && w.args[0] == c.args[0])
		}
		if capacity, ok := myBlobCap[w.base]; ok {
			return int64(c.args[0]) <= capacity
		}
	case "tinyblob", "blob", "mediumblob", "longblob":
		capacity, ok := myBlobCap[w.base]
		return ok && capacity > myBlobCap[c.base]
	case "bit":
		return w.base == "bit" && w.args[0] > c.args[0]
	case "time", "datetime", "timestamp":
		return w.base == c.base && w.args[0] > c.args[0]
	case "enum", "set":
		// New labels at the end keep the stored numbers of the old ones.
		if w.base != c.base || len(w.labels) <= len(c.labels) {
			return false
		}
		for i, l := range c.labels {
			if w.labels[i] != l {
				return false
			}
		}
		return true
	}
	return false
}

// ---- MariaDB's UUID, INET6 and INET4 ----

// extColumnType is the target type of a string column that holds a
// MariaDB UUID, INET6 or INET4 value as text (source.type uuid, inet6,
// inet4): PostgreSQL's own uuid and inet types, which compare and index
// the values as the source does; on MySQL a string just long enough (a
// MariaDB target would take UUID itself, but MySQL has no such type).
func extColumnType(postgres bool, s *schema.Schema) (string, bool) {
	if s.Type != schema.String {
		return "", false
	}
	st := strings.ToLower(strings.TrimSpace(s.Param(schema.ParamSourceType)))
	switch {
	case postgres && st == "uuid":
		return "UUID", true
	case postgres && (st == "inet6" || st == "inet4"):
		return "INET", true
	case st == "uuid":
		return "CHAR(36)", true
	case st == "inet6":
		return "VARCHAR(45)", true // ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255 is 45
	case st == "inet4":
		return "VARCHAR(15)", true
	}
	return "", false
}
