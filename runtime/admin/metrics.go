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
