package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
)

// brokenSource fails at its first read, for good.
type brokenSource struct{ tickSource }

func (*brokenSource) Read(context.Context) ([]schema.Record, error) {
	return nil, schema.Fatal(errors.New("boom: the source broke"))
}

// statusBody is GET path's JSON object.
func statusBody(t *testing.T, srv *httptest.Server, path string) map[string]any {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return m
}

// task0 is the first entry of a status body's tasks.
func task0(m map[string]any) map[string]any {
	ts, _ := m["tasks"].([]any)
	if len(ts) == 0 {
		return nil
	}
	t, _ := ts[0].(map[string]any)
	return t
}

// GET /connectors/{name}/status of a cluster says what `sluice run`'s
// says of the same pipeline: every member of run's body (counters,
// position, lag, in-flight) is in the task's entry and, for a connector of
// one task, at the top level where run has it; a failed task carries its
// last_error beside Kafka Connect's trace.
func TestClusterStatusAsRichAsRun(t *testing.T) {
	discard := slog.New(slog.DiscardHandler)
	rw := engine.NewWorker(discard)
	fs, err := storage.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rw.Add("run", fs, func(ctx context.Context) (*engine.Pipeline, error) {
		p, err := fakeBuild(ctx, &plugin.Config{Name: "run"}, "", storage.Lease{}, discard)
		p.Positions = fs
		return p, err
	})
	if err := rw.Start(context.Background(), "run"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rw.StopAll(context.Background()) })
	local := httptest.NewServer(admin.NewHandler(&admin.Local{W: rw}, ""))
	defer local.Close()
	var run map[string]any
	waitUntil(t, 10*time.Second, "sluice run's status with records read and a position", func() bool {
		run = statusBody(t, local, "/connectors/run/status")
		n, _ := run["records_read"].(float64)
		pos, _ := run["position"].(string)
		return n > 0 && pos != ""
	})

	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s := openTestStore(t, driver, dsn)
			c := &Control{S: s}
			startBuildWorker(t, s, "a", 1500*time.Millisecond, func(ctx context.Context, cfg *plugin.Config, only string, l storage.Lease, log *slog.Logger) (*engine.Pipeline, error) {
				if cfg.Name == "bad" {
					return &engine.Pipeline{Name: cfg.Name, Source: &brokenSource{}, Publisher: ackPublisher{}, Log: log}, nil
				}
				return fakeBuild(ctx, cfg, only, l, log)
			})
			srv := httptest.NewServer(admin.NewHandler(c, ""))
			defer srv.Close()
			doc := json.RawMessage(`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`)
			for _, name := range []string{"ok", "bad"} {
				if _, err := c.Create(ctx, name, doc); err != nil {
					t.Fatal(err)
				}
			}

			var ok map[string]any
			waitUntil(t, 15*time.Second, "the cluster's status with records read and a position", func() bool {
				ok = statusBody(t, srv, "/connectors/ok/status")
				n, _ := ok["records_read"].(float64)
				tn, _ := task0(ok)["records_read"].(float64)
				pos, _ := task0(ok)["position"].(string)
				return n > 0 && tn > 0 && pos != ""
			})
			for k := range run {
				if _, has := ok[k]; !has {
					t.Errorf("the cluster's status lacks %q at the top level: %v", k, ok)
				}
				if _, has := task0(ok)[k]; !has && k != "connector" && k != "tasks" && k != "type" {
					t.Errorf("the cluster's task entry lacks %q: %v", k, task0(ok))
				}
			}
			if pos, _ := task0(ok)["position"].(string); !strings.HasPrefix(pos, "pos-") || ok["position"] != pos {
				t.Errorf("the task's position %q", pos)
			}
			if task0(ok)["worker_id"] != "a" || ok["name"] != "ok" {
				t.Errorf("Kafka Connect's members: %v", ok)
			}

			waitUntil(t, 15*time.Second, "the failed task with its last_error", func() bool {
				bad := statusBody(t, srv, "/connectors/bad/status")
				tb := task0(bad)
				e, _ := tb["last_error"].(string)
				top, _ := bad["last_error"].(string)
				trace, _ := tb["trace"].(string)
				return tb["state"] == "FAILED" && strings.Contains(e, "boom") && strings.Contains(top, "boom") && strings.Contains(trace, "boom")
			})
		})
	}
}

// A status table of an earlier release (no detail column) gets the column
// when a worker opens the coordinator, also when two open it together.
func TestStatusTableGetsDetail(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			s := openTestStore(t, driver, dsn)
			ctx := context.Background()
			ts := "TIMESTAMPTZ(6)"
			if driver == "mysql" {
				ts = "TIMESTAMP(6)"
			}
			status := s.Table("status")
			for _, q := range []string{"DROP TABLE " + status,
				"CREATE TABLE " + status + " (task VARCHAR(255) PRIMARY KEY, connector VARCHAR(255) NOT NULL, worker VARCHAR(255) NOT NULL, state VARCHAR(32) NOT NULL, epoch BIGINT NOT NULL, generation BIGINT NOT NULL, trace TEXT, updated_at " + ts + " NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"} {
				if _, err := s.db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			errs := make(chan error, 2)
			for range 2 {
				go func() {
					o, err := Open(ctx, driver, dsn, s.prefix)
					if err == nil {
						o.Close()
					}
					errs <- err
				}()
			}
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			var n int
			if err := s.db.QueryRowContext(ctx, "SELECT COUNT(detail) FROM "+status).Scan(&n); err != nil {
				t.Fatalf("the detail column after Open: %v", err)
			}
		})
	}
}
