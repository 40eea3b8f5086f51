package bench_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/cmd/sluice/app"
	"github.com/sluicecdc/sluice/cmd/sluice/internal/bench"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// sluice bench on the test servers, small: every phase runs (the
// incremental snapshot phase too), the target ends equal to the source,
// the snapshotted table included, lag is measured, and the digest
// comparison does catch a changed row.
func TestBenchSmall(t *testing.T) {
	schematest.NeedServers(t, "SLUICE_MYSQL_HOST", "SLUICE_PG_DSN") // skips (fails in CI) without servers
	env, err := bench.EnvFromOS()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := bench.SmallOptions(func(ctx context.Context, cfg *plugin.Config, log *slog.Logger) (*engine.Pipeline, error) {
		return app.Build(ctx, cfg, "", log)
	})
	rep, err := bench.RunBench(ctx, env, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// The live phase asks 500 rows/s for 1 s; a loaded machine writes
	// fewer (95 seen at load 36), so only require enough for percentiles.
	// The bench table holds the load's rows and those of the live phase
	// and of the incremental snapshot phase's two.
	if rep.Events != 4500 || rep.LiveRows < 20 || rep.Incremental == nil {
		t.Fatalf("report: %+v", rep)
	}
	in := rep.Incremental
	if want := fmt.Sprintf("%d rows equal", o.Rows()+rep.LiveRows+in.Without.Rows+in.During.Rows); !strings.HasPrefix(rep.Verified, want) {
		t.Fatalf("verified %q, want %q", rep.Verified, want)
	}
	for name, s := range map[string]float64{"load": rep.LoadSeconds, "raw source": rep.RawSourceSeconds, "raw target": rep.RawTargetSeconds,
		"sluice": rep.SluiceSeconds, "source JSON": rep.SourceJSONSeconds,
		"raw source at once": rep.RawAtOnceSourceSeconds, "raw target at once": rep.RawAtOnceTargetSeconds} {
		if s <= 0 {
			t.Errorf("%s took %v s", name, s)
		}
	}
	if rep.LagMillis["p50"] <= 0 || rep.LagMillis["max"] < rep.LagMillis["p99"] || rep.SluicePeakHeap <= 0 {
		t.Errorf("lag %v, heap %v", rep.LagMillis, rep.SluicePeakHeap)
	}
	if rep.RawAtOnceSeconds != max(rep.RawAtOnceSourceSeconds, rep.RawAtOnceTargetSeconds) || rep.CPU["raw at once"] == nil {
		t.Errorf("raw sides at once: %v s (source %v, target %v), CPU %v", rep.RawAtOnceSeconds, rep.RawAtOnceSourceSeconds,
			rep.RawAtOnceTargetSeconds, rep.CPU["raw at once"])
	}
	if in.Rows != o.IncrementalRows() || in.Seconds <= 0 || in.Without.Rows == 0 || in.During.Rows == 0 ||
		in.Without.LagMillis["p99"] <= 0 || in.During.LagMillis["p99"] <= 0 || in.P99Ratio <= 0 ||
		!strings.Contains(rep.Verified, fmt.Sprintf("snap: %d rows equal", o.IncrementalRows())) {
		t.Errorf("incremental snapshot phase: %+v, verified %q", rep.Incremental, rep.Verified)
	}
	var out bytes.Buffer
	bench.PrintReport(&out, rep)
	if !strings.Contains(out.String(), "sluice end to end (catch-up)") || !strings.Contains(out.String(), "verified: ") ||
		!strings.Contains(out.String(), "of the raw sides at once") || !strings.Contains(out.String(), "p99 during / p99 without") {
		t.Errorf("report text:\n%s", out.String())
	}

	srcDSN, tgtDSN := env.DSNs()
	src, err := sql.Open("mysql", srcDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tgt, err := sql.Open("postgres", tgtDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	// The raw target at once wrote every row again into its emptied table.
	var rawRows int
	if err := tgt.QueryRow("SELECT count(*) FROM " + bench.DB + "_raw.events").Scan(&rawRows); err != nil || rawRows != o.Rows() {
		t.Errorf("raw table after the raw sides at once: %d rows (%v), want %d", rawRows, err, o.Rows())
	}
	if _, err := tgt.Exec("UPDATE " + bench.DB + "." + bench.Table + " SET note = 'changed' WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	if _, err := bench.Verify(ctx, src, tgt); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("a changed target row was not noticed: %v", err)
	}
}
