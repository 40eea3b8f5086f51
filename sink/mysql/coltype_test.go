package mysql

import (
	"slices"
	"testing"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

func TestWidenMySQL(t *testing.T) {
	cases := []widenCase{
		// Display widths, zerofill and case do not matter.
		{"int(11)", "int", dialect.TypeSame},
		{"bigint(20) unsigned", "BIGINT UNSIGNED", dialect.TypeSame},
		{"tinyint(1)", "BOOLEAN", dialect.TypeSame},
		{"int(10) unsigned zerofill", "int unsigned", dialect.TypeSame},
		{"decimal(10,0)", "DECIMAL", dialect.TypeSame},
		{"year(4)", "year", dialect.TypeSame},
		{"timestamp(6)", "TIMESTAMP(6) NULL", dialect.TypeSame},
		{"longtext", "JSON", dialect.TypeSame}, // MariaDB's JSON
		{"enum('a','it''s')", "enum('a','it''s')", dialect.TypeSame},
		{"set('x','y')", "SET('x','y')", dialect.TypeSame},
		// Integer ladder.
		{"tinyint(4)", "smallint", dialect.TypeWiden},
		{"smallint(6)", "mediumint", dialect.TypeWiden},
		{"mediumint(9)", "int", dialect.TypeWiden},
		{"int(11)", "bigint", dialect.TypeWiden},
		{"bigint(20)", "int", dialect.TypeDiffer},
		{"tinyint(3) unsigned", "smallint", dialect.TypeWiden},
		{"tinyint(3) unsigned", "smallint unsigned", dialect.TypeWiden},
		{"int(10) unsigned", "bigint", dialect.TypeWiden},
		{"int(10) unsigned", "int", dialect.TypeDiffer},
		{"int(11)", "int unsigned", dialect.TypeDiffer},
		{"int(11)", "bigint unsigned", dialect.TypeDiffer},
		// Integers into decimal.
		{"int(11)", "decimal(10,0)", dialect.TypeWiden},
		{"int(11)", "decimal(9,0)", dialect.TypeDiffer},
		{"bigint(20) unsigned", "decimal(20,0)", dialect.TypeWiden},
		{"bigint(20)", "decimal(20,0)", dialect.TypeWiden},
		{"bigint(20) unsigned", "decimal(19,0)", dialect.TypeDiffer},
		{"mediumint(8) unsigned", "decimal(8,0)", dialect.TypeWiden},
		{"mediumint(9)", "decimal(7,0)", dialect.TypeWiden},
		// Decimal.
		{"decimal(5,2)", "decimal(10,2)", dialect.TypeWiden},
		{"decimal(5,2)", "DECIMAL(10,2)", dialect.TypeWiden},
		{"decimal(10,2)", "decimal(5,2)", dialect.TypeDiffer},
		{"decimal(5,2)", "decimal(6,3)", dialect.TypeWiden},
		{"decimal(5,2)", "decimal(5,3)", dialect.TypeDiffer},
		{"decimal(5,2) unsigned", "decimal(10,2)", dialect.TypeWiden},
		{"decimal(5,2)", "decimal(10,2) unsigned", dialect.TypeDiffer},
		// Floats.
		{"float", "double", dialect.TypeWiden},
		{"double", "float", dialect.TypeDiffer},
		{"float", "float(53)", dialect.TypeWiden},
		// Strings.
		{"varchar(10)", "varchar(50)", dialect.TypeWiden},
		{"varchar(50)", "varchar(10)", dialect.TypeDiffer},
		{"varchar(10)", "tinytext", dialect.TypeWiden}, // 40 bytes of utf8mb4 at most
		{"varchar(60)", "tinytext", dialect.TypeWiden},
		{"varchar(64)", "tinytext", dialect.TypeDiffer},
		{"varchar(10)", "longtext", dialect.TypeWiden},
		{"varchar(20000)", "text", dialect.TypeDiffer},
		{"varchar(20000)", "mediumtext", dialect.TypeWiden},
		{"char(3)", "char(5)", dialect.TypeWiden},
		{"char(3)", "varchar(3)", dialect.TypeWiden},
		{"char(3)", "varchar(2)", dialect.TypeDiffer},
		{"char(5)", "char(3)", dialect.TypeDiffer},
		{"varchar(3)", "char(5)", dialect.TypeDiffer},
		{"tinytext", "text", dialect.TypeWiden},
		{"text", "mediumtext", dialect.TypeWiden},
		{"mediumtext", "longtext", dialect.TypeWiden},
		{"longtext", "text", dialect.TypeDiffer},
		{"text", "varchar(100)", dialect.TypeDiffer},
		// Binary strings.
		{"varbinary(10)", "varbinary(20)", dialect.TypeWiden},
		{"binary(4)", "varbinary(4)", dialect.TypeWiden},
		{"binary(4)", "binary(8)", dialect.TypeDiffer}, // pads with zero bytes
		{"varbinary(255)", "tinyblob", dialect.TypeWiden},
		{"varbinary(256)", "tinyblob", dialect.TypeDiffer},
		{"tinyblob", "blob", dialect.TypeWiden},
		{"blob", "mediumblob", dialect.TypeWiden},
		{"mediumblob", "longblob", dialect.TypeWiden},
		{"longblob", "blob", dialect.TypeDiffer},
		{"blob", "text", dialect.TypeDiffer},
		// Bits and fractional seconds.
		{"bit(3)", "bit(12)", dialect.TypeWiden},
		{"bit(12)", "bit(3)", dialect.TypeDiffer},
		{"datetime", "datetime(6)", dialect.TypeWiden},
		{"datetime(6)", "datetime(3)", dialect.TypeDiffer},
		{"time(3)", "time(6)", dialect.TypeWiden},
		{"timestamp(3)", "TIMESTAMP(6) NULL", dialect.TypeWiden},
		{"datetime(6)", "timestamp(6)", dialect.TypeDiffer},
		// ENUM and SET: labels added at the end only.
		{"enum('a','b')", "enum('a','b','c')", dialect.TypeWiden},
		{"enum('a','it''s')", "enum('a','it''s','x,y')", dialect.TypeWiden},
		{"enum('a','b')", "enum('c','a','b')", dialect.TypeDiffer},
		{"enum('a','b','c')", "enum('a','b')", dialect.TypeDiffer},
		// The error label '' first (withErrorLabel), then labels added at the end.
		{"enum('a','b')", "enum('','a','b')", dialect.TypeWiden},
		{"enum('a','b')", "enum('','a','b','c')", dialect.TypeWiden},
		{"enum('','a')", "enum('a')", dialect.TypeDiffer},
		{"enum('a','b')", "enum('','b','a')", dialect.TypeDiffer},
		{"set('a','b')", "set('','a','b')", dialect.TypeDiffer},
		{"enum('a','b')", "enum('a','B','c')", dialect.TypeDiffer},
		{"set('x','y')", "set('x','y','z')", dialect.TypeWiden},
		{"set('x','y')", "enum('x','y','z')", dialect.TypeDiffer},
		{`enum('a\\b')`, `enum('a\\b','c')`, dialect.TypeWiden},
		// Unrelated.
		{"int(11)", "varchar(10)", dialect.TypeDiffer},
		{"json", "longtext", dialect.TypeDiffer},
		{"date", "datetime", dialect.TypeDiffer},
		{"geometry", "longblob", dialect.TypeDiffer},
		{"enum('a'", "enum('a','b')", dialect.TypeDiffer},
	}
	checkWiden(t, "widenMySQL", widenMySQL, cases)
}

type widenCase struct {
	cur, want string
	is        dialect.TypeChange
}

func checkWiden(t *testing.T, name string, widen func(cur, want string) dialect.TypeChange, cases []widenCase) {
	t.Helper()
	for _, c := range cases {
		if got := widen(c.cur, c.want); got != c.is {
			t.Errorf("%s(%q, %q) = %v, want %v", name, c.cur, c.want, got, c.is)
		}
	}
}

func TestParseMySQLTypeLabels(t *testing.T) {
	for in, want := range map[string][]string{
		`enum('a','it''s','b\\c')`:    {"a", "it's", `b\c`},
		"ENUM('Upper','x,y', ' sp ')": {"Upper", "x,y", " sp "},
		"set('')":                     {""},
	} {
		got, ok := dialect.ParseMySQLType(in)
		if !ok || !slices.Equal(got.Labels, want) {
			t.Errorf("%s: labels %q %v, want %q", in, got.Labels, ok, want)
		}
	}
	for _, bad := range []string{"enum", "enum()", "enum('a',)", "enum('a' 'b')", "enum('a)"} {
		if _, ok := dialect.ParseMySQLType(bad); ok {
			t.Errorf("%s: parsed", bad)
		}
	}
}

func TestMySQLAlterType(t *testing.T) {
	d := Dialect{}
	tg := dialect.Target{Schema: "db", Table: "t"}
	cases := []struct {
		want string
		c    dialect.ColInfo
		sql  string
	}{
		{"bigint", dialect.ColInfo{Type: "int(11)", NotNull: true}, "ALTER TABLE `db`.`t` MODIFY COLUMN `c` bigint NOT NULL"},
		{"varchar(50)", dialect.ColInfo{Type: "varchar(10)", Charset: "latin1", Collation: "latin1_swedish_ci"}, "ALTER TABLE `db`.`t` MODIFY COLUMN `c` varchar(50) CHARACTER SET latin1 COLLATE latin1_swedish_ci NULL"},
		{"TIMESTAMP(6) NULL", dialect.ColInfo{Type: "timestamp(3)"}, "ALTER TABLE `db`.`t` MODIFY COLUMN `c` TIMESTAMP(6) NULL"},
		{"bigint", dialect.ColInfo{Type: "int(11)", NotNull: true, Extra: "auto_increment"}, "ALTER TABLE `db`.`t` MODIFY COLUMN `c` bigint NOT NULL AUTO_INCREMENT"},
		{"bigint", dialect.ColInfo{Type: "int(11)", HasDefault: true}, ""},
		{"bigint", dialect.ColInfo{Type: "int(11)", Comment: true}, ""},
		{"bigint", dialect.ColInfo{Type: "int(11)", Extra: "VIRTUAL GENERATED"}, ""},
		{"varchar(50)", dialect.ColInfo{Type: "varchar(10)", Charset: "utf8mb4", Collation: "x; DROP"}, ""},
	}
	for _, c := range cases {
		got, why := d.AlterType(tg, "c", c.want, c.c)
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
			parse func(string) (dialect.ColType, bool)
			widen func(cur, want string) dialect.TypeChange
		}{{"mysql", dialect.ParseMySQLType, widenMySQL}} {
			d.parse(a)
			if _, ok := d.parse(a); ok {
				if got := d.widen(a, a); got != dialect.TypeSame {
					t.Fatalf("%s: %q into itself is %v", d.name, a, got)
				}
			}
			if d.widen(a, b) == dialect.TypeWiden && d.widen(b, a) == dialect.TypeWiden {
				t.Fatalf("%s: %q and %q widen into each other", d.name, a, b)
			}
		}
	})
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
			if got, err := (Dialect{}).ColumnType("c", str(tc.st), key); err != nil || got != tc.my {
				t.Errorf("mysql %s key=%v: %s %v, want %s", tc.st, key, got, err, tc.my)
			}
		}
	}
}

func TestWithErrorLabel(t *testing.T) {
	for in, want := range map[string]string{
		"enum('a','b c')":   "enum('','a','b c')",
		"ENUM('x')":         "ENUM('','x')",
		"enum('','a')":      "enum('','a')",
		"enum('a','')":      "enum('a','')",
		"set('a','b')":      "set('a','b')",
		"varchar(10)":       "varchar(10)",
		"enum('it''s','(')": "enum('','it''s','(')",
	} {
		if got := withErrorLabel(in); got != want {
			t.Errorf("withErrorLabel(%s) = %s, want %s", in, got, want)
		}
	}
}
