// Package dialecttest holds the checks every dialect's tests run the
// same way: the widening rules, the fuzzing of the type-text parsers and
// the MariaDB UUID/INET types. Only tests import it.
package dialecttest

import (
	"testing"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// WidenCase is one expectation of a dialect's Widen.
type WidenCase struct {
	Cur, Want string
	Is        dialect.TypeChange
}

// W is a WidenCase: cur widened into want is is.
func W(cur, want string, is dialect.TypeChange) WidenCase { return WidenCase{cur, want, is} }

// CheckWiden runs the cases through widen (named name in messages).
func CheckWiden(t *testing.T, name string, widen func(cur, want string) dialect.TypeChange, cases []WidenCase) {
	t.Helper()
	for _, c := range cases {
		if got := widen(c.Cur, c.Want); got != c.Is {
			t.Errorf("%s(%q, %q) = %v, want %v", name, c.Cur, c.Want, got, c.Is)
		}
	}
}

// FuzzTypes feeds a dialect's type-text parser and widening (their input
// comes from the database and from record schemas): no panic, a type is
// the same as itself, and no two types widen into each other.
func FuzzTypes(f *testing.F, name string, parse func(string) (dialect.ColType, bool), widen func(cur, want string) dialect.TypeChange) {
	for _, s := range []string{"integer", "numeric(5,2)", "timestamp(6) with time zone", "text[]", "character varying(10)", "bit varying", `"x"."y"`,
		"int(11) unsigned zerofill", "enum('a','it''s','b\\\\c')", "set('x')", "decimal(65,30)", "TIMESTAMP(6) NULL", "varchar(", "enum('a",
		"float(53)", "bit", "char", "interval second(3)", "numeric(2147483648)", "int[][3]"} {
		f.Add(s, "bigint")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if _, ok := parse(a); ok {
			if got := widen(a, a); got != dialect.TypeSame {
				t.Fatalf("%s: %q into itself is %v", name, a, got)
			}
		}
		if widen(a, b) == dialect.TypeWiden && widen(b, a) == dialect.TypeWiden {
			t.Fatalf("%s: %q and %q widen into each other", name, a, b)
		}
	})
}

// ExtType is the column type each dialect gives a string of a MariaDB
// UUID, INET6 or INET4 (its source type), as a key too; other strings
// are untouched.
type ExtType struct{ SourceType, Postgres, MySQL string }

// ExtTypes are the cases of CheckExtColumnTypes.
var ExtTypes = []ExtType{
	{"uuid", "UUID", "CHAR(36)"}, {"inet6", "INET", "VARCHAR(45)"}, {"inet4", "INET", "VARCHAR(15)"},
	{"varchar(10)", "TEXT", "varchar(10)"},
}

// CheckExtColumnTypes checks a dialect's ColumnType against ExtTypes, the
// wanted type picked by want.
func CheckExtColumnTypes(t *testing.T, name string, columnType func(col string, s *schema.Schema, key bool) (string, error), want func(ExtType) string) {
	t.Helper()
	for _, tc := range ExtTypes {
		s := &schema.Schema{Type: schema.String, Params: map[string]string{schema.ParamSourceType: tc.SourceType}}
		for _, key := range []bool{false, true} {
			if got, err := columnType("c", s, key); err != nil || got != want(tc) {
				t.Errorf("%s %s key=%v: %s %v, want %s", name, tc.SourceType, key, got, err, want(tc))
			}
		}
	}
}
