package app

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// checkServer returns an admin connection and a fresh database, or skips
// (fails in CI) without the test servers.
func checkServer(t *testing.T) (*client.Conn, string) {
	t.Helper()
	host := schematest.NeedServers(t, "SLUICE_MYSQL_HOST")[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.ConnectWithContext(ctx, host+":"+os.Getenv("SLUICE_MYSQL_PORT"), os.Getenv("SLUICE_MYSQL_USER"), os.Getenv("SLUICE_MYSQL_PASSWORD"), "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	db := fmt.Sprintf("check_it_%d", rand.IntN(1e9))
	if _, err := c.Execute("CREATE DATABASE " + db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.Execute("DROP DATABASE IF EXISTS " + db)
		c.Close()
	})
	return c, db
}

func checkConfig(t *testing.T, db, user, password string) string {
	t.Helper()
	return checkConfigTo(t, db, user, password, "postgres", os.Getenv("SLUICE_PG_DSN"))
}

// checkConfigTo is checkConfig with the target's type and DSN.
func checkConfigTo(t *testing.T, db, user, password, targetType, targetDSN string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "check.yaml")
	writeFile(t, path, fmt.Sprintf(`name: chk
source:
  type: %s
  host: %s
  port: %s
  user: %s
  password: %s
  server_id: %d
  include: ["%s.*"]
transport:
  type: embedded
sink:
  type: %s
  dsn: %q
`, os.Getenv("SLUICE_MYSQL_FLAVOR"), os.Getenv("SLUICE_MYSQL_HOST"), os.Getenv("SLUICE_MYSQL_PORT"), user, password, 200000+rand.IntN(1e6), db, targetType, targetDSN))
	return path
}

func runCheck(t *testing.T, path string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main([]string{"check", "--config", path}, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCheckCommand(t *testing.T) {
	c, db := checkServer(t)
	mustExec := func(q string) {
		if _, err := c.Execute(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustExec("CREATE TABLE " + db + ".items (id INT PRIMARY KEY)")
	good := checkConfig(t, db, os.Getenv("SLUICE_MYSQL_CDC_USER"), os.Getenv("SLUICE_MYSQL_CDC_PASSWORD"))
	code, out, errOut := runCheck(t, good)
	if code != 0 || !strings.Contains(out, "all checks passed") || strings.Contains(out, "FAIL") {
		t.Fatalf("good config: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.HasSuffix(out, "all checks passed\n") && !strings.HasSuffix(out, "warning)\n") && !strings.HasSuffix(out, "warnings)\n") {
		t.Errorf("stdout does not end with the verdict and a newline: %q", out)
	}

	user := fmt.Sprintf("chkapp%d", rand.IntN(1e9))
	mustExec(fmt.Sprintf("CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY 'pw'", user))
	t.Cleanup(func() { _, _ = c.Execute(fmt.Sprintf("DROP USER '%s'@'127.0.0.1'", user)) })
	mustExec(fmt.Sprintf("GRANT SELECT, BINLOG MONITOR ON *.* TO '%s'@'127.0.0.1'", user))
	mustExec("CREATE TABLE " + db + ".loose (a INT)")
	code, out, errOut = runCheck(t, checkConfig(t, db, user, "pw"))
	if code == 0 || strings.Contains(out, "all checks passed") {
		t.Fatalf("bad account passed: exit %d\n%s", code, out)
	}
	var slave, pk bool
	for _, line := range strings.Split(out, "\n") {
		slave = slave || strings.HasPrefix(line, "FAIL privileges") && strings.Contains(line, "REPLICATION SLAVE") && strings.Contains(line, "fix: GRANT "+binlog.SourcePrivileges+" ON *.* TO ")
		pk = pk || strings.HasPrefix(line, "WARN primary_key") && strings.Contains(line, db+".loose") && strings.Contains(line, "fix:")
	}
	if !slave || !pk {
		t.Errorf("output lacks the REPLICATION SLAVE line (%v) or the primary key line (%v):\n%s", slave, pk, out)
	}
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !strings.HasSuffix(out, "\n") || !strings.HasSuffix(lines[len(lines)-1], ": fix the FAIL lines and run check again") {
		t.Errorf("stdout does not end with the verdict and a newline: %q", out)
	}
	if !strings.Contains(errOut, "some checks failed") {
		t.Errorf("stderr %q does not say that checks failed", errOut)
	}
	t.Logf("output for the bad account:\n%s", out)
}

// `sluice check` probes the target too (issue 28, problem 6): a target that
// is down, or an account that may not create tables in the schema the
// captured tables map to, fails the check; before, it printed "all checks
// passed" and exited 0. The probe leaves nothing in the target.
func TestCheckProbesTheTarget(t *testing.T) {
	c, db := checkServer(t)
	dsn := serverEnv(t, "scripts/servers.sh start postgres", "SLUICE_PG_DSN")[0]
	if _, err := c.Execute("CREATE TABLE " + db + ".items (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	user, pw := os.Getenv("SLUICE_MYSQL_CDC_USER"), os.Getenv("SLUICE_MYSQL_CDC_PASSWORD")
	code, out, errOut := runCheck(t, checkConfigTo(t, db, user, pw, "postgres", "postgres://sluice@127.0.0.1:1/sluice?sslmode=disable&connect_timeout=5"))
	if code != 1 || !strings.Contains(out, "FAIL target_reachable") || !strings.Contains(out, "127.0.0.1:1") {
		t.Errorf("target down: exit %d, want 1 with FAIL target_reachable:\n%s%s", code, out, errOut)
	}

	pg, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	role := fmt.Sprintf("chk_ro_%d", rand.IntN(1e9))
	// a login without CREATE on the database (no new schema) and, since
	// PostgreSQL 15, on schema public
	if _, err := pg.Exec("CREATE ROLE " + role + " LOGIN PASSWORD 'pw'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pg.Exec("DROP OWNED BY " + role); _, _ = pg.Exec("DROP ROLE " + role) })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "pw")
	code, out, errOut = runCheck(t, checkConfigTo(t, db, user, pw, "postgres", u.String()))
	if code != 1 || !strings.Contains(out, "FAIL target_privileges") || !strings.Contains(out, "permission denied") {
		t.Errorf("target account without CREATE: exit %d, want 1 with FAIL target_privileges:\n%s%s", code, out, errOut)
	}

	code, out, errOut = runCheck(t, checkConfigTo(t, db, user, pw, "postgres", dsn))
	if code != 0 || strings.Contains(out, "FAIL") {
		t.Fatalf("good target: exit %d\n%s%s", code, out, errOut)
	}
	var n int
	if err := pg.QueryRow("SELECT count(*) FROM pg_namespace WHERE nspname = $1", db).Scan(&n); err != nil || n != 0 {
		t.Errorf("the probe left schema %s behind (%d, %v)", db, n, err)
	}
	if err := pg.QueryRow("SELECT count(*) FROM pg_class WHERE relname LIKE 'sluice_check_%'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the probe left %d tables behind (%v)", n, err)
	}
}

// On a MySQL or MariaDB target, whose DDL commits, the probe makes the
// mapped database (the sink would), a table in it and a column, and drops
// what it made: a good account passes and nothing is left.
func TestCheckProbesAMySQLTarget(t *testing.T) {
	c, db := checkServer(t)
	if _, err := c.Execute("CREATE TABLE " + db + ".items (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	target := db + "_t"
	dsn := fmt.Sprintf("%s:%s@tcp(%s:%s)/%s", os.Getenv("SLUICE_MYSQL_USER"), os.Getenv("SLUICE_MYSQL_PASSWORD"), os.Getenv("SLUICE_MYSQL_HOST"), os.Getenv("SLUICE_MYSQL_PORT"), db)
	path := checkConfigTo(t, db, os.Getenv("SLUICE_MYSQL_CDC_USER"), os.Getenv("SLUICE_MYSQL_CDC_PASSWORD"), "mysql", dsn)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b)+"  schema: "+target+"\n")
	code, out, errOut := runCheck(t, path)
	if code != 0 || strings.Contains(out, "FAIL") {
		t.Fatalf("good MySQL target: exit %d\n%s%s", code, out, errOut)
	}
	r, err := c.Execute("SELECT (SELECT count(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '" + target + "'), (SELECT count(*) FROM information_schema.TABLES WHERE TABLE_NAME LIKE 'sluice_check_%')")
	if err != nil {
		t.Fatal(err)
	}
	if dbs, _ := r.GetInt(0, 0); dbs != 0 {
		t.Errorf("the probe left database %s behind", target)
	}
	if tables, _ := r.GetInt(0, 1); tables != 0 {
		t.Errorf("the probe left %d tables behind", tables)
	}
}

// `sluice check` probes the broker of a rocketmq transport: a name server
// that does not answer fails the check (it printed "all checks passed").
func TestCheckProbesTheBroker(t *testing.T) {
	c, db := checkServer(t)
	if _, err := c.Execute("CREATE TABLE " + db + ".items (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	path := checkConfig(t, db, os.Getenv("SLUICE_MYSQL_CDC_USER"), os.Getenv("SLUICE_MYSQL_CDC_PASSWORD"))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	withBroker := func(ns string) {
		writeFile(t, path, strings.Replace(string(b), "transport:\n  type: embedded\n", "transport:\n  type: rocketmq\n  name_servers: [\""+ns+"\"]\n  topics: [x]\n", 1))
	}
	withBroker("127.0.0.1:1")
	code, out, errOut := runCheck(t, path)
	if code != 1 || !strings.Contains(out, "FAIL broker_reachable") || !strings.Contains(out, "127.0.0.1:1") {
		t.Errorf("name server down: exit %d, want 1 with FAIL broker_reachable:\n%s%s", code, out, errOut)
	}
	t.Run("broker up", func(t *testing.T) {
		withBroker(serverEnv(t, "scripts/servers.sh start rocketmq", "SLUICE_ROCKETMQ_NAMESRV")[0])
		if code, out, errOut := runCheck(t, path); code != 0 || strings.Contains(out, "FAIL") {
			t.Errorf("a working broker: exit %d\n%s%s", code, out, errOut)
		}
	})
}

// check reports a MySQL/MariaDB target whose commits are not durable when
// acknowledged, as a warning, and nothing once they are.
func TestCheckWarnsOfLazyTarget(t *testing.T) {
	c, db := checkServer(t)
	schematest.HoldGlobals(t, func(q string) (int64, error) {
		r, err := c.Execute(q)
		if err != nil {
			return 0, err
		}
		return r.GetInt(0, 0)
	})
	r, err := c.Execute("SELECT @@GLOBAL.innodb_flush_log_at_trx_commit, @@GLOBAL.sync_binlog")
	if err != nil {
		t.Fatal(err)
	}
	flush, _ := r.GetString(0, 0)
	syncBinlog, _ := r.GetString(0, 1)
	t.Cleanup(func() {
		_, _ = c.Execute("SET GLOBAL innodb_flush_log_at_trx_commit = " + flush)
		_, _ = c.Execute("SET GLOBAL sync_binlog = " + syncBinlog)
	})
	dsn := fmt.Sprintf("%s:%s@tcp(%s:%s)/%s", os.Getenv("SLUICE_MYSQL_USER"), os.Getenv("SLUICE_MYSQL_PASSWORD"),
		os.Getenv("SLUICE_MYSQL_HOST"), os.Getenv("SLUICE_MYSQL_PORT"), db)
	path := checkConfigTo(t, db, os.Getenv("SLUICE_MYSQL_CDC_USER"), os.Getenv("SLUICE_MYSQL_CDC_PASSWORD"), "mysql", dsn)
	for _, q := range []string{"SET GLOBAL innodb_flush_log_at_trx_commit = 2", "SET GLOBAL sync_binlog = 1"} {
		if _, err := c.Execute(q); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCheck(t, path)
	if code != 0 || !strings.Contains(out, "WARN target_durability: innodb_flush_log_at_trx_commit=2") {
		t.Fatalf("target with innodb_flush_log_at_trx_commit=2: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := c.Execute("SET GLOBAL innodb_flush_log_at_trx_commit = 1"); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCheck(t, path); code != 0 || strings.Contains(out, "target") {
		t.Fatalf("durable target: exit %d\n%s%s", code, out, errOut)
	}
}

// Each side of `sluice check` has its own --timeout: a source that never
// answers fails as unreachable, and the target, reached after it, is
// still probed (before, the source took the whole time and the target was
// reported unreachable, sending the user to the wrong server).
func TestCheckGivesEachSideItsTime(t *testing.T) {
	dsn := serverEnv(t, "scripts/servers.sh start postgres", "SLUICE_PG_DSN")[0]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts and never says a word: a hung server
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	path := filepath.Join(t.TempDir(), "check.yaml")
	writeFile(t, path, fmt.Sprintf(`name: chk
source:
  type: mariadb
  host: 127.0.0.1
  port: %d
  user: sluice
  password: pw
  server_id: 4242
transport:
  type: embedded
sink:
  type: postgres
  dsn: %q
`, ln.Addr().(*net.TCPAddr).Port, dsn))
	var out, errOut bytes.Buffer
	code := Main([]string{"check", "--config", path, "--timeout", "3s"}, &out, &errOut)
	if code != 1 || !strings.Contains(out.String(), "FAIL reachable") {
		t.Fatalf("hung source: exit %d, want 1 with FAIL reachable:\n%s%s", code, out.String(), errOut.String())
	}
	if strings.Contains(out.String(), "FAIL target") {
		t.Fatalf("the target was given no time of its own:\n%s", out.String())
	}
}
