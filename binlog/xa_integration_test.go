package binlog

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/sluicecdc/sluice/schema"
)

// TestXATransactions (d9): an XA branch lands only when committed: XA
// PREPARE then XA ROLLBACK lands nothing; XA PREPARE then XA COMMIT lands
// the branch at its commit (after what committed in between); XA COMMIT
// ONE PHASE lands. A restart from a position saved between a branch's
// PREPARE and its COMMIT lands the branch once and repeats nothing a sink
// has not already applied (records read again carry the IDs they had).
// On the scratch server, locked (TestXAPreparedAcrossRestart says why).
func TestXATransactions(t *testing.T) {
	env, c, db := xaScratch(t, "ON")
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	// MariaDB keeps a prepared branch on its session: other work goes on
	// another connection
	c2 := sideConn(t, env, db)
	t.Cleanup(func() { // a failed run leaves no branch prepared
		for _, x := range []string{"x2'", "x3','b',7", "x4'", "x5'", "x6'"} {
			_, _ = c2.Execute("XA ROLLBACK '" + db + x)
		}
	})
	cfg := testConfig(env, db)
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO t VALUES (1,1)")
	exec(t, c, "XA START '"+db+"x2'")
	exec(t, c, "INSERT INTO t VALUES (3,3)")
	exec(t, c, "DELETE FROM t WHERE id=1")
	exec(t, c, "XA END '"+db+"x2'")
	exec(t, c, "XA PREPARE '"+db+"x2'")
	exec(t, c, "XA ROLLBACK '"+db+"x2'")
	exec(t, c, "XA START '"+db+"x3','b',7")
	exec(t, c, "INSERT INTO t VALUES (4,4)")
	exec(t, c, "XA END '"+db+"x3','b',7")
	exec(t, c, "XA PREPARE '"+db+"x3','b',7")
	exec(t, c2, "INSERT INTO t VALUES (10,10)")
	exec(t, c, "XA COMMIT '"+db+"x3','b',7")
	exec(t, c, "XA START '"+db+"x4'")
	exec(t, c, "INSERT INTO t VALUES (5,5)")
	exec(t, c, "UPDATE t SET v=50 WHERE id=5")
	exec(t, c, "XA END '"+db+"x4'")
	exec(t, c, "XA COMMIT '"+db+"x4' ONE PHASE")
	exec(t, c, "INSERT INTO t VALUES (20,20)")
	_, got := streamRows(t, s, db, 5)
	want := "c t 1 [] -> [1 1]\nEND\nc t 10 [] -> [10 10]\nEND\nc t 4 [] -> [4 4]\nEND\nc t 5 [] -> [5 5]\nu t 5 [5 5] -> [5 50]\nEND\nc t 20 [] -> [20 20]\nEND\n"
	if got != want {
		t.Fatalf("records:\n%s\nwant:\n%s", got, want)
	}

	// a branch prepared, then a transaction, then sluice stops
	exec(t, c, "XA START '"+db+"x5'")
	exec(t, c, "INSERT INTO t VALUES (6,6)")
	exec(t, c, "XA END '"+db+"x5'")
	exec(t, c, "XA PREPARE '"+db+"x5'")
	exec(t, c2, "INSERT INTO t VALUES (11,11)")
	recs, got := streamRows(t, s, db, 1)
	if got != "c t 11 [] -> [11 11]\nEND\n" {
		t.Fatalf("records after a prepare:\n%s", got)
	}
	saved := lastCommit(t, recs)
	applied := lastID(recs)
	s.Close()
	exec(t, c, "XA COMMIT '"+db+"x5'")
	exec(t, c, "XA START '"+db+"x6'")
	exec(t, c, "INSERT INTO t VALUES (7,7)")
	exec(t, c, "XA END '"+db+"x6'")
	exec(t, c, "XA PREPARE '"+db+"x6'")
	exec(t, c, "XA ROLLBACK '"+db+"x6'")
	exec(t, c, "INSERT INTO t VALUES (12,12)")
	s2 := openSource(t, cfg, EncodePosition(saved))
	replayed := readPast(t, s2, applied, db, 2)
	if got, want := summary(ownData(replayed, db)), "c t 6 [] -> [6 6]\nEND\nc t 12 [] -> [12 12]\nEND\n"; got != want {
		t.Fatalf("after a restart at %s (saved between PREPARE and COMMIT), records past the applied ID:\n%s\nwant:\n%s", saved, got, want)
	}
	if strings.Contains(summary(ownData(replayed, db)), "c t 11") {
		t.Fatal("a record applied before the restart came again with a new ID")
	}
	if env.flavor != FlavorMySQL {
		return
	}
	// MySQL compresses XA branches too (one Transaction_payload event)
	exec(t, c, "SET SESSION binlog_transaction_compression = ON")
	for _, outcome := range []string{"ROLLBACK", "COMMIT"} {
		exec(t, c, "XA START '"+db+"z"+outcome+"'")
		exec(t, c, "INSERT INTO t VALUES (30, 30)")
		exec(t, c, "XA END '"+db+"z"+outcome+"'")
		exec(t, c, "XA PREPARE '"+db+"z"+outcome+"'")
		exec(t, c, "XA "+outcome+" '"+db+"z"+outcome+"'")
	}
	exec(t, c, "SET SESSION binlog_transaction_compression = OFF")
	if _, got := streamRows(t, s2, db, 1); got != "c t 30 [] -> [30 30]\nEND\n" {
		t.Fatalf("compressed XA branches rolled back, then committed:\n%s", got)
	}
}

// TestXABranchOverBoundStops: the records of prepared XA branches are held
// in memory up to a bound; a branch that passes it stops the source with a
// fatal error that says so, rather than growing without limit. On the
// scratch server, locked (TestXAPreparedAcrossRestart says why).
func TestXABranchOverBoundStops(t *testing.T) {
	env := needScratchServer(t, true)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(100))")
	defer func(n int) { maxXABytes = n }(maxXABytes)
	maxXABytes = 1 << 20
	s := openSource(t, testConfig(env, db), nil)
	t.Cleanup(func() { _, _ = c.Execute("XA ROLLBACK '" + db + "big'") })
	exec(t, c, "XA START '"+db+"big'")
	for k := range 5 { // 5000 rows (recursion stops at 1000 by default)
		exec(t, c, fmt.Sprintf("INSERT INTO t WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 1000) SELECT i+%d, REPEAT('x', 100) FROM n", k*1000))
	}
	exec(t, c, "XA END '"+db+"big'")
	exec(t, c, "XA PREPARE '"+db+"big'")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var err error
	for err == nil {
		var recs []schema.Record
		recs, err = s.Read(ctx)
		if len(ownData(recs, db)) > 0 {
			t.Fatalf("records of a prepared branch were handed on: %s", summary(ownData(recs, db)[:1]))
		}
	}
	if schema.ClassOf(err) != schema.ClassFatal || !strings.Contains(err.Error(), "XA") || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("a prepared branch over the bound: %v (class %v), want a fatal error naming the XA bound", err, schema.ClassOf(err))
	}
}

// TestXAPreparedBeforeFirstStart (issue 26): a branch prepared before the
// source's very first start and committed after it is captured: the first
// start waits for its outcome before it takes its start point, so the
// snapshot reads its rows. Before, the snapshot missed the prepared rows
// and the stream's XA COMMIT had no branch to release (a warning only).
// The source's user here may list prepared branches (XA RECOVER; MySQL:
// XA_RECOVER_ADMIN). On the scratch server, locked (TestXAPreparedAcrossRestart
// says why).
func TestXAPreparedBeforeFirstStart(t *testing.T) {
	env := needScratchServer(t, true)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	xid := "'" + db + "pre'"
	exec(t, c, "XA START "+xid)
	exec(t, c, "INSERT INTO t VALUES (1,1)")
	exec(t, c, "XA END "+xid)
	exec(t, c, "XA PREPARE "+xid)
	committed := make(chan error, 1)
	t.Cleanup(func() {
		if err := <-committed; err != nil {
			_, _ = c.Execute("XA ROLLBACK " + xid)
		}
	})
	go func() {
		time.Sleep(1500 * time.Millisecond) // the source is in Open meanwhile
		_, err := c.Execute("XA COMMIT " + xid)
		committed <- err
	}()
	cfg := testConfig(env, db)
	cfg.User, cfg.Password, cfg.Snapshot = env.admin, env.adminPass, SnapshotInitial
	s := openSource(t, cfg, nil)
	c2 := sideConn(t, env, db)
	exec(t, c2, "INSERT INTO t VALUES (2,2)")
	own := func(recs []schema.Record) []schema.Record {
		var out []schema.Record
		for _, r := range recs {
			if r.Op.IsData() && r.Table.Database == db {
				out = append(out, r)
			}
		}
		return out
	}
	recs := readUntil(t, s, func(r []schema.Record) bool { return countOps(own(r), schema.OpCreate) > 0 })
	if got, want := summary(own(recs)), "r t 1 [] -> [1 1]\nc t 2 [] -> [2 2]\n"; got != want {
		t.Fatalf("records:\n%s\nwant:\n%s", got, want)
	}
}

// TestXAPreparedAcrossRestart: branches prepared while the source runs and
// still prepared when it stops (on MySQL with gtid_mode ON and OFF) are held again after a restart from the
// position it saved, and their outcome, written after the restart, is
// applied there: the committed branch lands once, the rolled-back one
// never, and what the sink applied before the restart does not come again
// with new IDs. On the scratch server, locked: XA RECOVER lists a prepared
// branch to every user, and another test's first start would wait for it.
func TestXAPreparedAcrossRestart(t *testing.T) {
	for _, mode := range []string{"ON", "OFF"} { // MySQL: resumed by GTID set, by file and offset
		t.Run("gtid_mode="+mode, func(t *testing.T) {
			if mode == "OFF" && needServer(t).flavor != FlavorMySQL {
				t.Skip("gtid_mode is a MySQL setting")
			}
			testXAPreparedAcrossRestart(t, mode)
		})
	}
}

func testXAPreparedAcrossRestart(t *testing.T, mode string) {
	env, c, db := xaScratch(t, mode)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	c2, c3 := sideConn(t, env, db), sideConn(t, env, db)
	x7, x8 := "'"+db+"x7'", "'"+db+"x8','b',3"
	t.Cleanup(func() { // a failed run leaves no branch prepared (MariaDB: on its own session)
		_, _ = c.Execute("XA ROLLBACK " + x7)
		_, _ = c3.Execute("XA ROLLBACK " + x8)
	})
	cfg := testConfig(env, db)
	s := openSource(t, cfg, nil)
	exec(t, c2, "INSERT INTO t VALUES (1,1)")
	for _, st := range []struct {
		conn *client.Conn
		xid  string
		work []string
	}{
		{c, x7, []string{"INSERT INTO t VALUES (7,7)", "UPDATE t SET v=70 WHERE id=7"}},
		{c3, x8, []string{"INSERT INTO t VALUES (8,8)", "DELETE FROM t WHERE id=1"}},
	} {
		exec(t, st.conn, "XA START "+st.xid)
		for _, q := range st.work {
			exec(t, st.conn, q)
		}
		exec(t, st.conn, "XA END "+st.xid)
		exec(t, st.conn, "XA PREPARE "+st.xid)
	}
	exec(t, c2, "INSERT INTO t VALUES (13,13)")
	recs, got := streamRows(t, s, db, 2)
	if want := "c t 1 [] -> [1 1]\nEND\nc t 13 [] -> [13 13]\nEND\n"; got != want {
		t.Fatalf("records with two branches prepared:\n%s\nwant:\n%s", got, want)
	}
	saved := lastCommit(t, recs)
	applied := lastID(recs)
	s.Close()

	s2 := openSource(t, cfg, EncodePosition(saved))
	exec(t, c, "XA COMMIT "+x7)
	exec(t, c3, "XA ROLLBACK "+x8)
	exec(t, c2, "INSERT INTO t VALUES (14,14)")
	replayed := readPast(t, s2, applied, db, 2)
	want := "c t 7 [] -> [7 7]\nu t 7 [7 7] -> [7 70]\nEND\nc t 14 [] -> [14 14]\nEND\n"
	if got := summary(ownData(replayed, db)); got != want {
		t.Fatalf("after a restart at %s (two branches prepared), outcomes written after it, records past the applied ID:\n%s\nwant:\n%s", saved, got, want)
	}
}

// lastID is the highest record ID of recs: what a sink has applied after
// it wrote them.
func lastID(recs []schema.Record) schema.ID {
	applied := schema.ID{}
	for _, r := range recs {
		if r.ID.Compare(applied) > 0 {
			applied = r.ID
		}
	}
	return applied
}

// readPast reads s until n transactions of db came with IDs past applied,
// and returns the records past applied: what a sink that applied up to it
// applies.
func readPast(t *testing.T, s *Source, applied schema.ID, db string, n int) []schema.Record {
	t.Helper()
	var replayed []schema.Record
	readUntil(t, s, func(rs []schema.Record) bool {
		replayed = replayed[:0]
		for _, r := range rs {
			if r.ID.Compare(applied) > 0 {
				replayed = append(replayed, r)
			}
		}
		return countOps(ownData(replayed, db), schema.OpCommit) >= n
	})
	return replayed
}

// xaScratch is the scratch server, locked, with an admin connection and a
// fresh database; on MySQL its gtid_mode is mode until the test ends. The
// XA tests hold prepared branches there: XA RECOVER lists them to every
// account (MariaDB) and a first start elsewhere would wait for them.
func xaScratch(t *testing.T, mode string) (serverEnv, *client.Conn, string) {
	t.Helper()
	env := needScratchServer(t, true)
	c, db := adminConn(t, env)
	if env.flavor == FlavorMySQL {
		r, err := c.Execute("SELECT @@GLOBAL.gtid_mode")
		if err != nil {
			t.Fatal(err)
		}
		was, _ := r.GetString(0, 0)
		setGTIDMode(t, c, mode)
		t.Cleanup(func() { setGTIDMode(t, c, strings.ToUpper(was)) })
	}
	return env, c, db
}
