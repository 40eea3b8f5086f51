package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/engine"
)

// snapshotProgress is what the terminal progress line shows.
type snapshotProgress struct {
	tables, tablesDone, rows, estRows float64
}

func progressOf(m map[string]float64) (snapshotProgress, bool) {
	return snapshotProgress{tables: m["snapshot_tables"], tablesDone: m["snapshot_tables_done"], rows: m["snapshot_rows"],
		estRows: m["snapshot_estimated_rows"]}, m["snapshot_running"] == 1
}

// progressLine renders one line: tables, rows (of the estimate), rate, ETA.
func progressLine(p snapshotProgress, rate float64) string {
	line := fmt.Sprintf("snapshot: tables %.0f/%.0f, rows %.0f", p.tablesDone, p.tables, p.rows)
	if p.estRows > 0 {
		pct := min(100, 100*p.rows/p.estRows)
		line += fmt.Sprintf(" of ~%.0f (%.0f%%)", p.estRows, pct)
	}
	line += fmt.Sprintf(", %.0f rows/s", rate)
	if rate > 0 && p.estRows > p.rows {
		eta := time.Duration((p.estRows - p.rows) / rate * float64(time.Second)).Round(time.Second)
		line += ", ETA " + eta.String()
	}
	return line
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// showSnapshotProgress redraws a progress line on out while a source
// snapshots, until ctx is done. Elsewhere (not a terminal) progress is in
// the logs and in /metrics (sluice_snapshot_rows and the other
// sluice_snapshot_* gauges).
func showSnapshotProgress(ctx context.Context, out io.Writer, w *engine.Worker) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	var lastRows float64
	last := time.Now()
	shown := false
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, p := range w.Pipelines() {
				pr, ok := p.Source.(runtime.ProgressReporter)
				if !ok {
					continue
				}
				sp, running := progressOf(pr.Progress())
				rate := (sp.rows - lastRows) / now.Sub(last).Seconds()
				lastRows, last = sp.rows, now
				switch {
				case running:
					fmt.Fprintf(out, "\r\033[K%s", progressLine(sp, max(rate, 0)))
					shown = true
				case shown:
					fmt.Fprintf(out, "\r\033[Ksnapshot done: %.0f rows from %.0f tables\n", sp.rows, sp.tablesDone)
					shown = false
				}
			}
		}
	}
}
