package admin

import (
	"context"
	"log/slog"
	"net/http"
	goruntime "runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsCollector is an optional capability of a Cluster: the process'
// own metrics for GET /metrics (per pipeline and per task it hosts,
// engine.Collector).
type MetricsCollector interface {
	MetricsCollector() prometheus.Collector
}

// WorkerMetrics is a cluster worker's view of itself (the fields of the
// cluster worker's own Metrics, so one converts to the other).
type WorkerMetrics struct {
	Worker              string
	TasksHeld           int
	LiveWorkers         int64
	FairShare           int64
	LeaseRenewals       int64
	LeaseRenewFailures  int64
	LeasesLost          int64
	LeasesAcquired      int64
	Handoffs            int64
	HeartbeatAgeSeconds float64
}

// WorkerMetricsReporter is an optional capability of a Cluster of workers
// (sluice worker): the serving worker's own lease and membership figures
// for GET /metrics. Only such a Cluster's GET /metrics carries the
// sluice_worker_* series: `sluice run` is one process, not a cluster.
type WorkerMetricsReporter interface {
	WorkerMetrics() WorkerMetrics
}

// metricsHandler serves GET /metrics from a registry of: the Go runtime's
// and the process' collectors (go_*, process_*), sluice_build_info, the
// Cluster's own metrics (MetricsCollector) and, for a cluster worker, the
// sluice_worker_* series. A collector that fails leaves its series out;
// the others are still served.
func metricsHandler(c Cluster) http.Handler {
	return promhttp.HandlerFor(metricsRegistry(c), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, ErrorLog: scrapeLog{}})
}

// metricsRegistry is the registry metricsHandler serves.
func metricsRegistry(c Cluster) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	v := Version()
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_build_info",
		Help:        "1, labelled with the version and commit sluice was built from and the Go version that built it.",
		ConstLabels: prometheus.Labels{"version": v.Version, "commit": v.Commit, "goversion": goruntime.Version()}})
	info.Set(1)
	cs := []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), info}
	if m, ok := c.(MetricsCollector); ok {
		cs = append(cs, m.MetricsCollector())
	}
	if m, ok := c.(WorkerMetricsReporter); ok {
		cs = append(cs, newWorkerCollector(c, m))
	}
	reg.MustRegister(cs...)
	return reg
}

// scrapeLog logs what a scrape could not collect.
type scrapeLog struct{}

func (scrapeLog) Println(v ...any) { slog.Warn("metrics: a collector failed", "err", v) }

// workerMetricDefs are the series of a cluster worker, labelled worker:
// the serving worker's own figures (from WorkerMetrics) and the alive and
// tasks of every worker the coordinator lists.
var workerMetricDefs = []struct {
	name, help string
	typ        prometheus.ValueType
	value      func(WorkerMetrics) float64
}{
	{"sluice_worker_tasks_held", "Tasks this worker holds a lease on.", prometheus.GaugeValue, func(m WorkerMetrics) float64 { return float64(m.TasksHeld) }},
	{"sluice_worker_live_workers", "Live workers this worker counts when it takes its fair share.", prometheus.GaugeValue, func(m WorkerMetrics) float64 { return float64(m.LiveWorkers) }},
	{"sluice_worker_fair_share", "Tasks this worker takes at most: its fair share of the live workers.", prometheus.GaugeValue, func(m WorkerMetrics) float64 { return float64(m.FairShare) }},
	{"sluice_worker_heartbeat_age_seconds", "Seconds since this worker's last heartbeat was stored.", prometheus.GaugeValue, func(m WorkerMetrics) float64 { return m.HeartbeatAgeSeconds }},
	{"sluice_worker_lease_renewals_total", "Lease renewals that succeeded.", prometheus.CounterValue, func(m WorkerMetrics) float64 { return float64(m.LeaseRenewals) }},
	{"sluice_worker_lease_renew_failures_total", "Lease renewals that failed (the database out of reach, or the lease taken).", prometheus.CounterValue, func(m WorkerMetrics) float64 { return float64(m.LeaseRenewFailures) }},
	{"sluice_worker_leases_acquired_total", "Leases this worker took.", prometheus.CounterValue, func(m WorkerMetrics) float64 { return float64(m.LeasesAcquired) }},
	{"sluice_worker_leases_lost_total", "Leases this worker lost before giving them up.", prometheus.CounterValue, func(m WorkerMetrics) float64 { return float64(m.LeasesLost) }},
	{"sluice_worker_handoffs_total", "Tasks this worker handed off to balance the cluster.", prometheus.CounterValue, func(m WorkerMetrics) float64 { return float64(m.Handoffs) }},
}

// workersTimeout bounds the coordinator query of a scrape.
const workersTimeout = 10 * time.Second

type workerCollector struct {
	c            Cluster
	self         WorkerMetricsReporter
	descs        []*prometheus.Desc // workerMetricDefs'
	alive, tasks *prometheus.Desc
}

func newWorkerCollector(c Cluster, self WorkerMetricsReporter) *workerCollector {
	w := &workerCollector{c: c, self: self,
		alive: prometheus.NewDesc("sluice_worker_alive", "1 while the worker heartbeats in time (as the coordinator sees it), 0 once it expired.", []string{"worker"}, nil),
		tasks: prometheus.NewDesc("sluice_worker_tasks", "Tasks the worker holds (as the coordinator lists them).", []string{"worker"}, nil)}
	for _, d := range workerMetricDefs {
		w.descs = append(w.descs, prometheus.NewDesc(d.name, d.help, []string{"worker"}, nil))
	}
	return w
}

func (w *workerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range w.descs {
		ch <- d
	}
	ch <- w.alive
	ch <- w.tasks
}

func (w *workerCollector) Collect(ch chan<- prometheus.Metric) {
	m := w.self.WorkerMetrics()
	if m.Worker != "" { // "" until the worker started
		for i, d := range workerMetricDefs {
			ch <- prometheus.MustNewConstMetric(w.descs[i], d.typ, d.value(m), m.Worker)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), workersTimeout)
	defer cancel()
	ws, err := w.c.Workers(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(w.alive, err)
		return
	}
	for _, wk := range ws {
		alive := 0.0
		if wk.Alive {
			alive = 1
		}
		ch <- prometheus.MustNewConstMetric(w.alive, prometheus.GaugeValue, alive, wk.ID)
		ch <- prometheus.MustNewConstMetric(w.tasks, prometheus.GaugeValue, float64(len(wk.Tasks)), wk.ID)
	}
}
