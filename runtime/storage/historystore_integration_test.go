package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/sluicecdc/sluice/runtime"
	"math/rand/v2"
	"strings"
	"testing"
)

// The schema history in a database: rows come back in order, a second
// store of the pipeline continues the numbering, and every append is
// fenced by the lease in the same statement: refused (fatal, matching
// ErrFenced, naming the task) once the lease row's holder or epoch changed
// or it expired, and a refused batch adds nothing.
func TestSQLHistoryRoundTripAndFence(t *testing.T) {
	for driver, dsn := range sqlStoreTargets(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			db, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			n := rand.Uint32()
			table, leases := fmt.Sprintf("sluice_history_it_%d", n), fmt.Sprintf("sluice_leases_it_%d", n)
			t.Cleanup(func() { db.Exec("DROP TABLE " + table); db.Exec("DROP TABLE " + leases) })
			mustExec := func(q string, args ...any) {
				t.Helper()
				if driver == "postgres" {
					for i := 1; strings.Contains(q, "?"); i++ {
						q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
					}
				}
				if _, err := db.ExecContext(ctx, q, args...); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			mustExec("CREATE TABLE " + leases + " (task VARCHAR(255) PRIMARY KEY, holder VARCHAR(255) NOT NULL, epoch BIGINT NOT NULL, expires_at TIMESTAMP(6) NOT NULL)")
			mustExec("INSERT INTO "+leases+" VALUES (?, 'w1', 3, CURRENT_TIMESTAMP(6) + INTERVAL '1' HOUR)", "p/source")
			lease := Lease{Table: leases, Task: "p/source", Holder: "w1", Epoch: 3}

			h, err := NewSQLHistory(ctx, db, driver, table, "p", lease)
			if err != nil {
				t.Fatal(err)
			}
			if rows, err := h.Load(ctx); err != nil || len(rows) != 0 {
				t.Fatalf("fresh Load = %v, %v", rows, err)
			}
			if err := h.Append(ctx, HistoryRow{Position: "f.1:4", Entry: []byte(`{"a":1}`)}, HistoryRow{Position: "f.1:4", Entry: []byte(`{"a":2}`)}); err != nil {
				t.Fatal(err)
			}
			// another pipeline's rows in the same table stay apart
			other, err := NewSQLHistory(ctx, db, driver, table, "q", Lease{})
			if err != nil {
				t.Fatal(err)
			}
			if err := other.Append(ctx, HistoryRow{Position: "x", Entry: []byte(`{"q":1}`)}); err != nil {
				t.Fatalf("unfenced append: %v", err)
			}
			// a restarted task: a new store reads the rows and numbers on
			h2, err := NewSQLHistory(ctx, db, driver, table, "p", lease)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := h2.Load(ctx)
			if err != nil || len(rows) != 2 || string(rows[0].Entry) != `{"a":1}` || string(rows[1].Entry) != `{"a":2}` || rows[1].Seq != 2 || rows[0].Position != "f.1:4" {
				t.Fatalf("Load = %+v, %v", rows, err)
			}
			if err := h2.Append(ctx, HistoryRow{Position: "f.1:9", Entry: []byte(`{"a":3}`)}); err != nil {
				t.Fatal(err)
			}
			entries := func() string {
				t.Helper()
				rows, err := h2.Load(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var s []string
				for _, r := range rows {
					s = append(s, fmt.Sprintf("%d:%s", r.Seq, r.Entry))
				}
				return strings.Join(s, " ")
			}
			const want = `1:{"a":1} 2:{"a":2} 3:{"a":3}`
			if got := entries(); got != want {
				t.Fatalf("entries %s, want %s", got, want)
			}

			// a retry of an append that committed (its answer lost) is done;
			// another writer's rows at the same numbers are fatal
			stale, err := NewSQLHistory(ctx, db, driver, table, "p", lease)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := stale.Load(ctx); err != nil {
				t.Fatal(err)
			}
			if err := h2.Append(ctx, HistoryRow{Position: "f.1:10", Entry: []byte(`{"a":"x"}`)}); err != nil {
				t.Fatal(err)
			}
			if err := stale.Append(ctx, HistoryRow{Position: "f.1:10", Entry: []byte(`{"a":"x"}`)}); err != nil {
				t.Fatalf("the same rows again: %v", err)
			}
			if err := stale.Append(ctx, HistoryRow{Position: "f.1:11", Entry: []byte(`{"a":"y"}`)}); err != nil {
				t.Fatalf("after the retried rows: %v", err)
			}
			if err := h2.Append(ctx, HistoryRow{Position: "f.1:11", Entry: []byte(`{"a":"z"}`)}); !runtime.IsFatal(err) || !strings.Contains(err.Error(), "another writer's entry at seq 5") {
				t.Fatalf("a second writer's append: %v, want fatal naming seq 5", err)
			}
			if _, err := db.ExecContext(ctx, "DELETE FROM "+table+" WHERE seq > 3"); err != nil {
				t.Fatal(err)
			}
			if _, err := h2.Load(ctx); err != nil {
				t.Fatal(err)
			}

			refused := func(how, why string) {
				t.Helper()
				err := h2.Append(ctx, HistoryRow{Position: "f.1:20", Entry: []byte(`{"a":4}`)}, HistoryRow{Position: "f.1:21", Entry: []byte(`{"a":5}`)})
				if !errors.Is(err, ErrFenced) || !runtime.IsFatal(err) || !strings.Contains(err.Error(), "task p/source") ||
					!strings.Contains(err.Error(), "stop this worker; the new holder continues") || !strings.Contains(err.Error(), why) {
					t.Fatalf("%s: append = %v, want a fatal ErrFenced naming the task and %q", how, err, why)
				}
				if got := entries(); got != want {
					t.Fatalf("%s: a refused append wrote: %s", how, got)
				}
			}
			mustExec("UPDATE "+leases+" SET holder = 'w2', epoch = 4 WHERE task = ?", "p/source")
			refused("another holder", "worker w2 holds it at epoch 4")
			mustExec("UPDATE "+leases+" SET holder = 'w1', epoch = 4 WHERE task = ?", "p/source")
			refused("a later epoch of the same worker", "epoch 4")
			mustExec("UPDATE "+leases+" SET epoch = 3, expires_at = CURRENT_TIMESTAMP(6) - INTERVAL '1' SECOND WHERE task = ?", "p/source")
			refused("expired", "expired")
			mustExec("DELETE FROM "+leases+" WHERE task = ?", "p/source")
			refused("no lease row", "gone")
			// the holder renewed in time: appends go on
			mustExec("INSERT INTO "+leases+" VALUES (?, 'w1', 3, CURRENT_TIMESTAMP(6) + INTERVAL '1' HOUR)", "p/source")
			if err := h2.Append(ctx, HistoryRow{Position: "f.1:20", Entry: []byte(`{"a":4}`)}); err != nil {
				t.Fatalf("append under the current lease: %v", err)
			}
		})
	}
}
