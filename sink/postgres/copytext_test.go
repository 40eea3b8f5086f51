package postgres

import (
	"strings"
	"testing"
)

// unescapeCopy reverses COPY text escaping the way PostgreSQL's COPY FROM
// reads a field (the escapes appendCopyEscaped writes, plus \N for NULL).
func unescapeCopy(field string) (string, bool) {
	if field == `\N` {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(field); i++ {
		c := field[i]
		if c != '\\' || i+1 == len(field) {
			b.WriteByte(c)
			continue
		}
		i++
		switch field[i] {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		default:
			b.WriteByte(field[i])
		}
	}
	return b.String(), false
}

func TestAppendCopyText(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{nil, `\N`},
		{"plain", "plain"},
		{"a\tb\nc\rd\\e", `a\tb\nc\rd\\e`},
		{`\N`, `\\N`},
		{int64(-42), "-42"},
		{true, "true"},
		{[]byte{0, 0xff, '\\'}, `\\x00ff5c`},
	}
	for _, c := range cases {
		got, err := appendCopyText(nil, c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("appendCopyText(%#v) = %q, %v; want %q", c.v, got, err, c.want)
		}
	}
	if _, err := appendCopyText(nil, struct{}{}); err == nil {
		t.Error("appendCopyText accepted a struct")
	}
}

func FuzzAppendCopyText(f *testing.F) {
	for _, s := range []string{"", "x", "\\", "\t\n\r", `\N`, "héllo\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		field, _ := appendCopyText(nil, s)
		for _, c := range field {
			if c == '\t' || c == '\n' || c == '\r' {
				t.Fatalf("field %q of %q holds a raw separator", field, s)
			}
		}
		got, null := unescapeCopy(string(field))
		if null || got != s {
			t.Fatalf("%q encoded as %q reads back as %q (null %v)", s, field, got, null)
		}
	})
}
