package sink

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// asInserts turns benchRows' updates into inserts (a snapshot or bulk load).
func asInserts(recs []schema.Record, op schema.Op) []schema.Record {
	for i := range recs {
		recs[i].Op = op
	}
	return recs
}

// TestDirectCopyFallsBackOnExistingKeys loads new rows with the direct COPY
// path, then replays the same inserts with newer values (as after a crash):
// the direct COPY meets existing keys, rolls back to its savepoint, and the
// merge path applies them; every row ends with the newest values.
func TestDirectCopyFallsBackOnExistingKeys(t *testing.T) {
	e := pgEnv(t)
	ctx := context.Background()
	s := e.open(t, func(c *Config) { c.CopyThreshold = 100 })
	if err := s.Write(ctx, asInserts(benchRows("dc", 500, 1), schema.OpRead)); err != nil {
		t.Fatal(err)
	}
	if s.applier.noDirectCopy[s.cfg.target(schema.TableID{Database: "src", Table: "dc"})] {
		t.Fatal("the first load into an empty table did not take the direct path")
	}
	if err := s.Write(ctx, asInserts(benchRows("dc", 500, 2), schema.OpCreate)); err != nil {
		t.Fatalf("replayed inserts: %v", err)
	}
	if !s.applier.noDirectCopy[s.cfg.target(schema.TableID{Database: "src", Table: "dc"})] {
		t.Fatal("a conflict did not turn the direct path off for the table")
	}
	var n, stale int
	if err := e.db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE name NOT LIKE '%/2') FROM `+e.table("dc")).Scan(&n, &stale); err != nil {
		t.Fatal(err)
	}
	if n != 500 || stale != 0 {
		t.Fatalf("%d rows, %d with old values; want 500 rows all of round 2", n, stale)
	}
}

// BenchmarkInsertPostgres measures a bulk load of new keys (as a snapshot
// does) through Sink.Write against plain COPY of the same rows into an
// empty table, PostgreSQL's ingest ceiling, in the same run.
func BenchmarkInsertPostgres(b *testing.B) {
	e := pgEnv(b)
	ctx := context.Background()
	const n = 10000
	s := e.open(b, nil)
	// Create both tables once; each round empties them outside the timing.
	for _, tb := range []string{"ins_sink", "ins_raw"} {
		if err := s.Write(ctx, benchRows(tb, 1, 0)); err != nil {
			b.Fatal(err)
		}
	}
	var tSink, tRaw time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, tb := range []string{"ins_sink", "ins_raw"} {
			e.truncate(b, tb)
		}
		recs := asInserts(benchRows("ins_sink", n, i), schema.OpRead)
		rows := driverRows(recs)
		runtime.GC() // building the rows made garbage: charge it to neither side
		b.StartTimer()

		start := time.Now()
		if err := s.Write(ctx, recs); err != nil {
			b.Fatal(err)
		}
		tSink += time.Since(start)

		start = time.Now()
		if err := rawCopy(ctx, e.db, e.table("ins_raw"), rows, false); err != nil {
			b.Fatal(err)
		}
		tRaw += time.Since(start)
	}
	b.StopTimer()
	rows := float64(n * b.N)
	b.ReportMetric(rows/tSink.Seconds(), "sink-rows/s")
	b.ReportMetric(rows/tRaw.Seconds(), "rawcopy-rows/s")
	b.ReportMetric(tRaw.Seconds()/tSink.Seconds(), "sink/rawcopy")
	var got, want int
	if err := e.db.QueryRow("SELECT (SELECT count(*) FROM "+e.table("ins_sink")+"), (SELECT count(*) FROM "+e.table("ins_raw")+")").Scan(&got, &want); err != nil || got != n || want != n {
		b.Fatalf("loaded %d rows through the sink and %d by COPY, want %d each (%v)", got, want, n, err)
	}
}
