package binlog

import (
	"errors"
	"strings"
	"testing"
)

func TestConfigValidation(t *testing.T) {
	good := Config{Host: "127.0.0.1", User: "u", ServerID: 7, Flavor: FlavorMariaDB, ServerName: "srv"}
	s, err := NewSource(good, nil)
	if err != nil {
		t.Fatalf("valid config: %v", err)
	}
	// Debezium's default (issue 28, problem 3): a first start copies the rows
	// already there; `never` is a choice.
	if s.cfg.Snapshot != SnapshotInitial {
		t.Errorf("default Snapshot %q, want %q", s.cfg.Snapshot, SnapshotInitial)
	}
	if s.cfg.SnapshotThreads != 1 || s.cfg.SnapshotChunkBytes != 1<<20 {
		t.Errorf("default SnapshotThreads %d, SnapshotChunkBytes %d, want 1 and 1 MiB", s.cfg.SnapshotThreads, s.cfg.SnapshotChunkBytes)
	}
	for _, tc := range []struct {
		change func(*Config)
		field  string
	}{
		{func(c *Config) { c.Host = "" }, "Host"},
		{func(c *Config) { c.User = "" }, "User"},
		{func(c *Config) { c.ServerID = 0 }, "ServerID"},
		{func(c *Config) { c.ServerName = "" }, "ServerName"},
		{func(c *Config) { c.Flavor = "postgres" }, "Flavor"},
		{func(c *Config) { c.Port = 70000 }, "Port"},
		{func(c *Config) { c.ServerName = "a b" }, "ServerName"},
		{func(c *Config) { c.Include = []string{"shop"} }, "shop"},
		{func(c *Config) { c.Exclude = []string{"nodot"} }, "nodot"},
		{func(c *Config) { c.SnapshotThreads = -1 }, "SnapshotThreads"},
		{func(c *Config) { c.SnapshotThreads = 65 }, "SnapshotThreads"},
		{func(c *Config) { c.SnapshotChunkBytes = -1 }, "SnapshotChunkBytes"},
	} {
		c := good
		tc.change(&c)
		_, err := NewSource(c, nil)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("config with bad %s: error %v, want ErrConfig naming it", tc.field, err)
		}
	}
}

func TestFilter(t *testing.T) {
	f := newFilter([]string{"shop.*", "crm.customers", "log_*.events"}, []string{"shop.tmp_*"})
	for _, tc := range []struct {
		db, table string
		want      bool
	}{
		{"shop", "orders", true},
		{"SHOP", "Orders", true},
		{"shop", "tmp_x", false},
		{"crm", "customers", true},
		{"crm", "leads", false},
		{"log_2024", "events", true},
		{"log_2024", "other", false},
		{"shopping", "orders", false},
		{"mysql", "user", false},
	} {
		if got := f.match(tc.db, tc.table); got != tc.want {
			t.Errorf("match(%s.%s) = %v, want %v", tc.db, tc.table, got, tc.want)
		}
	}
	all := newFilter(nil, []string{"app.secret"})
	if !all.match("app", "users") || all.match("app", "secret") || all.match("mysql", "user") || all.match("performance_schema", "x") {
		t.Error("empty include must take every non-system table except the excluded ones")
	}
	if !f.matchDatabase("shop") || f.matchDatabase("other") || !f.matchDatabase("log_1") {
		t.Error("matchDatabase")
	}
}

// TestMayCaptureNeverHidesATable: the databases listCaptured skips must
// hold no table match takes, whatever dots and stars the names and
// patterns hold; and it skips what no pattern can reach.
func TestMayCaptureNeverHidesATable(t *testing.T) {
	patterns := [][]string{nil, {"shop.*"}, {"*"}, {"s*"}, {"*.orders"}, {"my.db.*"}, {"my*b.t"}, {"a.b.c"}, {"log_*.events", "crm.x"}, {`we\ird?.t`}, {"*s.o*"}}
	names := [][2]string{{"shop", "orders"}, {"shopping", "orders"}, {"my.db", "t"}, {"my", "db.t"}, {"myxb", "t"}, {"a.b", "c"}, {"a", "b.c"},
		{"log_1", "events"}, {"crm", "x"}, {`we\ird?`, "t"}, {"mysql", "user"}, {"sales", "orders"}, {"x", "y"}, {"Shop", "Orders"}}
	for _, inc := range patterns {
		f := newFilter(inc, nil)
		for _, n := range names {
			if f.match(n[0], n[1]) && !f.mayCapture(n[0]) {
				t.Errorf("include %q: %s.%s is captured but mayCapture(%q) is false", inc, n[0], n[1], n[0])
			}
		}
	}
	f := newFilter([]string{"shop.*", "my.db.*"}, nil)
	for _, db := range []string{"shopping", "crm", "mydb", "mysql"} {
		if f.mayCapture(db) {
			t.Errorf("mayCapture(%q) = true for include shop.*, my.db.*: its tables would be listed for nothing", db)
		}
	}
	if !newFilter(nil, nil).mayCapture("app") || newFilter(nil, nil).mayCapture("mysql") {
		t.Error("with no include every non-system database is listed, and no system one")
	}
}
