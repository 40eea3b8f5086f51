package dialect

import (
	"strconv"
	"strings"
)

// Column types as text: parsing what the database reports (PostgreSQL's
// format_type, MySQL's COLUMN_TYPE) and what columnType asks for, and
// deciding whether changing one into the other is a safe widening (every
// value of the current type is kept exactly by the wanted one). These
// functions are pure: the text comes from the database or from a record's
// schema, so anything they do not understand is "different", never a panic.

// ColType is a parsed column type.
type ColType struct {
	Base     string   // canonical lower-case name, e.g. "integer", "varchar", "timestamptz"
	Args     []int    // the numbers in parentheses, after defaults are applied; nil when unbounded
	Labels   []string // MySQL ENUM/SET labels
	Unsigned bool     // MySQL
	Array    bool     // PostgreSQL: "[]" suffix
}

// TypeChange is what turning a column of one type into another means.
type TypeChange int

const (
	TypeSame   TypeChange = iota // the same type, or one the database treats as the same
	TypeWiden                    // a strict, safe widening: alter the column
	TypeKeep                     // different on purpose (an older mapping): keep it silently
	TypeDiffer                   // anything else: not altered, the operator decides
)

func (c TypeChange) String() string {
	return [...]string{"same", "widen", "keep", "differ"}[c]
}

func (t ColType) Equal(o ColType) bool {
	if t.Base != o.Base || t.Unsigned != o.Unsigned || t.Array != o.Array || len(t.Args) != len(o.Args) || len(t.Labels) != len(o.Labels) {
		return false
	}
	for i := range t.Args {
		if t.Args[i] != o.Args[i] {
			return false
		}
	}
	for i := range t.Labels {
		if t.Labels[i] != o.Labels[i] {
			return false
		}
	}
	return true
}

// SplitParens cuts s into the words outside the first
// parenthesised group and the text inside it. Quoted strings inside the group
// are skipped over (they may hold parentheses); backslash escapes them when
// backslashEsc. ok is false for unbalanced text.
func SplitParens(s string, backslashEsc bool) (words, inner string, has, ok bool) {
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

// IntArgs parses "10" or "10,2"; nil, false for anything else.
func IntArgs(inner string) ([]int, bool) {
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

// Words normalises whitespace: lower-case Words joined by one space.
func Words(s string) string { return strings.Join(strings.Fields(s), " ") }

// IntDigits is how many decimal digits the largest magnitude of an integer
// type needs, keyed by base (and unsignedness for MySQL).
func IntDigits(base string, unsigned bool) int {
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

// DecimalHolds reports whether numeric/decimal want (args p,s; nil =
// unbounded) keeps every value of decimal cur.
func DecimalHolds(cur, want []int) bool {
	if want == nil {
		return true
	}
	if cur == nil {
		return false
	}
	return want[1] >= cur[1] && want[0]-want[1] >= cur[0]-cur[1]
}

// CompareTypes parses the type texts cur and want with parse; types that
// differ go to rules. Text it cannot parse is only the same as itself.
func CompareTypes(cur, want string, parse func(string) (ColType, bool), rules func(c, w ColType) TypeChange) TypeChange {
	c, ok1 := parse(cur)
	w, ok2 := parse(want)
	if !ok1 || !ok2 {
		if strings.EqualFold(strings.TrimSpace(cur), strings.TrimSpace(want)) {
			return TypeSame
		}
		return TypeDiffer
	}
	if c.Equal(w) {
		return TypeSame
	}
	return rules(c, w)
}
