package engine

import (
	"io"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// Metrics holds a pipeline's counters; Collector turns them, and the
// pipeline's progress, into Prometheus metrics when scraped. A restarted
// pipeline keeps its predecessor's Metrics (Worker), so counters only grow
// while the task lives.
type Metrics struct {
	mu          sync.Mutex
	recordsIn   map[tableOp]*atomic.Int64
	recordsOut  map[tableOp]*atomic.Int64
	errors      map[errorKey]*atomic.Int64
	lagMs       atomic.Int64 // now - source timestamp of the newest applied change
	applyBucket [len(applyBounds) + 1]atomic.Int64
	applySumUs  atomic.Int64
	applyCount  atomic.Int64
}

// tableOp labels a record count: the table ("db.table") and the record's
// op as Debezium writes it (c, u, d, r, t).
type tableOp struct {
	table string
	op    schema.Op
}

// errorKey labels an error count: its class (schema.Class: retriable,
// fatal, unknown) and where it happened (errorApply, errorRun).
type errorKey struct {
	class schema.Class
	stage string
}

// Stages of sluice_errors_total.
const (
	errorApply = "apply" // a batch the sink failed to apply
	errorRun   = "run"   // a run of the pipeline that ended with an error (restarted, or FAILED)
)

// applyBounds are the apply-latency histogram's upper bounds in seconds.
var applyBounds = [...]float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

func newMetrics() *Metrics {
	return &Metrics{recordsIn: map[tableOp]*atomic.Int64{}, recordsOut: map[tableOp]*atomic.Int64{}, errors: map[errorKey]*atomic.Int64{}}
}

// counter returns by[k], made on first use.
func counter[K comparable](m *Metrics, by map[K]*atomic.Int64, k K) *atomic.Int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := by[k]
	if !ok {
		c = new(atomic.Int64)
		by[k] = c
	}
	return c
}

// countError counts err, of the stage where it happened, by its class.
func (m *Metrics) countError(stage string, err error) {
	counter(m, m.errors, errorKey{schema.ClassOf(err), stage}).Add(1)
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

// snapshotCounts returns the counts of by as they are now.
func snapshotCounts[K comparable](m *Metrics, by map[K]*atomic.Int64) map[K]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[K]int64, len(by))
	for k, c := range by {
		out[k] = c.Load()
	}
	return out
}

// LeftOutReporter is an optional capability of a Sink: the records it left
// out instead of failing (sink on_error "skip" and "dlq"), for /metrics.
type LeftOutReporter interface {
	LeftOut() (skipped, deadLettered int64)
}

// progressMetrics are the ProgressReporter keys /metrics exports, each as
// its own gauge sluice_<key> (keys not listed here are in status only).
var progressMetrics = []struct{ key, help string }{
	{"snapshot_running", "1 while the source's snapshot runs, 0 otherwise."},
	{"snapshot_tables", "Tables the source's snapshot copies."},
	{"snapshot_tables_done", "Tables the source's snapshot has copied whole."},
	{"snapshot_rows", "Rows the source's snapshot has read."},
	{"snapshot_estimated_rows", "Rows the snapshot's tables hold by the server's estimate (approximate)."},
	{"snapshot_elapsed_seconds", "Seconds the running snapshot has taken so far."},
	{"incremental_snapshot_running", "1 while an incremental snapshot is queued or read, 0 otherwise."},
	{"incremental_snapshot_paused", "1 while the incremental snapshot is paused by pause-snapshot."},
	{"incremental_snapshot_tables", "Tables of the newest incremental snapshot (done and queued)."},
	{"incremental_snapshot_tables_done", "Tables the newest incremental snapshot has read whole."},
	{"incremental_snapshot_chunks", "Chunks the newest incremental snapshot has emitted."},
	{"incremental_snapshot_rows", "Rows the newest incremental snapshot has emitted."},
	{"incremental_snapshot_table_rows", "Rows the incremental snapshot has emitted of the table it reads."},
	{"incremental_snapshot_table_estimated_rows", "Rows of the table the incremental snapshot reads, by the server's estimate (approximate; 0: unknown)."},
	{"replicator_messages", "Messages the RocketMQ replicator copied since its start."},
	{"replicator_skipped", "Messages the RocketMQ replicator read and did not copy (tag or property filter, or a copy from the target cluster) since its start."},
	{"replicator_bytes", "Body bytes the RocketMQ replicator copied since its start."},
	{"replicator_latency_seconds", "Seconds from the newest copied message's born time on the source cluster to the target's SEND_OK."},
	{"replicator_heartbeat_age_seconds", "Seconds from the born time on the source cluster of the newest heartbeat the target acknowledged to now (the replication latency, plus up to a heartbeat_interval)."},
	{"replicator_checkpoint_age_seconds", "Seconds since the RocketMQ replicator last checkpointed its groups."},
	{"replicator_offset_sync_age_seconds", "Seconds since the oldest offset sync of a queue with copies made after its last sync (0: every copy synced)."},
	{"replicator_send_errors", "Sends to the target cluster that failed (each try counted) since the RocketMQ replicator started."},
}

// queueMetrics are the QueueProgressReporter keys /metrics exports, each as
// its own gauge sluice_<key> labelled queue="<name>".
var queueMetrics = []struct{ key, help string }{
	{"replicator_lag_messages", "Messages of a source queue (topic/broker/queue) that the RocketMQ replicator has not read yet, as of its last pull of the queue."},
}

// Collector is a prometheus.Collector of the pipelines a list function
// returns at each scrape: every series is labelled pipeline="<name>", and
// task="<task>" when the collector was made for tasks (a worker hosting a
// connector's source and sink tasks runs pipelines of the same name).
type Collector struct {
	list       func() ([]*Pipeline, []string)
	tasks      bool
	descs      map[string]*prometheus.Desc
	byKey      map[string]*prometheus.Desc // progressMetrics by key
	byQueueKey map[string]*prometheus.Desc // queueMetrics by key
}

// metricDef is one metric of the Collector: its name, help and the labels
// it has besides pipeline (and task).
type metricDef struct {
	name, help string
	labels     []string
}

var pipelineMetrics = []metricDef{
	{"sluice_records_in_total", "Data records read from the source, by table and op (Debezium's c, u, d, r, t).", []string{"table", "op"}},
	{"sluice_records_out_total", "Data records the sink applied, by table and op (Debezium's c, u, d, r, t).", []string{"table", "op"}},
	{"sluice_records_skipped_total", "Records the target rejected for good that the sink logged and left out (on_error: skip).", nil},
	{"sluice_records_dead_lettered_total", "Records the target rejected for good that the sink sent to the dead-letter topic (on_error: dlq).", nil},
	{"sluice_errors_total", "Errors by class (retriable, fatal, unknown) and stage: apply, a batch the sink failed to apply; run, a run of the pipeline that ended with the error (it restarts, or fails when fatal).", []string{"class", "stage"}},
	{"sluice_apply_seconds", "Time the sink took to apply one batch.", nil},
	{"sluice_lag_seconds", "Seconds the committed position trails the source (heartbeats included; 0 when caught up); for a sink-only process, the lag of the newest applied batch.", nil},
	{"sluice_caught_up", "1 when nothing is in flight and the source server logged nothing after the committed position, 0 otherwise.", nil},
	{"sluice_unconsumed_topics", "Topics the source publishes to that no consumer group reads (RocketMQ): their records reach no sink.", nil},
	{"sluice_unreachable_brokers", "Brokers the source's publisher waits for (RocketMQ: no live master); their queues' records wait until they return.", nil},
	{"sluice_unreachable_seconds", "Seconds since the longest-waited-for broker became unreachable (0 when none).", nil},
	{"sluice_source_behind_bytes", "Bytes of binary log the source server wrote after the committed position (same file only).", nil},
	{"sluice_source_behind_transactions", "Transactions the source server logged after the committed position (MariaDB GTIDs).", nil},
	{"sluice_snapshot_eta_seconds", "Estimated seconds until the running snapshot ends.", nil},
	{"sluice_in_flight_records", "Records published but not yet acknowledged.", nil},
	{"sluice_in_flight_bytes", "Estimated bytes of the records published but not yet acknowledged.", nil},
	{"sluice_up", "1 while the pipeline runs, 0 otherwise.", nil},
	{"sluice_failed", "1 when the pipeline stopped with a fatal error (state FAILED, see its status' last_error), 0 otherwise.", nil},
}

// NewCollector returns the Collector of the pipelines list returns; with
// tasks, list's second result names each pipeline's task.
func NewCollector(list func() ([]*Pipeline, []string), tasks bool) *Collector {
	base := []string{"pipeline"}
	if tasks {
		base = append(base, "task")
	}
	c := &Collector{list: list, tasks: tasks, descs: map[string]*prometheus.Desc{}, byKey: map[string]*prometheus.Desc{},
		byQueueKey: map[string]*prometheus.Desc{}}
	for _, d := range pipelineMetrics {
		c.descs[d.name] = prometheus.NewDesc(d.name, d.help, append(slices.Clone(base), d.labels...), nil)
	}
	for _, pm := range progressMetrics {
		c.byKey[pm.key] = prometheus.NewDesc("sluice_"+pm.key, pm.help, base, nil)
	}
	for _, qm := range queueMetrics {
		c.byQueueKey[qm.key] = prometheus.NewDesc("sluice_"+qm.key, qm.help, append(slices.Clone(base), "queue"), nil)
	}
	return c
}

// Describe sends the descriptors of every metric the Collector makes.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	for _, d := range c.byKey {
		ch <- d
	}
	for _, d := range c.byQueueKey {
		ch <- d
	}
}

// Collect sends each pipeline's metrics as they are now.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ps, tasks := c.list()
	now := time.Now()
	for i, p := range ps {
		labels := []string{p.Name}
		if c.tasks {
			task := ""
			if i < len(tasks) {
				task = tasks[i]
			}
			labels = append(labels, task)
		}
		c.collect(ch, p, labels, now)
	}
}

func (c *Collector) collect(ch chan<- prometheus.Metric, p *Pipeline, labels []string, now time.Time) {
	m := p.metrics()
	with := func(extra ...string) []string { return append(slices.Clone(labels), extra...) }
	counter := func(name string, v int64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.CounterValue, float64(v), with(extra...)...)
	}
	gauge := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, labels...)
	}
	boolean := func(name string, b bool) {
		v := 0.0
		if b {
			v = 1
		}
		gauge(name, v)
	}
	for name, by := range map[string]map[tableOp]*atomic.Int64{"sluice_records_in_total": m.recordsIn, "sluice_records_out_total": m.recordsOut} {
		for k, v := range snapshotCounts(m, by) {
			counter(name, v, k.table, k.op.String())
		}
	}
	if lo, ok := p.Sink.(LeftOutReporter); ok {
		skipped, dead := lo.LeftOut()
		counter("sluice_records_skipped_total", skipped)
		counter("sluice_records_dead_lettered_total", dead)
	}
	for k, v := range snapshotCounts(m, m.errors) {
		counter("sluice_errors_total", v, k.class.String(), k.stage)
	}
	buckets := make(map[float64]uint64, len(applyBounds))
	var cum uint64
	for i, b := range applyBounds {
		cum += uint64(m.applyBucket[i].Load())
		buckets[b] = cum
	}
	ch <- prometheus.MustNewConstHistogram(c.descs["sluice_apply_seconds"], uint64(m.applyCount.Load()), float64(m.applySumUs.Load())/1e6, buckets, labels...)

	prog := p.progress(now)
	gauge("sluice_lag_seconds", prog.lagSeconds)
	if prog.caughtUp != nil {
		boolean("sluice_caught_up", *prog.caughtUp)
	}
	if _, ok := p.Publisher.(runtime.TopicReporter); ok {
		gauge("sluice_unconsumed_topics", float64(len(prog.unconsumed)))
	}
	if _, ok := p.Publisher.(runtime.OutageReporter); ok {
		gauge("sluice_unreachable_brokers", float64(len(prog.unreachable)))
		longest := 0.0
		for _, u := range prog.unreachable {
			longest = max(longest, now.Sub(u.Since).Seconds())
		}
		gauge("sluice_unreachable_seconds", float64(int64(longest)))
	}
	if prog.bytes != nil {
		gauge("sluice_source_behind_bytes", float64(*prog.bytes))
	}
	if prog.txs != nil {
		gauge("sluice_source_behind_transactions", float64(*prog.txs))
	}
	if s := prog.snapshot; s != nil && s.ETASeconds != nil {
		gauge("sluice_snapshot_eta_seconds", float64(int64(*s.ETASeconds+0.5)))
	}
	gauge("sluice_in_flight_records", float64(prog.inFlight)) // the count lag and caught-up were judged with
	_, b := p.InFlightBytes()
	gauge("sluice_in_flight_bytes", float64(b))
	state := p.Status().State
	boolean("sluice_up", state == StateRunning)
	boolean("sluice_failed", state == StateFailed)
	if pr, ok := p.Source.(runtime.ProgressReporter); ok {
		for k, v := range pr.Progress() {
			if d := c.byKey[k]; d != nil {
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
			}
		}
	}
	if qr, ok := p.Source.(runtime.QueueProgressReporter); ok {
		for k, qs := range qr.QueueProgress() {
			if d := c.byQueueKey[k]; d != nil {
				for q, v := range qs {
					ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(slices.Clone(labels), q)...)
				}
			}
		}
	}
}

// WritePrometheus writes the metrics of pipelines in the text exposition
// format, labelled by pipeline name (for tests and tools; the REST API
// serves a registry with the process' collectors too).
func WritePrometheus(w io.Writer, ps []*Pipeline) error {
	return writeCollector(w, NewCollector(func() ([]*Pipeline, []string) { return ps, nil }, false))
}

// WriteTaskMetrics is WritePrometheus for a worker hosting tasks: tasks[i]
// labels ps[i]'s series task="...".
func WriteTaskMetrics(w io.Writer, ps []*Pipeline, tasks []string) error {
	return writeCollector(w, NewCollector(func() ([]*Pipeline, []string) { return ps, tasks }, true))
}

func writeCollector(w io.Writer, c prometheus.Collector) error {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		return err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}
