package engine

import (
	"context"
	"github.com/sluicecdc/sluice/runtime"
	"sync"
)

// window tracks published batches until they are acknowledged. It commits
// only the contiguous acked prefix and caps the records in flight, in
// number and in bytes (schema.Record.Size), which gives both correct
// checkpoints and backpressure with memory bounded whatever the rows hold.
type window struct {
	mu       sync.Mutex
	cond     chan struct{} // closed and replaced whenever space frees up
	next     uint64        // sequence of the next batch
	head     uint64        // sequence of the oldest batch not yet committed
	pending  map[uint64]*slot
	inFlight int
	max      int
	bytes    int // estimated bytes of the records in flight
	maxBytes int
	err      error  // first ack error
	position []byte // newest position of the committed prefix
	dirty    bool   // position changed since the last take
	// Of the committed prefix: the newest source time (Unix ms) and
	// whether its last batch ended with a heartbeat (the source was idle
	// at the server's end then), for status.
	committedMs int64
	idle        bool
}

type slot struct {
	records  int
	bytes    int
	position []byte
	done     bool
	failed   bool
	stamp    batchStamp
}

func newWindow(maxRecords, maxBytes int) *window {
	if maxRecords <= 0 {
		maxRecords = runtime.DefaultMaxInFlight
	}
	if maxBytes <= 0 {
		maxBytes = runtime.DefaultMaxInFlightBytes
	}
	return &window{cond: make(chan struct{}), pending: map[uint64]*slot{}, max: maxRecords, maxBytes: maxBytes}
}

// add reserves room for a batch of n records of about size bytes that makes
// position resumable (nil: no resumable point inside). It blocks while the
// window is full in records or in bytes. A batch larger than the window is
// admitted alone.
func (w *window) add(ctx context.Context, n, size int, position []byte) (uint64, error) {
	for {
		w.mu.Lock()
		if w.err != nil {
			err := w.err
			w.mu.Unlock()
			return 0, err
		}
		if w.inFlight == 0 || w.inFlight+n <= w.max && w.bytes+size <= w.maxBytes {
			seq := w.next
			w.next++
			w.pending[seq] = &slot{records: n, bytes: size, position: position}
			w.inFlight += n
			w.bytes += size
			w.mu.Unlock()
			return seq, nil
		}
		wait := w.cond
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-wait:
		}
	}
}

// ack marks a batch done (or failed) and advances the committed prefix.
func (w *window) ack(seq uint64, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil && w.err == nil {
		w.err = err
	}
	s, ok := w.pending[seq]
	if !ok || s.done {
		return
	}
	s.done, s.failed = true, err != nil
	for {
		// A failed batch is never committed: the prefix stops before it.
		h, ok := w.pending[w.head]
		if !ok || !h.done || h.failed {
			break
		}
		delete(w.pending, w.head)
		w.head++
		w.inFlight -= h.records
		w.bytes -= h.bytes
		if h.position != nil {
			w.position, w.dirty = h.position, true
		}
		w.committedMs, w.idle = max(w.committedMs, h.stamp.tsMs), h.stamp.idle
	}
	w.broadcast()
}

func (w *window) broadcast() {
	close(w.cond)
	w.cond = make(chan struct{})
}

// stamp records, for status, the newest source time of batch seq and
// whether it ended with a heartbeat. Call it before the batch can be acked.
func (w *window) stamp(seq uint64, b batchStamp) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.pending[seq]; ok {
		s.stamp = b
	}
}

// committed returns, of the committed prefix, the newest position (as
// saved), the newest source time and whether it ended idle, with the
// records in flight read under the same lock: a status built from two
// separate reads could see a batch's acknowledgement in one (nothing in
// flight) and not in the other (its source time), and report no lag for a
// change applied 20 s after it happened.
func (w *window) committed() (position []byte, tsMs int64, idle bool, inFlight int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.position, w.committedMs, w.idle, w.inFlight
}

// take returns the committed position if it changed since the last take.
func (w *window) take() ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.dirty {
		return nil, false
	}
	w.dirty = false
	return w.position, true
}

// untake marks the committed position as not saved: a save of what take
// returned failed, and the next take returns it again (or a newer one).
func (w *window) untake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dirty = true
}

// failure returns the first ack error, if any.
func (w *window) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// drained reports whether nothing is in flight (or a batch failed, so nothing
// more can be committed), and a channel that changes when that may change.
func (w *window) drained() (bool, error, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending) == 0, w.err, w.cond
}

// wait blocks until every added batch was acked, one failed, or ctx is done.
func (w *window) wait(ctx context.Context) error {
	for {
		ok, err, ch := w.drained()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}
