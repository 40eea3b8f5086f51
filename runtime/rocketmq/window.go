package rocketmq

import (
	"context"
	"sync"
)

// window bounds the records in flight: acquire blocks while taking n more
// would exceed the capacity. A request larger than the capacity is let in
// alone (when nothing else is in flight), so that it cannot wait forever.
type window struct {
	mu   sync.Mutex
	cap  int
	used int
	wake chan struct{} // closed and replaced on every release
}

func newWindow(capacity int) *window {
	return &window{cap: capacity, wake: make(chan struct{})}
}

func (w *window) acquire(ctx context.Context, n int) error {
	for {
		w.mu.Lock()
		if w.used == 0 || w.used+n <= w.cap {
			w.used += n
			w.mu.Unlock()
			return nil
		}
		wake := w.wake
		w.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (w *window) release(n int) {
	w.mu.Lock()
	w.used -= n
	close(w.wake)
	w.wake = make(chan struct{})
	w.mu.Unlock()
}

// inFlight returns the tokens taken.
func (w *window) inFlight() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.used
}
