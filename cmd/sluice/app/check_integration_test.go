package app

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
)

// checkServer returns an admin connection and a fresh database, or skips
// (fails in CI) without the test servers.
func checkServer(t *testing.T) (*client.Conn, string) {
	t.Helper()
	host := os.Getenv("SLUICE_MYSQL_HOST")
	if host == "" {
		msg := "SLUICE_MYSQL_HOST is not set: start the servers with scripts/servers.sh start and source /tmp/sluice-servers/servers.env"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
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
  type: postgres
  dsn: postgres://unused@127.0.0.1:1/x
`, os.Getenv("SLUICE_MYSQL_FLAVOR"), os.Getenv("SLUICE_MYSQL_HOST"), os.Getenv("SLUICE_MYSQL_PORT"), user, password, 200000+rand.IntN(1e6), db))
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
		slave = slave || strings.HasPrefix(line, "FAIL privileges") && strings.Contains(line, "REPLICATION SLAVE") && strings.Contains(line, "fix: GRANT REPLICATION SLAVE")
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

// check reports a MySQL/MariaDB target whose commits are not durable when
// acknowledged, as a warning, and nothing once they are.
func TestCheckWarnsOfLazyTarget(t *testing.T) {
	c, db := checkServer(t)
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
	path := checkConfig(t, db, os.Getenv("SLUICE_MYSQL_CDC_USER"), os.Getenv("SLUICE_MYSQL_CDC_PASSWORD"))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	target := fmt.Sprintf("sink:\n  type: mysql\n  dsn: %s:%s@tcp(%s:%s)/%s\n", os.Getenv("SLUICE_MYSQL_USER"), os.Getenv("SLUICE_MYSQL_PASSWORD"),
		os.Getenv("SLUICE_MYSQL_HOST"), os.Getenv("SLUICE_MYSQL_PORT"), db)
	writeFile(t, path, strings.Replace(string(b), "sink:\n  type: postgres\n  dsn: postgres://unused@127.0.0.1:1/x\n", target, 1))
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
