package binlog

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MySQL's native JSON reaches sluice in two forms: the snapshot reads the
// server's text ({"k": [1, 2.5]}: a space after ',' and ':'), the binlog
// carries the binary form, which go-mysql renders (RenderJSONAsMySQLText)
// compactly, in the stored key order, but with Go's float formatting. Both
// are brought to one text: MySQL's own tokens (its key order, its string
// escapes, its double formatting) without the spaces, which is the form
// Debezium's MySQL connector emits from the binlog.
//
// mysqlJSON parses s and writes it back in that form.
func mysqlJSON(s string) (string, error) {
	if s == "" { // an empty document (inserted with IGNORE or sql_mode ''): kept as read
		return "", nil
	}
	n, err := parseJSONNode(s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(s))
	n.write(&b)
	return b.String(), nil
}

// jnode is a JSON value: an object (keys, in order), an array, or a
// scalar kept as its token.
type jnode struct {
	kind byte     // '{', '[' or 0 for a scalar
	tok  string   // a scalar's token, numbers already in MySQL's form
	keys []string // an object's keys, unescaped
	vals []*jnode
}

func (n *jnode) write(b *strings.Builder) {
	switch n.kind {
	case '{':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			n.vals[i].write(b)
		}
		b.WriteByte('}')
	case '[':
		b.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			v.write(b)
		}
		b.WriteByte(']')
	default:
		b.WriteString(n.tok)
	}
}

// writeJSONString writes s quoted as MySQL does: '"', '\\' and the
// control characters escaped (\b \f \n \r \t, else \u00xx), the rest as is.
func writeJSONString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

type jsonParser struct {
	s     string
	i     int
	depth int
}

// maxJSONDepth bounds the parser's recursion (MySQL allows 100 levels).
const maxJSONDepth = 1000

var errJSONText = errors.New("invalid JSON text")

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", errJSONText, p.i, fmt.Sprintf(format, args...))
}

func (p *jsonParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\n' || p.s[p.i] == '\t' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *jsonParser) value() (*jnode, error) {
	p.space()
	if p.i >= len(p.s) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{' || c == '[':
		if p.depth++; p.depth > maxJSONDepth {
			return nil, p.errorf("nested deeper than %d", maxJSONDepth)
		}
		defer func() { p.depth-- }()
		return p.container(c)
	case c == '"':
		str, err := p.str()
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		writeJSONString(&b, str)
		return &jnode{tok: b.String()}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.i
		for p.i < len(p.s) && strings.IndexByte("+-0123456789.eE", p.s[p.i]) >= 0 {
			p.i++
		}
		tok, err := mysqlNumber(p.s[start:p.i])
		if err != nil {
			return nil, p.errorf("%v", err)
		}
		return &jnode{tok: tok}, nil
	default:
		for _, lit := range []string{"null", "true", "false"} {
			if strings.HasPrefix(p.s[p.i:], lit) {
				p.i += len(lit)
				return &jnode{tok: lit}, nil
			}
		}
		return nil, p.errorf("unexpected %q", c)
	}
}

func (p *jsonParser) container(open byte) (*jnode, error) {
	n := &jnode{kind: open}
	closer := byte(']')
	if open == '{' {
		closer = '}'
	}
	p.i++
	p.space()
	if p.i < len(p.s) && p.s[p.i] == closer {
		p.i++
		return n, nil
	}
	for {
		if open == '{' {
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return nil, p.errorf("object key expected")
			}
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, p.errorf("':' expected")
			}
			p.i++
			n.keys = append(n.keys, k)
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.vals = append(n.vals, v)
		p.space()
		if p.i >= len(p.s) {
			return nil, p.errorf("unexpected end")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case closer:
			p.i++
			return n, nil
		default:
			return nil, p.errorf("',' or %q expected", closer)
		}
	}
}

// str reads a quoted string at p.i and returns it unescaped.
func (p *jsonParser) str() (string, error) {
	p.i++ // the opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", p.errorf("unterminated escape")
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if r >= 0xD800 && r < 0xDC00 && strings.HasPrefix(p.s[p.i:], `\u`) {
					save := p.i
					p.i += 2
					if lo, err := p.hex4(); err == nil && lo >= 0xDC00 && lo < 0xE000 {
						r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					} else {
						p.i = save
					}
				}
				if !utf8.ValidRune(r) { // a lone surrogate
					r = utf8.RuneError
				}
				b.WriteRune(r)
			default:
				return "", p.errorf("bad escape \\%c", e)
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *jsonParser) hex4() (rune, error) {
	if p.i+4 > len(p.s) {
		return 0, p.errorf("short \\u escape")
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil {
		return 0, p.errorf("bad \\u escape")
	}
	p.i += 4
	return rune(v), nil
}

// mysqlNumber returns a number token as MySQL writes it. Integers and
// DECIMAL values come as MySQL writes them already; a DOUBLE that go-mysql
// formatted (a whole number as %.1f, else Go's shortest %g) is written as
// MySQL's my_gcvt does. A token in neither of go-mysql's double forms is
// the server's own text (snapshot) or a DECIMAL, and stays.
func mysqlNumber(tok string) (string, error) {
	if strings.IndexAny(tok, ".eE") < 0 {
		if _, err := strconv.ParseInt(tok, 10, 64); err != nil {
			if _, err := strconv.ParseUint(tok, 10, 64); err != nil {
				if !isDigits(strings.TrimPrefix(tok, "-")) {
					return "", fmt.Errorf("bad number %q", tok)
				}
			}
		}
		return tok, nil
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return "", fmt.Errorf("bad number %q", tok)
	}
	if tok == goMySQLDouble(f) {
		return mysqlDouble(f), nil
	}
	return tok, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// goMySQLDouble is go-mysql's text of a JSON DOUBLE (RenderJSONAsMySQLText).
func goMySQLDouble(f float64) string {
	if f == math.Trunc(f) {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// mysqlDouble formats f as MySQL writes a JSON DOUBLE: the shortest digits
// that read back as f, in positional notation when the decimal point falls
// within 14 places before the first digit and 15 after it (or within the
// digits), else as d.ddde±x; a whole number ends in ".0".
func mysqlDouble(f float64) string {
	e := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±xx
	neg := strings.HasPrefix(e, "-")
	e = strings.TrimPrefix(e, "-")
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	digits := strings.Replace(mant, ".", "", 1)
	decpt := exp + 1 // digits are 0.ddd × 10^decpt
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	switch {
	case decpt >= -14 && (decpt <= 15 || len(digits) > decpt):
		switch {
		case decpt <= 0:
			b.WriteString("0.")
			b.WriteString(strings.Repeat("0", -decpt))
			b.WriteString(digits)
		case len(digits) <= decpt:
			b.WriteString(digits)
			b.WriteString(strings.Repeat("0", decpt-len(digits)))
			b.WriteString(".0")
		default:
			b.WriteString(digits[:decpt])
			b.WriteByte('.')
			b.WriteString(digits[decpt:])
		}
	default:
		b.WriteString(mant)
		b.WriteByte('e')
		b.WriteString(strconv.Itoa(exp))
	}
	return b.String()
}
