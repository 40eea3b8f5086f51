package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// liveResult is one lag phase of the bench: rows written at a steady rate,
// the lag of each from its source commit to its target commit, and where
// that lag went (stages, each the time between two points of a row's way).
type liveResult struct {
	Rate      int                           `json:"rate"`
	Rows      int                           `json:"rows"`
	LagMillis map[string]float64            `json:"lag_ms"`    // p50, p95, p99, max
	Stages    map[string]map[string]float64 `json:"stages_ms"` // stage -> p50, p95, p99, max
	// Sleep10ms: how long a 10 ms time.Sleep took during the phase, over
	// RocketMQ: the client's orderly consume loop polls its empty queue
	// cache in such sleeps, so a batch reaching an idle queue waits up to
	// one of them (half of one on average) before its handler starts.
	Sleep10ms map[string]float64 `json:"sleep_10ms_ms,omitempty"`
}

// sleepProbe measures, until stop, how long each 10 ms sleep takes: the
// cost the RocketMQ client's cache poll adds to a batch on this machine
// at this load, which sluice cannot change (the poll is inside the client).
type sleepProbe struct {
	stopCh chan struct{}
	done   chan []int64
}

func startSleepProbe() *sleepProbe {
	p := &sleepProbe{stopCh: make(chan struct{}), done: make(chan []int64, 1)}
	go func() {
		var us []int64
		for {
			select {
			case <-p.stopCh:
				p.done <- us
				return
			default:
			}
			t0 := time.Now()
			time.Sleep(10 * time.Millisecond)
			us = append(us, time.Since(t0).Microseconds())
		}
	}()
	return p
}

// stop ends the probe and returns the percentiles of the sleeps (ms).
func (p *sleepProbe) stop() map[string]float64 {
	close(p.stopCh)
	return percentilesMS(<-p.done)
}

// The stages of a live row, in the order they are printed: the source's
// clock of the insert (column created, the server's UTC_TIMESTAMP(6)) to
// the source side's Read returning it (binlog, replication, decoding), to
// Publish taking it, to the transport's acknowledgement (encode, send,
// broker store), to the subscriber's handler receiving it (broker to
// consumer: the pull, the client's hand-over, decoding), to the sink's
// Write receiving it (waiting for a group-commit lane), to the sink's
// commit. The embedded transport has no subscriber: its "to handler" runs
// to the sink's Write and "handler wait" is left out.
var lagStages = []string{"source read", "to publish", "publish ack", "to handler", "handler wait", "sink commit"}

// lagTrace records, for the rows of the live phase (ids from liveFrom on),
// the time each passed a point of the pipeline. The bench runs source and
// sink in one process, so one clock serves every point.
type lagTrace struct {
	liveFrom     atomic.Int64 // 0: not tracing
	firstHandled atomic.Int64 // unix ns of the transport's first handler call
	mu           sync.Mutex
	rows         map[int64]*rowTimes
}

type rowTimes struct{ read, publish, ack, handler, sinkIn int64 } // unix µs

func newLagTrace() *lagTrace { return &lagTrace{rows: map[int64]*rowTimes{}} }

// start traces the rows from id from on, dropping what was traced before.
func (t *lagTrace) start(from int64) {
	t.mu.Lock()
	t.rows = map[int64]*rowTimes{}
	t.mu.Unlock()
	t.liveFrom.Store(from)
}

// liveID returns the id of a live row, ok false for any other record.
func (t *lagTrace) liveID(r *schema.Record) (int64, bool) {
	from := t.liveFrom.Load()
	if from == 0 || r.Op != schema.OpCreate || len(r.After) != 5 {
		return 0, false
	}
	id, ok := r.After[0].(int64)
	return id, ok && id >= from
}

// mark sets, with set, the time of every live row of recs.
func (t *lagTrace) mark(recs []schema.Record, set func(rt *rowTimes, now int64)) {
	if t.liveFrom.Load() == 0 {
		return
	}
	now := time.Now().UnixMicro()
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range recs {
		if id, ok := t.liveID(&recs[i]); ok {
			rt := t.rows[id]
			if rt == nil {
				rt = &rowTimes{}
				t.rows[id] = rt
			}
			set(rt, now)
		}
	}
}

// stages returns the percentiles of each stage of the rows that reached
// the sink, given each row's commit time and source time.
func (t *lagTrace) stages(committed map[int64][2]int64) map[string]map[string]float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	by := make([][]int64, len(lagStages))
	for id, c := range committed {
		rt := t.rows[id]
		if rt == nil || rt.read == 0 || rt.publish == 0 || rt.sinkIn == 0 {
			continue
		}
		created, commit := c[0], c[1]
		ack := rt.ack
		if ack == 0 {
			ack = rt.publish
		}
		handler := rt.handler
		if handler == 0 {
			handler = rt.sinkIn
		}
		for i, d := range []int64{rt.read - created, rt.publish - rt.read, ack - rt.publish, handler - rt.publish, rt.sinkIn - handler, commit - rt.sinkIn} {
			if i == 4 && rt.handler == 0 {
				continue
			}
			by[i] = append(by[i], max(0, d))
		}
	}
	out := map[string]map[string]float64{}
	for i, name := range lagStages {
		if p := percentilesMS(by[i]); p != nil {
			out[name] = p
		}
	}
	return out
}

// tracedSource marks when Read returned each live row.
type tracedSource struct {
	runtime.Source
	t *lagTrace
}

func (s tracedSource) Read(ctx context.Context) ([]schema.Record, error) {
	recs, err := s.Source.Read(ctx)
	s.t.mark(recs, func(rt *rowTimes, now int64) { rt.read = now })
	return recs, err
}

// CapturedTables keeps the source's start check (runtime.TableLister).
func (s tracedSource) CapturedTables(ctx context.Context) ([]schema.TableID, error) {
	if l, ok := s.Source.(runtime.TableLister); ok {
		return l.CapturedTables(ctx)
	}
	return nil, fmt.Errorf("bench: the source lists no tables")
}

// tracedPublisher marks when Publish took each live row and when the
// transport acknowledged it.
type tracedPublisher struct {
	runtime.Publisher
	t *lagTrace
}

func (p tracedPublisher) Publish(ctx context.Context, recs []schema.Record, ack runtime.AckFunc) error {
	p.t.mark(recs, func(rt *rowTimes, now int64) { rt.publish = now })
	var live []schema.Record
	if p.t.liveFrom.Load() != 0 {
		for i := range recs {
			if _, ok := p.t.liveID(&recs[i]); ok {
				live = append(live, schema.Record{Op: recs[i].Op, After: recs[i].After})
			}
		}
	}
	return p.Publisher.Publish(ctx, recs, func(err error) {
		p.t.mark(live, func(rt *rowTimes, now int64) { rt.ack = now })
		ack(err)
	})
}

// tracedSubscriber marks when the transport's handler first received each
// live row (after the subscriber decoded it, before the group commit).
type tracedSubscriber struct {
	runtime.Subscriber
	t *lagTrace
}

func (s tracedSubscriber) Consume(ctx context.Context, h runtime.Handler) error {
	return s.Subscriber.Consume(ctx, func(ctx context.Context, recs []schema.Record) error {
		s.t.firstHandled.CompareAndSwap(0, time.Now().UnixNano())
		s.t.mark(recs, func(rt *rowTimes, now int64) {
			if rt.handler == 0 { // the first delivery
				rt.handler = now
			}
		})
		return h(ctx, recs)
	})
}

// parseRates reads --live-rate: rows/s, or several separated by commas.
func parseRates(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bench: --live-rate %q: want rows/s, or several separated by commas: %w", s, runtime.ErrConfig)
		}
		if n > 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

func printLive(w io.Writer, l liveResult) {
	p := l.LagMillis
	fmt.Fprintf(w, "\nlag from source commit to target commit, %d rows at %d rows/s: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		l.Rows, l.Rate, p["p50"], p["p95"], p["p99"], p["max"])
	if len(l.Stages) == 0 {
		return
	}
	fmt.Fprintf(w, "  %-44s %8s %8s %8s %8s\n", "stage (ms)", "p50", "p95", "p99", "max")
	desc := map[string]string{
		"source read":  "insert to the source's Read (binlog)",
		"to publish":   "Read to Publish",
		"publish ack":  "Publish to the transport's ack",
		"to handler":   "Publish to the handler (transport, decode)",
		"handler wait": "the handler to the sink's Write (lane wait)",
		"sink commit":  "the sink's Write to its commit",
	}
	for _, name := range lagStages {
		s, ok := l.Stages[name]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "  %-44s %8.1f %8.1f %8.1f %8.1f\n", desc[name], s["p50"], s["p95"], s["p99"], s["max"])
	}
	if s := l.Sleep10ms; s != nil {
		fmt.Fprintf(w, "  %-44s %8.1f %8.1f %8.1f %8.1f\n", "a 10 ms sleep (the client's cache poll)", s["p50"], s["p95"], s["p99"], s["max"])
	}
}
