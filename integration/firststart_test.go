package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/engine"
)

// Issue 28, problem 1: a first run stopped right after it reports RUNNING,
// before any change or heartbeat, must resume where it began: a row written
// while it is down reaches the target at the next start. Before, the start
// position was saved only with the first committed record, so the next
// start began at the server's then current position and skipped the row.
// The position (for a snapshot: its epoch and first table) is on disk the
// moment RUNNING shows. Real MariaDB and PostgreSQL, embedded transport.
func TestStopRightAfterRunningResumesWithoutGap(t *testing.T) {
	for _, mode := range []string{"never", "initial"} {
		t.Run(mode, func(t *testing.T) {
			k := newKit(t, pair{transport: "embedded", target: "postgres"}, "first_"+mode)
			k.createTable(t, "t", "id INT PRIMARY KEY, v INT")
			mustExec(t, k.src, "INSERT INTO "+k.db+".t VALUES (10, 10)")
			cfg := k.config(t)
			if mode != "never" {
				editConfig(t, cfg, "  snapshot: never\n", "  snapshot: "+mode+"\n")
			}
			posFile := filepath.Join(filepath.Dir(cfg), "positions", k.db+".position")

			r := startPipeline(t, cfg)
			waitRunning(t, r)
			saved, err := os.ReadFile(posFile)
			if err != nil {
				t.Errorf("RUNNING without a saved start position: %v", err)
			} else if !strings.Contains(string(saved), `"epoch":`) || (mode == "initial") != strings.Contains(string(saved), `"snapshot":`) {
				t.Errorf("start position %s: want its epoch, and a snapshot block under snapshot: initial", saved)
			}
			r.stop(t)

			mustExec(t, k.src, "INSERT INTO "+k.db+".t VALUES (1, 1)")
			r = startPipeline(t, cfg)
			defer r.stop(t)
			k.waitCanary(t, r)
			want := "SELECT count(*) FROM " + k.targetTable("t") + " WHERE id = 1"
			if mode == "initial" {
				want = "SELECT count(*) FROM " + k.targetTable("t") + " WHERE id IN (1, 10)"
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				var n int
				if err := k.dst.QueryRow(want).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n == 1 && mode == "never" || n == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the row written while the pipeline was down never reached the target (%s: %d)", want, n)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// waitRunning waits for the pipeline to report RUNNING and returns at once.
func waitRunning(t *testing.T, r *running) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for r.p.Status().State != engine.StateRunning {
		r.failIfStopped(t)
		if time.Now().After(deadline) {
			t.Fatalf("not RUNNING after 60s: %+v", r.p.Status())
		}
		time.Sleep(time.Millisecond)
	}
}
