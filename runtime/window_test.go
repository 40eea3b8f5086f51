package runtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWindowCommitsOnlyContiguousPrefix(t *testing.T) {
	ctx := context.Background()
	w := newWindow(100)
	s0, _ := w.add(ctx, 1, []byte("p0"))
	s1, _ := w.add(ctx, 1, nil)
	s2, _ := w.add(ctx, 1, []byte("p2"))
	w.ack(s2, nil)
	if _, ok := w.take(); ok {
		t.Fatal("committed past unacked batches")
	}
	w.ack(s0, nil)
	if p, ok := w.take(); !ok || string(p) != "p0" {
		t.Fatalf("after ack 0: %q %v", p, ok)
	}
	w.ack(s1, nil)
	if p, ok := w.take(); !ok || string(p) != "p2" {
		t.Fatalf("after ack 1: %q %v", p, ok)
	}
	if err := w.wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestWindowBlocksWhenFull(t *testing.T) {
	w := newWindow(10)
	ctx := context.Background()
	s0, _ := w.add(ctx, 8, []byte("a"))
	added := make(chan error, 1)
	go func() {
		_, err := w.add(ctx, 5, []byte("b"))
		added <- err
	}()
	select {
	case <-added:
		t.Fatal("add did not block with the window full")
	case <-time.After(50 * time.Millisecond):
	}
	w.ack(s0, nil)
	if err := <-added; err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.add(cctx, 9, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("full window with cancelled ctx: %v", err)
	}
}

func TestWindowStopsAtFailedBatch(t *testing.T) {
	ctx := context.Background()
	w := newWindow(100)
	s0, _ := w.add(ctx, 1, []byte("p0"))
	s1, _ := w.add(ctx, 1, []byte("p1"))
	s2, _ := w.add(ctx, 1, []byte("p2"))
	w.ack(s0, nil)
	boom := errors.New("boom")
	w.ack(s1, boom)
	w.ack(s2, nil)
	if p, _ := w.take(); string(p) != "p0" {
		t.Fatalf("committed %q, want p0 (stop before the failed batch)", p)
	}
	if _, err := w.add(ctx, 1, nil); !errors.Is(err, boom) {
		t.Fatalf("add after failure: %v", err)
	}
	if err := w.wait(ctx); !errors.Is(err, boom) {
		t.Fatalf("wait after failure: %v", err)
	}
}
