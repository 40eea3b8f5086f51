package sink

import (
	"github.com/sluicecdc/sluice/schema"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWidenPG(t *testing.T) {
	cases := []widenCase{
		// The same type as format_type prints it and as columnType writes it.
		{"integer", "INTEGER", typeSame},
		{"numeric(20,0)", "NUMERIC(20)", typeSame},
		{"numeric", "NUMERIC", typeSame},
		{"timestamp(6) without time zone", "TIMESTAMP(6)", typeSame},
		{"timestamp without time zone", "TIMESTAMP(6)", typeSame},
		{"timestamp(6) with time zone", "TIMESTAMPTZ(6)", typeSame},
		{"time(6) without time zone", "TIME(6)", typeSame},
		{"bit varying(12)", "BIT VARYING(12)", typeSame},
		{"double precision", "DOUBLE PRECISION", typeSame},
		{"character varying", "TEXT", typeSame},
		{"text[]", "TEXT[]", typeSame},
		{"jsonb", "JSONB", typeSame},
		{"interval", "INTERVAL", typeSame},
		{`"MyType"`, `"MyType"`, typeSame},
		// Integer ladder.
		{"smallint", "INTEGER", typeWiden},
		{"smallint", "BIGINT", typeWiden},
		{"integer", "BIGINT", typeWiden},
		{"bigint", "INTEGER", typeDiffer},
		{"integer", "SMALLINT", typeDiffer},
		// Integers into numeric with enough integer digits.
		{"integer", "NUMERIC(10,0)", typeWiden},
		{"integer", "NUMERIC(12,2)", typeWiden},
		{"integer", "NUMERIC(11,2)", typeDiffer},
		{"bigint", "NUMERIC(20)", typeWiden},
		{"bigint", "NUMERIC(19)", typeWiden},
		{"bigint", "NUMERIC(18)", typeDiffer},
		{"smallint", "NUMERIC", typeWiden},
		{"numeric(20,0)", "BIGINT", typeDiffer},
		{"integer", "DOUBLE PRECISION", typeWiden},
		{"bigint", "DOUBLE PRECISION", typeDiffer},
		// Numeric precision and scale.
		{"numeric(5,2)", "NUMERIC(10,2)", typeWiden},
		{"numeric(5,2)", "NUMERIC(6,3)", typeWiden},
		{"numeric(5,2)", "NUMERIC(5,3)", typeDiffer}, // one integer digit fewer
		{"numeric(10,2)", "NUMERIC(5,2)", typeDiffer},
		{"numeric(5,2)", "NUMERIC(10,1)", typeDiffer}, // scale down rounds
		{"numeric(5,2)", "NUMERIC", typeWiden},
		{"numeric", "NUMERIC(65,30)", typeDiffer},
		// Strings.
		{"character varying(10)", "TEXT", typeWiden},
		{"character varying(10)", "VARCHAR(50)", typeWiden},
		{"character varying(50)", "VARCHAR(10)", typeDiffer},
		{"character(3)", "CHAR(5)", typeWiden},
		{"character(3)", "VARCHAR(3)", typeWiden},
		{"character(3)", "VARCHAR(2)", typeDiffer},
		{"character(3)", "TEXT", typeWiden},
		{"text", "VARCHAR(10)", typeDiffer},
		// Floats.
		{"real", "DOUBLE PRECISION", typeWiden},
		{"double precision", "REAL", typeDiffer},
		// Bits.
		{"bit varying(12)", "BIT VARYING(20)", typeWiden},
		{"bit varying(20)", "BIT VARYING(12)", typeDiffer},
		{"bit(3)", "BIT VARYING(3)", typeWiden},
		{"bit(3)", "BIT(5)", typeDiffer}, // bit(n) pads
		// Fractional seconds.
		{"time(3) without time zone", "TIME(6)", typeWiden},
		{"timestamp(0) without time zone", "TIMESTAMP(6)", typeWiden},
		{"timestamp(3) with time zone", "TIMESTAMPTZ(6)", typeWiden},
		{"timestamp(3) with time zone", "TIMESTAMP(6)", typeDiffer},
		{"timestamp(6) without time zone", "TIMESTAMP(3)", typeKeep},
		{"time(6) without time zone", "TIME(0)", typeKeep},
		{"time(6) without time zone", "INTERVAL", typeWiden}, // time_as_interval set later,
		// SET columns of older tables stay text.
		{"text", "TEXT[]", typeKeep},
		{"character varying(255)", "TEXT[]", typeKeep},
		{"text[]", "TEXT", typeDiffer},
		{"integer[]", "BIGINT[]", typeDiffer},
		// Unrelated.
		{"text", "BYTEA", typeDiffer},
		{"jsonb", "TEXT", typeDiffer},
		{"integer", "TEXT", typeDiffer},
		{"", "TEXT", typeDiffer},
		{"numeric(5", "NUMERIC(5,2)", typeDiffer},
	}
	checkWiden(t, "widenPG", widenPG, cases)
}

type widenCase struct {
	cur, want string
	is        typeChange
}

func checkWiden(t *testing.T, name string, widen func(cur, want string) typeChange, cases []widenCase) {
	t.Helper()
	for _, c := range cases {
		if got := widen(c.cur, c.want); got != c.is {
			t.Errorf("%s(%q, %q) = %v, want %v", name, c.cur, c.want, got, c.is)
		}
	}
}

func TestWidenMySQL(t *testing.T) {
	cases := []widenCase{
		// Display widths, zerofill and case do not matter.
		{"int(11)", "int", typeSame},
		{"bigint(20) unsigned", "BIGINT UNSIGNED", typeSame},
		{"tinyint(1)", "BOOLEAN", typeSame},
		{"int(10) unsigned zerofill", "int unsigned", typeSame},
		{"decimal(10,0)", "DECIMAL", typeSame},
		{"year(4)", "year", typeSame},
		{"timestamp(6)", "TIMESTAMP(6) NULL", typeSame},
		{"longtext", "JSON", typeSame}, // MariaDB's JSON
		{"enum('a','it''s')", "enum('a','it''s')", typeSame},
		{"set('x','y')", "SET('x','y')", typeSame},
		// Integer ladder.
		{"tinyint(4)", "smallint", typeWiden},
		{"smallint(6)", "mediumint", typeWiden},
		{"mediumint(9)", "int", typeWiden},
		{"int(11)", "bigint", typeWiden},
		{"bigint(20)", "int", typeDiffer},
		{"tinyint(3) unsigned", "smallint", typeWiden},
		{"tinyint(3) unsigned", "smallint unsigned", typeWiden},
		{"int(10) unsigned", "bigint", typeWiden},
		{"int(10) unsigned", "int", typeDiffer},
		{"int(11)", "int unsigned", typeDiffer},
		{"int(11)", "bigint unsigned", typeDiffer},
		// Integers into decimal.
		{"int(11)", "decimal(10,0)", typeWiden},
		{"int(11)", "decimal(9,0)", typeDiffer},
		{"bigint(20) unsigned", "decimal(20,0)", typeWiden},
		{"bigint(20)", "decimal(20,0)", typeWiden},
		{"bigint(20) unsigned", "decimal(19,0)", typeDiffer},
		{"mediumint(8) unsigned", "decimal(8,0)", typeWiden},
		{"mediumint(9)", "decimal(7,0)", typeWiden},
		// Decimal.
		{"decimal(5,2)", "decimal(10,2)", typeWiden},
		{"decimal(5,2)", "DECIMAL(10,2)", typeWiden},
		{"decimal(10,2)", "decimal(5,2)", typeDiffer},
		{"decimal(5,2)", "decimal(6,3)", typeWiden},
		{"decimal(5,2)", "decimal(5,3)", typeDiffer},
		{"decimal(5,2) unsigned", "decimal(10,2)", typeWiden},
		{"decimal(5,2)", "decimal(10,2) unsigned", typeDiffer},
		// Floats.
		{"float", "double", typeWiden},
		{"double", "float", typeDiffer},
		{"float", "float(53)", typeWiden},
		// Strings.
		{"varchar(10)", "varchar(50)", typeWiden},
		{"varchar(50)", "varchar(10)", typeDiffer},
		{"varchar(10)", "tinytext", typeWiden}, // 40 bytes of utf8mb4 at most
		{"varchar(60)", "tinytext", typeWiden},
		{"varchar(64)", "tinytext", typeDiffer},
		{"varchar(10)", "longtext", typeWiden},
		{"varchar(20000)", "text", typeDiffer},
		{"varchar(20000)", "mediumtext", typeWiden},
		{"char(3)", "char(5)", typeWiden},
		{"char(3)", "varchar(3)", typeWiden},
		{"char(3)", "varchar(2)", typeDiffer},
		{"char(5)", "char(3)", typeDiffer},
		{"varchar(3)", "char(5)", typeDiffer},
		{"tinytext", "text", typeWiden},
		{"text", "mediumtext", typeWiden},
		{"mediumtext", "longtext", typeWiden},
		{"longtext", "text", typeDiffer},
		{"text", "varchar(100)", typeDiffer},
		// Binary strings.
		{"varbinary(10)", "varbinary(20)", typeWiden},
		{"binary(4)", "varbinary(4)", typeWiden},
		{"binary(4)", "binary(8)", typeDiffer}, // pads with zero bytes
		{"varbinary(255)", "tinyblob", typeWiden},
		{"varbinary(256)", "tinyblob", typeDiffer},
		{"tinyblob", "blob", typeWiden},
		{"blob", "mediumblob", typeWiden},
		{"mediumblob", "longblob", typeWiden},
		{"longblob", "blob", typeDiffer},
		{"blob", "text", typeDiffer},
		// Bits and fractional seconds.
		{"bit(3)", "bit(12)", typeWiden},
		{"bit(12)", "bit(3)", typeDiffer},
		{"datetime", "datetime(6)", typeWiden},
		{"datetime(6)", "datetime(3)", typeDiffer},
		{"time(3)", "time(6)", typeWiden},
		{"timestamp(3)", "TIMESTAMP(6) NULL", typeWiden},
		{"datetime(6)", "timestamp(6)", typeDiffer},
		// ENUM and SET: labels added at the end only.
		{"enum('a','b')", "enum('a','b','c')", typeWiden},
		{"enum('a','it''s')", "enum('a','it''s','x,y')", typeWiden},
		{"enum('a','b')", "enum('c','a','b')", typeDiffer},
		{"enum('a','b','c')", "enum('a','b')", typeDiffer},
		{"enum('a','b')", "enum('a','B','c')", typeDiffer},
		{"set('x','y')", "set('x','y','z')", typeWiden},
		{"set('x','y')", "enum('x','y','z')", typeDiffer},
		{`enum('a\\b')`, `enum('a\\b','c')`, typeWiden},
		// Unrelated.
		{"int(11)", "varchar(10)", typeDiffer},
		{"json", "longtext", typeDiffer},
		{"date", "datetime", typeDiffer},
		{"geometry", "longblob", typeDiffer},
		{"enum('a'", "enum('a','b')", typeDiffer},
	}
	checkWiden(t, "widenMySQL", widenMySQL, cases)
}

func TestParseMySQLTypeLabels(t *testing.T) {
	for in, want := range map[string][]string{
		`enum('a','it''s','b\\c')`:    {"a", "it's", `b\c`},
		"ENUM('Upper','x,y', ' sp ')": {"Upper", "x,y", " sp "},
		"set('')":                     {""},
	} {
		got, ok := parseMySQLType(in)
		if !ok || !slices.Equal(got.labels, want) {
			t.Errorf("%s: labels %q %v, want %q", in, got.labels, ok, want)
		}
	}
	for _, bad := range []string{"enum", "enum()", "enum('a',)", "enum('a' 'b')", "enum('a)"} {
		if _, ok := parseMySQLType(bad); ok {
			t.Errorf("%s: parsed", bad)
		}
	}
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
	d := postgres{checkEnums: true}
	got, err := d.enumCheck(`co"l`, []string{"a", "it's", `b\c`, `d"q`})
	want := `CONSTRAINT "co""l_enum_` + enumCheckName(`co"l`)[len(`co"l_enum_`):] + `" CHECK ("co""l" = ANY (E'{"a","it''s","b\\\\c","d\\"q"}'::text[]))`
	if err != nil || got != want {
		t.Fatalf("enumCheck:\n got %s %v\nwant %s", got, err, want)
	}
	if _, err := d.enumCheck("c", []string{"a\x00b"}); err == nil {
		t.Fatal("a NUL label was accepted")
	}
	// Names: distinct for long columns sharing a prefix, within 63 bytes,
	// valid UTF-8, and recognised.
	long := strings.Repeat("é", 30)
	a, b := enumCheckName(long+"x"), enumCheckName(long+"y")
	if a == b || len(a) > 63 || !utf8.ValidString(a) || !isEnumCheckName(a) || !isEnumCheckName(enumCheckName("c")) {
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

func TestMySQLAlterType(t *testing.T) {
	d := mysql{}
	tg := target{Schema: "db", Table: "t"}
	cases := []struct {
		want string
		c    colInfo
		sql  string
	}{
		{"bigint", colInfo{typ: "int(11)", notNull: true}, "ALTER TABLE `db`.`t` MODIFY COLUMN `c` bigint NOT NULL"},
		{"varchar(50)", colInfo{typ: "varchar(10)", charset: "latin1", collation: "latin1_swedish_ci"}, "ALTER TABLE `db`.`t` MODIFY COLUMN `c` varchar(50) CHARACTER SET latin1 COLLATE latin1_swedish_ci NULL"},
		{"TIMESTAMP(6) NULL", colInfo{typ: "timestamp(3)"}, "ALTER TABLE `db`.`t` MODIFY COLUMN `c` TIMESTAMP(6) NULL"},
		{"bigint", colInfo{typ: "int(11)", notNull: true, extra: "auto_increment"}, "ALTER TABLE `db`.`t` MODIFY COLUMN `c` bigint NOT NULL AUTO_INCREMENT"},
		{"bigint", colInfo{typ: "int(11)", hasDefault: true}, ""},
		{"bigint", colInfo{typ: "int(11)", comment: true}, ""},
		{"bigint", colInfo{typ: "int(11)", extra: "VIRTUAL GENERATED"}, ""},
		{"varchar(50)", colInfo{typ: "varchar(10)", charset: "utf8mb4", collation: "x; DROP"}, ""},
	}
	for _, c := range cases {
		got, why := d.alterType(tg, "c", c.want, c.c)
		if got != c.sql || (got == "") == (why == "") {
			t.Errorf("%s from %+v: %q (%s), want %q", c.want, c.c, got, why, c.sql)
		}
	}
}

// FuzzColumnType feeds the type-text parsers (their input comes from the
// database and from record schemas): no panic, a type is the same as
// itself, and no two types widen into each other.
func FuzzColumnType(f *testing.F) {
	for _, s := range []string{"integer", "numeric(5,2)", "timestamp(6) with time zone", "text[]", "character varying(10)", "bit varying", `"x"."y"`,
		"int(11) unsigned zerofill", "enum('a','it''s','b\\\\c')", "set('x')", "decimal(65,30)", "TIMESTAMP(6) NULL", "varchar(", "enum('a",
		"float(53)", "bit", "char", "interval second(3)", "numeric(2147483648)", "int[][3]"} {
		f.Add(s, "bigint")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, d := range []struct {
			name  string
			parse func(string) (colType, bool)
			widen func(cur, want string) typeChange
		}{{"pg", parsePGType, widenPG}, {"mysql", parseMySQLType, widenMySQL}} {
			d.parse(a)
			if _, ok := d.parse(a); ok {
				if got := d.widen(a, a); got != typeSame {
					t.Fatalf("%s: %q into itself is %v", d.name, a, got)
				}
			}
			if d.widen(a, b) == typeWiden && d.widen(b, a) == typeWiden {
				t.Fatalf("%s: %q and %q widen into each other", d.name, a, b)
			}
		}
	})
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
		parseMySQLType(text)
	})
}

func TestFractionDigits(t *testing.T) {
	for src, want := range map[string]int{"": 6, "datetime": 0, "datetime(3)": 3, "TIMESTAMP(6)": 6, "time(1)": 1, "time": 0, "datetime(9)": 6, "datetime(x)": 6, "varchar(3)": 6} {
		s := schema.Primitive(schema.Int64, true)
		if src != "" {
			s.Params = map[string]string{schema.ParamSourceType: src}
		}
		if got := fractionDigits(s); got != want {
			t.Errorf("fractionDigits(%q) = %d, want %d", src, got, want)
		}
	}
}

// TestExtColumnTypes: MariaDB's UUID, INET6 and INET4 (strings with that
// source type) get PostgreSQL's uuid and inet and a fitting string on
// MySQL, as keys too; other strings are untouched.
func TestExtColumnTypes(t *testing.T) {
	str := func(st string) *schema.Schema {
		return &schema.Schema{Type: schema.String, Params: map[string]string{schema.ParamSourceType: st}}
	}
	for _, tc := range []struct {
		st, pg, my string
	}{
		{"uuid", "UUID", "CHAR(36)"}, {"inet6", "INET", "VARCHAR(45)"}, {"inet4", "INET", "VARCHAR(15)"},
		{"varchar(10)", "TEXT", "varchar(10)"},
	} {
		for _, key := range []bool{false, true} {
			if got, err := (postgres{}).columnType("c", str(tc.st), key); err != nil || got != tc.pg {
				t.Errorf("postgres %s key=%v: %s %v, want %s", tc.st, key, got, err, tc.pg)
			}
			if got, err := (mysql{}).columnType("c", str(tc.st), key); err != nil || got != tc.my {
				t.Errorf("mysql %s key=%v: %s %v, want %s", tc.st, key, got, err, tc.my)
			}
		}
	}
	if got, _ := (postgres{}).columnType("c", &schema.Schema{Type: schema.Bytes, Params: map[string]string{schema.ParamSourceType: "uuid"}}, false); got != "BYTEA" {
		t.Errorf("bytes with source type uuid: %s, want BYTEA", got)
	}
}
