package engine

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestWindowCommitsOnlyContiguousPrefix(t *testing.T) {
	ctx := context.Background()
	w := newWindow(100, 0)
	s0, _ := w.add(ctx, 1, 0, []byte("p0"))
	s1, _ := w.add(ctx, 1, 0, nil)
	s2, _ := w.add(ctx, 1, 0, []byte("p2"))
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

// TestWindowBlocksWhenFull runs in a synctest bubble: synctest.Wait
// returns once the adding goroutine is durably blocked, so the test knows
// add waits instead of guessing with a sleep.
func TestWindowBlocksWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWindow(10, 0)
		ctx := context.Background()
		s0, _ := w.add(ctx, 8, 0, []byte("a"))
		added := make(chan error, 1)
		go func() {
			_, err := w.add(ctx, 5, 0, []byte("b"))
			added <- err
		}()
		synctest.Wait()
		select {
		case <-added:
			t.Fatal("add did not block with the window full")
		default:
		}
		w.ack(s0, nil)
		if err := <-added; err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := w.add(cctx, 9, 0, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("full window with cancelled ctx: %v", err)
		}
	})
}

func TestWindowStopsAtFailedBatch(t *testing.T) {
	ctx := context.Background()
	w := newWindow(100, 0)
	s0, _ := w.add(ctx, 1, 0, []byte("p0"))
	s1, _ := w.add(ctx, 1, 0, []byte("p1"))
	s2, _ := w.add(ctx, 1, 0, []byte("p2"))
	w.ack(s0, nil)
	boom := errors.New("boom")
	w.ack(s1, boom)
	w.ack(s2, nil)
	if p, _ := w.take(); string(p) != "p0" {
		t.Fatalf("committed %q, want p0 (stop before the failed batch)", p)
	}
	if _, err := w.add(ctx, 1, 0, nil); !errors.Is(err, boom) {
		t.Fatalf("add after failure: %v", err)
	}
	if err := w.wait(ctx); !errors.Is(err, boom) {
		t.Fatalf("wait after failure: %v", err)
	}
}

// TestWindowBlocksWhenFullInBytes: few records of large rows fill the
// window by their bytes; a batch larger than the window still goes alone.
func TestWindowBlocksWhenFullInBytes(t *testing.T) {
	w := newWindow(1000, 1<<20)
	ctx := context.Background()
	s0, _ := w.add(ctx, 2, 900<<10, []byte("a"))
	added := make(chan uint64, 1)
	go func() {
		s, err := w.add(ctx, 1, 200<<10, []byte("b"))
		if err != nil {
			t.Error(err)
		}
		added <- s
	}()
	select {
	case <-added:
		t.Fatal("add did not block with the window full in bytes")
	case <-time.After(50 * time.Millisecond):
	}
	w.ack(s0, nil)
	s1 := <-added
	w.ack(s1, nil)
	big, err := w.add(ctx, 1, 5<<20, nil)
	if err != nil {
		t.Fatalf("a batch larger than the window, alone: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.add(cctx, 1, 1, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a window over its bytes admits more: %v", err)
	}
	w.ack(big, nil)
	if _, err := w.add(cctx, 1, 1, nil); err != nil {
		t.Fatalf("empty window: %v", err)
	}
}
