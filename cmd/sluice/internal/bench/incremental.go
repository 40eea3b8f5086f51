package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sluicecdc/sluice/runtime"
)

// The incremental snapshot phase (--incremental-rows): a second table,
// loaded before the binlog position sluice starts at (so neither the raw
// baselines nor the catch-up read its rows), is snapshotted incrementally
// while rows stream into the bench table at --incremental-rate. The
// stream's lag is measured twice in the same run: for --live-for without
// the snapshot, then from the execute-snapshot signal until the
// snapshot's last row is applied. The source runs in read-only mode (no
// signal table: the signal goes to the running source, the chunks'
// watermarks are the server's GTID state), with the default
// snapshot_chunk or --incremental-chunk.

// snapTable is the table the incremental snapshot phase reads.
const snapTable = "snap"

// incrementalResult is the incremental snapshot phase of the report.
type incrementalResult struct {
	Rows    int     `json:"rows"`            // of the table snapshotted
	Rate    int     `json:"rate"`            // rows/s streamed
	Chunk   int     `json:"chunk,omitempty"` // --incremental-chunk (0: the source's default)
	Seconds float64 `json:"seconds"`         // from the signal to the snapshot's last row applied
	// Without and During: the stream's lag without the snapshot and while
	// it runs
	Without liveResult `json:"without"`
	During  liveResult `json:"during"`
	// P99Ratio is During's p99 over Without's (the goal: at most 2)
	P99Ratio float64 `json:"p99_ratio"`
	// LoadAverage: the machine's 1-minute load average before the phase and
	// after it (/proc/loadavg)
	LoadAverage [2]string `json:"load_average"`
}

// loadSnapTable creates the table of the incremental snapshot phase with
// rows rows, 100,000 a statement.
func loadSnapTable(ctx context.Context, db *sql.DB, rows int) error {
	q := "CREATE TABLE " + benchDB + "." + snapTable + " (id BIGINT PRIMARY KEY, account INT NOT NULL, amount DECIMAL(12,2) NOT NULL, note VARCHAR(64), created DATETIME(6) NOT NULL)"
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("bench: create the table of the incremental snapshot: %w", err)
	}
	digit := "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	var from []string
	seq := "0"
	for i, mul := 0, 1; mul < 100_000; i, mul = i+1, mul*10 {
		from = append(from, fmt.Sprintf("%s d%d", digit, i))
		seq += fmt.Sprintf(" + d%d.d * %d", i, mul)
	}
	for base := 0; base < rows; base += 100_000 {
		id := fmt.Sprintf("(%d + %s)", base+1, seq)
		q := "INSERT INTO " + benchDB + "." + snapTable + " SELECT id, id % 1000, MOD(id * 7919, 10000000) / 100, CONCAT('snap ', id), UTC_TIMESTAMP(6) FROM (SELECT " +
			id + " AS id FROM " + strings.Join(from, ", ") + ") g WHERE id <= ?"
		if _, err := db.ExecContext(ctx, q, rows); err != nil {
			return fmt.Errorf("bench: load the table of the incremental snapshot: %w", err)
		}
	}
	return nil
}

// incrementalPhase runs the incremental snapshot phase (nothing without
// --incremental-rows).
func (b *benchRun) incrementalPhase(ctx context.Context, live *benchPipeline) error {
	o := b.o
	if o.incrRows <= 0 {
		return nil
	}
	res := &incrementalResult{Rows: o.incrRows, Rate: o.incrRate, Chunk: o.incrChunk}
	res.LoadAverage[0] = loadAverage()
	b.log.Info("bench: lag without an incremental snapshot", "rate", o.incrRate, "for", o.liveFor)
	var err error
	if res.Without, err = b.livePhase(ctx, live, o.incrRate, o.liveFor, nil); err != nil {
		return err
	}
	sg, _ := live.signaler.Load().(runtime.Signaler)
	if sg == nil {
		return fmt.Errorf("bench: the pipeline's source takes no snapshot signals")
	}
	b.log.Info("bench: lag during an incremental snapshot", "rate", o.incrRate, "rows", o.incrRows)
	done := make(chan struct{})
	var snapErr error
	t0 := time.Now()
	if _, err := sg.Signal(ctx, "", "execute-snapshot", fmt.Sprintf(`{"data-collections": ["%s.%s"], "type": "incremental"}`, benchDB, snapTable)); err != nil {
		return fmt.Errorf("bench: start the incremental snapshot: %w", err)
	}
	go func() {
		defer close(done)
		snapErr = live.sink.awaitSnapshot(ctx, int64(o.incrRows))
		res.Seconds = time.Since(t0).Seconds()
	}()
	// until the snapshot's last row is applied (or ctx ends)
	res.During, err = b.livePhase(ctx, live, o.incrRate, 24*time.Hour, done)
	<-done
	if err == nil && snapErr != nil {
		err = fmt.Errorf("bench: the incremental snapshot: %w (%s)", snapErr, live.status())
	}
	if err != nil {
		return err
	}
	if w := res.Without.LagMillis["p99"]; w > 0 {
		res.P99Ratio = res.During.LagMillis["p99"] / w
	}
	res.LoadAverage[1] = loadAverage()
	b.rep.Incremental = res
	return nil
}

// loadAverage is the first field of /proc/loadavg ("" where there is none).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func printIncremental(w io.Writer, r *incrementalResult) {
	chunk := "default"
	if r.Chunk > 0 {
		chunk = fmt.Sprint(r.Chunk)
	}
	fmt.Fprintf(w, "\nincremental snapshot of %d rows (snapshot_chunk %s) while streaming %d rows/s: %.1f s from the signal to its last row applied (%.0f rows/s); load average %s before, %s after\n",
		r.Rows, chunk, r.Rate, r.Seconds, float64(r.Rows)/r.Seconds, r.LoadAverage[0], r.LoadAverage[1])
	fmt.Fprint(w, "without the snapshot:")
	printLive(w, r.Without)
	fmt.Fprint(w, "during the snapshot:")
	printLive(w, r.During)
	fmt.Fprintf(w, "p99 during / p99 without: %.2f (goal: at most 2)\n", r.P99Ratio)
}
