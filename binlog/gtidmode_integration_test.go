package binlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/sluicecdc/sluice/schema"
)

// gtidModes are MySQL's gtid_mode values in the order the server lets
// them change, one step at a time.
var gtidModes = []string{"OFF", "OFF_PERMISSIVE", "ON_PERMISSIVE", "ON"}

// needMySQLScratch is the scratch server of a MySQL run (its gtid_mode is
// changed by the test, which has it to itself); gtid_mode is MySQL's.
func needMySQLScratch(t *testing.T) (serverEnv, *client.Conn, string) {
	t.Helper()
	if env := needServer(t); env.flavor != FlavorMySQL {
		t.Skip("gtid_mode is a MySQL setting; MariaDB always logs GTIDs")
	}
	env := needScratchServer(t, true)
	c, db := adminConn(t, env)
	t.Cleanup(func() { // the scratch server's own mode, on a connection that outlives a restart
		c, err := client.Connect(fmt.Sprintf("%s:%d", env.host, env.port), env.admin, env.adminPass, "")
		if err != nil {
			t.Errorf("reset gtid_mode: %v", err)
			return
		}
		defer c.Close()
		setGTIDMode(t, c, "OFF")
	})
	return env, c, db
}

// setGTIDMode steps the server's gtid_mode to mode.
func setGTIDMode(t *testing.T, c *client.Conn, mode string) {
	t.Helper()
	r, err := c.Execute("SELECT @@GLOBAL.gtid_mode")
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := r.GetString(0, 0)
	from, to := slices.Index(gtidModes, strings.ToUpper(cur)), slices.Index(gtidModes, mode)
	if from < 0 || to < 0 {
		t.Fatalf("gtid_mode %q -> %q", cur, mode)
	}
	exec(t, c, "SET GLOBAL enforce_gtid_consistency = ON")
	for from != to {
		if from < to {
			from++
		} else {
			from--
		}
		exec(t, c, "SET GLOBAL gtid_mode = "+gtidModes[from])
	}
}

// neverGTID makes the scratch server one that never had GTIDs: mode OFF,
// its binlogs and GTID history reset.
func neverGTID(t *testing.T, c *client.Conn) {
	t.Helper()
	setGTIDMode(t, c, "OFF")
	exec(t, c, "RESET BINARY LOGS AND GTIDS")
}

// lastCommit is the position of the last commit record of recs.
func lastCommit(t *testing.T, recs []schema.Record) Position {
	t.Helper()
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Op == schema.OpCommit {
			p, err := ParsePosition(recs[i].Position)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatal("no commit record")
	return Position{}
}

// streamRows reads until n data records of db came, and renders them.
func streamRows(t *testing.T, s *Source, db string, n int) ([]schema.Record, string) {
	t.Helper()
	recs := readUntil(t, s, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCommit) >= n })
	return recs, summary(ownData(recs, db))
}

// TestGTIDOffResumes (d5): on a server that never had GTIDs, every
// transaction has an anonymous GTID event. Positions carry file and offset
// and no GTID set (never 00000000-...:0), and a restart resumes there,
// also across a binlog rotation; a position an older version saved with
// the anonymous set resumes too.
func TestGTIDOffResumes(t *testing.T) {
	env, c, db := needMySQLScratch(t)
	neverGTID(t, c)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	cfg := testConfig(env, db)
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO t VALUES (1,1),(2,2)")
	exec(t, c, "FLUSH BINARY LOGS")
	exec(t, c, "UPDATE t SET v=9 WHERE id=1")
	recs, got := streamRows(t, s, db, 2)
	if want := "c t 1 [] -> [1 1]\nc t 2 [] -> [2 2]\nEND\nu t 1 [1 1] -> [1 9]\nEND\n"; got != want {
		t.Fatalf("records:\n%s\nwant:\n%s", got, want)
	}
	for _, r := range recs {
		if r.Op == schema.OpCommit && strings.Contains(string(r.Position), `"gtid"`) {
			t.Fatalf("position on a server without GTIDs carries a GTID set: %s", r.Position)
		}
	}
	saved := lastCommit(t, recs)
	s.Close()

	exec(t, c, "INSERT INTO t VALUES (3,3)")
	exec(t, c, "FLUSH BINARY LOGS")
	exec(t, c, "DELETE FROM t WHERE id=2")
	want := "c t 3 [] -> [3 3]\nEND\nd t 2 [2 2] -> []\nEND\n"
	s2 := openSource(t, cfg, EncodePosition(saved))
	if _, got := streamRows(t, s2, db, 2); got != want {
		t.Fatalf("after a restart at %s:\n%s\nwant:\n%s", saved, got, want)
	}
	s2.Close()

	old := saved
	old.GTIDSet = anonymousSID + ":0"
	s3 := openSource(t, cfg, EncodePosition(old))
	if _, got := streamRows(t, s3, db, 2); got != want {
		t.Fatalf("after a restart at an older version's position %s:\n%s\nwant:\n%s", old, got, want)
	}
}

// TestGTIDOnToOffFreshStart (d4): a server that had GTIDs and runs with
// gtid_mode OFF now: a fresh start streams (by file and offset, although
// the server's executed GTID set is not empty), and so does a restart.
func TestGTIDOnToOffFreshStart(t *testing.T) {
	env, c, db := needMySQLScratch(t)
	setGTIDMode(t, c, "ON")
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY)")
	setGTIDMode(t, c, "OFF")
	cfg := testConfig(env, db)
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO t VALUES (1)")
	recs, got := streamRows(t, s, db, 1)
	if want := "c t 1 [] -> [1]\nEND\n"; got != want {
		t.Fatalf("records:\n%s\nwant:\n%s", got, want)
	}
	s.Close()
	restartAfter(t, c, cfg, db, lastCommit(t, recs), 2)

	// a fresh start with a snapshot: it starts at Executed_Gtid_Set and
	// file/offset, and streams by file and offset after it
	cfg.Snapshot = SnapshotInitial
	s2 := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO t VALUES (3)")
	var got2 []string
	readUntil(t, s2, func(rs []schema.Record) bool {
		got2 = got2[:0]
		for _, r := range rs {
			if r.Op.IsData() && r.Table.Database == db {
				got2 = append(got2, fmt.Sprintf("%s %v", r.Op, r.After))
			}
		}
		return len(got2) >= 3
	})
	if g := strings.Join(got2, ","); g != "r [1],r [2],c [3]" {
		t.Fatalf("snapshot then stream on a gtid_mode=OFF server that had GTIDs: %s", g)
	}
}

// restartAfter inserts row id into t, opens a source at saved and expects
// exactly that row.
func restartAfter(t *testing.T, c *client.Conn, cfg Config, db string, saved Position, id int) {
	t.Helper()
	exec(t, c, fmt.Sprintf("INSERT INTO t VALUES (%d)", id))
	s := openSource(t, cfg, EncodePosition(saved))
	defer s.Close()
	if _, got := streamRows(t, s, db, 1); got != fmt.Sprintf("c t %d [] -> [%d]\nEND\n", id, id) {
		t.Fatalf("after a restart at %s:\n%s", saved, got)
	}
}

// TestGTIDModeSwitchResumes walks gtid_mode from OFF to ON and back while
// streaming: at every mode a transaction is written, the source restarts
// from the position it saved, and a killed replication connection
// reconnects; nothing is lost or repeated. Positions taken before the
// server had GTIDs carry none; once a binlog file started with GTIDs on,
// they carry the server's whole executed set (Executed_Gtid_Set).
func TestGTIDModeSwitchResumes(t *testing.T) {
	env, c, db := needMySQLScratch(t)
	neverGTID(t, c)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY)")
	cfg := testConfig(env, db)
	s := openSource(t, cfg, nil)
	id := 0
	var want strings.Builder
	step := func(mode string) {
		t.Helper()
		setGTIDMode(t, c, mode)
		// one transaction, then a restart from the saved position
		id++
		exec(t, c, fmt.Sprintf("INSERT INTO t VALUES (%d)", id))
		line := fmt.Sprintf("c t %d [] -> [%d]\nEND\n", id, id)
		want.WriteString(line)
		recs, got := streamRows(t, s, db, 1)
		if got != line {
			t.Fatalf("gtid_mode %s: records:\n%s\nwant:\n%s", mode, got, line)
		}
		saved := lastCommit(t, recs)
		s.Close()
		id++
		exec(t, c, fmt.Sprintf("INSERT INTO t VALUES (%d)", id))
		exec(t, c, "FLUSH BINARY LOGS")
		line = fmt.Sprintf("c t %d [] -> [%d]\nEND\n", id, id)
		s = openSource(t, cfg, EncodePosition(saved))
		if _, got := streamRows(t, s, db, 1); got != line {
			t.Fatalf("gtid_mode %s: after a restart at %s:\n%s\nwant:\n%s", mode, saved, got, line)
		}
		// a reconnect
		exec(t, c, fmt.Sprintf("KILL %d", s.connID.Load()))
		id++
		exec(t, c, fmt.Sprintf("INSERT INTO t VALUES (%d)", id))
		line = fmt.Sprintf("c t %d [] -> [%d]\nEND\n", id, id)
		recs, got = streamRows(t, s, db, 1)
		if got != line {
			t.Fatalf("gtid_mode %s: after a reconnect:\n%s\nwant:\n%s", mode, got, line)
		}
		p := lastCommit(t, recs)
		if strings.Contains(p.GTIDSet, anonymousSID) {
			t.Fatalf("gtid_mode %s: position %s names the anonymous GTID", mode, p)
		}
		if mode == "ON" {
			r, err := c.Execute("SELECT @@GLOBAL.gtid_executed")
			if err != nil {
				t.Fatal(err)
			}
			executed, _ := r.GetString(0, 0)
			if executed = strings.ReplaceAll(executed, "\n", ""); p.GTIDSet != executed {
				t.Fatalf("gtid_mode ON: position's GTID set %q, want the server's %q", p.GTIDSet, executed)
			}
		}
	}
	for _, mode := range []string{"OFF", "OFF_PERMISSIVE", "ON_PERMISSIVE", "ON", "ON_PERMISSIVE", "OFF_PERMISSIVE", "OFF"} {
		step(mode)
	}
	s.Close()
}

// TestGTIDAutoPositionRefusedIsFatal: a stream the server refuses with
// error 1236 for a reason other than a purge (here a GTID-only position on
// a server whose gtid_mode is OFF) ends the source with a fatal error that
// says what to do, instead of reconnecting for ever.
func TestGTIDAutoPositionRefusedIsFatal(t *testing.T) {
	env, c, db := needMySQLScratch(t)
	setGTIDMode(t, c, "OFF")
	cfg := testConfig(env, db)
	s, err := NewSource(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = s.Open(ctx, EncodePosition(Position{Flavor: FlavorMySQL, GTIDSet: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"}))
	if err == nil {
		_, err = s.Read(ctx)
	}
	if ctx.Err() != nil || schema.ClassOf(err) != schema.ClassFatal || !errors.Is(err, ErrBadPosition) || !strings.Contains(err.Error(), "gtid_mode") {
		t.Fatalf("GTID-only position on a gtid_mode=OFF server: %v (class %v), want a fatal error naming gtid_mode", err, schema.ClassOf(err))
	}
}

// TestGTIDOnWithAnonymousInFile: gtid_mode turned ON without a binlog
// rotation, so the current binlog file holds anonymous transactions before
// the GTID ones. A restart from a position after them resumes exactly.
func TestGTIDOnWithAnonymousInFile(t *testing.T) {
	env, c, db := needMySQLScratch(t)
	neverGTID(t, c)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY)")
	cfg := testConfig(env, db)
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO t VALUES (1)")
	setGTIDMode(t, c, "ON")
	exec(t, c, "INSERT INTO t VALUES (2)")
	recs, got := streamRows(t, s, db, 2)
	if want := "c t 1 [] -> [1]\nEND\nc t 2 [] -> [2]\nEND\n"; got != want {
		t.Fatalf("records:\n%s\nwant:\n%s", got, want)
	}
	saved := lastCommit(t, recs)
	if saved.GTIDSet == "" {
		t.Fatalf("position after a GTID transaction on a server started without GTIDs: %s, want its GTID set", saved)
	}
	s.Close()
	restartAfter(t, c, cfg, db, saved, 3)
}

// TestCheckReportsGTIDModes: `sluice check` passes in every gtid_mode, with
// a warning (resumed by file and offset) unless it is ON.
func TestCheckReportsGTIDModes(t *testing.T) {
	env, c, db := needMySQLScratch(t)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY)")
	cfg := testConfig(env, db)
	for _, mode := range gtidModes {
		setGTIDMode(t, c, mode)
		ps := checkNow(t, cfg)
		if f := failures(ps); len(f) > 0 {
			t.Errorf("gtid_mode %s: check failed: %v", mode, f)
		}
		var gtid []string
		for _, p := range ps {
			if p.Check == "gtid" {
				gtid = append(gtid, p.String())
			}
		}
		switch {
		case mode == "ON" && len(gtid) > 0:
			t.Errorf("gtid_mode ON: %v", gtid)
		case mode != "ON" && (len(gtid) != 1 || !strings.Contains(gtid[0], "WARN gtid: gtid_mode is \""+mode+"\": the source resumes by binlog file and offset")):
			t.Errorf("gtid_mode %s: %v, want one warning that positions are kept by file and offset", mode, gtid)
		}
	}
}

// TestTaggedGTIDs: MySQL 8.3+ tagged GTIDs (uuid:tag:N, from SET
// gtid_next='AUTOMATIC:tag'): records carry the tagged GTID, positions
// carry the server's whole executed set with its tags, and a restart from
// a position before and after a tagged transaction resumes exactly; a
// snapshot's start point, read from SHOW BINARY LOG STATUS, keeps the tags
// too (without them the stream after it repeats the tagged transactions).
func TestTaggedGTIDs(t *testing.T) {
	// On the scratch server: a tagged GTID stays in a server's
	// gtid_executed for good, and tools that read the shared source after
	// this package (Debezium 3.4's MySQL connector in the conformance
	// test) cannot parse tags.
	env, c, db := needMySQLScratch(t)
	setGTIDMode(t, c, "ON")
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY)")
	cfg := testConfig(env, db)
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO t VALUES (1)")
	exec(t, c, "SET gtid_next = 'AUTOMATIC:sluice_tag'")
	exec(t, c, "INSERT INTO t VALUES (2)")
	exec(t, c, "BEGIN")
	exec(t, c, "INSERT INTO t VALUES (3)")
	exec(t, c, "INSERT INTO t VALUES (4)")
	exec(t, c, "COMMIT")
	exec(t, c, "SET gtid_next = 'AUTOMATIC'")
	exec(t, c, "INSERT INTO t VALUES (5)")
	recs, got := streamRows(t, s, db, 4)
	want := "c t 1 [] -> [1]\nEND\nc t 2 [] -> [2]\nEND\nc t 3 [] -> [3]\nc t 4 [] -> [4]\nEND\nc t 5 [] -> [5]\nEND\n"
	if got != want {
		t.Fatalf("records:\n%s\nwant:\n%s", got, want)
	}
	own := ownData(recs, db)
	if g := own[2].Source.GTID; !strings.Contains(g, ":sluice_tag:") {
		t.Errorf("record of a tagged transaction has GTID %q, want uuid:sluice_tag:N", g)
	}
	if g := own[0].Source.GTID; g == "" || strings.Contains(g, "sluice_tag") {
		t.Errorf("record of an untagged transaction has GTID %q", g)
	}
	r, err := c.Execute("SELECT @@GLOBAL.gtid_executed")
	if err != nil {
		t.Fatal(err)
	}
	executed, _ := r.GetString(0, 0)
	last := lastCommit(t, recs)
	if executed = strings.ReplaceAll(executed, "\n", ""); last.GTIDSet != executed {
		t.Errorf("last position's GTID set %q, want the server's %q", last.GTIDSet, executed)
	}
	// restart after the first (untagged) transaction: the tagged ones come again
	first, err := ParsePosition(own[1].Position)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := openSource(t, cfg, EncodePosition(first))
	if _, got := streamRows(t, s2, db, 3); got != strings.SplitAfterN(want, "END\n", 2)[1] {
		t.Fatalf("after a restart at %s:\n%s", first, got)
	}
	s2.Close()
	// restart after the tagged ones: only what follows
	afterTagged, _ := ParsePosition(own[6].Position)
	if !strings.Contains(afterTagged.GTIDSet, ":sluice_tag:") {
		t.Fatalf("position after a tagged transaction: %s", afterTagged)
	}
	s3 := openSource(t, cfg, EncodePosition(afterTagged))
	exec(t, c, "INSERT INTO t VALUES (6)")
	if _, got := streamRows(t, s3, db, 2); got != "c t 5 [] -> [5]\nEND\nc t 6 [] -> [6]\nEND\n" {
		t.Fatalf("after a restart at %s:\n%s", afterTagged, got)
	}
	purged, err := positionPurged(c, afterTagged)
	if err != nil || purged {
		t.Errorf("positionPurged(%s) = %v, %v", afterTagged, purged, err)
	}
	s3.Close()

	// a first start with a snapshot on a server whose executed set has
	// tags: its start point carries them, and the stream goes on from there
	snap := cfg
	snap.Snapshot = SnapshotInitial
	s4 := openSource(t, snap, nil)
	exec(t, c, "SET gtid_next = 'AUTOMATIC:sluice_tag'")
	exec(t, c, "INSERT INTO t VALUES (7)")
	exec(t, c, "SET gtid_next = 'AUTOMATIC'")
	recs = readUntil(t, s4, func(rs []schema.Record) bool { return countOps(ownData(rs, db), schema.OpCommit) >= 1 })
	want = "r t 1 [] -> [1]\nr t 2 [] -> [2]\nr t 3 [] -> [3]\nr t 4 [] -> [4]\nr t 5 [] -> [5]\nr t 6 [] -> [6]\nc t 7 [] -> [7]\nEND\n"
	if got := summary(ownData(recs, db)); got != want {
		t.Fatalf("snapshot, then a tagged transaction:\n%s\nwant:\n%s", got, want)
	}
	snapEnd, err := ParsePosition(ownData(recs, db)[5].Position)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(snapEnd.GTIDSet, ":sluice_tag:") {
		t.Errorf("snapshot's start point %s, want the server's executed set with its tag", snapEnd)
	}
	s4.Close()
	s5 := openSource(t, snap, EncodePosition(lastCommit(t, recs)))
	exec(t, c, "INSERT INTO t VALUES (8)")
	if _, got := streamRows(t, s5, db, 1); got != "c t 8 [] -> [8]\nEND\n" {
		t.Fatalf("after a restart past the snapshot and a tagged transaction:\n%s", got)
	}
}

// restartScratchMySQL stops and starts the MySQL scratch server with
// scripts/servers.sh (its root is where SLUICE_MYSQL_SOCKET lies) and
// returns a new admin connection to it, USE db.
func restartScratchMySQL(t *testing.T, env serverEnv, db string) *client.Conn {
	t.Helper()
	sock := os.Getenv("SLUICE_MYSQL_SOCKET")
	if sock == "" {
		t.Fatal("SLUICE_MYSQL_SOCKET is not set: the servers' root is unknown")
	}
	for _, cmd := range []string{"stop", "start"} {
		c := osexec.Command("../scripts/servers.sh", cmd, "mysql-scratch")
		c.Env = append(os.Environ(), "SLUICE_SERVERS_ROOT="+filepath.Dir(filepath.Dir(sock)), fmt.Sprintf("SLUICE_MYSQL97_SCRATCH_PORT=%d", env.port))
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("servers.sh %s mysql-scratch: %v\n%s", cmd, err, out)
		}
	}
	c := sideConn(t, env, db)
	t.Cleanup(func() { _, _ = c.Execute("DROP DATABASE IF EXISTS " + db) })
	return c
}

// TestGTIDOffServerRestart (d5, mid-stream): the never-GTID server
// restarts under a running source, which reconnects by file and offset
// (the server's next binlog file) and goes on exactly.
func TestGTIDOffServerRestart(t *testing.T) {
	env, c, db := needMySQLScratch(t)
	neverGTID(t, c)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY)")
	s := openSource(t, testConfig(env, db), nil)
	exec(t, c, "INSERT INTO t VALUES (1)")
	if _, got := streamRows(t, s, db, 1); got != "c t 1 [] -> [1]\nEND\n" {
		t.Fatalf("records:\n%s", got)
	}
	c = restartScratchMySQL(t, env, db)
	exec(t, c, "INSERT INTO t VALUES (2)")
	exec(t, c, "UPDATE t SET id = 3 WHERE id = 1")
	recs, got := streamRows(t, s, db, 2)
	if want := "c t 2 [] -> [2]\nEND\nd t 1 [1] -> []\nc t 3 [] -> [3]\nEND\n"; got != want {
		t.Fatalf("after the server restarted:\n%s\nwant:\n%s", got, want)
	}
	if p := lastCommit(t, recs); p.GTIDSet != "" {
		t.Fatalf("position on a server without GTIDs: %s", p)
	}
}
