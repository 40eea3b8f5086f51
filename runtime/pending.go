package runtime

import (
	"sync"
	"sync/atomic"
)

// Pending tracks one published batch on a broker transport: the parts
// still unconfirmed (messages, sends) and the first error any of them
// failed with. A transport's ack dispatcher waits on Done, then reads Err.
type Pending struct {
	left atomic.Int64
	mu   sync.Mutex
	err  error
	done chan struct{}
}

// NewPending returns a Pending of n parts; with none it is done already.
func NewPending(n int) *Pending {
	p := &Pending{done: make(chan struct{})}
	p.left.Store(int64(n))
	if n == 0 {
		close(p.done)
	}
	return p
}

// Finish confirms one part, failed when err is not nil (the first error
// is kept); the last part closes Done.
func (p *Pending) Finish(err error) {
	if err != nil {
		p.mu.Lock()
		if p.err == nil {
			p.err = err
		}
		p.mu.Unlock()
	}
	if p.left.Add(-1) == 0 {
		close(p.done)
	}
}

// Done is closed once every part is confirmed or failed.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Err is the first error a part failed with; read it after Done.
func (p *Pending) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
