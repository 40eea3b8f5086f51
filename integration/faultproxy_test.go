package integration

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// faultProxy forwards TCP connections from a loopback port to a server and
// injects network faults: cut resets every open connection (as a crashed
// peer or a broken link does), and down refuses new ones until up again.
type faultProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	down   bool
	cuts   atomic.Int64 // connections reset by cut
	served atomic.Int64 // connections forwarded
	wg     sync.WaitGroup
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			reset(c)
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			reset(c)
			continue
		}
		p.served.Add(1)
		p.track(c, u)
		p.wg.Add(2)
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

func (p *faultProxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
}

// pipe copies one direction; when it ends, both sides are closed.
func (p *faultProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
	dst.Close()
	src.Close()
}

// cut resets every open connection and returns how many it reset.
func (p *faultProxy) cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		reset(c)
		delete(p.conns, c)
		n++
	}
	p.cuts.Add(int64(n))
	return n
}

// setDown makes the proxy refuse (reset) new connections, or accept again.
func (p *faultProxy) setDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
}

func (p *faultProxy) close() {
	p.ln.Close()
	p.cut()
	p.wg.Wait()
}

// reset closes c with an RST instead of a FIN, as a vanished peer does.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}
