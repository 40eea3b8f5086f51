package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicecdc/sluice/schema"
)

// leftOutSink is a sink that failed every write and reports left-out rows.
type leftOutSink struct{ err error }

func (s leftOutSink) Write(context.Context, []schema.Record) error { return s.err }
func (leftOutSink) Close() error                                   { return nil }
func (leftOutSink) LeftOut() (int64, int64)                        { return 4, 2 }

// TestMetricsCollector: the pipelines' metrics pass the client library's
// lint, count records by op, errors by class and stage (a restarted task
// keeps counting its failed runs) and the sink's left-out rows.
func TestMetricsCollector(t *testing.T) {
	w, snk, _ := runFlaky(t, 2)
	if snk.count() != 300 {
		t.Fatalf("applied %d records, want 300", snk.count())
	}

	// A sink-only pipeline whose batch fails for good, once.
	q := &Pipeline{Name: "q", Sink: leftOutSink{schema.Fatal(errors.New("row refused"))}}
	rec := schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "d", Table: "t"}}
	if err := q.apply(context.Background(), []schema.Record{rec}); err == nil {
		t.Fatal("apply of a failing sink succeeded")
	}

	ps := append(w.Pipelines(), q)
	c := NewCollector(func() ([]*Pipeline, []string) { return ps, nil }, false)
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	var sb strings.Builder
	if err := WritePrometheus(&sb, ps); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{
		`sluice_records_in_total{op="u",pipeline="p",table="d.t"} 300`,
		`sluice_records_out_total{op="u",pipeline="p",table="d.t"} 300`,
		`sluice_errors_total{class="unknown",pipeline="p",stage="run"} 2`, // two failed runs, counted on by the third
		`sluice_errors_total{class="fatal",pipeline="q",stage="apply"} 1`,
		`sluice_records_skipped_total{pipeline="q"} 4`,
		`sluice_records_dead_lettered_total{pipeline="q"} 2`,
		`sluice_apply_seconds_count{pipeline="p"} `,
		`sluice_up{pipeline="p"} 1`,
		`sluice_replicator_lag_messages{pipeline="p",queue="t/b/0"} 3`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `pipeline="p",stage="apply"`) {
		t.Errorf("pipeline p counts apply errors it never had:\n%s", out)
	}
	if strings.Contains(out, `sluice_records_skipped_total{pipeline="p"}`) {
		t.Errorf("a sink without LeftOut reports skipped rows:\n%s", out)
	}
}

// TestTaskCollectorLint: the task-labelled collector of a worker passes the
// lint too.
func TestTaskCollectorLint(t *testing.T) {
	f, _, _ := NewFakePipeline()
	a, _ := f(context.Background())
	c := NewCollector(func() ([]*Pipeline, []string) { return []*Pipeline{a}, []string{"p/source"} }, true)
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
