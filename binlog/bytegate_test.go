package binlog

import (
	"context"
	"testing"
	"testing/synctest"
)

// TestByteGate: batches wait while the queued bytes would pass the cap, one
// larger than the cap goes alone, and released bytes let the next in. It
// runs in a synctest bubble: synctest.Wait returns once the waiting
// goroutine is durably blocked, so no sleep guesses how long to wait.
func TestByteGate(t *testing.T) { synctest.Test(t, testByteGate) }

func testByteGate(t *testing.T) {
	ctx := context.Background()
	g := newByteGate(100)
	if !g.acquire(ctx, 60) || !g.acquire(ctx, 40) {
		t.Fatal("batches within the cap must not wait")
	}
	got := make(chan bool)
	go func() { got <- g.acquire(ctx, 10) }()
	synctest.Wait()
	select {
	case <-got:
		t.Fatal("a batch past the cap went in")
	default:
	}
	g.release(60)
	if !<-got {
		t.Fatal("released bytes did not let the waiting batch in")
	}
	g.release(40)
	g.release(10)
	if !g.acquire(ctx, 1000) {
		t.Fatal("a batch larger than the cap must go alone")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if g.acquire(cctx, 1) {
		t.Fatal("acquire on a full gate with a done context must return false")
	}
	g.release(1000)
	if g.used != 0 {
		t.Fatalf("%d bytes still held after every release", g.used)
	}
	var none *byteGate
	if !none.acquire(cctx, 5) {
		t.Fatal("a nil gate lets everything in")
	}
	none.release(5)
}
