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
