package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
)

// tickSource emits one record with a position every 20ms.
type tickSource struct{ n uint64 }

func (s *tickSource) Open(context.Context, []byte) error { return nil }
func (s *tickSource) Close() error                       { return nil }
func (s *tickSource) Read(ctx context.Context) ([]schema.Record, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(20 * time.Millisecond):
	}
	s.n++
	return []schema.Record{{Op: schema.OpUpdate, Table: schema.TableID{Database: "d", Table: "t"},
		Key: schema.Row{int64(1)}, After: schema.Row{int64(1), int64(s.n)},
		ID: schema.ID{Epoch: 1, Pos: s.n}, Position: fmt.Appendf(nil, "pos-%d", s.n)}}, nil
}

// ackPublisher acknowledges every batch at once.
type ackPublisher struct{}

func (ackPublisher) Publish(_ context.Context, _ []schema.Record, ack runtime.AckFunc) error {
	ack(nil)
	return nil
}
func (ackPublisher) Close(context.Context) error { return nil }

func fakeBuild(ctx context.Context, cfg *plugin.Config, only string, _ storage.Lease, log *slog.Logger) (*engine.Pipeline, error) {
	return &engine.Pipeline{Name: cfg.Name, Source: &tickSource{}, Publisher: ackPublisher{}, Positions: nil, Log: log, SaveInterval: 50 * time.Millisecond}, nil
}

func startWorker(t *testing.T, s *Store, id string, ttl time.Duration) (*Worker, context.CancelFunc, chan struct{}) {
	t.Helper()
	return startBuildWorker(t, s, id, ttl, fakeBuild)
}

// startBuildWorker runs a worker whose tasks build runs, until the test ends.
func startBuildWorker(t *testing.T, s *Store, id string, ttl time.Duration, build func(context.Context, *plugin.Config, string, storage.Lease, *slog.Logger) (*engine.Pipeline, error)) (*Worker, context.CancelFunc, chan struct{}) {
	t.Helper()
	w, err := NewWorker(s, Config{ID: id, TTL: ttl, Heartbeat: ttl / 4, Build: build, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w, cancel, done
}

func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func liveHolders(t *testing.T, s *Store) map[string]int {
	t.Helper()
	ls, err := s.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range ls {
		if l.Live {
			out[l.Holder]++
		}
	}
	return out
}

// Workers in one process over the real coordinators: tasks spread to the
// fair share; a worker cut off from the database (its handle closed) stops
// its tasks within ttl - margin of its last renewal, before the database
// lets the other take them, and the other takes them within ttl plus a
// heartbeat; a worker that leaves hands its tasks over at once; every
// position save carries the writer's epoch.
func TestWorkersShareAndFailOver(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s := openTestStore(t, driver, dsn)
			c := &Control{S: s}
			for i := range 4 {
				doc := json.RawMessage(`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`)
				if _, err := c.Create(ctx, fmt.Sprintf("k%d", i), doc); err != nil {
					t.Fatal(err)
				}
			}
			ttl := 1500 * time.Millisecond
			// Worker a has a handle of its own, to be cut off.
			sa, err := Open(ctx, driver, dsn, s.prefix)
			if err != nil {
				t.Fatal(err)
			}
			a, _, aDone := startWorker(t, sa, "a", ttl)
			b, _, _ := startWorker(t, s, "b", ttl)
			waitUntil(t, 15*time.Second, "two tasks each", func() bool {
				h := liveHolders(t, s)
				return h["a"] == 2 && h["b"] == 2
			})
			waitUntil(t, 5*time.Second, "positions saved by both", func() bool {
				var n int
				_ = s.db.QueryRow("SELECT count(*) FROM " + s.Table("positions") + " WHERE position IS NOT NULL AND epoch > 0").Scan(&n)
				return n == 4
			})
			aHeld := a.Held()
			if len(aHeld) != 2 {
				t.Fatalf("a holds %v", aHeld)
			}
			// Partition a from the database.
			cut := time.Now()
			sa.db.Close()
			waitUntil(t, ttl, "a stops its tasks before its leases expire", func() bool { return len(a.Held()) == 0 })
			stoppedAfter := time.Since(cut)
			waitUntil(t, ttl+ttl/4+time.Second, "b takes a's tasks", func() bool { return liveHolders(t, s)["b"] == 4 })
			tookAfter := time.Since(cut)
			if stoppedAfter >= tookAfter {
				t.Fatalf("a stopped after %s, b took over after %s: overlap", stoppedAfter, tookAfter)
			}
			t.Logf("partition: a stopped after %s, b held everything after %s (ttl %s)", stoppedAfter.Round(time.Millisecond), tookAfter.Round(time.Millisecond), ttl)
			if m := a.Metrics(); m.LeasesLost != 2 || m.LeaseRenewFailures == 0 {
				t.Fatalf("a's metrics %+v", m)
			}
			// Positions of a's tasks now carry b's epochs.
			waitUntil(t, 5*time.Second, "b saves a's tasks", func() bool {
				ls, _ := s.Leases(ctx)
				for task, epoch := range aHeld {
					var e int64
					_ = s.db.QueryRow(s.q("SELECT epoch FROM "+s.Table("positions")+" WHERE pipeline = ?"), connectorOf(task)).Scan(&e)
					if e <= epoch || e != ls[task].Epoch {
						return false
					}
				}
				return true
			})
			_ = aDone // a runs on, cut off, holding nothing

			// A third worker joins: b hands off down to the fair share. Then
			// it leaves: its tasks are drained and released, and b holds
			// them again sooner than a lease would expire.
			_, cancelC, cDone := startWorker(t, s, "c", ttl)
			waitUntil(t, 15*time.Second, "b and c two each", func() bool {
				h := liveHolders(t, s)
				return h["b"] == 2 && h["c"] == 2
			})
			// The excess over the new share is 2; a live count seen
			// differently for a heartbeat (c's first row not yet seen by b)
			// may add moves, at most doubling them (docs/cluster.md's bound).
			if m := b.Metrics(); m.Handoffs < 2 || m.Handoffs > 4 {
				t.Fatalf("b handed off %d tasks; the excess over the share was 2 (bound 2..4)", m.Handoffs)
			}
			left := time.Now()
			cancelC()
			<-cDone
			waitUntil(t, ttl, "b takes c's released tasks before a lease would expire", func() bool { return liveHolders(t, s)["b"] == 4 })
			t.Logf("leave: b held everything %s after c was asked to stop", time.Since(left).Round(time.Millisecond))
		})
	}
}

// A connector's pause, resume, restart, config change and delete reach
// the worker holding its task at its next heartbeat, and status shows
// where and under which lease epoch and generation it runs.
func TestWorkerFollowsConnectorChanges(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s := openTestStore(t, driver, dsn)
			c := &Control{S: s, TTL: 1500 * time.Millisecond}
			doc := json.RawMessage(`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`)
			if _, err := c.Create(ctx, "k", doc); err != nil {
				t.Fatal(err)
			}
			startWorker(t, s, "a", 1500*time.Millisecond)
			status := func() admin.TaskState {
				st, err := c.Status(ctx, "k")
				if err != nil || len(st.Tasks) != 1 {
					t.Fatalf("status %+v, %v", st, err)
				}
				return st.Tasks[0]
			}
			waitUntil(t, 10*time.Second, "running on a", func() bool {
				ts := status()
				return ts.State == "RUNNING" && ts.WorkerID == "a" && ts.Epoch == 1 && ts.Generation == 1
			})
			if err := c.Pause(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 5*time.Second, "paused and released", func() bool { ts := status(); return ts.State == "PAUSED" && ts.WorkerID == "" })
			if pos, err := c.Offset(ctx, "k"); err != nil || !strings.HasPrefix(pos, "pos-") {
				t.Fatalf("offset of the paused connector = %q, %v", pos, err)
			}
			if err := c.SetOffset(ctx, "k", "pos-set"); err != nil {
				t.Fatal(err)
			}
			if pos, _ := c.Offset(ctx, "k"); pos != "pos-set" {
				t.Fatalf("offset after set = %q", pos)
			}
			if err := c.Resume(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 5*time.Second, "running again, a new epoch", func() bool { ts := status(); return ts.State == "RUNNING" && ts.Epoch == 2 })
			if err := c.SetOffset(ctx, "k", "x"); !errors.Is(err, admin.ErrState) {
				t.Fatalf("set offset of a running connector = %v", err)
			}
			if err := c.Restart(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 5*time.Second, "restarted, a new epoch", func() bool { ts := status(); return ts.State == "RUNNING" && ts.Epoch == 3 })
			changed := json.RawMessage(strings.Replace(string(doc), `"type":"mysql"`, `"type":"mysql","server_id":9`, 1)) // an unchanged document is no new generation
			if string(changed) == string(doc) {
				t.Fatalf("the test's document %s has no source type to change", doc)
			}
			if _, _, err := c.PutConfig(ctx, "k", changed); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 5*time.Second, "the new generation runs", func() bool {
				ts := status()
				return ts.State == "RUNNING" && ts.Generation == 2 && ts.Epoch == 4
			})
			ws, err := c.Workers(ctx)
			if err != nil || len(ws) != 1 || ws[0].ID != "a" || !ws[0].Alive || len(ws[0].Tasks) != 1 || ws[0].Tasks[0] != "k/source" {
				t.Fatalf("workers %+v, %v", ws, err)
			}
			if err := c.Delete(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 5*time.Second, "the deleted connector's lease released", func() bool { return liveHolders(t, s)["a"] == 0 })
		})
	}
}

// A second live worker of the same id is refused (it would take the
// first one's leases as its own); a predecessor that died is waited out.
func TestWorkerIDMustBeUnique(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			s := openTestStore(t, driver, dsn)
			ttl := 900 * time.Millisecond
			startWorker(t, s, "same", ttl)
			waitUntil(t, 5*time.Second, "first worker registered", func() bool {
				ws, _ := (&Control{S: s, TTL: ttl}).Workers(context.Background())
				return len(ws) == 1
			})
			dup, err := NewWorker(s, Config{ID: "same", TTL: ttl, Build: fakeBuild, Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if err := dup.Run(context.Background()); !errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), "give every worker its own id") {
				t.Fatalf("second worker of the same id: %v", err)
			}
			// A dead predecessor: its row stays with an old heartbeat.
			if _, err := s.db.Exec(s.q("INSERT INTO "+s.Table("workers")+" (id, url, heartbeat_at) VALUES (?, '', "+s.later()+")"), "dead", micros(-ttl/2)); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			_, cancel, done := startWorker(t, s, "dead", ttl)
			waitUntil(t, 3*time.Second, "the successor joins once the predecessor's heartbeat aged out", func() bool {
				var live bool
				_ = s.db.QueryRow(s.q("SELECT heartbeat_at > "+s.ago()+" FROM "+s.Table("workers")+" WHERE id = ?"), micros(ttl/4), "dead").Scan(&live)
				return live
			})
			if time.Since(began) < ttl/4 {
				t.Fatalf("joined after %s, before the predecessor's heartbeat aged out", time.Since(began))
			}
			cancel()
			<-done
		})
	}
}
