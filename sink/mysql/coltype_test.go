package mysql

import (
	"slices"
	"testing"

	"github.com/sluicecdc/sluice/sink/dialect"
	"github.com/sluicecdc/sluice/sink/dialect/dialecttest"
)

func TestWidenMySQL(t *testing.T) {
	cases := []dialecttest.WidenCase{
		// Display widths, zerofill and case do not matter.
		dialecttest.W("int(11)", "int", dialect.TypeSame),
		dialecttest.W("bigint(20) unsigned", "BIGINT UNSIGNED", dialect.TypeSame),
		dialecttest.W("tinyint(1)", "BOOLEAN", dialect.TypeSame),
		dialecttest.W("int(10) unsigned zerofill", "int unsigned", dialect.TypeSame),
		dialecttest.W("decimal(10,0)", "DECIMAL", dialect.TypeSame),
		dialecttest.W("year(4)", "year", dialect.TypeSame),
		dialecttest.W("timestamp(6)", "TIMESTAMP(6) NULL", dialect.TypeSame),
		dialecttest.W("longtext", "JSON", dialect.TypeSame), // MariaDB's JSON
		dialecttest.W("enum('a','it''s')", "enum('a','it''s')", dialect.TypeSame),
		dialecttest.W("set('x','y')", "SET('x','y')", dialect.TypeSame),
		// Integer ladder.
		dialecttest.W("tinyint(4)", "smallint", dialect.TypeWiden),
		dialecttest.W("smallint(6)", "mediumint", dialect.TypeWiden),
		dialecttest.W("mediumint(9)", "int", dialect.TypeWiden),
		dialecttest.W("int(11)", "bigint", dialect.TypeWiden),
		dialecttest.W("bigint(20)", "int", dialect.TypeDiffer),
		dialecttest.W("tinyint(3) unsigned", "smallint", dialect.TypeWiden),
		dialecttest.W("tinyint(3) unsigned", "smallint unsigned", dialect.TypeWiden),
		dialecttest.W("int(10) unsigned", "bigint", dialect.TypeWiden),
		dialecttest.W("int(10) unsigned", "int", dialect.TypeDiffer),
		dialecttest.W("int(11)", "int unsigned", dialect.TypeDiffer),
		dialecttest.W("int(11)", "bigint unsigned", dialect.TypeDiffer),
		// Integers into decimal.
		dialecttest.W("int(11)", "decimal(10,0)", dialect.TypeWiden),
		dialecttest.W("int(11)", "decimal(9,0)", dialect.TypeDiffer),
		dialecttest.W("bigint(20) unsigned", "decimal(20,0)", dialect.TypeWiden),
		dialecttest.W("bigint(20)", "decimal(20,0)", dialect.TypeWiden),
		dialecttest.W("bigint(20) unsigned", "decimal(19,0)", dialect.TypeDiffer),
		dialecttest.W("mediumint(8) unsigned", "decimal(8,0)", dialect.TypeWiden),
		dialecttest.W("mediumint(9)", "decimal(7,0)", dialect.TypeWiden),
		// Decimal.
		dialecttest.W("decimal(5,2)", "decimal(10,2)", dialect.TypeWiden),
		dialecttest.W("decimal(5,2)", "DECIMAL(10,2)", dialect.TypeWiden),
		dialecttest.W("decimal(10,2)", "decimal(5,2)", dialect.TypeDiffer),
		dialecttest.W("decimal(5,2)", "decimal(6,3)", dialect.TypeWiden),
		dialecttest.W("decimal(5,2)", "decimal(5,3)", dialect.TypeDiffer),
		dialecttest.W("decimal(5,2) unsigned", "decimal(10,2)", dialect.TypeWiden),
		dialecttest.W("decimal(5,2)", "decimal(10,2) unsigned", dialect.TypeDiffer),
		// Floats.
		dialecttest.W("float", "double", dialect.TypeWiden),
		dialecttest.W("double", "float", dialect.TypeDiffer),
		dialecttest.W("float", "float(53)", dialect.TypeWiden),
		// Strings.
		dialecttest.W("varchar(10)", "varchar(50)", dialect.TypeWiden),
		dialecttest.W("varchar(50)", "varchar(10)", dialect.TypeDiffer),
		dialecttest.W("varchar(10)", "tinytext", dialect.TypeWiden), // 40 bytes of utf8mb4 at most
		dialecttest.W("varchar(60)", "tinytext", dialect.TypeWiden),
		dialecttest.W("varchar(64)", "tinytext", dialect.TypeDiffer),
		dialecttest.W("varchar(10)", "longtext", dialect.TypeWiden),
		dialecttest.W("varchar(20000)", "text", dialect.TypeDiffer),
		dialecttest.W("varchar(20000)", "mediumtext", dialect.TypeWiden),
		dialecttest.W("char(3)", "char(5)", dialect.TypeWiden),
		dialecttest.W("char(3)", "varchar(3)", dialect.TypeWiden),
		dialecttest.W("char(3)", "varchar(2)", dialect.TypeDiffer),
		dialecttest.W("char(5)", "char(3)", dialect.TypeDiffer),
		dialecttest.W("varchar(3)", "char(5)", dialect.TypeDiffer),
		dialecttest.W("tinytext", "text", dialect.TypeWiden),
		dialecttest.W("text", "mediumtext", dialect.TypeWiden),
		dialecttest.W("mediumtext", "longtext", dialect.TypeWiden),
		dialecttest.W("longtext", "text", dialect.TypeDiffer),
		dialecttest.W("text", "varchar(100)", dialect.TypeDiffer),
		// Binary strings.
		dialecttest.W("varbinary(10)", "varbinary(20)", dialect.TypeWiden),
		dialecttest.W("binary(4)", "varbinary(4)", dialect.TypeWiden),
		dialecttest.W("binary(4)", "binary(8)", dialect.TypeDiffer), // pads with zero bytes
		dialecttest.W("varbinary(255)", "tinyblob", dialect.TypeWiden),
		dialecttest.W("varbinary(256)", "tinyblob", dialect.TypeDiffer),
		dialecttest.W("tinyblob", "blob", dialect.TypeWiden),
		dialecttest.W("blob", "mediumblob", dialect.TypeWiden),
		dialecttest.W("mediumblob", "longblob", dialect.TypeWiden),
		dialecttest.W("longblob", "blob", dialect.TypeDiffer),
		dialecttest.W("blob", "text", dialect.TypeDiffer),
		// Bits and fractional seconds.
		dialecttest.W("bit(3)", "bit(12)", dialect.TypeWiden),
		dialecttest.W("bit(12)", "bit(3)", dialect.TypeDiffer),
		dialecttest.W("datetime", "datetime(6)", dialect.TypeWiden),
		dialecttest.W("datetime(6)", "datetime(3)", dialect.TypeDiffer),
		dialecttest.W("time(3)", "time(6)", dialect.TypeWiden),
		dialecttest.W("timestamp(3)", "TIMESTAMP(6) NULL", dialect.TypeWiden),
		dialecttest.W("datetime(6)", "timestamp(6)", dialect.TypeDiffer),
		// ENUM and SET: labels added at the end only.
		dialecttest.W("enum('a','b')", "enum('a','b','c')", dialect.TypeWiden),
		dialecttest.W("enum('a','it''s')", "enum('a','it''s','x,y')", dialect.TypeWiden),
		dialecttest.W("enum('a','b')", "enum('c','a','b')", dialect.TypeDiffer),
		dialecttest.W("enum('a','b','c')", "enum('a','b')", dialect.TypeDiffer),
		// The error label '' first (withErrorLabel), then labels added at the end.
		dialecttest.W("enum('a','b')", "enum('','a','b')", dialect.TypeWiden),
		dialecttest.W("enum('a','b')", "enum('','a','b','c')", dialect.TypeWiden),
		dialecttest.W("enum('','a')", "enum('a')", dialect.TypeDiffer),
		dialecttest.W("enum('a','b')", "enum('','b','a')", dialect.TypeDiffer),
		dialecttest.W("set('a','b')", "set('','a','b')", dialect.TypeDiffer),
		dialecttest.W("enum('a','b')", "enum('a','B','c')", dialect.TypeDiffer),
		dialecttest.W("set('x','y')", "set('x','y','z')", dialect.TypeWiden),
		dialecttest.W("set('x','y')", "enum('x','y','z')", dialect.TypeDiffer),
		dialecttest.W(`enum('a\\b')`, `enum('a\\b','c')`, dialect.TypeWiden),
		// Unrelated.
		dialecttest.W("int(11)", "varchar(10)", dialect.TypeDiffer),
		dialecttest.W("json", "longtext", dialect.TypeDiffer),
		dialecttest.W("date", "datetime", dialect.TypeDiffer),
		dialecttest.W("geometry", "longblob", dialect.TypeDiffer),
		dialecttest.W("enum('a'", "enum('a','b')", dialect.TypeDiffer),
	}
	dialecttest.CheckWiden(t, "widenMySQL", widenMySQL, cases)
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

// FuzzColumnType: dialecttest.FuzzTypes on this dialect's parser.
func FuzzColumnType(f *testing.F) {
	dialecttest.FuzzTypes(f, "mysql", dialect.ParseMySQLType, widenMySQL)
}

// TestExtColumnTypes: MariaDB's UUID, INET6 and INET4 strings
// (dialecttest.ExtTypes).
func TestExtColumnTypes(t *testing.T) {
	dialecttest.CheckExtColumnTypes(t, "mysql", Dialect{}.ColumnType, func(e dialecttest.ExtType) string { return e.MySQL })
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
