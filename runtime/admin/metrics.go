package admin

import (
	"fmt"
	"io"
	"sort"
)

// WriteWorkerMetrics writes the per-worker series GET /metrics adds to the
// process' own (MetricsWriter), from the workers the Cluster lists:
//
//	sluice_worker_alive{worker}  1 while the worker heartbeats in time, 0 once expired
//	sluice_worker_tasks{worker}  tasks the worker holds
func WriteWorkerMetrics(w io.Writer, ws []WorkerInfo) {
	ws = append([]WorkerInfo(nil), ws...)
	sort.Slice(ws, func(i, j int) bool { return ws[i].ID < ws[j].ID })
	fmt.Fprintf(w, "# HELP sluice_worker_alive 1 while the worker heartbeats in time (as the coordinator sees it), 0 once it expired.\n# TYPE sluice_worker_alive gauge\n")
	for _, wk := range ws {
		alive := 0
		if wk.Alive {
			alive = 1
		}
		fmt.Fprintf(w, "sluice_worker_alive{worker=%q} %d\n", wk.ID, alive)
	}
	fmt.Fprintf(w, "# HELP sluice_worker_tasks Tasks the worker holds.\n# TYPE sluice_worker_tasks gauge\n")
	for _, wk := range ws {
		fmt.Fprintf(w, "sluice_worker_tasks{worker=%q} %d\n", wk.ID, len(wk.Tasks))
	}
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

// WorkerMetricsReporter is an optional capability of a Cluster: the
// serving worker's own lease and membership figures for GET /metrics.
type WorkerMetricsReporter interface {
	WorkerMetrics() WorkerMetrics
}

// WriteSelfMetrics writes m, labelled worker="<id>":
//
//	sluice_worker_tasks_held, sluice_worker_live_workers, sluice_worker_fair_share,
//	sluice_worker_heartbeat_age_seconds (gauges);
//	sluice_worker_lease_renewals_total, sluice_worker_lease_renew_failures_total,
//	sluice_worker_leases_acquired_total, sluice_worker_leases_lost_total,
//	sluice_worker_handoffs_total (counters)
func WriteSelfMetrics(w io.Writer, m WorkerMetrics) {
	for _, s := range []struct {
		name, typ, help string
		v               any
	}{
		{"sluice_worker_tasks_held", "gauge", "Tasks this worker holds a lease on.", m.TasksHeld},
		{"sluice_worker_live_workers", "gauge", "Live workers this worker counts when it takes its fair share.", m.LiveWorkers},
		{"sluice_worker_fair_share", "gauge", "Tasks this worker takes at most: its fair share of the live workers.", m.FairShare},
		{"sluice_worker_heartbeat_age_seconds", "gauge", "Seconds since this worker's last heartbeat was stored.", m.HeartbeatAgeSeconds},
		{"sluice_worker_lease_renewals_total", "counter", "Lease renewals that succeeded.", m.LeaseRenewals},
		{"sluice_worker_lease_renew_failures_total", "counter", "Lease renewals that failed (the database out of reach, or the lease taken).", m.LeaseRenewFailures},
		{"sluice_worker_leases_acquired_total", "counter", "Leases this worker took.", m.LeasesAcquired},
		{"sluice_worker_leases_lost_total", "counter", "Leases this worker lost before giving them up.", m.LeasesLost},
		{"sluice_worker_handoffs_total", "counter", "Tasks this worker handed off to balance the cluster.", m.Handoffs},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s{worker=%q} %v\n", s.name, s.help, s.name, s.typ, s.name, m.Worker, s.v)
	}
}
