package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

func queueBatch(queue, n int) []schema.Record {
	out := make([]schema.Record, n)
	for i := range out {
		out[i] = schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "d", Table: "t"},
			Delivery: &schema.Delivery{Topic: "t", Queue: queue, Offset: int64(i)}}
	}
	return out
}

// blockingWrites records every Write and holds each until released: any
// one of them by a send on release, the i-th to start by finish(i).
type blockingWrites struct {
	mu      sync.Mutex
	writes  [][]schema.Record
	gates   []chan error
	started chan struct{}
	release chan error
}

func (b *blockingWrites) write(ctx context.Context, recs []schema.Record) error {
	gate := make(chan error, 1)
	b.mu.Lock()
	b.writes = append(b.writes, recs)
	b.gates = append(b.gates, gate)
	b.mu.Unlock()
	b.started <- struct{}{}
	select {
	case err := <-b.release:
		return err
	case err := <-gate:
		return err
	}
}

// finish ends the i-th Write to start with err. A send on release would
// end whichever of the held Writes took it first.
func (b *blockingWrites) finish(i int, err error) {
	b.mu.Lock()
	gate := b.gates[i]
	b.mu.Unlock()
	gate <- err
}

func waitWaiting(t *testing.T, g *groupCommit, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		w := len(g.waiting)
		g.mu.Unlock()
		if w == n {
			return
		}
	}
	t.Fatalf("%d batches never waited", n)
}

// While the lanes are busy, the batches of other queues wait and then go
// in one Write, whose outcome each of them returns; a batch that is not
// plain data (a barrier) never waits and is never joined.
func TestGroupCommitJoinsWaitingBatches(t *testing.T) {
	b := &blockingWrites{started: make(chan struct{}, 16), release: make(chan error, 16)}
	g := newGroupCommit(b.write, 1, 1)
	ctx := context.Background()
	errs := make(chan error, 8)
	go func() { errs <- g.Write(ctx, queueBatch(0, 3)) }()
	<-b.started // queue 0 holds the lane
	for q := 1; q <= 3; q++ {
		go func() { errs <- g.Write(ctx, queueBatch(q, q)) }()
	}
	waitWaiting(t, g, 3)

	barrier := []schema.Record{{Op: schema.OpTruncate, Table: schema.TableID{Database: "d", Table: "t"}, Delivery: &schema.Delivery{Topic: "t", Queue: 4}}}
	go func() { errs <- g.Write(ctx, barrier) }()
	<-b.started // written at once, beside the busy lane
	b.finish(1, nil)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}

	b.finish(0, nil) // queue 0's Write ends: the three waiting go as one
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	<-b.started
	boom := errors.New("target down")
	b.finish(2, boom)
	for range 3 {
		if err := <-errs; !errors.Is(err, boom) {
			t.Fatalf("a joined batch returned %v, want the joined Write's error", err)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.writes) != 3 {
		t.Fatalf("%d Writes, want 3 (queue 0, the barrier, the three joined)", len(b.writes))
	}
	joined := b.writes[2]
	if len(joined) != 1+2+3 {
		t.Fatalf("joined Write holds %d records, want 6", len(joined))
	}
	// Each queue's records stay together and in order.
	last := map[int]int64{}
	for _, r := range joined {
		if off, ok := last[r.Delivery.Queue]; ok && r.Delivery.Offset != off+1 {
			t.Fatalf("queue %d out of order in the joined Write", r.Delivery.Queue)
		}
		last[r.Delivery.Queue] = r.Delivery.Offset
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running != 0 || len(g.waiting) != 0 {
		t.Fatalf("after the Writes: %d running, %d waiting", g.running, len(g.waiting))
	}
}

// With no lanes (a QueueSplitter sink) every batch is written alone, at
// once.
func TestGroupCommitOffWritesEachBatch(t *testing.T) {
	b := &blockingWrites{started: make(chan struct{}, 16), release: make(chan error, 16)}
	g := newGroupCommit(b.write, 0, 0)
	errs := make(chan error, 4)
	for q := range 4 {
		go func() { errs <- g.Write(context.Background(), queueBatch(q, 2)) }()
	}
	for range 4 {
		<-b.started // all four run at once
	}
	for range 4 {
		b.release <- nil
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// A sink that applies each queue in a transaction of its own (a
// QueueSplitter) gets every batch alone, at once, from the pipeline.
func TestPipelineSinkSplittingQueuesIsNotJoined(t *testing.T) {
	b := &blockingWrites{started: make(chan struct{}, 16), release: make(chan error, 16)}
	p := &Pipeline{Sink: splitter{b}}
	errs := make(chan error, 4)
	for q := range 4 {
		go func() { errs <- p.apply(context.Background(), queueBatch(q, 2)) }()
	}
	for range 4 {
		<-b.started
	}
	for range 4 {
		b.release <- nil
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

type splitter struct{ b *blockingWrites }

func (s splitter) Write(ctx context.Context, recs []schema.Record) error { return s.b.write(ctx, recs) }
func (splitter) Close() error                                            { return nil }
func (splitter) SplitsQueues() bool                                      { return true }

// Lanes open one per two queues seen, from the least to the most: with
// 1 to 2 lanes, a third queue opens the second lane, and no number of
// queues opens a third.
func TestGroupCommitLanesFollowQueues(t *testing.T) {
	b := &blockingWrites{started: make(chan struct{}, 16), release: make(chan error, 16)}
	g := newGroupCommit(b.write, 1, 2)
	ctx := context.Background()
	errs := make(chan error, 8)
	go func() { errs <- g.Write(ctx, queueBatch(0, 1)) }()
	<-b.started // queue 0 holds the only lane
	go func() { errs <- g.Write(ctx, queueBatch(1, 1)) }()
	waitWaiting(t, g, 1) // two queues seen: still one lane
	go func() { errs <- g.Write(ctx, queueBatch(2, 1)) }()
	<-b.started // three queues seen: a second lane, written at once
	for q := 3; q <= 6; q++ {
		go func() { errs <- g.Write(ctx, queueBatch(q, 1)) }()
	}
	waitWaiting(t, g, 5) // seven queues seen: still two lanes
	select {
	case <-b.started:
		t.Fatal("a third Write started beside two with at most two lanes")
	case <-time.After(50 * time.Millisecond):
	}
	for range 3 { // the two running, then the five waiting as one
		b.release <- nil
	}
	for range 7 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queues) != 4 {
		t.Fatalf("%d queues remembered, want at most 2*maxLanes = 4", len(g.queues))
	}
	if g.running != 0 || len(g.waiting) != 0 {
		t.Fatalf("after the Writes: %d running, %d waiting", g.running, len(g.waiting))
	}
}
