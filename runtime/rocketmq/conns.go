package rocketmq

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// connPool keeps the remoting connections of the replicator's pulls and
// sends open between requests, a few per broker, as the client does:
// invokeBody dials a connection for each request, which at one request a
// message cost more than the request itself, and leaves a socket in
// TIME_WAIT each time (ports run out at some thousands a second). A
// connection serves one request at a time; an idle one is closed after
// poolIdle, well before a broker closes it (120 s by default).
type connPool struct {
	mu     sync.Mutex
	idle   map[string][]pooledConn
	closed bool
}

type pooledConn struct {
	net.Conn
	since time.Time // idle since
}

// poolIdle is how long a connection is kept idle; poolMaxIdle bounds the
// idle connections of one address.
const (
	poolIdle    = 30 * time.Second
	poolMaxIdle = 16
)

func newConnPool() *connPool { return &connPool{idle: map[string][]pooledConn{}} }

// invoke is invokeSigned on a pooled connection to addr. A nil pool dials
// one for the request.
func (p *connPool) invoke(ctx context.Context, cred primitive.Credentials, addr string, code int, ext map[string]string, body []byte) (remotingHeader, []byte, error) {
	if p == nil {
		return invokeSigned(ctx, cred, addr, code, ext, body)
	}
	conn, err := p.get(ctx, addr)
	if err != nil {
		return remotingHeader{}, nil, err
	}
	h, b, err := roundTrip(ctx, conn, addr, code, signRequest(cred, ext, body), body)
	if err != nil || ctx.Err() != nil {
		conn.Close()
		return h, b, err
	}
	p.put(addr, conn)
	return h, b, nil
}

// get takes an idle connection to addr, or dials one.
func (p *connPool) get(ctx context.Context, addr string) (net.Conn, error) {
	p.mu.Lock()
	for cs := p.idle[addr]; len(cs) > 0; cs = p.idle[addr] {
		c := cs[len(cs)-1]
		p.idle[addr] = cs[:len(cs)-1]
		if time.Since(c.since) < poolIdle {
			p.mu.Unlock()
			return c.Conn, nil
		}
		c.Close()
	}
	p.mu.Unlock()
	return dialRemoting(ctx, addr)
}

// put gives conn back, or closes it when the pool is closed or full.
func (p *connPool) put(addr string, conn net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle[addr]) >= poolMaxIdle {
		conn.Close()
		return
	}
	p.idle[addr] = append(p.idle[addr], pooledConn{Conn: conn, since: time.Now()})
}

// close closes the idle connections; those in use are closed when given
// back.
func (p *connPool) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for addr, cs := range p.idle {
		for _, c := range cs {
			c.Close()
		}
		delete(p.idle, addr)
	}
}
