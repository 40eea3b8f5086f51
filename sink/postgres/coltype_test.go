package postgres

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
	"github.com/sluicecdc/sluice/sink/dialect/dialecttest"
)

func TestWidenPG(t *testing.T) {
	cases := []dialecttest.WidenCase{
		// The same type as format_type prints it and as columnType writes it.
		dialecttest.W("integer", "INTEGER", dialect.TypeSame),
		dialecttest.W("numeric(20,0)", "NUMERIC(20)", dialect.TypeSame),
		dialecttest.W("numeric", "NUMERIC", dialect.TypeSame),
		dialecttest.W("timestamp(6) without time zone", "TIMESTAMP(6)", dialect.TypeSame),
		dialecttest.W("timestamp without time zone", "TIMESTAMP(6)", dialect.TypeSame),
		dialecttest.W("timestamp(6) with time zone", "TIMESTAMPTZ(6)", dialect.TypeSame),
		dialecttest.W("time(6) without time zone", "TIME(6)", dialect.TypeSame),
		dialecttest.W("bit varying(12)", "BIT VARYING(12)", dialect.TypeSame),
		dialecttest.W("double precision", "DOUBLE PRECISION", dialect.TypeSame),
		dialecttest.W("character varying", "TEXT", dialect.TypeSame),
		dialecttest.W("text[]", "TEXT[]", dialect.TypeSame),
		dialecttest.W("jsonb", "JSONB", dialect.TypeSame),
		dialecttest.W("interval", "INTERVAL", dialect.TypeSame),
		dialecttest.W(`"MyType"`, `"MyType"`, dialect.TypeSame),
		// Integer ladder.
		dialecttest.W("smallint", "INTEGER", dialect.TypeWiden),
		dialecttest.W("smallint", "BIGINT", dialect.TypeWiden),
		dialecttest.W("integer", "BIGINT", dialect.TypeWiden),
		dialecttest.W("bigint", "INTEGER", dialect.TypeDiffer),
		dialecttest.W("integer", "SMALLINT", dialect.TypeDiffer),
		// Integers into numeric with enough integer digits.
		dialecttest.W("integer", "NUMERIC(10,0)", dialect.TypeWiden),
		dialecttest.W("integer", "NUMERIC(12,2)", dialect.TypeWiden),
		dialecttest.W("integer", "NUMERIC(11,2)", dialect.TypeDiffer),
		dialecttest.W("bigint", "NUMERIC(20)", dialect.TypeWiden),
		dialecttest.W("bigint", "NUMERIC(19)", dialect.TypeWiden),
		dialecttest.W("bigint", "NUMERIC(18)", dialect.TypeDiffer),
		dialecttest.W("smallint", "NUMERIC", dialect.TypeWiden),
		dialecttest.W("numeric(20,0)", "BIGINT", dialect.TypeDiffer),
		dialecttest.W("integer", "DOUBLE PRECISION", dialect.TypeWiden),
		dialecttest.W("bigint", "DOUBLE PRECISION", dialect.TypeDiffer),
		// Numeric precision and scale.
		dialecttest.W("numeric(5,2)", "NUMERIC(10,2)", dialect.TypeWiden),
		dialecttest.W("numeric(5,2)", "NUMERIC(6,3)", dialect.TypeWiden),
		dialecttest.W("numeric(5,2)", "NUMERIC(5,3)", dialect.TypeDiffer), // one integer digit fewer
		dialecttest.W("numeric(10,2)", "NUMERIC(5,2)", dialect.TypeDiffer),
		dialecttest.W("numeric(5,2)", "NUMERIC(10,1)", dialect.TypeDiffer), // scale down rounds
		dialecttest.W("numeric(5,2)", "NUMERIC", dialect.TypeWiden),
		dialecttest.W("numeric", "NUMERIC(65,30)", dialect.TypeDiffer),
		// Strings.
		dialecttest.W("character varying(10)", "TEXT", dialect.TypeWiden),
		dialecttest.W("character varying(10)", "VARCHAR(50)", dialect.TypeWiden),
		dialecttest.W("character varying(50)", "VARCHAR(10)", dialect.TypeDiffer),
		dialecttest.W("character(3)", "CHAR(5)", dialect.TypeWiden),
		dialecttest.W("character(3)", "VARCHAR(3)", dialect.TypeWiden),
		dialecttest.W("character(3)", "VARCHAR(2)", dialect.TypeDiffer),
		dialecttest.W("character(3)", "TEXT", dialect.TypeWiden),
		dialecttest.W("text", "VARCHAR(10)", dialect.TypeDiffer),
		// Floats.
		dialecttest.W("real", "DOUBLE PRECISION", dialect.TypeWiden),
		dialecttest.W("double precision", "REAL", dialect.TypeDiffer),
		// Bits.
		dialecttest.W("bit varying(12)", "BIT VARYING(20)", dialect.TypeWiden),
		dialecttest.W("bit varying(20)", "BIT VARYING(12)", dialect.TypeDiffer),
		dialecttest.W("bit(3)", "BIT VARYING(3)", dialect.TypeWiden),
		dialecttest.W("bit(3)", "BIT(5)", dialect.TypeDiffer), // bit(n) pads
		// Fractional seconds.
		dialecttest.W("time(3) without time zone", "TIME(6)", dialect.TypeWiden),
		dialecttest.W("timestamp(0) without time zone", "TIMESTAMP(6)", dialect.TypeWiden),
		dialecttest.W("timestamp(3) with time zone", "TIMESTAMPTZ(6)", dialect.TypeWiden),
		dialecttest.W("timestamp(3) with time zone", "TIMESTAMP(6)", dialect.TypeDiffer),
		dialecttest.W("timestamp(6) without time zone", "TIMESTAMP(3)", dialect.TypeKeep),
		dialecttest.W("time(6) without time zone", "TIME(0)", dialect.TypeKeep),
		dialecttest.W("time(6) without time zone", "INTERVAL", dialect.TypeWiden), // time_as_interval set later,
		// SET columns of older tables stay text.
		dialecttest.W("text", "TEXT[]", dialect.TypeKeep),
		dialecttest.W("character varying(255)", "TEXT[]", dialect.TypeKeep),
		dialecttest.W("text[]", "TEXT", dialect.TypeDiffer),
		dialecttest.W("integer[]", "BIGINT[]", dialect.TypeDiffer),
		// Unrelated.
		dialecttest.W("text", "BYTEA", dialect.TypeDiffer),
		dialecttest.W("jsonb", "TEXT", dialect.TypeDiffer),
		dialecttest.W("integer", "TEXT", dialect.TypeDiffer),
		dialecttest.W("", "TEXT", dialect.TypeDiffer),
		dialecttest.W("numeric(5", "NUMERIC(5,2)", dialect.TypeDiffer),
	}
	dialecttest.CheckWiden(t, "widenPG", widenPG, cases)
}

func TestPGArrayLiteral(t *testing.T) {
	cases := []struct {
		set, want string
	}{
		{"a,c", `{"a","c"}`},
		{"", `{}`},
		{"it's", `{"it's"}`},
		{`say "hi",back\slash`, `{"say \"hi\"","back\\slash"}`},
		{"x y,{b},NULL", `{"x y","{b}","NULL"}`},
	}
	for _, c := range cases {
		if got := setArrayLiteral(c.set); got != c.want {
			t.Errorf("setArrayLiteral(%q) = %s, want %s", c.set, got, c.want)
		}
		back, ok := parsePGArray(c.want)
		want := strings.Split(c.set, ",")
		if c.set == "" {
			want = []string{}
		}
		if !ok || !slices.Equal(back, want) {
			t.Errorf("parsePGArray(%s) = %q %v, want %q", c.want, back, ok, want)
		}
	}
	// As PostgreSQL prints arrays: quotes only where needed.
	for in, want := range map[string][]string{
		`{a,it's,"b\\c","x y","","NULL","d\"q"}`: {"a", "it's", `b\c`, "x y", "", "NULL", `d"q`},
		`{ a , b }`:                              {"a", "b"},
	} {
		got, ok := parsePGArray(in)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("parsePGArray(%s) = %q %v, want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "{", "a,b", "{a,NULL}", "{a,}", `{"a}`, "{{a}}", `{a"b}`, `{"a"b}`} {
		if got, ok := parsePGArray(bad); ok {
			t.Errorf("parsePGArray(%q) = %q, want refusal", bad, got)
		}
	}
}

func TestEnumCheck(t *testing.T) {
	d := Dialect{checkEnums: true}
	got, err := d.enumCheck(`co"l`, []string{"a", "it's", `b\c`, `d"q`})
	want := `CONSTRAINT "co""l_enum_` + EnumCheckName(`co"l`)[len(`co"l_enum_`):] + `" CHECK ("co""l" = ANY (E'{"a","it''s","b\\\\c","d\\"q"}'::text[]))`
	if err != nil || got != want {
		t.Fatalf("enumCheck:\n got %s %v\nwant %s", got, err, want)
	}
	if _, err := d.enumCheck("c", []string{"a\x00b"}); err == nil {
		t.Fatal("a NUL label was accepted")
	}
	// Names: distinct for long columns sharing a prefix, within 63 bytes,
	// valid UTF-8, and recognised.
	long := strings.Repeat("é", 30)
	a, b := EnumCheckName(long+"x"), EnumCheckName(long+"y")
	if a == b || len(a) > 63 || !utf8.ValidString(a) || !isEnumCheckName(a) || !isEnumCheckName(EnumCheckName("c")) {
		t.Fatalf("names %q %q", a, b)
	}
	for _, n := range []string{"c_enum_1234567", "c_enum_1234567g", "c_check", "c_enum_12345678x"} {
		if isEnumCheckName(n) {
			t.Errorf("%q taken for an ENUM check name", n)
		}
	}
	// Definitions as pg_get_constraintdef prints them (checked against
	// PostgreSQL 15 with standard_conforming_strings on and off).
	for _, c := range []struct {
		def  string
		scs  bool
		want []string
	}{
		{`CHECK ((j = ANY ('{a,it''s,"b\\c","x y","","NULL","d\"q"}'::text[])))`, true, []string{"a", "it's", `b\c`, "x y", "", "NULL", `d"q`}},
		{`CHECK ((j = ANY ('{a,it''s,"b\\\\c","x y","","NULL","d\\"q"}'::text[])))`, false, []string{"a", "it's", `b\c`, "x y", "", "NULL", `d"q`}},
		{`CHECK (("we ""ird" = ANY ('{a}'::text[]))) NOT VALID`, true, []string{"a"}},
		{`CHECK ((c = ANY (E'{"a\\\\b"}'::text[])))`, true, []string{`a\b`}},
	} {
		got, ok := parseEnumCheck(c.def, c.scs)
		if !ok || !slices.Equal(got, c.want) {
			t.Errorf("parseEnumCheck(%s) = %q %v, want %q", c.def, got, ok, c.want)
		}
	}
	for _, bad := range []string{
		`CHECK ((j = 'a'::text))`,
		`CHECK ((j = ANY (ARRAY['a'::text, 'b'::text])))`,
		`CHECK ((j = ANY ('{a}'::text[]))) AND true`,
		`CHECK ((j = ANY ('{a}`,
		`CHECK (("j = ANY ('{a}'::text[])))`,
	} {
		if got, ok := parseEnumCheck(bad, true); ok {
			t.Errorf("parseEnumCheck(%s) = %q, want refusal", bad, got)
		}
	}
}

// FuzzPGArray checks that array literals of any labels parse back to the
// labels, and that the parsers take any text without panicking.
func FuzzPGArray(f *testing.F) {
	f.Add("a,it's", `{a,"b\\c"}`)
	f.Add(`x "y",\`, `CHECK ((c = ANY ('{a}'::text[])))`)
	f.Fuzz(func(t *testing.T, set, text string) {
		want := strings.Split(set, ",")
		lit := setArrayLiteral(set)
		if set == "" {
			want = []string{}
		}
		got, ok := parsePGArray(lit)
		if !ok || !slices.Equal(got, want) {
			t.Fatalf("%q -> %s -> %q %v", set, lit, got, ok)
		}
		if pgArrayLiteral(want) != lit {
			t.Fatalf("pgArrayLiteral(%q) = %s, setArrayLiteral = %s", want, pgArrayLiteral(want), lit)
		}
		parsePGArray(text)
		parseEnumCheck(text, true)
		parseEnumCheck(text, false)
		dialect.ParseMySQLType(text)
	})
}

func TestFractionDigits(t *testing.T) {
	for src, want := range map[string]int{"": 6, "datetime": 0, "datetime(3)": 3, "TIMESTAMP(6)": 6, "time(1)": 1, "time": 0, "datetime(9)": 6, "datetime(x)": 6, "varchar(3)": 6} {
		s := schema.Primitive(schema.Int64, true)
		if src != "" {
			s.Params = map[string]string{schema.ParamSourceType: src}
		}
		if got := dialect.FractionDigits(s); got != want {
			t.Errorf("dialect.FractionDigits(%q) = %d, want %d", src, got, want)
		}
	}
}

// FuzzColumnType: dialecttest.FuzzTypes on this dialect's parser.
func FuzzColumnType(f *testing.F) { dialecttest.FuzzTypes(f, "pg", parsePGType, widenPG) }

// TestExtColumnTypes: MariaDB's UUID, INET6 and INET4 strings
// (dialecttest.ExtTypes).
func TestExtColumnTypes(t *testing.T) {
	dialecttest.CheckExtColumnTypes(t, "pg", Dialect{}.ColumnType, func(e dialecttest.ExtType) string { return e.Postgres })
	if got, _ := (Dialect{}).ColumnType("c", &schema.Schema{Type: schema.Bytes, Params: map[string]string{schema.ParamSourceType: "uuid"}}, false); got != "BYTEA" {
		t.Errorf("bytes with source type uuid: %s, want BYTEA", got)
	}
}
