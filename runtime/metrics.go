package runtime

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics holds a pipeline's Prometheus metrics. It is written by hand (a
// few counters and one histogram) rather than pulling in a client library.
type Metrics struct {
	mu          sync.Mutex
	recordsIn   map[string]*atomic.Int64 // by table
	recordsOut  map[string]*atomic.Int64 // by table
	errors      atomic.Int64
	lagMs       atomic.Int64 // now - source timestamp of the newest applied change
	applyBucket [len(applyBounds) + 1]atomic.Int64
	applySumUs  atomic.Int64
	applyCount  atomic.Int64
}

// applyBounds are the apply-latency histogram's upper bounds in seconds.
var applyBounds = [...]float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func newMetrics() *Metrics {
	return &Metrics{recordsIn: map[string]*atomic.Int64{}, recordsOut: map[string]*atomic.Int64{}}
}

func (m *Metrics) counter(by map[string]*atomic.Int64, table string) *atomic.Int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := by[table]
	if !ok {
		c = new(atomic.Int64)
		by[table] = c
	}
	return c
}

func (m *Metrics) observeApply(d time.Duration) {
	s := d.Seconds()
	i := sort.SearchFloat64s(applyBounds[:], s)
	m.applyBucket[i].Add(1)
	m.applySumUs.Add(d.Microseconds())
	m.applyCount.Add(1)
}

// LagSeconds is the time between a change on the source and its application.
func (m *Metrics) LagSeconds() float64 { return float64(m.lagMs.Load()) / 1000 }

func writeCounters(w io.Writer, m *Metrics, name, help, labels string, by map[string]*atomic.Int64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
	m.mu.Lock()
	tables := make([]string, 0, len(by))
	for t := range by {
		tables = append(tables, t)
	}
	m.mu.Unlock()
	sort.Strings(tables)
	for _, t := range tables {
		fmt.Fprintf(w, "%s{%s,table=%q} %d\n", name, labels, t, m.counter(by, t).Load())
	}
}

// WritePrometheus writes the metrics of pipelines in the text exposition
// format, labelled by pipeline name.
func WritePrometheus(w io.Writer, ps []*Pipeline) { WriteTaskMetrics(w, ps, nil) }

// WriteTaskMetrics is WritePrometheus for a worker hosting tasks: tasks[i]
// (when given) adds task="..." to ps[i]'s series, since a connector's
// source and sink tasks on one worker run pipelines of the same name.
func WriteTaskMetrics(w io.Writer, ps []*Pipeline, tasks []string) {
	labels := make([]string, len(ps))
	for i, p := range ps {
		labels[i] = fmt.Sprintf("pipeline=%q", p.Name)
		if i < len(tasks) && tasks[i] != "" {
			labels[i] += fmt.Sprintf(",task=%q", tasks[i])
		}
	}
	for i, name := range []string{"sluice_records_in_total", "sluice_records_out_total"} {
		help := []string{"Records read from the source, by table.", "Records applied by the sink, by table."}[i]
		for j, p := range ps {
			by := p.metrics().recordsIn
			if i == 1 {
				by = p.metrics().recordsOut
			}
			writeCounters(w, p.metrics(), name, help, labels[j], by)
		}
	}
	now := time.Now()
	prog := make([]progress, len(ps))
	for i, p := range ps {
		prog[i] = p.progress(now)
	}
	// gauge writes one sample per pipeline; val returns "" for none.
	gauge := func(name, help string, val func(i int, p *Pipeline) string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
		for i, p := range ps {
			if v := val(i, p); v != "" {
				fmt.Fprintf(w, "%s{%s} %s\n", name, labels[i], v)
			}
		}
	}
	optional := func(v *int64) string {
		if v == nil {
			return ""
		}
		return fmt.Sprint(*v)
	}
	gauge("sluice_lag_seconds", "Seconds the committed position trails the source (heartbeats included; 0 when caught up); for a sink-only process, the lag of the newest applied batch.", func(i int, p *Pipeline) string {
		return fmt.Sprint(prog[i].lagSeconds)
	})
	gauge("sluice_caught_up", "1 when nothing is in flight and the source server logged nothing after the committed position.", func(i int, p *Pipeline) string {
		if c := prog[i].caughtUp; c != nil {
			return map[bool]string{true: "1", false: "0"}[*c]
		}
		return ""
	})
	gauge("sluice_unconsumed_topics", "Topics the source publishes to that no consumer group reads (RocketMQ): their records reach no sink.", func(i int, p *Pipeline) string {
		if _, ok := p.Publisher.(TopicReporter); !ok {
			return ""
		}
		return fmt.Sprint(len(prog[i].unconsumed))
	})
	gauge("sluice_unreachable_brokers", "Brokers the source's publisher waits for (RocketMQ: no live master); their queues' records wait until they return.", func(i int, p *Pipeline) string {
		if _, ok := p.Publisher.(OutageReporter); !ok {
			return ""
		}
		return fmt.Sprint(len(prog[i].unreachable))
	})
	gauge("sluice_unreachable_seconds", "Seconds since the longest-waited-for broker became unreachable (0 when none).", func(i int, p *Pipeline) string {
		if _, ok := p.Publisher.(OutageReporter); !ok {
			return ""
		}
		s := 0.0
		for _, u := range prog[i].unreachable {
			s = max(s, time.Since(u.Since).Seconds())
		}
		return fmt.Sprintf("%.0f", s)
	})
	gauge("sluice_source_behind_bytes", "Bytes of binary log the source server wrote after the committed position (same file only).", func(i int, p *Pipeline) string {
		return optional(prog[i].bytes)
	})
	gauge("sluice_source_behind_transactions", "Transactions the source server logged after the committed position (MariaDB GTIDs).", func(i int, p *Pipeline) string {
		return optional(prog[i].txs)
	})
	gauge("sluice_snapshot_eta_seconds", "Estimated seconds until the running snapshot ends.", func(i int, p *Pipeline) string {
		if s := prog[i].snapshot; s != nil && s.ETASeconds != nil {
			return fmt.Sprintf("%.0f", *s.ETASeconds)
		}
		return ""
	})
	gauge("sluice_in_flight_records", "Records published but not yet acknowledged.", func(i int, _ *Pipeline) string {
		return fmt.Sprint(prog[i].inFlight) // the count lag and caught-up were judged with
	})
	gauge("sluice_in_flight_bytes", "Estimated bytes of the records published but not yet acknowledged.", func(_ int, p *Pipeline) string {
		_, b := p.InFlightBytes()
		return fmt.Sprint(b)
	})
	gauge("sluice_up", "1 while the pipeline runs, 0 otherwise.", func(_ int, p *Pipeline) string {
		if p.Status().State == StateRunning {
			return "1"
		}
		return "0"
	})
	gauge("sluice_failed", "1 when the pipeline stopped with a fatal error (state FAILED, see its status' last_error), 0 otherwise.", func(_ int, p *Pipeline) string {
		if p.Status().State == StateFailed {
			return "1"
		}
		return "0"
	})
	fmt.Fprintf(w, "# HELP sluice_source_progress Progress a source reports, e.g. snapshot_rows, snapshot_tables_done.\n# TYPE sluice_source_progress gauge\n")
	for i, p := range ps {
		pr, ok := p.Source.(ProgressReporter)
		if !ok {
			continue
		}
		prog := pr.Progress()
		names := make([]string, 0, len(prog))
		for n := range prog {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(w, "sluice_source_progress{%s,name=%q} %g\n", labels[i], n, prog[n])
		}
	}
	fmt.Fprintf(w, "# HELP sluice_errors_total Failed batches and task errors.\n# TYPE sluice_errors_total counter\n")
	for i, p := range ps {
		fmt.Fprintf(w, "sluice_errors_total{%s} %d\n", labels[i], p.metrics().errors.Load())
	}
	fmt.Fprintf(w, "# HELP sluice_apply_seconds Time the sink took to apply one batch.\n# TYPE sluice_apply_seconds histogram\n")
	for j, p := range ps {
		m := p.metrics()
		var cum int64
		for i, b := range applyBounds {
			cum += m.applyBucket[i].Load()
			fmt.Fprintf(w, "sluice_apply_seconds_bucket{%s,le=%q} %d\n", labels[j], trimFloat(b), cum)
		}
		cum += m.applyBucket[len(applyBounds)].Load()
		fmt.Fprintf(w, "sluice_apply_seconds_bucket{%s,le=\"+Inf\"} %d\n", labels[j], cum)
		fmt.Fprintf(w, "sluice_apply_seconds_sum{%s} %g\n", labels[j], float64(m.applySumUs.Load())/1e6)
		fmt.Fprintf(w, "sluice_apply_seconds_count{%s} %d\n", labels[j], m.applyCount.Load())
	}
}

func trimFloat(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.0f", f)
	}
	return strings.TrimRight(fmt.Sprintf("%f", f), "0")
}
