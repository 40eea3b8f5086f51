package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
)

// A connector deleted while it runs: its holder stops the task and
// releases the lease, and no status row of it stays behind (before, the
// holder's tick that noticed the deletion wrote the task's status again,
// STOPPED, after Delete had removed the rows: a row that no call cleans up
// and that a connector created again under the name could show). Deleted
// and created again three times, each time RUNNING again.
func TestDeleteLeavesNoStatus(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s := openTestStore(t, driver, dsn)
			c := &Control{S: s}
			ttl := 1500 * time.Millisecond
			startWorker(t, s, "a", ttl)
			doc := json.RawMessage(`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`)
			task := runtime.TaskName("gone", "source")
			rows := func() int {
				var n int
				if err := s.db.QueryRow(s.q("SELECT COUNT(*) FROM "+s.Table("status")+" WHERE connector = ?"), "gone").Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			for round := range 3 {
				if _, err := c.Create(ctx, "gone", doc); err != nil {
					t.Fatal(err)
				}
				waitUntil(t, 15*time.Second, "the task RUNNING", func() bool {
					st, err := c.Status(ctx, "gone")
					return err == nil && len(st.Tasks) == 1 && st.Tasks[0].State == "RUNNING"
				})
				if err := c.Delete(ctx, "gone"); err != nil {
					t.Fatal(err)
				}
				waitUntil(t, 10*time.Second, "the lease released", func() bool {
					ls, err := s.Leases(ctx)
					return err == nil && !ls[task].Live
				})
				time.Sleep(3 * ttl / 4) // a few heartbeats: nothing may write it again
				if n := rows(); n != 0 {
					t.Fatalf("round %d: %d status rows of the deleted connector remain", round, n)
				}
			}
		})
	}
}
