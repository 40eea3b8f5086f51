package postgres

import (
	"fmt"
	"hash/fnv"
	"strings"
	"unicode/utf8"

	"github.com/sluicecdc/sluice/sink/dialect"
)

// PostgreSQL array literals (SET values written into TEXT[] columns, the
// label list of an ENUM's CHECK constraint) and the CHECK constraint itself.

// appendPGArrayElem appends one double-quoted array element, with " and \
// escaped by a backslash as the array-literal grammar needs.
func appendPGArrayElem(b []byte, e string) []byte {
	b = append(b, '"')
	last := 0
	for i := 0; i < len(e); i++ {
		if e[i] == '"' || e[i] == '\\' {
			b = append(b, e[last:i]...)
			b = append(b, '\\', e[i])
			last = i + 1
		}
	}
	b = append(b, e[last:]...)
	return append(b, '"')
}

// pgArrayLiteral renders elems as {"a","it's"}; no elements is {}.
func pgArrayLiteral(elems []string) string {
	n := 2
	for _, e := range elems {
		n += len(e) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPGArrayElem(b, e)
	}
	return string(append(b, '}'))
}

// setArrayLiteral turns a SET value (labels joined by ',', the empty set
// "") into a TEXT[] literal. SET labels cannot contain a comma.
func setArrayLiteral(v string) string {
	if v == "" {
		return "{}"
	}
	b := make([]byte, 0, len(v)+8)
	b = append(b, '{')
	for {
		i := strings.IndexByte(v, ',')
		if i < 0 {
			b = appendPGArrayElem(b, v)
			break
		}
		b = appendPGArrayElem(b, v[:i])
		b = append(b, ',')
		v = v[i+1:]
	}
	return string(append(b, '}'))
}

// parsePGArray parses a one-dimensional text array literal as PostgreSQL
// prints it: elements quoted or not, backslash escapes; a NULL element or
// anything nested is refused.
func parsePGArray(s string) ([]string, bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, false
	}
	body := s[1 : len(s)-1]
	out := []string{}
	if strings.TrimSpace(body) == "" {
		return out, true
	}
	i := 0
	for {
		for i < len(body) && isArraySpace(body[i]) {
			i++
		}
		var b strings.Builder
		if i < len(body) && body[i] == '"' {
			i++
			for {
				if i >= len(body) {
					return nil, false
				}
				c := body[i]
				if c == '\\' {
					if i = escaped(&b, body, i); i < 0 {
						return nil, false
					}
					continue
				}
				i++
				if c == '"' {
					break
				}
				b.WriteByte(c)
			}
			for i < len(body) && isArraySpace(body[i]) {
				i++
			}
		} else {
			start := i
			for i < len(body) && body[i] != ',' {
				c := body[i]
				if c == '{' || c == '}' || c == '"' {
					return nil, false
				}
				if c == '\\' {
					if i = escaped(&b, body, i); i < 0 {
						return nil, false
					}
					continue
				}
				b.WriteByte(c)
				i++
			}
			e := strings.TrimRight(b.String(), " \t\n\r\v\f")
			if e == "" || (strings.EqualFold(e, "NULL") && !strings.Contains(body[start:i], `\`)) {
				return nil, false
			}
			b.Reset()
			b.WriteString(e)
		}
		out = append(out, b.String())
		if i == len(body) {
			return out, true
		}
		if body[i] != ',' {
			return nil, false
		}
		i++
	}
}

// escaped writes the byte after the backslash at s[i] to b and returns the
// index after it; -1 when the backslash ends s.
func escaped(b *strings.Builder, s string, i int) int {
	if i+1 >= len(s) {
		return -1
	}
	b.WriteByte(s[i+1])
	return i + 2
}

func isArraySpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// pgStringLiteral quotes s as an escape string constant, E'…' with ' and \
// doubled, which reads the same whatever standard_conforming_strings says.
// PostgreSQL text cannot hold NUL.
func pgStringLiteral(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("%w: %q contains a NUL byte, which PostgreSQL text cannot hold", dialect.ErrSchema, s)
	}
	return "E'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'", nil
}

// EnumCheckName names the CHECK constraint of an ENUM column: the column's
// name (cut to fit) and a hash of it, so columns sharing a long prefix get
// distinct names within PostgreSQL's 63 bytes.
func EnumCheckName(col string) string {
	h := fnv.New32a()
	h.Write([]byte(col))
	prefix := col
	if len(prefix) > 40 {
		prefix = prefix[:40]
		for !utf8.ValidString(prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	return fmt.Sprintf("%s_enum_%08x", prefix, h.Sum32())
}

// isEnumCheckName reports names EnumCheckName makes (for any column).
func isEnumCheckName(name string) bool {
	i := strings.LastIndex(name, "_enum_")
	if i < 0 || len(name)-i-len("_enum_") != 8 {
		return false
	}
	for _, c := range name[i+len("_enum_"):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// enumCheck renders the named column constraint restricting col to labels:
// CONSTRAINT "c_enum_…" CHECK ("c" = ANY (E'{…}'::text[])). NULL passes.
func (d Dialect) enumCheck(col string, labels []string) (string, error) {
	lit, err := pgStringLiteral(pgArrayLiteral(labels))
	if err != nil {
		return "", fmt.Errorf("column %q: ENUM label: %w", col, err)
	}
	return "CONSTRAINT " + d.Quote(EnumCheckName(col)) + " CHECK (" + d.Quote(col) + " = ANY (" + lit + "::text[]))", nil
}

// parseEnumCheck takes the labels out of an enumCheck constraint as
// pg_get_constraintdef prints it:
//
//	CHECK ((col = ANY ('{a,"it''s"}'::text[])))
//
// scs is the session's standard_conforming_strings: off, the printed
// literal has its backslashes doubled.
func parseEnumCheck(def string, scs bool) ([]string, bool) {
	rest, ok := strings.CutPrefix(def, "CHECK ((")
	if !ok {
		return nil, false
	}
	// The column: a quoted identifier ("" inside) or a bare word.
	if strings.HasPrefix(rest, `"`) {
		i := 1
		for {
			if i >= len(rest) {
				return nil, false
			}
			if rest[i] == '"' {
				if i+1 < len(rest) && rest[i+1] == '"' {
					i += 2
					continue
				}
				break
			}
			i++
		}
		rest = rest[i+1:]
	} else {
		i := strings.IndexByte(rest, ' ')
		if i <= 0 {
			return nil, false
		}
		rest = rest[i:]
	}
	if rest, ok = strings.CutPrefix(rest, " = ANY ("); !ok {
		return nil, false
	}
	esc := !scs
	if strings.HasPrefix(rest, "E'") {
		esc, rest = true, rest[1:]
	}
	if !strings.HasPrefix(rest, "'") {
		return nil, false
	}
	var b strings.Builder
	i := 1
	for {
		if i >= len(rest) {
			return nil, false
		}
		c := rest[i]
		if esc && c == '\\' {
			if i = escaped(&b, rest, i); i < 0 {
				return nil, false
			}
			continue
		}
		if c == '\'' {
			if i+1 < len(rest) && rest[i+1] == '\'' {
				b.WriteByte('\'')
				i += 2
				continue
			}
			break
		}
		b.WriteByte(c)
		i++
	}
	tail := rest[i+1:]
	tail = strings.TrimSuffix(tail, " NOT VALID")
	if tail != "::text[])))" {
		return nil, false
	}
	return parsePGArray(b.String())
}
