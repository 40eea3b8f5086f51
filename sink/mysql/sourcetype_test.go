package mysql

import "testing"

func TestSafeSourceType(t *testing.T) {
	for _, ok := range []string{"bigint(20) unsigned", "varchar(255)", "enum('a','b c','it''s')", "decimal(65,30)", "datetime(6)", "json", "set('x','y')"} {
		if !safeSourceType(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "int; drop table x", "enum('a)", "enum('a\\')", "int -- c", "int/*x*/", "int(1)(2", "enum('a'),x", "varchar(10) default 'x'"} {
		if safeSourceType(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzSafeSourceType checks that an accepted source type never lets text
// escape a column definition: outside single-quoted strings it holds only
// letters, digits, spaces, underscores, commas and one level of parentheses.
func FuzzSafeSourceType(f *testing.F) {
	for _, s := range []string{"enum('a','b')", "int; drop", "varchar(3)", "enum('it''s')", "set(''')", "a(1)b(2)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !safeSourceType(s) {
			return
		}
		inQuote, depth := false, 0
		for i := 0; i < len(s); i++ {
			c := s[i]
			if inQuote {
				if c == '\\' || c == 0 {
					t.Fatalf("%q: backslash or NUL inside quotes accepted", s)
				}
				if c == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' {
						i++
						continue
					}
					inQuote = false
				}
				continue
			}
			switch {
			case c == '\'':
				if depth == 0 {
					t.Fatalf("%q: quote outside parentheses", s)
				}
				inQuote = true
			case c == '(':
				depth++
			case c == ')':
				depth--
			case c == ',' || c == ' ' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			default:
				t.Fatalf("%q: byte %q accepted outside quotes", s, c)
			}
			if depth < 0 || depth > 1 {
				t.Fatalf("%q: parentheses unbalanced or nested", s)
			}
		}
		if inQuote || depth != 0 {
			t.Fatalf("%q: unterminated", s)
		}
	})
}
