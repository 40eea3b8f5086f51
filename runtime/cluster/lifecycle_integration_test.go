package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/storage"
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
			task := storage.TaskName("gone", "source")
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

// openRecorder is a tickSource that records the position each Open gets.
type openRecorder struct {
	tickSource
	opened chan<- string
}

func (s *openRecorder) Open(_ context.Context, pos []byte) error {
	s.opened <- string(pos)
	return nil
}

// A connector deleted and created again under its name resumes from the
// position its last task saved (docs/cluster.md: the positions row outlives the
// connector, as Kafka Connect's offsets do); one that was paused and had
// its offsets reset (DELETE .../offsets) before the delete starts afresh.
func TestRecreatedConnectorResumes(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s := openTestStore(t, driver, dsn)
			c := &Control{S: s}
			opened := make(chan string, 16)
			build := func(ctx context.Context, cfg *plugin.Config, only string, _ storage.Lease, log *slog.Logger) (*engine.Pipeline, error) {
				return &engine.Pipeline{Name: cfg.Name, Source: &openRecorder{opened: opened}, Publisher: ackPublisher{}, Log: log, SaveInterval: 50 * time.Millisecond}, nil
			}
			ttl := 1500 * time.Millisecond
			w, err := NewWorker(s, Config{ID: "a", TTL: ttl, Heartbeat: ttl / 4, Build: build, Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = w.Run(wctx) }()
			t.Cleanup(func() { cancel(); <-done })
			doc := json.RawMessage(`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`)
			next := func(what string) string {
				t.Helper()
				select {
				case p := <-opened:
					return p
				case <-time.After(15 * time.Second):
					t.Fatalf("%s: the source was not opened", what)
				}
				return ""
			}
			saved := func() string {
				p, err := c.Offset(ctx, "again")
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			released := func() {
				waitUntil(t, 10*time.Second, "the lease released", func() bool {
					ls, err := s.Leases(ctx)
					return err == nil && !ls[storage.TaskName("again", "source")].Live
				})
			}
			if _, err := c.Create(ctx, "again", doc); err != nil {
				t.Fatal(err)
			}
			if p := next("first run"); p != "" {
				t.Fatalf("a new connector opened at %q", p)
			}
			waitUntil(t, 10*time.Second, "a position saved", func() bool { return saved() != "" })
			if err := c.Delete(ctx, "again"); err != nil {
				t.Fatal(err)
			}
			released()
			var stored string
			if err := s.db.QueryRow(s.q("SELECT position FROM "+s.Table("positions")+" WHERE pipeline = ?"), "again").Scan(&stored); err != nil {
				t.Fatal(err)
			}
			last := string(engine.SourcePosition([]byte(stored)))
			if _, err := c.Create(ctx, "again", doc); err != nil {
				t.Fatal(err)
			}
			if p := next("created again"); p == "" || p != last {
				t.Fatalf("created again: opened at %q, want the saved %q", p, last)
			}
			// Paused, offsets reset, deleted, created again: from the start.
			if err := c.Pause(ctx, "again"); err != nil {
				t.Fatal(err)
			}
			released()
			if err := c.SetOffset(ctx, "again", ""); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete(ctx, "again"); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Create(ctx, "again", doc); err != nil {
				t.Fatal(err)
			}
			if p := next("reset, created again"); p != "" {
				t.Fatalf("after an offsets reset: opened at %q, want the configured start", p)
			}
		})
	}
}

// PUT /connectors/{name}/stop on a cluster (Kafka Connect's STOPPED, the
// state in which it lets offsets be changed): before, 405; now the task is
// drained and released, connector and task show STOPPED, the position can
// be reset, and resume runs it again from the configured start.
func TestStopAndResume(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s := openTestStore(t, driver, dsn)
			c := &Control{S: s}
			var _ admin.Stopper = c
			startWorker(t, s, "a", 1500*time.Millisecond)
			doc := json.RawMessage(`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`)
			if _, err := c.Create(ctx, "st", doc); err != nil {
				t.Fatal(err)
			}
			state := func(want string) func() bool {
				return func() bool {
					st, err := c.Status(ctx, "st")
					return err == nil && st.Connector.State == want && len(st.Tasks) == 1 && st.Tasks[0].State == want
				}
			}
			waitUntil(t, 15*time.Second, "RUNNING", state("RUNNING"))
			waitUntil(t, 10*time.Second, "a position saved", func() bool { p, _ := c.Offset(ctx, "st"); return p != "" })
			if err := c.SetOffset(ctx, "st", ""); !errors.Is(err, admin.ErrState) {
				t.Fatalf("offsets reset while running: %v, want ErrState", err)
			}
			if err := c.Stop(ctx, "st"); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 10*time.Second, "STOPPED", state("STOPPED"))
			if ls, _ := s.Leases(ctx); ls[storage.TaskName("st", "source")].Live {
				t.Fatal("a STOPPED task's lease is live")
			}
			if err := c.SetOffset(ctx, "st", ""); err != nil {
				t.Fatalf("offsets reset while stopped: %v", err)
			}
			if p, _ := c.Offset(ctx, "st"); p != "" {
				t.Fatalf("position %q after the reset", p)
			}
			if err := c.Stop(ctx, "nope"); !errors.Is(err, admin.ErrNotFound) {
				t.Errorf("stop of a missing connector: %v", err)
			}
			if err := c.Resume(ctx, "st"); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 15*time.Second, "RUNNING again", state("RUNNING"))
		})
	}
}

// PUT .../config with the document already stored (a config read and put
// back, a deployment tool applying its files again) answers 200 without a
// new version, and the running task goes on under its lease (before, every
// such PUT raised the version and the holder drained and restarted the
// task); a changed document still raises it and restarts the task.
func TestPutSameConfigKeepsTasks(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s := openTestStore(t, driver, dsn)
			c := &Control{S: s}
			startWorker(t, s, "a", 1500*time.Millisecond)
			doc := json.RawMessage(`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`)
			if _, err := c.Create(ctx, "same", doc); err != nil {
				t.Fatal(err)
			}
			running := func() admin.TaskState {
				var ts admin.TaskState
				waitUntil(t, 15*time.Second, "RUNNING", func() bool {
					st, err := c.Status(ctx, "same")
					if err != nil || len(st.Tasks) != 1 {
						return false
					}
					ts = st.Tasks[0]
					return ts.State == "RUNNING"
				})
				return ts
			}
			before := running()
			// The same document, spaced and ordered differently.
			in, created, err := c.PutConfig(ctx, "same", json.RawMessage(`{ "transport": {"type": "embedded"}, "sink": {"type": "postgres"}, "source": {"type": "mysql"} }`))
			if err != nil || created || in.Version != 1 {
				t.Fatalf("PUT of the same config: version %d, created %v, %v; want version 1", in.Version, created, err)
			}
			time.Sleep(1500 * time.Millisecond) // a ttl: several heartbeats of the holder
			if after := running(); after.Epoch != before.Epoch || after.Generation != 1 {
				t.Fatalf("the task restarted: epoch %d -> %d, generation %d", before.Epoch, after.Epoch, after.Generation)
			}
			in, _, err = c.PutConfig(ctx, "same", json.RawMessage(`{"source":{"type":"mysql","server_id":7},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`))
			if err != nil || in.Version != 2 {
				t.Fatalf("PUT of a changed config: version %d, %v", in.Version, err)
			}
			waitUntil(t, 15*time.Second, "the task on generation 2", func() bool {
				st, err := c.Status(ctx, "same")
				return err == nil && st.Tasks[0].State == "RUNNING" && st.Tasks[0].Generation == 2 && st.Tasks[0].Epoch > before.Epoch
			})
		})
	}
}
