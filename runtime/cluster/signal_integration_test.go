package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// Control.Signal hands a signal to Signals with the stored connector's
// config; an unknown connector is ErrNotFound, a signal Signals refuses
// for its config ErrInvalid (400), and a Control without Signals answers
// ErrReadOnly (405).
func TestControlSignal(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "postgres", coordinators(t)["postgres"])
	var got []string
	c := &Control{S: s, Signals: func(_ context.Context, cfg *plugin.Config, id, typ, data string) (string, error) {
		if typ == "bad" {
			return "", fmt.Errorf("refused: %w", schema.ErrConfig)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s %s", cfg.Name, cfg.Source.Type, id, typ, data))
		return "id-1", nil
	}}
	if _, err := c.Create(ctx, "k", json.RawMessage(`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`)); err != nil {
		t.Fatal(err)
	}
	if id, err := c.Signal(ctx, "k", "x", "pause-snapshot", ""); err != nil || id != "id-1" {
		t.Fatalf("Signal: %q, %v", id, err)
	}
	if len(got) != 1 || got[0] != "k mysql x pause-snapshot " {
		t.Fatalf("Signals got %q", got)
	}
	if _, err := c.Signal(ctx, "nope", "", "pause-snapshot", ""); !errors.Is(err, admin.ErrNotFound) {
		t.Errorf("an unknown connector: %v, want ErrNotFound", err)
	}
	if _, err := c.Signal(ctx, "k", "", "bad", ""); !errors.Is(err, admin.ErrInvalid) {
		t.Errorf("a refused signal: %v, want ErrInvalid", err)
	}
	if _, err := (&Control{S: s}).Signal(ctx, "k", "", "pause-snapshot", ""); !errors.Is(err, admin.ErrReadOnly) {
		t.Errorf("no Signals: %v, want ErrReadOnly", err)
	}
}

// replicatorPos is the position createReplicator saves for "r".
const replicatorPos = `{"rocketmq_replicator":1,"next":{}}`

// createReplicator stores, through c, a replicator connector "r" with the
// position replicatorPos and a MySQL-to-PostgreSQL connector "k".
func createReplicator(t *testing.T, c *Control) {
	t.Helper()
	ctx := context.Background()
	for name, doc := range map[string]string{
		"r": `{"source":{"type":"rocketmq","name_servers":["127.0.0.1:1"],"topics":["t"]},"transport":{"type":"rocketmq","name_servers":["127.0.0.1:2"]}}`,
		"k": `{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`,
	} {
		if _, err := c.Create(ctx, name, json.RawMessage(doc)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.S.db.ExecContext(ctx, c.S.q("INSERT INTO "+c.S.Table("positions")+" (pipeline, position, epoch) VALUES (?, ?, 0)"), "r", replicatorPos); err != nil {
		t.Fatal(err)
	}
}

// TestControlGroups: GET and POST .../groups in a cluster hand the
// connector's config and the position the coordinator keeps to GroupsOf,
// from any worker; a source without groups is ErrInvalid, an unknown
// connector ErrNotFound, a Control without GroupsOf ErrReadOnly.
func TestControlGroups(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "postgres", schematest.NeedServers(t, "SLUICE_PG_DSN")[0])
	var got []string
	c := &Control{S: s, GroupsOf: func(_ context.Context, cfg *plugin.Config, pos []byte, apply bool) (any, error) {
		if cfg.Source.Type != "rocketmq" {
			return nil, fmt.Errorf("%s: %w", cfg.Name, engine.ErrNoGroups)
		}
		got = append(got, fmt.Sprintf("%s %s %v", cfg.Name, pos, apply))
		return []string{"g"}, nil
	}}
	createReplicator(t, c)
	for _, apply := range []bool{false, true} {
		if sts, err := c.Groups(ctx, "r", apply); err != nil || fmt.Sprint(sts) != "[g]" {
			t.Fatalf("Groups(r, %v): %v, %v", apply, sts, err)
		}
	}
	pos := replicatorPos
	if want := []string{"r " + pos + " false", "r " + pos + " true"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("GroupsOf got %q, want %q", got, want)
	}
	if _, err := c.Groups(ctx, "k", false); !errors.Is(err, admin.ErrInvalid) {
		t.Errorf("a source without groups: %v, want ErrInvalid", err)
	}
	if _, err := c.Groups(ctx, "nope", false); !errors.Is(err, admin.ErrNotFound) {
		t.Errorf("an unknown connector: %v, want ErrNotFound", err)
	}
	if _, err := (&Control{S: s}).Groups(ctx, "r", false); !errors.Is(err, admin.ErrReadOnly) {
		t.Errorf("no GroupsOf: %v, want ErrReadOnly", err)
	}
}

// TestControlSwitchover: POST .../groups/switchover in a cluster hands
// the connector's config, the groups and the timeout to SwitchOf with a
// load that reads the position the coordinator keeps afresh each time
// (the task saving it may run on another worker); its timeout reaches
// the REST answer as 504, a source without groups is 400, an unknown
// connector 404, and a Control without SwitchOf answers 405.
func TestControlSwitchover(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "postgres", schematest.NeedServers(t, "SLUICE_PG_DSN")[0])
	savePos := func(pos string) {
		t.Helper()
		if _, err := s.db.ExecContext(ctx, s.q("UPDATE "+s.Table("positions")+" SET position = ? WHERE pipeline = ?"), pos, "r"); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	c := &Control{S: s, SwitchOf: func(ctx context.Context, cfg *plugin.Config, load func(context.Context) ([]byte, error), groups []string, timeout time.Duration) (any, error) {
		if cfg.Source.Type != "rocketmq" {
			return nil, fmt.Errorf("%s: %w", cfg.Name, engine.ErrNoGroups)
		}
		before, err := load(ctx)
		if err != nil {
			return nil, err
		}
		savePos(`{"rocketmq_replicator":1,"next":{"t/b/0":7}}`) // the task saves on elsewhere
		after, err := load(ctx)
		if err != nil {
			return nil, err
		}
		got = append(got, fmt.Sprintf("%s %v %s %s -> %s", cfg.Name, groups, timeout, before, after))
		if timeout < time.Second {
			return nil, fmt.Errorf("after %s: %w: t/b/0: 3 left: %w", timeout, errors.New("not drained"), context.DeadlineExceeded)
		}
		return map[string]bool{"drained": true}, nil
	}}
	createReplicator(t, c)
	pos := replicatorPos
	srv := httptest.NewServer(admin.NewHandler(c, ""))
	defer srv.Close()
	post := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("/connectors/r/groups/switchover?group=g1&group=g2&timeout=5s"); code != http.StatusOK || !strings.Contains(body, `"drained":true`) {
		t.Fatalf("switchover: %d %s", code, body)
	}
	if want := `r [g1 g2] 5s ` + pos + ` -> {"rocketmq_replicator":1,"next":{"t/b/0":7}}`; len(got) != 1 || got[0] != want {
		t.Fatalf("SwitchOf got %q, want %q", got, want)
	}
	savePos(pos)
	if code, body := post("/connectors/r/groups/switchover?timeout=10ms"); code != http.StatusGatewayTimeout || !strings.Contains(body, "not drained") {
		t.Errorf("a switchover past its timeout: %d %s, want 504", code, body)
	}
	if code, body := post("/connectors/k/groups/switchover"); code != http.StatusBadRequest {
		t.Errorf("a source without groups: %d %s, want 400", code, body)
	}
	if code, body := post("/connectors/nope/groups/switchover"); code != http.StatusNotFound {
		t.Errorf("an unknown connector: %d %s, want 404", code, body)
	}
	if _, err := (&Control{S: s}).Switchover(ctx, "r", nil, time.Second); !errors.Is(err, admin.ErrReadOnly) {
		t.Errorf("no SwitchOf: %v, want ErrReadOnly", err)
	}
}
