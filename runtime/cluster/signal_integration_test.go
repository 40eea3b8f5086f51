package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/admin"
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
	c := &Control{S: s, Signals: func(_ context.Context, cfg *runtime.Config, id, typ, data string) (string, error) {
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

// TestControlGroups: GET and POST .../groups in a cluster hand the
// connector's config and the position the coordinator keeps to GroupsOf,
// from any worker; a source without groups is ErrInvalid, an unknown
// connector ErrNotFound, a Control without GroupsOf ErrReadOnly.
func TestControlGroups(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, "postgres", schematest.NeedServers(t, "SLUICE_PG_DSN")[0])
	var got []string
	c := &Control{S: s, GroupsOf: func(_ context.Context, cfg *runtime.Config, pos []byte, apply bool) (any, error) {
		if cfg.Source.Type != "rocketmq" {
			return nil, fmt.Errorf("%s: %w", cfg.Name, runtime.ErrNoGroups)
		}
		got = append(got, fmt.Sprintf("%s %s %v", cfg.Name, pos, apply))
		return []string{"g"}, nil
	}}
	for name, doc := range map[string]string{
		"r": `{"source":{"type":"rocketmq","name_servers":["127.0.0.1:1"],"topics":["t"]},"transport":{"type":"rocketmq","name_servers":["127.0.0.1:2"]}}`,
		"k": `{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`,
	} {
		if _, err := c.Create(ctx, name, json.RawMessage(doc)); err != nil {
			t.Fatal(err)
		}
	}
	const pos = `{"rocketmq_replicator":1,"next":{}}`
	if _, err := s.db.ExecContext(ctx, s.q("INSERT INTO "+s.Table("positions")+" (pipeline, position, epoch) VALUES (?, ?, 0)"), "r", pos); err != nil {
		t.Fatal(err)
	}
	for _, apply := range []bool{false, true} {
		if sts, err := c.Groups(ctx, "r", apply); err != nil || fmt.Sprint(sts) != "[g]" {
			t.Fatalf("Groups(r, %v): %v, %v", apply, sts, err)
		}
	}
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
