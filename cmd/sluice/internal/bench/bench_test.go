package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// The raw broker round trip runs after sluice's phase has set the memory
// limit: it must run without it, and the limit must be back afterwards.
func TestWithoutMemoryLimit(t *testing.T) {
	const limit = 150 << 20
	old := debug.SetMemoryLimit(limit)
	defer debug.SetMemoryLimit(old)
	restore := withoutMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit while lifted: %d, want none (%d)", got, int64(math.MaxInt64))
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Fatalf("memory limit after restore: %d, want %d", got, limit)
	}
}

// The heap profile is pprof's format (gzipped protobuf) with the in-use
// sample types that `go tool pprof -sample_index=inuse_space` reads.
func TestWriteHeapProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.prof")
	if err := writeHeapProfile(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("heap profile is not gzipped: %v", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"inuse_space", "inuse_objects", "alloc_space"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("heap profile has no %q", want)
		}
	}
}

// settle waits while a watched process is busy and returns once it is
// quiet; processes of another name are not watched.
func TestSettleWaitsForQuietBrokers(t *testing.T) {
	ctx := context.Background()
	self := benchProcs{"broker-x": os.Getpid()}
	if d := self.settle(ctx, "broker", 0.5, 10*time.Second); d >= 10*time.Second {
		t.Fatalf("an idle process: settle waited the whole limit (%s)", d)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // one core busy
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	d := self.settle(ctx, "broker", 0.05, 3*time.Second)
	close(stop)
	<-done
	if d < 3*time.Second {
		t.Fatalf("a busy process: settle returned after %s, before its limit", d)
	}
	if d := (benchProcs{"mariadb": os.Getpid()}).settle(ctx, "broker", 0.5, time.Minute); d > time.Second {
		t.Fatalf("no broker among the processes: settle waited %s", d)
	}
}

type nopSink struct{}

func (nopSink) Write(context.Context, []schema.Record) error { return nil }
func (nopSink) Close() error                                 { return nil }

// TestCountingSinkCountsRecordsOnce: a record delivered again (a batch a
// busy broker stored twice, a redelivery), which the sink skips, is not
// counted again, so the catch-up's wait ends only once every record was
// applied; queues are told apart, and records without a delivery (the
// embedded transport) all count.
func TestCountingSinkCountsRecordsOnce(t *testing.T) {
	ctx := context.Background()
	rec := func(queue int, pos uint64) schema.Record {
		return schema.Record{Op: schema.OpUpdate, ID: schema.ID{Epoch: 1, Pos: pos},
			Delivery: &schema.Delivery{Topic: "t", Broker: "broker-a", Queue: queue, Offset: int64(pos)}}
	}
	c := newCountingSink()
	c.Sink = nopSink{}
	batches := [][]schema.Record{
		{rec(0, 1), rec(0, 2), {Op: schema.OpCommit}},
		{rec(0, 1), rec(0, 2), rec(0, 3)},                        // the first batch stored twice
		{rec(1, 2), rec(0, 3)},                                   // another queue; queue 0 redelivered
		{{Op: schema.OpCreate, ID: schema.ID{Epoch: 1, Pos: 1}}}, // embedded: no delivery
	}
	for _, b := range batches {
		if err := c.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.applied.Load(); got != 5 {
		t.Errorf("applied %d records, want 5 (3 of queue 0, 1 of queue 1, 1 embedded)", got)
	}
}
