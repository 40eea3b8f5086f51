package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
)

// topicPublisher acknowledges every batch and records its topic, as a
// transport with topics does (runtime.TopicTracker).
type topicPublisher struct {
	ackPublisher
	topic string
	used  *runtime.TopicSet
}

func (p topicPublisher) Publish(ctx context.Context, recs []schema.Record, ack runtime.AckFunc) error {
	p.used.Add(p.topic)
	return p.ackPublisher.Publish(ctx, recs, ack)
}
func (p topicPublisher) UsedTopics() []string { return p.used.Topics() }
func (p topicPublisher) ResetUsedTopics()     { p.used.Reset() }

// GET /connectors/{name}/topics of a cluster lists the topics its tasks
// used, written by their worker to the coordinator; a reset hides them at
// once, the worker forgets its own at its next heartbeat and the topic
// comes back, written under the new count of resets, when the task uses it
// again; a paused connector keeps its topics; a deleted one leaves none.
func TestClusterTopics(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s := openTestStore(t, driver, dsn)
			c := &Control{S: s}
			build := func(ctx context.Context, cfg *plugin.Config, only string, _ storage.Lease, log *slog.Logger) (*engine.Pipeline, error) {
				pub := topicPublisher{topic: "tp-" + cfg.Name, used: &runtime.TopicSet{}}
				return &engine.Pipeline{Name: cfg.Name, Source: &tickSource{}, Publisher: pub, Log: log, SaveInterval: 50 * time.Millisecond}, nil
			}
			startBuildWorker(t, s, "a", 1500*time.Millisecond, build)
			srv := httptest.NewServer(admin.NewHandler(c, ""))
			defer srv.Close()

			doc := json.RawMessage(`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`)
			if _, err := c.Create(ctx, "tc", doc); err != nil {
				t.Fatal(err)
			}
			want := []string{"tp-tc"}
			has := func(want []string) func() bool {
				return func() bool {
					got, err := c.Topics(ctx, "tc")
					return err == nil && slices.Equal(got, want)
				}
			}
			waitUntil(t, 15*time.Second, "the task's topic listed", has(want))
			resp, err := srv.Client().Get(srv.URL + "/connectors/tc/topics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != `{"tc":{"topics":["tp-tc"]}}`+"\n" {
				t.Fatalf("GET topics: %d %s", resp.StatusCode, body)
			}

			if err := c.ResetTopics(ctx, "tc"); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Topics(ctx, "tc"); err != nil || len(got) != 0 {
				t.Fatalf("topics right after the reset: %v %v, want none", got, err)
			}
			waitUntil(t, 15*time.Second, "the topic used again listed again", has(want))
			var resets int64
			if err := s.db.QueryRow(s.q("SELECT resets FROM "+s.Table("topics")+" WHERE connector = ? AND topic = ?"), "tc", "tp-tc").Scan(&resets); err != nil || resets != 1 {
				t.Fatalf("the topic's row: resets %d (%v), want 1: written after the reset", resets, err)
			}

			if err := c.Pause(ctx, "tc"); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, 15*time.Second, "the task PAUSED", func() bool {
				st, err := c.Status(ctx, "tc")
				return err == nil && len(st.Tasks) == 1 && st.Tasks[0].State == "PAUSED"
			})
			if !has(want)() {
				t.Fatal("a paused connector lost its topics")
			}
			if err := c.Delete(ctx, "tc"); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Topics(ctx, "tc"); !errors.Is(err, admin.ErrNotFound) {
				t.Fatalf("topics of a deleted connector: %v, want ErrNotFound", err)
			}
			var rows int
			if err := s.db.QueryRow(s.q("SELECT COUNT(*) FROM "+s.Table("topics")+" WHERE connector = ?"), "tc").Scan(&rows); err != nil || rows != 0 {
				t.Fatalf("%d topic rows of the deleted connector remain (%v)", rows, err)
			}
		})
	}
}
