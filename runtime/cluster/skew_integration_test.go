package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// blackhole is a TCP forwarder to a database on loopback that can be cut:
// while cut it forwards nothing (a partition whose packets vanish, not one
// that resets connections); when healed it closes the connections of
// before the cut, as a peer's TCP would after a long partition.
type blackhole struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	gate   chan struct{} // closed while forwarding
	conns  []net.Conn
}

func newBlackhole(t *testing.T, target string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln, target: target, gate: make(chan struct{})}
	close(b.gate)
	t.Cleanup(func() { ln.Close(); b.closeAll() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go b.serve(c)
		}
	}()
	return b
}

func (b *blackhole) Addr() string { return b.ln.Addr().String() }

func (b *blackhole) wait() {
	b.mu.Lock()
	g := b.gate
	b.mu.Unlock()
	<-g
}

func (b *blackhole) track(c net.Conn) {
	b.mu.Lock()
	b.conns = append(b.conns, c)
	b.mu.Unlock()
}

func (b *blackhole) serve(c net.Conn) {
	b.track(c)
	b.wait() // a connection made during the cut hangs until the heal
	u, err := net.Dial("tcp", b.target)
	if err != nil {
		c.Close()
		return
	}
	b.track(u)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				b.wait()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
	}
	go pipe(u, c)
	pipe(c, u)
}

// Cut stops forwarding.
func (b *blackhole) Cut() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.cut {
		b.cut, b.gate = true, make(chan struct{})
	}
}

// Heal drops the connections of before and forwards again.
func (b *blackhole) Heal() {
	b.closeAll()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cut {
		b.cut = false
		close(b.gate)
	}
}

func (b *blackhole) closeAll() {
	b.mu.Lock()
	cs := b.conns
	b.conns = nil
	b.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

// viaProxy rewrites a coordinator DSN of the test servers to dial addr.
func viaProxy(t *testing.T, driver, dsn, addr string) (proxied, target string) {
	t.Helper()
	if driver == "postgres" {
		// postgres://user:pw@host:port/db?...
		at := strings.Index(dsn, "@")
		slash := strings.Index(dsn[at:], "/")
		if at < 0 || slash < 0 {
			t.Fatalf("unexpected PostgreSQL DSN shape")
		}
		return dsn[:at+1] + addr + dsn[at+slash:], dsn[at+1 : at+slash]
	}
	// user:pw@tcp(host:port)/db
	open, closing := strings.Index(dsn, "tcp("), strings.Index(dsn, ")/")
	if open < 0 || closing < 0 {
		t.Fatalf("unexpected MySQL DSN shape")
	}
	return dsn[:open+4] + addr + dsn[closing:], dsn[open+4 : closing]
}

// skewedWorker is a worker whose host's wall clock is off by skew: its
// clock's readings are shifted (time.Time.Add keeps the monotonic reading,
// so differences of two readings are true durations, as on a real host
// whose wall clock is wrong), and it reaches the coordinator through a
// blackhole of its own.
type skewedWorker struct {
	w    *Worker
	hole *blackhole
	skew time.Duration
}

func startSkewed(t *testing.T, driver, dsn, prefix, id string, ttl, skew time.Duration) *skewedWorker {
	t.Helper()
	_, target := viaProxy(t, driver, dsn, "")
	hole := newBlackhole(t, target)
	proxied, _ := viaProxy(t, driver, dsn, hole.Addr())
	s, err := Open(context.Background(), driver, proxied, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	w, err := NewWorker(s, Config{ID: id, TTL: ttl, Heartbeat: ttl / 4, Build: fakeBuild, Log: slog.New(slog.DiscardHandler),
		clock: func() time.Time { return time.Now().Add(skew) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { hole.Heal(); cancel(); <-done })
	return &skewedWorker{w: w, hole: hole, skew: skew}
}

// TestClockSkew: two workers, one with a true clock and one whose wall
// clock is an hour ahead (or behind), share one task over the real
// PostgreSQL and MariaDB coordinators. The skewed worker does not take the
// live lease of the other; when the holder is cut off (its packets
// black-holed), it stops the task before the database lets the other take
// it, and the other takes it within ttl + a heartbeat (+1s for a loaded
// machine) of the cut; then the same with the roles swapped. Every
// expires_at and heartbeat_at the database holds is within a ttl of its
// own now, whatever the writer's clock.
func TestClockSkew(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		for _, skew := range []time.Duration{time.Hour, -time.Hour} {
			t.Run(fmt.Sprintf("%s/skew%+v", driver, skew), func(t *testing.T) {
				ctx := context.Background()
				s := openTestStore(t, driver, dsn)
				c := &Control{S: s}
				if _, err := c.Create(ctx, "k", json.RawMessage(`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`)); err != nil {
					t.Fatal(err)
				}
				const task = "k/source"
				ttl := 1500 * time.Millisecond
				bound := ttl + ttl/4 + time.Second
				lease := func() LeaseRow {
					ls, err := s.Leases(ctx)
					if err != nil {
						t.Fatal(err)
					}
					return ls[task]
				}
				// The stored times, as seconds from the database's now.
				checkStamps := func(who string) {
					t.Helper()
					var exp, beat float64
					q := "SELECT EXTRACT(EPOCH FROM (l.expires_at - CURRENT_TIMESTAMP(6))), EXTRACT(EPOCH FROM (CURRENT_TIMESTAMP(6) - w.heartbeat_at)) FROM " + s.Table("leases") + " l JOIN " + s.Table("workers") + " w ON w.id = l.holder WHERE l.task = ?"
					if driver == "mysql" {
						q = "SELECT TIMESTAMPDIFF(MICROSECOND, CURRENT_TIMESTAMP(6), l.expires_at) / 1e6, TIMESTAMPDIFF(MICROSECOND, w.heartbeat_at, CURRENT_TIMESTAMP(6)) / 1e6 FROM " + s.Table("leases") + " l JOIN " + s.Table("workers") + " w ON w.id = l.holder WHERE l.task = ?"
					}
					if err := s.db.QueryRow(s.q(q), task).Scan(&exp, &beat); err != nil {
						t.Fatal(err)
					}
					if exp <= 0 || exp > ttl.Seconds() || beat < 0 || beat > ttl.Seconds() {
						t.Fatalf("%s's lease expires %.3fs from the database's now and its heartbeat is %.3fs old (ttl %s): a time from the worker's clock reached the database", who, exp, beat, ttl)
					}
				}

				straight := startSkewed(t, driver, dsn, s.prefix, "straight", ttl, 0)
				waitUntil(t, 15*time.Second, "the straight worker takes the task", func() bool {
					l := lease()
					return l.Live && l.Holder == "straight"
				})
				first := lease()
				skewed := startSkewed(t, driver, dsn, s.prefix, "skewed", ttl, skew)

				// handover cuts from off, asserts to takes the task within
				// bound, and that from stopped it first.
				handover := func(from, to *skewedWorker, fromID, toID string) {
					t.Helper()
					// Long enough for several heartbeats and renewals of both:
					// to must not take a live lease.
					time.Sleep(3 * ttl)
					l := lease()
					if l.Holder != fromID || !l.Live {
						t.Fatalf("%s (skew %v) took the live lease of %s: %+v", l.Holder, to.skew, fromID, l)
					}
					if len(to.w.Held()) != 0 {
						t.Fatalf("%s hosts %v while %s holds the lease", toID, to.w.Held(), fromID)
					}
					checkStamps(fromID)
					cut := time.Now()
					from.hole.Cut()
					var stopped time.Duration
					for {
						since := time.Since(cut)
						if stopped == 0 && len(from.w.Held()) == 0 {
							stopped = since
						}
						if _, ok := to.w.Held()[task]; ok {
							if stopped == 0 {
								t.Fatalf("%s took the task %s after the cut while %s still hosted it", toID, since, fromID)
							}
							t.Logf("%s (skew %v) cut off: stopped after %s, %s (skew %v) took over after %s (ttl %s, bound %s)",
								fromID, from.skew, stopped.Round(time.Millisecond), toID, to.skew, since.Round(time.Millisecond), ttl, bound)
							if since > bound {
								t.Errorf("failover took %s, over the bound %s", since, bound)
							}
							break
						}
						if since > 3*bound {
							t.Fatalf("%s never took the task from %s: lease %+v", toID, fromID, lease())
						}
						time.Sleep(10 * time.Millisecond)
					}
					if m := from.w.Metrics(); m.LeasesLost != 1 {
						t.Fatalf("%s's metrics after the cut: %+v", fromID, m)
					}
					from.hole.Heal()
				}
				handover(straight, skewed, "straight", "skewed")
				handover(skewed, straight, "skewed", "straight")
				if l := lease(); l.Epoch != first.Epoch+2 {
					t.Fatalf("epoch %d after two handovers from %d: a lease changed hands more often", l.Epoch, first.Epoch)
				}
			})
		}
	}
}
