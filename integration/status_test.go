package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/cmd/sluice/app"
	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
)

// TestStatusCaughtUpLagAndBacklog runs a pipeline against the real MariaDB
// and reads its status as an operator would: after the snapshot it is
// caught up (nothing behind the server's position, read = applied, lag 0)
// and stays so while idle; paused while the source is written to, it shows
// the transactions and bytes it is behind and a growing lag; resumed, it
// catches up again. The REST body and /metrics carry the same fields.
func TestStatusCaughtUpLagAndBacklog(t *testing.T) {
	onEachTransport(t, func(t *testing.T, transport string, e env) {
		db, my, _ := sourceAndTarget(t, e, "st_"+transport[:3])
		const snapRows = 1500
		for i := 0; i < snapRows; i += 500 {
			var vals []string
			for j := i; j < i+500; j++ {
				vals = append(vals, fmt.Sprintf("(%d, 'c', 1.5, 'new', NOW(6))", j))
			}
			mustExec(t, my, "INSERT INTO "+db+".orders (id, customer, amount, status, updated_at) VALUES "+strings.Join(vals, ","))
		}
		path := writeConfig(t, e, db, transport)
		editConfig(t, path, "  snapshot: never\n", "  heartbeat: 1s\n  snapshot: initial\n  snapshot_chunk: 100\n")
		cfg, err := plugin.LoadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		w := engine.NewWorker(log)
		w.Add(cfg.Name, nil, func(ctx context.Context) (*engine.Pipeline, error) { return app.Build(ctx, cfg, "", log) })
		if err := w.Start(context.Background(), cfg.Name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.StopAll(context.Background()) })

		status := func() engine.TaskStatus {
			t.Helper()
			st, err := w.Status(cfg.Name)
			if err != nil {
				t.Fatal(err)
			}
			if st.State == engine.StateFailed {
				t.Fatalf("pipeline failed: %s", st.LastError)
			}
			return st
		}
		caughtUp := func(st engine.TaskStatus) bool {
			return st.CaughtUp != nil && *st.CaughtUp && st.BehindBytes != nil && *st.BehindBytes == 0 &&
				st.BehindTransactions != nil && *st.BehindTransactions == 0 && st.RecordsRead == st.RecordsApplied && st.InFlight == 0
		}
		waitFor := func(what string, ok func(engine.TaskStatus) bool) engine.TaskStatus {
			t.Helper()
			deadline := time.Now().Add(90 * time.Second)
			var st engine.TaskStatus
			for time.Now().Before(deadline) {
				if st = status(); ok(st) {
					t.Logf("%s after %s", what, time.Until(deadline.Add(-90*time.Second)).Abs().Round(time.Millisecond))
					return st
				}
				if os.Getenv("SLUICE_TEST_STATUS_TRACE") != "" {
					b, _ := json.Marshal(st)
					t.Logf("%s: %s", what, b)
				}
				time.Sleep(200 * time.Millisecond)
			}
			b, _ := json.Marshal(st)
			t.Fatalf("%s: never; last status %s", what, b)
			return st
		}

		st := waitFor("caught up after the snapshot", func(st engine.TaskStatus) bool {
			return caughtUp(st) && st.RecordsApplied >= snapRows
		})
		if s := st.Snapshot; s == nil || s.Running || s.Rows != snapRows || s.Tables != 2 || s.TablesDone != 2 || s.ETASeconds != nil {
			t.Errorf("snapshot status after the snapshot: %+v", s)
		}
		if st.LagSeconds != 0 {
			t.Errorf("caught up with lag %v", st.LagSeconds)
		}
		// Idle for several heartbeats: still caught up (the shared server
		// may log other databases' transactions meanwhile, which the source
		// must read past: wait for each sample to settle).
		for i := 0; i < 4; i++ {
			time.Sleep(time.Second)
			st := waitFor("caught up while idle", caughtUp)
			if st.LagSeconds != 0 {
				t.Errorf("idle: lag %v", st.LagSeconds)
			}
		}

		// Paused while the source is written to: behind, lag growing.
		if err := w.Pause(cfg.Name); err != nil {
			t.Fatal(err)
		}
		// A Read already waiting on the stream when the pause came returns
		// once more: give it a transaction of its own, so that every one
		// written after it stays unread.
		mustExec(t, my, fmt.Sprintf("INSERT INTO %s.orders (id, customer, amount, status, updated_at) VALUES (%d, 'p', 2, 'new', NOW(6))", db, 99999))
		time.Sleep(time.Second)
		const txs = 5
		for i := 0; i < txs; i++ {
			mustExec(t, my, fmt.Sprintf("INSERT INTO %s.orders (id, customer, amount, status, updated_at) VALUES (%d, 'p', 2, 'new', NOW(6))", db, 100000+i))
		}
		time.Sleep(2 * time.Second)
		st = waitFor("behind while paused", func(st engine.TaskStatus) bool {
			return st.CaughtUp != nil && !*st.CaughtUp && st.BehindTransactions != nil && *st.BehindTransactions >= txs &&
				st.BehindBytes != nil && *st.BehindBytes > 0
		})
		if st.LagSeconds < 1.5 {
			t.Errorf("paused for 2s behind the source, lag %v", st.LagSeconds)
		}
		rec := httpGet(t, w, "/connectors/"+cfg.Name+"/status")
		for _, field := range []string{`"caught_up":false`, `"behind_bytes":`, `"behind_transactions":`, `"lag_seconds":`, `"snapshot":{"running":false`,
			`"connector":{"state":"PAUSED"`, `"tasks":[{"id":0,"role":"source_sink","state":"PAUSED"`} {
			if !strings.Contains(rec, field) {
				t.Errorf("REST status lacks %s: %s", field, rec)
			}
		}
		metrics := httpGet(t, w, "/metrics")
		for _, line := range []string{`sluice_caught_up{pipeline="` + cfg.Name + `"} 0`, `sluice_source_behind_transactions{pipeline="` + cfg.Name + `"} `,
			`sluice_source_behind_bytes{pipeline="` + cfg.Name + `"} `, `sluice_lag_seconds{pipeline="` + cfg.Name + `"} `} {
			if !strings.Contains(metrics, line) {
				t.Errorf("metrics lack %q", line)
			}
		}

		if err := w.Resume(cfg.Name); err != nil {
			t.Fatal(err)
		}
		st = waitFor("caught up after resuming", func(st engine.TaskStatus) bool {
			return caughtUp(st) && st.RecordsApplied >= snapRows+txs
		})
		if st.LagSeconds != 0 {
			t.Errorf("caught up with lag %v", st.LagSeconds)
		}
		if m := httpGet(t, w, "/metrics"); !strings.Contains(m, `sluice_caught_up{pipeline="`+cfg.Name+`"} 1`) {
			t.Errorf("metrics do not say caught up:\n%s", m)
		}
	})
}

// httpGet serves one GET from the worker's REST API.
func httpGet(t *testing.T, w *engine.Worker, path string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	admin.NewHandler(&admin.Local{W: w}, "").ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
	}
	return rec.Body.String()
}
