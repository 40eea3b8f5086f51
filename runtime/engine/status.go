package engine

import (
	"context"
	"sync"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// SnapshotStatus is a source's initial snapshot progress, read from its
// ProgressReporter (snapshot_* gauges).
type SnapshotStatus struct {
	Running       bool    `json:"running"`
	Tables        int64   `json:"tables"`
	TablesDone    int64   `json:"tables_done"`
	Rows          int64   `json:"rows"`
	EstimatedRows int64   `json:"estimated_rows"` // the server's estimate: approximate
	RowsPerSecond float64 `json:"rows_per_second,omitempty"`
	// ETASeconds: rows left of the estimate at the rate so far; absent when
	// not running or when the rows already exceed the estimate.
	ETASeconds *float64 `json:"eta_seconds,omitempty"`
}

// backlogEvery is how often, at most, the source's backlog is polled;
// backlogStale is when a poll result is too old to use.
const (
	backlogEvery   = time.Second
	backlogTimeout = 5 * time.Second
	backlogStale   = 15 * time.Second
	// heartbeatFresh: without a backlog, how old the newest heartbeat may
	// be for the source to count as caught up (3 of the binlog source's
	// default 10 s heartbeats).
	heartbeatFresh = 30 * time.Second
)

// backlogState caches the source's backlog between polls.
type backlogState struct {
	mu      sync.Mutex
	started time.Time // last poll start
	polling bool
	at      time.Time // last successful poll
	bytes   int64
	txs     int64
}

// progress is what status and metrics report beyond the counters.
type progress struct {
	lagSeconds  float64
	caughtUp    *bool
	bytes, txs  *int64
	snapshot    *SnapshotStatus
	incr        *runtime.IncrementalSnapshotStatus
	inFlight    int // the records in flight that lag and caught-up were judged with
	unconsumed  []string
	unreachable []runtime.Unreachable
}

// progress computes caught-up, lag, backlog and snapshot progress. It never
// blocks on the source: a stale backlog is refreshed in the background.
func (p *Pipeline) progress(now time.Time) progress {
	var out progress
	out.lagSeconds = p.metrics().LagSeconds() // a sink side's apply lag
	if pr, ok := p.Source.(runtime.ProgressReporter); ok {
		out.snapshot = snapshotStatus(pr.Progress())
	}
	if ir, ok := p.Source.(runtime.IncrementalReporter); ok {
		out.incr = ir.IncrementalSnapshot()
	}
	if tr, ok := p.Publisher.(runtime.TopicReporter); ok {
		out.unconsumed = tr.UnconsumedTopics()
	}
	if or, ok := p.Publisher.(runtime.OutageReporter); ok {
		out.unreachable = or.Unreachable()
	}
	w := p.win.Load()
	if st := p.Status().State; p.Source == nil || w == nil || st != StateRunning && st != StatePaused {
		out.inFlight = p.InFlight()
		return out // a stopped or failed pipeline is not catching up
	}
	saved, tsMs, idle, inFlight := w.committed()
	out.inFlight = inFlight
	pos := SourcePosition(saved)
	behind := int64(-1)
	if br, ok := p.Source.(runtime.BacklogReporter); ok && saved != nil {
		b := &p.backlog
		b.mu.Lock()
		if !b.polling && now.Sub(b.started) >= backlogEvery {
			b.polling, b.started = true, now
			go p.pollBacklog(br, pos)
		}
		if now.Sub(b.at) < backlogStale {
			bytes, txs := b.bytes, b.txs
			if bytes >= 0 {
				out.bytes = &bytes
			}
			if txs >= 0 {
				out.txs = &txs
			}
			// Behind the server as it was at the poll (at most a second ago):
			// a position committed since is only closer.
			behind = bytes
			if txs >= 0 {
				behind = txs // exact across binlog files
			}
		}
		b.mu.Unlock()
	}
	// Caught up: nothing in flight and the server has nothing more (or,
	// without a backlog, the source's newest committed record is a recent
	// heartbeat: it was idle at the log's end).
	fresh := idle && now.Sub(time.UnixMilli(tsMs)) <= heartbeatFresh
	caught := inFlight == 0 && (behind == 0 || behind < 0 && fresh) && (out.snapshot == nil || !out.snapshot.Running)
	out.caughtUp = &caught
	switch {
	case caught:
		out.lagSeconds = 0
	case tsMs > 0:
		// The source time of the newest committed record, heartbeats
		// included: an idle source keeps it fresh.
		out.lagSeconds = max(0, float64(now.UnixMilli()-tsMs)/1000)
	}
	return out
}

func (p *Pipeline) pollBacklog(br runtime.BacklogReporter, pos []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	bytes, txs, err := br.Backlog(ctx, pos)
	b := &p.backlog
	b.mu.Lock()
	defer b.mu.Unlock()
	b.polling = false
	if err != nil {
		p.log().Debug("cannot read the source's backlog", "pipeline", p.Name, "err", err)
		return
	}
	b.at, b.bytes, b.txs = time.Now(), bytes, txs
}

func snapshotStatus(m map[string]float64) *SnapshotStatus {
	if m["snapshot_tables"] <= 0 {
		return nil
	}
	s := &SnapshotStatus{Running: m["snapshot_running"] == 1, Tables: int64(m["snapshot_tables"]), TablesDone: int64(m["snapshot_tables_done"]),
		Rows: int64(m["snapshot_rows"]), EstimatedRows: int64(m["snapshot_estimated_rows"])}
	if el := m["snapshot_elapsed_seconds"]; s.Running && el > 0 {
		s.RowsPerSecond = float64(s.Rows) / el
		if s.RowsPerSecond > 0 && s.EstimatedRows > s.Rows {
			eta := float64(s.EstimatedRows-s.Rows) / s.RowsPerSecond
			s.ETASeconds = &eta
		}
	}
	return s
}

// batchStamp is the newest source time of a batch (Unix ms) and whether it
// ends with a heartbeat.
type batchStamp struct {
	tsMs int64
	idle bool
}

func batchTime(recs []schema.Record) batchStamp {
	var b batchStamp
	for i := range recs {
		b.tsMs = max(b.tsMs, recs[i].Source.TsMs)
	}
	b.idle = len(recs) > 0 && recs[len(recs)-1].Op == schema.OpHeartbeat
	return b
}

// changes counts the records of a batch that are changes, not markers
// (BEGIN, END, heartbeats): records_read and records_applied count the
// same things, so they meet when the pipeline is idle.
func changes(recs []schema.Record) int64 {
	var n int64
	for i := range recs {
		if !recs[i].Op.IsMarker() {
			n++
		}
	}
	return n
}

// trackers are the pipeline's transport sides that track their topics.
func (p *Pipeline) trackers() []runtime.TopicTracker {
	var out []runtime.TopicTracker
	for _, side := range []any{p.Publisher, p.Subscriber} {
		if tt, ok := side.(runtime.TopicTracker); ok {
			out = append(out, tt)
		}
	}
	return out
}

// topics lists the topics the pipeline's transport used (TopicTracker).
func (p *Pipeline) topics() []string {
	var out []string
	for _, tt := range p.trackers() {
		out = append(out, tt.UsedTopics()...)
	}
	return out
}

// resetTopics forgets them.
func (p *Pipeline) resetTopics() {
	for _, tt := range p.trackers() {
		tt.ResetUsedTopics()
	}
}
