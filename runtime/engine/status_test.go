package engine

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// idleSource emits the batches the test hands it, then blocks.
type idleSource struct {
	batches chan []schema.Record
}

func (s *idleSource) Open(context.Context, []byte) error { return nil }
func (s *idleSource) Close() error                       { return nil }
func (s *idleSource) Read(ctx context.Context) ([]schema.Record, error) {
	select {
	case b := <-s.batches:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// backlogSource adds a settable backlog.
type backlogSource struct {
	idleSource
	mu         sync.Mutex
	bytes, txs int64
}

func (s *backlogSource) Backlog(context.Context, []byte) (int64, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes, s.txs, nil
}

func change(i int64, tsMs int64) []schema.Record {
	return []schema.Record{
		{Op: schema.OpBegin, Source: schema.Source{TsMs: tsMs}},
		{Op: schema.OpUpdate, Table: schema.TableID{Database: "d", Table: "t"}, Key: schema.Row{i}, After: schema.Row{i, i}, Source: schema.Source{TsMs: tsMs}},
		{Op: schema.OpCommit, Source: schema.Source{TsMs: tsMs}, Position: []byte("p")},
	}
}

func heartbeat(tsMs int64) []schema.Record {
	return []schema.Record{{Op: schema.OpHeartbeat, Source: schema.Source{TsMs: tsMs}, Position: []byte("p")}}
}

func startStatusPipeline(t *testing.T, src runtime.Source) (*Worker, string) {
	t.Helper()
	e := newEmbedded(2, 16)
	w := NewWorker(nil)
	w.Add("st", nil, func(context.Context) (*Pipeline, error) {
		return &Pipeline{Name: "st", Source: src, Publisher: e.Publisher(), Subscriber: e.Subscriber(64),
			Sink: &fakeSink{seen: map[int64][]int64{}}, Positions: &memStore{pos: map[string][]byte{}}}, nil
	})
	if err := w.Start(context.Background(), "st"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.StopAll(context.Background()) })
	return w, "st"
}

func waitStatus(t *testing.T, w *Worker, name, what string, ok func(TaskStatus) bool) TaskStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := w.Status(name)
		if err != nil {
			t.Fatal(err)
		}
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: last status %+v (caught up %v)", what, st, st.CaughtUp)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func isCaughtUp(st TaskStatus) bool { return st.CaughtUp != nil && *st.CaughtUp }

// Without a backlog capability, heartbeats tell the runtime that the
// source is idle at the end of the log: lag 0 and caught up; a change read
// long after it happened is lag; a heartbeat gone stale is lag again.
// Markers are never counted as records, so read and applied meet.
func TestStatusLagFromHeartbeats(t *testing.T) {
	src := &idleSource{batches: make(chan []schema.Record)}
	w, name := startStatusPipeline(t, src)
	now := time.Now().UnixMilli()
	src.batches <- change(1, now-20_000) // a change from 20 s ago
	st := waitStatus(t, w, name, "change applied", func(st TaskStatus) bool { return st.RecordsApplied == 1 && st.InFlight == 0 })
	if isCaughtUp(st) || st.LagSeconds < 19 || st.LagSeconds > 40 {
		t.Errorf("after a 20 s old change: caught up %v, lag %v", isCaughtUp(st), st.LagSeconds)
	}
	if st.RecordsRead != 1 {
		t.Errorf("records_read %d counts markers, records_applied %d", st.RecordsRead, st.RecordsApplied)
	}
	for i := 0; i < 3; i++ {
		src.batches <- heartbeat(time.Now().UnixMilli())
		st = waitStatus(t, w, name, "caught up after a heartbeat", isCaughtUp)
		if st.LagSeconds != 0 || st.RecordsRead != st.RecordsApplied {
			t.Errorf("idle: lag %v, read %d applied %d", st.LagSeconds, st.RecordsRead, st.RecordsApplied)
		}
	}
	// No heartbeat for a long time (the connection hangs): lag again.
	later := w.Pipelines()[0].progress(time.Now().Add(2 * heartbeatFresh))
	if *later.caughtUp || later.lagSeconds < 2*heartbeatFresh.Seconds()-1 {
		t.Errorf("heartbeat %s old: caught up %v, lag %v", 2*heartbeatFresh, *later.caughtUp, later.lagSeconds)
	}
}

// With a backlog capability, caught up means the server has logged nothing
// after the committed position.
func TestStatusBacklog(t *testing.T) {
	src := &backlogSource{idleSource: idleSource{batches: make(chan []schema.Record)}, bytes: 300, txs: 2}
	w, name := startStatusPipeline(t, src)
	src.batches <- change(1, time.Now().UnixMilli()-5000)
	st := waitStatus(t, w, name, "backlog reported", func(st TaskStatus) bool {
		return st.BehindBytes != nil && st.BehindTransactions != nil && st.InFlight == 0
	})
	if isCaughtUp(st) || *st.BehindBytes != 300 || *st.BehindTransactions != 2 || st.LagSeconds < 4 {
		t.Errorf("behind: %+v caught up %v", st, isCaughtUp(st))
	}
	src.mu.Lock()
	src.bytes, src.txs = 0, 0
	src.mu.Unlock()
	st = waitStatus(t, w, name, "caught up", isCaughtUp)
	if st.LagSeconds != 0 {
		t.Errorf("caught up with lag %v", st.LagSeconds)
	}
	// Bytes unknown (another binlog file), transactions known: these decide.
	src.mu.Lock()
	src.bytes, src.txs = -1, 0
	src.mu.Unlock()
	time.Sleep(backlogEvery + 100*time.Millisecond)
	st = waitStatus(t, w, name, "bytes unknown", func(st TaskStatus) bool { return st.BehindBytes == nil })
	if !isCaughtUp(st) {
		t.Errorf("0 transactions behind, bytes unknown: not caught up: %+v", st)
	}
}

func TestSnapshotStatusETA(t *testing.T) {
	if s := snapshotStatus(map[string]float64{"snapshot_rows": 0}); s != nil {
		t.Errorf("no snapshot: %+v", s)
	}
	s := snapshotStatus(map[string]float64{"snapshot_tables": 4, "snapshot_tables_done": 1, "snapshot_running": 1,
		"snapshot_rows": 1000, "snapshot_estimated_rows": 5000, "snapshot_elapsed_seconds": 10})
	if s == nil || s.RowsPerSecond != 100 || s.ETASeconds == nil || *s.ETASeconds != 40 {
		t.Fatalf("running: %+v", s)
	}
	s = snapshotStatus(map[string]float64{"snapshot_tables": 4, "snapshot_running": 1, "snapshot_rows": 6000, "snapshot_estimated_rows": 5000, "snapshot_elapsed_seconds": 10})
	if s.ETASeconds != nil {
		t.Errorf("rows beyond the estimate: ETA %v", *s.ETASeconds)
	}
	s = snapshotStatus(map[string]float64{"snapshot_tables": 4, "snapshot_tables_done": 4, "snapshot_rows": 6000, "snapshot_estimated_rows": 5000})
	if s.Running || s.ETASeconds != nil || s.TablesDone != 4 {
		t.Errorf("done: %+v", s)
	}
}

// A failure is reported once: the batch error that stops reading is not
// joined again as the drain's error.
func TestPipelineErrorSaidOnce(t *testing.T) {
	e := newEmbedded(2, 4)
	p := &Pipeline{Name: "p", Source: &fakeSource{n: 30, k: 3}, Publisher: e.Publisher(), Subscriber: e.Subscriber(8),
		Sink: &fatalSink{}, Positions: &memStore{pos: map[string][]byte{}}}
	err := p.Run(context.Background())
	if err == nil || strings.Count(err.Error(), "column does not exist") != 1 {
		t.Fatalf("Run returned %q, want the sink's error once", err)
	}
}

// anySink applies every record it is given and counts them.
type anySink struct{ n atomic.Int64 }

func (s *anySink) Write(_ context.Context, recs []schema.Record) error {
	s.n.Add(int64(len(recs)))
	return nil
}
func (s *anySink) Close() error { return nil }

// A barrier (TRUNCATE, a table's schema change) reaches the sink as a copy
// on every queue, but it is one change read: records_applied counts it
// once, and meets records_read when the pipeline is idle.
func TestStatusCountsBarrierOnce(t *testing.T) {
	src := &idleSource{batches: make(chan []schema.Record)}
	snk := &anySink{}
	e := newEmbedded(4, 4)
	p := &Pipeline{Name: "bar", Source: src, Publisher: e.Publisher(), Subscriber: e.Subscriber(16), Sink: snk, Positions: &memStore{pos: map[string][]byte{}}}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	defer func() { cancel(); <-errc }()
	tbl := schema.TableID{Database: "d", Table: "t"}
	var batch []schema.Record
	for i := range int64(5) {
		batch = append(batch, schema.Record{Op: schema.OpCreate, Table: tbl, Key: schema.Row{i}, After: schema.Row{i}, ID: schema.ID{Epoch: 1, Pos: uint64(i + 1)}})
	}
	batch = append(batch,
		schema.Record{Op: schema.OpTruncate, Table: tbl, ID: schema.ID{Epoch: 1, Pos: 10}},
		schema.Record{Op: schema.OpSchemaChange, Table: tbl, Change: &schema.SchemaChange{DDL: "ALTER TABLE t ADD c INT"}, ID: schema.ID{Epoch: 1, Pos: 11}},
		schema.Record{Op: schema.OpCommit, Position: []byte("tx-1")})
	src.batches <- batch
	deadline := time.Now().Add(10 * time.Second)
	for snk.n.Load() < 5+2*4 || p.InFlight() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the sink got %d records, in flight %d; want 5 rows and 4 copies of each barrier", snk.n.Load(), p.InFlight())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := p.Status(); st.RecordsRead != 7 || st.RecordsApplied != 7 {
		t.Fatalf("records_read %d, records_applied %d; want 7 and 7 (5 rows, 2 barriers counted once)", st.RecordsRead, st.RecordsApplied)
	}
}

// Derive: percent of the estimate (at most 100), rate and the table's ETA
// at that rate; none of the estimate's figures without an estimate.
func TestIncrementalSnapshotStatusDerive(t *testing.T) {
	s := runtime.IncrementalSnapshotStatus{Running: true, Table: "d.t", Rows: 300, TableRows: 100, TableEstimatedRows: 400, ElapsedSeconds: 3}
	s.Derive()
	if s.TablePercent == nil || *s.TablePercent != 25 || s.RowsPerSecond != 100 || s.TableETASeconds == nil || *s.TableETASeconds != 3 {
		t.Fatalf("%+v", s)
	}
	s = runtime.IncrementalSnapshotStatus{Running: true, Table: "d.t", Rows: 300, TableRows: 500, TableEstimatedRows: 400, ElapsedSeconds: 3}
	s.Derive()
	if *s.TablePercent != 100 || s.TableETASeconds != nil {
		t.Fatalf("past the estimate: %+v", s)
	}
	s = runtime.IncrementalSnapshotStatus{Running: true, Table: "d.t", Rows: 300, TableRows: 100, ElapsedSeconds: 3}
	s.Derive()
	if s.TablePercent != nil || s.TableETASeconds != nil {
		t.Fatalf("no estimate: %+v", s)
	}
}
