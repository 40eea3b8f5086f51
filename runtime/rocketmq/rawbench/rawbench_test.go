package rawbench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// PipelineRoundTrip's pacing: at a rate, the Publish of record i starts no
// earlier than i/rate seconds after the first; without one, nothing waits.
func TestPublishPaced(t *testing.T) {
	recs := make([]schema.Record, 1000)
	for _, rate := range []int{0, 20000} {
		var calls []int
		var at []time.Duration
		t0 := time.Now()
		pub := publishFunc(func(_ context.Context, rs []schema.Record, _ runtime.AckFunc) error {
			calls = append(calls, len(rs))
			at = append(at, time.Since(t0))
			return nil
		})
		if err := publishPaced(context.Background(), pub, recs, rate, func(error) {}); err != nil {
			t.Fatal(err)
		}
		if len(calls) != 10 || calls[0] != 100 {
			t.Fatalf("rate %d: Publish calls of %v records, want 10 of 100", rate, calls)
		}
		if rate == 0 {
			continue
		}
		for k, d := range at {
			if due := time.Duration(k*100) * time.Second / time.Duration(rate); d < due {
				t.Fatalf("rate %d: Publish %d at %s, before it was due at %s", rate, k, d, due)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := publishPaced(ctx, publishFunc(func(context.Context, []schema.Record, runtime.AckFunc) error { return nil }), recs, 10, func(error) {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting: %v, want context.Canceled", err)
	}
}

type publishFunc func(context.Context, []schema.Record, runtime.AckFunc) error

func (f publishFunc) Publish(ctx context.Context, rs []schema.Record, ack runtime.AckFunc) error {
	return f(ctx, rs, ack)
}
