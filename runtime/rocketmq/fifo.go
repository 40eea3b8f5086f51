package rocketmq

import "sync"

// fifo is an unbounded queue with a blocking pop; its growth is bounded by
// the publisher's window.
type fifo[T any] struct {
	mu     sync.Mutex
	items  []T
	signal chan struct{}
}

func newFifo[T any]() *fifo[T] { return &fifo[T]{signal: make(chan struct{}, 1)} }

func (f *fifo[T]) push(v T) {
	f.mu.Lock()
	f.items = append(f.items, v)
	f.mu.Unlock()
	select {
	case f.signal <- struct{}{}:
	default:
	}
}

// pop returns the oldest item, blocking until there is one or stop closes.
func (f *fifo[T]) pop(stop <-chan struct{}) (T, bool) {
	for {
		f.mu.Lock()
		if len(f.items) > 0 {
			v := f.items[0]
			var zero T
			f.items[0] = zero
			f.items = f.items[1:]
			f.mu.Unlock()
			return v, true
		}
		f.mu.Unlock()
		select {
		case <-f.signal:
		case <-stop:
			var zero T
			return zero, false
		}
	}
}

// popAll returns every queued item, blocking until there is one or stop closes.
func (f *fifo[T]) popAll(stop <-chan struct{}) ([]T, bool) {
	for {
		f.mu.Lock()
		if len(f.items) > 0 {
			v := f.items
			f.items = nil
			f.mu.Unlock()
			return v, true
		}
		f.mu.Unlock()
		select {
		case <-f.signal:
		case <-stop:
			return nil, false
		}
	}
}
