package binlog

import (
	"reflect"
	"testing"
)

func TestParseGrant(t *testing.T) {
	var g grantSet
	g.dbs, g.tables = map[string][]string{}, map[string][]string{}
	for _, l := range []string{
		"GRANT SELECT, RELOAD, SHOW DATABASES, LOCK TABLES, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO `sluice`@`127.0.0.1` IDENTIFIED BY PASSWORD '*E1A5'",
		"GRANT SELECT, INSERT ON `shop\\_x`.* TO `u`@`%`",
		"GRANT SELECT (`a`, `b`), UPDATE ON `db`.`t``1` TO `u`@`%`",
		"GRANT ALL PRIVILEGES ON `all`.`orders` TO `u`@`%`",
		"GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION",
		"not a grant",
	} {
		parseGrant(&g, l)
	}
	want := []string{"SELECT", "RELOAD", "SHOW DATABASES", "LOCK TABLES", "REPLICATION SLAVE", "BINLOG MONITOR"}
	if !reflect.DeepEqual(g.globals, want) {
		t.Fatalf("globals %q, want %q", g.globals, want)
	}
	if !reflect.DeepEqual(g.tables["db.t`1"], []string{"UPDATE"}) {
		t.Errorf("table grants %q", g.tables)
	}
	g.globals = nil
	for _, tc := range []struct {
		db, table string
		want      bool
	}{
		{"shop_x", "a", true}, {"shopXx", "a", false}, {"db", "t`1", false}, {"all", "orders", true}, {"all", "other", false},
	} {
		if got := g.canSelect(tc.db, tc.table); got != tc.want {
			t.Errorf("canSelect(%s, %s) = %v, want %v", tc.db, tc.table, got, tc.want)
		}
	}
}

func TestSplitScope(t *testing.T) {
	for in, want := range map[string][2]string{
		"`a`.`b`": {"a", "b"}, "a.*": {"a", "*"}, "`a.b`.*": {"a.b", "*"}, "`x``y`.`z`": {"x`y", "z"},
	} {
		db, table, ok := splitScope(in)
		if !ok || db != want[0] || table != want[1] {
			t.Errorf("splitScope(%s) = %q %q %v", in, db, table, ok)
		}
	}
	for _, bad := range []string{"`a", "a", "`a`b"} {
		if _, _, ok := splitScope(bad); ok {
			t.Errorf("splitScope(%s) accepted", bad)
		}
	}
}
