package integration

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/storage"
)

// pausedTx is the target session of a sink caught inside its transaction.
type pausedTx struct {
	pid int
	xid string // its transaction id, once it wrote
}

// TestClusterPausedInTransaction: the holder of an embedded task (source
// and sink in one `sluice worker`) is SIGSTOPped while its sink holds an
// open transaction on the PostgreSQL target (a trigger on the target's
// orders sleeps 3 s on a marker row, and the test stops the process during
// that sleep). Another worker takes the task when the lease expires.
//
//   - default: the paused session keeps its row locks until the process
//     wakes: the successor's sink is seen blocked by it (pg_blocking_pids)
//     and fails with lock_timeout (1 s here) and retries, the marker row
//     stays out of the target while the holder is paused; after SIGCONT
//     the successor applies it.
//   - idle_in_transaction_session_timeout=2000 in the sink's DSN: the
//     database ends the paused session after 2 s idle, so the successor
//     applies the marker row while the holder is still paused.
//
// In both the woken worker drops the task and stays up, and the target
// ends equal to the source with no row ever going back. The woken
// worker's transaction (its status read from the target: pg_xact_status)
// is aborted with the idle timeout; by default it may commit on waking (it
// did in every run so far): the sink's target writes are not fenced by
// the lease, and its progress rows make that commit harmless.
func TestClusterPausedInTransaction(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	for _, idle := range []bool{false, true} {
		name := "default"
		if idle {
			name = "idle_in_transaction_session_timeout"
		}
		t.Run(name, func(t *testing.T) {
			t.Setenv("SLUICE_IT_COORD_DRIVER", "postgres")
			t.Setenv("SLUICE_IT_COORD_DSN", e["SLUICE_PG_DSN"])
			t.Setenv("SLUICE_IT_CDC_PASSWORD", e["SLUICE_MYSQL_CDC_PASSWORD"])
			c := newCluster(t)
			k := newWorkloadKit(t, pair{transport: "embedded", target: "postgres"}, "clpt")
			k.sink = "  lock_timeout: 1s\n"
			if idle {
				k.dsnParams = "idle_in_transaction_session_timeout=2000"
			}
			ws := []*clusterWorker{c.start("w1"), c.start("w2")}
			c.create(ws[0], k, 1)
			c.waitAssigned(1, 90*time.Second)
			alive := &running{p: &engine.Pipeline{Name: "cluster"}, cancel: func() {}, errc: make(chan error, 1)}
			k.waitStreaming(t, alive)
			check := k.watchRegressions(t)
			sch := `"` + k.schema + `"`
			mustExec(t, k.dst, `CREATE FUNCTION `+sch+`.pause_marker() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN IF NEW.id = 999999 THEN PERFORM pg_sleep(3); END IF; RETURN NEW; END $$`)
			mustExec(t, k.dst, `CREATE TRIGGER pause_marker BEFORE INSERT OR UPDATE ON `+sch+`.orders FOR EACH ROW EXECUTE FUNCTION `+sch+`.pause_marker()`)
			stopLoad := startLoad(t, k)
			defer stopLoad()
			time.Sleep(2 * time.Second)

			// One source transaction: the marker and a raise of every
			// order below id 50, whose target rows the paused transaction
			// then holds.
			task := storage.TaskName(k.db, "source")
			holder, l := c.holderOf(task)
			tx, err := k.src.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec("UPDATE " + k.db + ".orders SET amount = amount + 1 WHERE id < 50 AND id > 0"); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec("INSERT INTO " + k.db + ".orders VALUES (999999, 'marker', 1, 'm', '2024-01-01 00:00:00', NULL)"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			var p pausedTx
			deadline := time.Now().Add(30 * time.Second)
			for {
				err := k.dst.QueryRow("SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()", k.schema).Scan(&p.pid)
				if err == nil {
					break
				}
				if !errors.Is(err, sql.ErrNoRows) {
					t.Fatal(err)
				}
				if time.Now().After(deadline) {
					t.Fatal("the sink never reached the marker row")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := holder.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			paused := time.Now()
			woken := false
			wake := func() {
				if !woken {
					woken = true
					_ = holder.p.cmd.Process.Signal(syscall.SIGCONT)
				}
			}
			defer wake()
			// The statement returns into the paused process: the session
			// is idle in its transaction, which holds the rows.
			deadline = time.Now().Add(10 * time.Second)
			for {
				var state string
				var xid sql.NullString
				err := k.dst.QueryRow("SELECT state, backend_xid::text FROM pg_stat_activity WHERE pid = $1", p.pid).Scan(&state, &xid)
				if err == nil && state == "idle in transaction" && xid.Valid {
					p.xid = xid.String
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the paused sink's session is not idle in a transaction that wrote: state %q xid %v err %v", state, xid, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			nl, took := c.waitTakeover(task, holder.id, l.epoch, paused, 30*time.Second)
			t.Logf("SIGSTOP of %s inside its sink transaction (backend %d, xid %s): %s taken by %s after %s", holder.id, p.pid, p.xid, task, nl.holder, took.Round(time.Millisecond))
			marker := func() bool { return k.targetCount("orders", "id = 999999") == 1 }

			if !idle {
				// The successor is blocked by the paused session, times out
				// and retries; nothing gets past the held rows.
				deadline = time.Now().Add(30 * time.Second)
				for {
					var n int
					if err := k.dst.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", p.pid).Scan(&n); err != nil {
						t.Fatal(err)
					}
					if n > 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the successor's sink was never blocked by the paused transaction's row locks")
					}
					time.Sleep(50 * time.Millisecond)
				}
				blockedAt := time.Now()
				c.mu.Lock()
				succ := c.workers[nl.holder]
				c.mu.Unlock()
				waitLockTimeouts(t, succ, 2, 30*time.Second)
				if marker() {
					t.Fatal("the marker row reached the target while the transaction holding its rows was paused")
				}
				t.Logf("successor blocked by the paused session; two lock_timeout retries %s later; marker not applied while paused", time.Since(blockedAt).Round(time.Millisecond))
				wake()
				woke := time.Now()
				waitFor(t, alive, marker, "the marker row reaches the target after the wake")
				var byOld bool
				if err := k.dst.QueryRow("SELECT xmin::text = $1 FROM "+k.targetTable("orders")+" WHERE id = 999999", p.xid).Scan(&byOld); err != nil {
					t.Fatal(err)
				}
				t.Logf("marker row in the target %s after SIGCONT, written by the woken worker's transaction: %v", time.Since(woke).Round(time.Millisecond), byOld)
			} else {
				// The database ends the paused session; the successor goes on
				// while the holder is still stopped.
				waitFor(t, alive, marker, "the successor applies the marker row while the holder is paused")
				t.Logf("marker applied by the successor %s after the SIGSTOP, the holder still paused", time.Since(paused).Round(time.Millisecond))
				var n int
				if err := k.dst.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", p.pid).Scan(&n); err != nil || n != 0 {
					t.Fatalf("the paused session %d is still there (%d, %v)", p.pid, n, err)
				}
				wake()
			}
			// The woken worker gives the task up, stays up, and its
			// transaction never commits.
			deadline = time.Now().Add(20 * time.Second)
			for !strings.Contains(logTail(holder.log, 1<<22), "task="+task+" epoch="+fmt.Sprint(l.epoch)+" why=") {
				if time.Now().After(deadline) {
					t.Fatalf("the woken worker did not say it lost the lease of %s:\n%s", task, logTail(holder.log, 3000))
				}
				time.Sleep(200 * time.Millisecond)
			}
			var status sql.NullString
			deadline = time.Now().Add(30 * time.Second)
			for {
				if err := k.dst.QueryRow("SELECT pg_xact_status($1::xid8)", p.xid).Scan(&status); err != nil {
					t.Fatal(err)
				}
				if status.String != "in progress" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the woken worker's transaction %s is still in progress", p.xid)
				}
				time.Sleep(100 * time.Millisecond)
			}
			// By default the woken process may send its COMMIT before it
			// notices the lost lease: the sink's target writes are not
			// fenced by the lease, only serialized by its progress rows
			// (equal and no regression below). With the idle timeout the
			// database ended that transaction first.
			if idle && status.String != "aborted" {
				t.Errorf("the woken worker's transaction %s ended %s; the database should have ended its session", p.xid, status.String)
			}
			t.Logf("the woken worker's transaction %s: %s", p.xid, status.String)
			stopLoad()
			k.waitEqual(t, alive)
			check(t)
			failIfExited(t, ws...)
		})
	}
}

// waitLockTimeouts waits until w's log shows n lock_timeout failures of
// its sink (PostgreSQL: "canceling statement due to lock timeout"), one a
// line.
func waitLockTimeouts(t *testing.T, w *clusterWorker, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	count := func() (c int, first string) {
		for _, line := range strings.Split(logTail(w.log, 1<<22), "\n") {
			if strings.Contains(line, "lock timeout") {
				if c == 0 {
					first = line
				}
				c++
			}
		}
		return c, first
	}
	for {
		c, first := count()
		if c >= n {
			t.Logf("%s: %d lock_timeout failures; the first: %.400s", w.id, c, first)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker %s's sink did not fail %d times on lock_timeout within %s:\n%s", w.id, n, limit, logTail(w.log, 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
