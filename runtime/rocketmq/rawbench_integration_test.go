package rocketmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/runtime/rocketmq/rawbench"
	"github.com/sluicecdc/sluice/schema"
)

// PipelineRoundTrip (the bench's warm-up) publishes records of several
// tables through a Publisher, at full speed and paced, and returns once a
// Subscriber has read every one back; without data records it refuses.
func TestIntegrationPipelineRoundTrip(t *testing.T) {
	rocketmq.SkipUnderRace(t)
	a, b := schema.TableID{Database: "db", Table: "wa"}, schema.TableID{Database: "db", Table: "wb"}
	cfg := rocketmq.ITConfig(t)
	cfg.Format = rocketmq.FormatPacked
	var recs []schema.Record
	for i := range 3000 {
		id := a
		if i%3 == 0 {
			id = b
		}
		recs = append(recs, rocketmq.TestRecord(id, int64(i%700), int64(i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, rate := range []int{0, 10000} { // as fast as it goes; paced
		n, err := rawbench.PipelineRoundTrip(ctx, cfg, "it_warm_"+rocketmq.Suffix(), recs, rate, rocketmq.QuietLog())
		if err != nil {
			t.Fatalf("rate %d: %v", rate, err)
		}
		if n < len(recs) {
			t.Fatalf("rate %d: %d of %d records read back", rate, n, len(recs))
		}
	}
	if _, err := rawbench.PipelineRoundTrip(ctx, cfg, "it_warm_"+rocketmq.Suffix(), []schema.Record{{Op: schema.OpCommit}}, 0, rocketmq.QuietLog()); err == nil {
		t.Fatal("no data record: PipelineRoundTrip returned nil")
	}
}
