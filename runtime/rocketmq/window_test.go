package rocketmq

import (
	"context"
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	w := newWindow(5)
	ctx := context.Background()
	if err := w.acquire(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := w.acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if err := w.acquire(short, 1); err == nil {
		t.Fatal("acquired past the capacity")
	}
	got := make(chan error, 1)
	go func() { got <- w.acquire(ctx, 3) }()
	w.release(2) // 3 in use: 3 more would make 6
	select {
	case <-got:
		t.Fatal("acquired 3 with 3 of 5 in use")
	case <-time.After(30 * time.Millisecond):
	}
	w.release(3)
	if err := <-got; err != nil || w.inFlight() != 3 {
		t.Fatalf("err %v, in flight %d", err, w.inFlight())
	}
	w.release(3)
	// Larger than the capacity: admitted alone.
	if err := w.acquire(ctx, 9); err != nil || w.inFlight() != 9 {
		t.Fatalf("oversized: err %v, in flight %d", err, w.inFlight())
	}
}
