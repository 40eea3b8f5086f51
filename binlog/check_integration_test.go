package binlog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema/schematest"
)

func failures(ps []Problem) []Problem {
	var out []Problem
	for _, p := range ps {
		if !p.Warning {
			out = append(out, p)
		}
	}
	return out
}

func checkNow(t *testing.T, cfg Config) []Problem {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return Check(ctx, cfg)
}

func TestCheckGoodConfigPasses(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE items (id INT PRIMARY KEY)")
	ps := checkNow(t, testConfig(env, db))
	if f := failures(ps); len(f) > 0 {
		t.Fatalf("a good config failed: %v", f)
	}
	for _, p := range ps {
		// The CDC account may not list replicas; the test server trades
		// durability for speed (TestCheckWarnsOfLazyCommits).
		if p.Check != "server_id" && p.Check != "durability" {
			t.Errorf("unexpected warning: %v", p)
		}
	}
}

func TestCheckReportsProblems(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE items (id INT PRIMARY KEY)")
	exec(t, c, "CREATE TABLE loose (a INT, b INT)")
	user := fmt.Sprintf("chk%d", rand.IntN(1e9))
	exec(t, c, fmt.Sprintf("CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY 'pw'", user))
	t.Cleanup(func() { _, _ = c.Execute(fmt.Sprintf("DROP USER '%s'@'127.0.0.1'", user)) })
	monitor := "BINLOG MONITOR" // MariaDB's name of REPLICATION CLIENT
	if env.flavor == FlavorMySQL {
		monitor = "REPLICATION CLIENT"
	}
	exec(t, c, fmt.Sprintf("GRANT SELECT, %s ON *.* TO '%s'@'127.0.0.1'", monitor, user))
	cfg := testConfig(env, db)
	cfg.User, cfg.Password = user, "pw"
	all := checkNow(t, cfg)
	text := fmt.Sprint(failures(all))
	for _, want := range []string{"lacks REPLICATION SLAVE"} {
		if !strings.Contains(text, want) {
			t.Errorf("problems %s do not mention %q", text, want)
		}
	}
	// A table without key is a warning: the sink applies its changes by
	// their before images (keyless_mode before_image, the default).
	var warned bool
	for _, p := range all {
		warned = warned || p.Warning && p.Check == "primary_key" && strings.Contains(p.Detail, db+".loose")
	}
	if !warned {
		t.Errorf("problems %v do not warn of %s.loose without a primary key", all, db)
	}
	if env.flavor == FlavorMySQL {
		// A MySQL snapshot needs RELOAD (FLUSH TABLES WITH READ LOCK).
		snap := cfg
		snap.Snapshot = SnapshotInitial
		if text := fmt.Sprint(failures(checkNow(t, snap))); !strings.Contains(text, "lacks RELOAD") {
			t.Errorf("problems %s of a snapshotting MySQL source do not mention RELOAD", text)
		}
	}
	// The fixes give the whole list (SourcePrivileges); what a problem
	// says is lacking names only what is.
	for _, p := range failures(all) {
		if strings.Contains(p.Detail, "REPLICATION CLIENT") || strings.Contains(p.Detail+p.Fix, db+".items") {
			t.Errorf("problem %v names a privilege or table that is fine", p)
		}
		if p.Check == "privileges" && p.Fix != grantAdvice(fmt.Sprintf("'%s'@'127.0.0.1'", user)) {
			t.Errorf("problem %v does not advise the one GRANT list", p)
		}
	}

	// the server's own id, and the id of a connected replica (seen by an
	// account allowed to list replicas)
	admin := testConfig(env, db)
	admin.User, admin.Password = env.admin, env.adminPass
	admin.ServerID = 1
	if r, err := c.Execute("SELECT @@server_id"); err == nil {
		id, _ := r.GetUint(0, 0)
		admin.ServerID = uint32(id)
	}
	if text := fmt.Sprint(failures(checkNow(t, admin))); !strings.Contains(text, "is the server's own") {
		t.Errorf("own server_id not reported: %s", text)
	}
	running := testConfig(env, db)
	src := openSource(t, running, nil)
	_ = src
	admin.ServerID = running.ServerID
	deadline := time.Now().Add(5 * time.Second)
	for {
		text := fmt.Sprint(failures(checkNow(t, admin)))
		if strings.Contains(text, "used by a connected replica") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server_id %d of a running source not reported: %s", running.ServerID, text)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// unreachable and bad login
	bad := testConfig(env, db)
	bad.Password = "wrong"
	if text := fmt.Sprint(checkNow(t, bad)); !strings.Contains(text, "FAIL login") {
		t.Errorf("bad password gave %s", text)
	}
	bad = testConfig(env, db)
	bad.Port = 1
	if text := fmt.Sprint(checkNow(t, bad)); !strings.Contains(text, "FAIL reachable") {
		t.Errorf("closed port gave %s", text)
	}
}

// A source whose commits are not on disk when acknowledged is a warning
// naming the setting; with both settings at 1 there is none.
func TestCheckWarnsOfLazyCommits(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE items (id INT PRIMARY KEY)")
	schematest.HoldGlobals(t, func(q string) (int64, error) {
		r, err := c.Execute(q)
		if err != nil {
			return 0, err
		}
		return r.GetInt(0, 0)
	})
	r, err := c.Execute("SELECT @@GLOBAL.sync_binlog, @@GLOBAL.innodb_flush_log_at_trx_commit")
	if err != nil {
		t.Fatal(err)
	}
	syncBinlog, _ := r.GetString(0, 0)
	flush, _ := r.GetString(0, 1)
	t.Cleanup(func() {
		_, _ = c.Execute("SET GLOBAL sync_binlog = " + syncBinlog)
		_, _ = c.Execute("SET GLOBAL innodb_flush_log_at_trx_commit = " + flush)
	})
	durability := func() string {
		var out []string
		for _, p := range checkNow(t, testConfig(env, db)) {
			if p.Check == "durability" {
				if !p.Warning {
					t.Errorf("not a warning: %v", p)
				}
				out = append(out, p.Detail)
			}
		}
		return strings.Join(out, "; ")
	}
	exec(t, c, "SET GLOBAL sync_binlog = 0")
	exec(t, c, "SET GLOBAL innodb_flush_log_at_trx_commit = 2")
	got := durability()
	for _, want := range []string{"sync_binlog is 0", "innodb_flush_log_at_trx_commit is 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings %q do not say %q", got, want)
		}
	}
	exec(t, c, "SET GLOBAL sync_binlog = 1")
	exec(t, c, "SET GLOBAL innodb_flush_log_at_trx_commit = 1")
	if got := durability(); got != "" {
		t.Errorf("durable settings warned: %s", got)
	}
}
