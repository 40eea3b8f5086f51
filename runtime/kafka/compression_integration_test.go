package kafka

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// codecHook records the compression of every fetched batch
// (kgo.HookFetchBatchRead).
type codecHook struct {
	mu     sync.Mutex
	codecs []uint8
}

func (h *codecHook) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.codecs = append(h.codecs, m.CompressionType)
}

// TestIntegrationCompression: a topic written with each value of the
// compression key is consumed and tailed by sluice, and its batches are
// stored with that codec (the broker keeps the producer's:
// compression.type=producer).
func TestIntegrationCompression(t *testing.T) {
	bs := brokers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	// kgo.FetchBatchMetrics.CompressionType's numbers, Kafka's attribute bits
	want := map[string]uint8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
	for _, c := range Compressions() {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Brokers: bs, Compression: c}
			topic := roundTrip(ctx, t, cfg)
			h := &codecHook{}
			cl, err := kgo.NewClient(append(clientOptions(cfg, slog.New(slog.DiscardHandler)), kgo.ConsumeTopics(topic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(h))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			for n := 0; n < 3 && ctx.Err() == nil; {
				n += cl.PollFetches(ctx).NumRecords()
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.codecs) == 0 || slices.ContainsFunc(h.codecs, func(got uint8) bool { return got != want[c] }) {
				t.Fatalf("compression %s: the batches were stored with codecs %v, want all %d", c, h.codecs, want[c])
			}
		})
	}
}
