package integration

import (
	"cmp"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// ownCoordinator is a database server of one test's own, started through
// scripts/servers.sh under its own root and port (never the shared
// servers, which other tests use at the same time), so that the test may
// crash it.
type ownCoordinator struct {
	driver, root, port, dsn string
}

// startOwnCoordinator starts (or finds running) driver's server under
// SLUICE_IT_OUTAGE_ROOT (default /tmp/sluice-outage-<driver>) on
// SLUICE_IT_OUTAGE_PG_PORT (default 28432) or SLUICE_IT_OUTAGE_MARIADB_PORT
// (default 28306). It skips when that fails outside CI and fails in CI.
// The server is stopped when the test ends (its data directory stays, so
// the next start is quick).
func startOwnCoordinator(t *testing.T, driver string) *ownCoordinator {
	t.Helper()
	o := &ownCoordinator{driver: driver, root: cmp.Or(os.Getenv("SLUICE_IT_OUTAGE_ROOT"), "/tmp/sluice-outage-"+driver)}
	if driver == "postgres" {
		o.port = cmp.Or(os.Getenv("SLUICE_IT_OUTAGE_PG_PORT"), "28432")
		o.dsn = "postgres://sluice:sluice@127.0.0.1:" + o.port + "/sluice?sslmode=disable"
	} else {
		o.port = cmp.Or(os.Getenv("SLUICE_IT_OUTAGE_MARIADB_PORT"), "28306")
		o.dsn = "root:root@tcp(127.0.0.1:" + o.port + ")/mysql"
	}
	if out, err := o.servers("start"); err != nil {
		schematest.NoServer(t, "cannot start a coordinator of this test's own (scripts/servers.sh start under %s, port %s; it needs root and the server packages): %v\n%s", o.root, o.port, err, out)
	}
	t.Cleanup(func() {
		if out, err := o.servers("stop"); err != nil {
			t.Logf("stopping the test's coordinator: %v\n%s", err, out)
		}
	})
	return o
}

// servers runs scripts/servers.sh verb for o's server.
func (o *ownCoordinator) servers(verb string) ([]byte, error) {
	name := "postgres"
	if o.driver == "mysql" {
		name = "mariadb"
	}
	cmd := exec.Command(filepath.Join("..", "scripts", "servers.sh"), verb, name)
	cmd.Env = append(os.Environ(), "SLUICE_SERVERS_ROOT="+o.root, "SLUICE_POSTGRES_PORT="+o.port, "SLUICE_MARIADB_PORT="+o.port)
	return cmd.CombinedOutput()
}

// crash ends the server at once, as a power cut would: PostgreSQL by
// pg_ctl stop -m immediate, MariaDB by kill -9 of mariadbd.
func (o *ownCoordinator) crash(t *testing.T) {
	t.Helper()
	if o.driver == "postgres" {
		bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
		if len(bins) == 0 {
			t.Fatal("no pg_ctl under /usr/lib/postgresql")
		}
		out, err := exec.Command("runuser", "-u", "postgres", "--", bins[len(bins)-1], "-D", filepath.Join(o.root, "postgres", "data"), "stop", "-m", "immediate", "-w").CombinedOutput()
		if err != nil {
			t.Fatalf("pg_ctl stop -m immediate: %v\n%s", err, out)
		}
		return
	}
	killPidFile(t, filepath.Join(o.root, "mariadb", "mariadb.pid"), "mariadbd")
}

// killPidFile ends the process whose id the file at path holds with kill
// -9, and waits until it is gone.
func killPidFile(t *testing.T, path, what string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %s %d: %v", what, pid, err)
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAnswer returns when o's server first answers a query, polling while
// scripts/servers.sh starts it (its result comes on restarted: a failure
// before an answer ends the test).
func (o *ownCoordinator) waitAnswer(t *testing.T, restarted chan error) time.Time {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		db, err := sql.Open(o.driver, o.dsn)
		if err == nil {
			var one int
			err = db.QueryRow("SELECT 1").Scan(&one)
			db.Close()
			if err == nil {
				return time.Now()
			}
		}
		select {
		case rerr := <-restarted:
			if rerr != nil {
				t.Fatalf("restarting the coordinator: %v", rerr)
			}
			restarted <- nil
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the coordinator does not answer 2 minutes after its restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// workerGauge reads one of worker w's own series from its /metrics.
func (c *cluster) workerGauge(w *clusterWorker, name string) (float64, error) {
	b, err := c.get(w, "/metrics")
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^` + name + `\{worker="` + regexp.QuoteMeta(w.id) + `"\} (\S+)$`).FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("no %s in /metrics of %s", name, w.id)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// fingerprint sums the target's orders: it changes with every applied
// change of the workload (amounts only grow).
func (k *kit) fingerprint(t *testing.T) string {
	t.Helper()
	var n int64
	var sum string
	if err := k.dst.QueryRow("SELECT count(*), CAST(coalesce(sum(amount), 0) AS CHAR(64)) FROM "+k.targetTable("orders")).Scan(&n, &sum); err != nil {
		t.Fatalf("fingerprint of %s: %v", k.db, err)
	}
	return fmt.Sprintf("%d/%s", n, sum)
}

// TestCoordinatorOutage: two `sluice worker` processes run two embedded
// connectors (targets PostgreSQL and MariaDB) with their control tables in
// a coordinator of the test's own, PostgreSQL and MariaDB. Under a steady
// workload the coordinator crashes (pg_ctl stop -m immediate; kill -9 of
// mariadbd) for 3 × ttl: every holder stops its tasks within the ttl of
// the crash (its own gauge of held tasks 0, a lost lease counted), the
// targets stop changing while the sources go on, and no worker exits. The
// coordinator comes back: every task is taken again (new epochs) and runs,
// and each target ends equal to its source with no row ever going back.
func TestCoordinatorOutage(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	for _, driver := range []string{"postgres", "mysql"} {
		t.Run(driver, func(t *testing.T) {
			o := startOwnCoordinator(t, driver)
			t.Setenv("SLUICE_IT_COORD_DRIVER", driver)
			t.Setenv("SLUICE_IT_COORD_DSN", o.dsn)
			t.Setenv("SLUICE_IT_CDC_PASSWORD", e["SLUICE_MYSQL_CDC_PASSWORD"])
			c := newCluster(t)
			kits := []*kit{newWorkloadKit(t, pair{transport: "embedded", target: "postgres"}, "cop"), newWorkloadKit(t, pair{transport: "embedded", target: "mysql"}, "com")}
			ws := []*clusterWorker{c.start("w1"), c.start("w2")}
			for i, k := range kits {
				c.create(ws[i%2], k, 1)
			}
			alive := &running{p: &engine.Pipeline{Name: "cluster"}, cancel: func() {}, errc: make(chan error, 1)}
			c.waitAssigned(len(kits), 90*time.Second)
			var checks []func(*testing.T)
			for _, k := range kits {
				k.waitStreaming(t, alive)
				checks = append(checks, k.watchRegressions(t))
			}
			stopLoad := startLoad(t, kits...)
			defer stopLoad()
			time.Sleep(clusterTTL)
			before := c.leases()
			lost := map[string]float64{}
			for _, w := range ws {
				n, err := c.workerGauge(w, "sluice_worker_leases_lost_total")
				if err != nil {
					t.Fatal(err)
				}
				lost[w.id] = n
			}

			crashed := time.Now()
			o.crash(t)
			// Every holder stops its tasks within the ttl.
			stoppedAfter := map[string]time.Duration{}
			for len(stoppedAfter) < len(ws) {
				for _, w := range ws {
					if _, done := stoppedAfter[w.id]; done {
						continue
					}
					if n, err := c.workerGauge(w, "sluice_worker_tasks_held"); err == nil && n == 0 {
						stoppedAfter[w.id] = time.Since(crashed)
					}
				}
				if time.Since(crashed) > 3*clusterTTL {
					t.Fatalf("workers still hold tasks %s after the coordinator crashed (stopped: %v)", 3*clusterTTL, stoppedAfter)
				}
				time.Sleep(50 * time.Millisecond)
			}
			var slowest time.Duration
			for id, d := range stoppedAfter {
				slowest = max(slowest, d)
				if d > clusterTTL {
					t.Errorf("worker %s stopped its tasks %s after the crash, more than the ttl %s", id, d, clusterTTL)
				}
			}
			for _, w := range ws {
				held := 0
				for _, l := range before {
					if l.holder == w.id {
						held++
					}
				}
				n, err := c.workerGauge(w, "sluice_worker_leases_lost_total")
				if err != nil {
					t.Fatal(err)
				}
				if int(n-lost[w.id]) != held {
					t.Errorf("worker %s counts %v lost leases during the outage; it held %d", w.id, n-lost[w.id], held)
				}
			}
			// The targets stop: what a stopping task drained is applied
			// within a moment, then nothing changes though the sources do.
			time.Sleep(500 * time.Millisecond)
			prints := make([]string, len(kits))
			for i, k := range kits {
				prints[i] = k.fingerprint(t)
			}
			time.Sleep(max(0, 3*clusterTTL-time.Since(crashed)))
			for i, k := range kits {
				if p := k.fingerprint(t); p != prints[i] {
					t.Errorf("target of %s changed while the coordinator was down (%s -> %s): a task kept writing without a lease", k.db, prints[i], p)
				}
			}
			failIfExited(t, ws...)

			// Back: resumption is timed from the server's first answer
			// (servers.sh goes on checking users after that).
			restarted := make(chan error, 1)
			go func() {
				out, err := o.servers("start")
				if err != nil {
					err = fmt.Errorf("%w\n%s", err, out)
				}
				restarted <- err
			}()
			back := o.waitAnswer(t, restarted)
			t.Logf("coordinator %s down for %s; tasks stopped after %v (slowest %s, ttl %s)", driver, back.Sub(crashed).Round(100*time.Millisecond), roundAll(stoppedAfter), slowest.Round(time.Millisecond), clusterTTL)
			c.waitAssigned(len(kits), 60*time.Second)
			resumed := time.Since(back)
			for task, l := range c.leases() {
				if l.epoch <= before[task].epoch {
					t.Errorf("%s runs under epoch %d after the outage, not above %d", task, l.epoch, before[task].epoch)
				}
			}
			t.Logf("every task leased and RUNNING again %s after the coordinator answered", resumed.Round(time.Millisecond))
			if err := <-restarted; err != nil {
				t.Fatalf("restarting the coordinator: %v", err)
			}
			for i, k := range kits {
				deadline := time.Now().Add(30 * time.Second)
				for k.fingerprint(t) == prints[i] {
					if time.Now().After(deadline) {
						t.Fatalf("target of %s does not move after the coordinator came back", k.db)
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			stopLoad()
			for i, k := range kits {
				k.waitEqual(t, alive)
				checks[i](t)
			}
			failIfExited(t, ws...)
		})
	}
}

func roundAll(m map[string]time.Duration) map[string]time.Duration {
	out := map[string]time.Duration{}
	for k, v := range m {
		out[k] = v.Round(time.Millisecond)
	}
	return out
}
