package sink

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
	"github.com/sluicecdc/sluice/sink/mysql"
)

// A sink transaction commits durably even where the session's default is
// synchronous_commit=off (a commit acknowledged before its WAL is flushed
// is lost in a crash): a trigger on the target table records the setting
// in force inside the sink's transactions, batch and COPY alike.
func TestPostgresCommitsAreDurable(t *testing.T) {
	e := pgEnv(t)
	for _, q := range []string{
		"CREATE TABLE " + e.table("dur") + " (id BIGINT PRIMARY KEY, v TEXT)",
		"CREATE TABLE " + e.table("dur_seen") + " (setting TEXT)",
		"CREATE FUNCTION " + e.table("dur_note") + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO " +
			e.table("dur_seen") + " VALUES (current_setting('synchronous_commit')); RETURN NULL; END $$",
		"CREATE TRIGGER dur_note AFTER INSERT OR UPDATE ON " + e.table("dur") + " FOR EACH STATEMENT EXECUTE FUNCTION " + e.table("dur_note") + "()",
	} {
		if _, err := e.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The session default of the sink's connections is off, as a server
	// started with synchronous_commit=off would give them (lib/pq sends
	// unknown DSN parameters as run-time parameters).
	s := e.open(t, func(c *Config) { c.DSN += "&synchronous_commit=off"; c.CopyThreshold = 50 })
	var def string
	if err := s.db.QueryRow("SHOW synchronous_commit").Scan(&def); err != nil || def != "off" {
		t.Fatalf("the sink's session default is %q (%v), want off for this test", def, err)
	}
	write(t, s, cIns("dur", 1, "a"), cIns("dur", 2, "b"))
	var many []schema.Record
	for i := int64(10); i < 200; i++ {
		many = append(many, cIns("dur", i, "copied"))
	}
	write(t, s, many...) // over CopyThreshold: the COPY path
	rs, err := e.db.Query("SELECT setting FROM " + e.table("dur_seen"))
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	n := 0
	for rs.Next() {
		var got string
		if err := rs.Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != "on" {
			t.Errorf("a sink transaction ran with synchronous_commit=%s, want on", got)
		}
		n++
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("the trigger saw %d statements, want one per write at least", n)
	}
	// A stronger setting is kept: remote_apply is not weakened to on.
	if _, err := e.db.Exec("TRUNCATE " + e.table("dur_seen")); err != nil {
		t.Fatal(err)
	}
	s2 := e.open(t, func(c *Config) { c.DSN += "&synchronous_commit=remote_apply" })
	write(t, s2, cIns("dur", 3, "c"))
	var got string
	if err := e.db.QueryRow("SELECT setting FROM " + e.table("dur_seen")).Scan(&got); err != nil || got != "remote_apply" {
		t.Fatalf("with remote_apply as the default, the sink's transaction ran with %q (%v)", got, err)
	}
}

// A MySQL/MariaDB target that acknowledges commits before they are on disk
// is reported, with the settings to change.
func TestMySQLDurabilityReportsLazyCommits(t *testing.T) {
	e := mysqlEnv(t)
	conn, err := e.admin.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	schematest.HoldGlobals(t, func(q string) (n int64, err error) {
		err = conn.QueryRowContext(context.Background(), q).Scan(&n)
		return n, err
	})
	var flush, syncBinlog string
	if err := e.admin.QueryRow("SELECT @@GLOBAL.innodb_flush_log_at_trx_commit, @@GLOBAL.sync_binlog").Scan(&flush, &syncBinlog); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.admin.Exec("SET GLOBAL innodb_flush_log_at_trx_commit = " + flush)
		e.admin.Exec("SET GLOBAL sync_binlog = " + syncBinlog)
	})
	set := func(f, s string) {
		t.Helper()
		for _, q := range []string{"SET GLOBAL innodb_flush_log_at_trx_commit = " + f, "SET GLOBAL sync_binlog = " + s} {
			if _, err := e.admin.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	ask := func() string {
		t.Helper()
		db, err := sql.Open("mysql", e.cfg.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		msg, err := mysql.Dialect{}.Durability(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		what, _, _ := strings.Cut(msg, ":")
		return what
	}
	set("2", "1")
	if msg := ask(); !strings.Contains(msg, "innodb_flush_log_at_trx_commit=2") || strings.Contains(msg, "sync_binlog=") {
		t.Errorf("flush 2: %q", msg)
	}
	var logBin string
	if err := e.admin.QueryRow("SELECT @@log_bin").Scan(&logBin); err != nil {
		t.Fatal(err)
	}
	set("1", "0")
	if msg := ask(); (logBin == "1") != strings.Contains(msg, "sync_binlog=0") || strings.Contains(msg, "innodb_flush") {
		t.Errorf("sync_binlog 0, log_bin %s: %q", logBin, msg)
	}
	set("1", "1")
	if msg := ask(); msg != "" {
		t.Errorf("durable settings: %q", msg)
	}
}

// pgCrash stops the test PostgreSQL server as a crash would (pg_ctl's
// immediate mode: no checkpoint, shared memory gone) and starts it again
// with the options it ran with. It needs a server started by
// scripts/servers.sh with SLUICE_POSTGRES_DURABLE=1 (else it skips: a server
// with fsync=off may not survive a crash, and other tests share it).
func pgCrash(t *testing.T) func() {
	t.Helper()
	if os.Getenv("SLUICE_PG_DURABLE") != "on" {
		t.Skip("SLUICE_PG_DURABLE is not on: start PostgreSQL with SLUICE_POSTGRES_DURABLE=1 scripts/servers.sh start postgres for crash tests")
	}
	requireEnv(t, "SLUICE_PG_DATA", "SLUICE_PG_BIN")
	data := os.Getenv("SLUICE_PG_DATA")
	return func() {
		t.Helper()
		args := []string{filepath.Join(os.Getenv("SLUICE_PG_BIN"), "pg_ctl"), "-D", data, "-l", filepath.Join(filepath.Dir(data), "postgres.log"), "-m", "immediate", "-w", "restart"}
		if os.Geteuid() == 0 {
			args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
		}
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// A crash of PostgreSQL loses no row the sink acknowledged, even with
// synchronous_commit=off as the server's default: every Write that
// returned nil before the crash is in the table after it. Three crashes,
// as one in a random moment may find nothing unflushed.
func TestPostgresCrashKeepsAcknowledgedRows(t *testing.T) {
	crash := pgCrash(t)
	e := pgEnv(t)
	s := e.open(t, func(c *Config) { c.DSN += "&synchronous_commit=off" })
	const batch = 20
	for round := range 3 {
		table := fmt.Sprintf("crash%d", round)
		var acked atomic.Int64 // batches acknowledged
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := int64(0); !stop.Load(); i++ {
				var recs []schema.Record
				for j := range int64(batch) {
					recs = append(recs, cIns(table, i*batch+j, "v"))
				}
				if err := s.Write(context.Background(), recs); err != nil {
					return // the server went away
				}
				acked.Store(i + 1)
			}
		}()
		for acked.Load() < 100 {
			time.Sleep(10 * time.Millisecond)
		}
		crash()
		stop.Store(true)
		<-done
		n := acked.Load()
		var got int64
		if err := e.db.QueryRow("SELECT count(*) FROM "+e.table(table)+" WHERE id < $1", n*batch).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != n*batch {
			t.Fatalf("crash %d: the table has %d of the %d rows the sink acknowledged", round+1, got, n*batch)
		}
		t.Logf("crash %d: %d rows acknowledged before it, all there after it", round+1, n*batch)
	}
}
