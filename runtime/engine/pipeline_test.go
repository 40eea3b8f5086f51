package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/embedded"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
)

// fakeSource emits n updates over k keys in transactions of 3 rows, each
// followed by a commit marker carrying the position "tx-<i>". A fake is fine
// here: these tests are about the runtime's logic, not a server.
type fakeSource struct {
	n, k    int
	next    int
	tx      int
	opened  []byte
	blocked chan struct{}
	read    atomic.Int64 // next, for Progress, which status calls from another goroutine
}

func (s *fakeSource) Open(_ context.Context, pos []byte) error { s.opened = pos; return nil }
func (s *fakeSource) Close() error                             { return nil }
func (s *fakeSource) Progress() map[string]float64 {
	return map[string]float64{"snapshot_rows": float64(s.read.Load())}
}
func (s *fakeSource) QueueProgress() map[string]map[string]float64 {
	return map[string]map[string]float64{"replicator_lag_messages": {"t/b/0": 3}, "not_exported": {"t/b/0": 1}}
}
func (s *fakeSource) Read(ctx context.Context) ([]schema.Record, error) {
	if s.next >= s.n {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var out []schema.Record
	for i := 0; i < 3 && s.next < s.n; i++ {
		out = append(out, schema.Record{Op: schema.OpUpdate, Table: schema.TableID{Database: "d", Table: "t"},
			Key: schema.Row{int64(s.next % s.k)}, After: schema.Row{int64(s.next % s.k), int64(s.next)},
			ID: schema.ID{Epoch: 1, Pos: uint64(s.next)}})
		s.next++
	}
	s.read.Store(int64(s.next))
	s.tx++
	out = append(out, schema.Record{Op: schema.OpCommit, Position: []byte("tx-" + strconv.Itoa(s.tx))})
	return out, nil
}

type fakeSink struct {
	mu      sync.Mutex
	seen    map[int64][]int64
	applied int
	delay   time.Duration
	failN   int // fail the first failN writes
}

func (s *fakeSink) Write(ctx context.Context, recs []schema.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failN > 0 {
		s.failN--
		return errors.New("transient")
	}
	time.Sleep(s.delay)
	for _, r := range recs {
		if r.Op.IsMarker() {
			return fmt.Errorf("marker %v reached the sink", r.Op)
		}
		k := r.Key[0].(int64)
		s.seen[k] = append(s.seen[k], r.After[1].(int64))
		s.applied++
	}
	return nil
}
func (s *fakeSink) Close() error { return nil }
func (s *fakeSink) count() int   { s.mu.Lock(); defer s.mu.Unlock(); return s.applied }

type memStore struct {
	mu  sync.Mutex
	pos map[string][]byte
}

func (m *memStore) Load(_ context.Context, p string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pos[p], nil
}
func (m *memStore) Save(_ context.Context, p string, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pos[p] = b
	return nil
}

func runUntil(t *testing.T, p *Pipeline, done func() bool) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	deadline := time.After(20 * time.Second)
	for !done() {
		select {
		case err := <-errc:
			cancel()
			return err
		case <-deadline:
			cancel()
			t.Fatal("pipeline did not finish the workload in 20s")
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	return <-errc
}

func TestEmbeddedPipelineKeepsKeyOrderAndSavesLastPosition(t *testing.T) {
	src := &fakeSource{n: 3000, k: 17}
	snk := &fakeSink{seen: map[int64][]int64{}, failN: 2}
	e := newEmbedded(4, 4)
	store := &memStore{pos: map[string][]byte{"p": []byte("tx-0")}}
	p := &Pipeline{Name: "p", Source: src, Publisher: e.Publisher(), Subscriber: e.Subscriber(64), Sink: snk, Positions: store, MaxInFlight: 100}
	if err := runUntil(t, p, func() bool { return snk.count() == 3000 }); err != nil {
		t.Fatal(err)
	}
	if string(src.opened) != "tx-0" {
		t.Fatalf("source opened at %q, want the saved tx-0", src.opened)
	}
	for k, vs := range snk.seen {
		for i := 1; i < len(vs); i++ {
			if vs[i] <= vs[i-1] {
				t.Fatalf("key %d applied out of order: %v", k, vs)
			}
		}
	}
	if got := string(SourcePosition(store.pos["p"])); got != "tx-1000" {
		t.Fatalf("saved position %q, want tx-1000", got)
	}
	if st := p.Status(); st.State != StateStopped || st.RecordsApplied != 3000 {
		t.Fatalf("status %+v", st)
	}
}

// A slow sink must hold the source back: records read but not applied never
// exceed the in-flight cap plus one batch.
func TestEmbeddedBackpressureBoundsInFlight(t *testing.T) {
	src := &fakeSource{n: 600, k: 5}
	snk := &fakeSink{seen: map[int64][]int64{}, delay: time.Millisecond}
	e := newEmbedded(2, 1000)
	p := &Pipeline{Name: "p", Source: src, Publisher: e.Publisher(), Subscriber: e.Subscriber(8), Sink: snk, Positions: &memStore{pos: map[string][]byte{}}, MaxInFlight: 40}
	maxGap := int64(0)
	err := runUntil(t, p, func() bool {
		st := p.Status()
		// RecordsRead counts markers too: 4 records per transaction of 3 rows.
		if gap := st.RecordsRead*3/4 - st.RecordsApplied; gap > maxGap {
			maxGap = gap
		}
		return snk.count() == 600
	})
	if err != nil {
		t.Fatal(err)
	}
	if maxGap > 40+4 {
		t.Fatalf("%d records were in flight, cap is 40", maxGap)
	}
}

type fatalSink struct{ fakeSink }

func (s *fatalSink) Write(context.Context, []schema.Record) error {
	return schema.Fatal(errors.New("column does not exist"))
}

func TestFatalSinkErrorFailsPipelineWithoutSavingPastIt(t *testing.T) {
	src := &fakeSource{n: 30, k: 3}
	store := &memStore{pos: map[string][]byte{}}
	e := newEmbedded(2, 4)
	p := &Pipeline{Name: "p", Source: src, Publisher: e.Publisher(), Subscriber: e.Subscriber(8), Sink: &fatalSink{}, Positions: store}
	err := p.Run(context.Background())
	if err == nil || !runtime.IsFatal(err) {
		t.Fatalf("Run returned %v, want the fatal sink error", err)
	}
	if st := p.Status(); st.State != StateFailed || st.LastError == "" {
		t.Fatalf("status %+v", st)
	}
	if pos := store.pos["p"]; pos != nil {
		t.Fatalf("position %q saved although nothing was applied", pos)
	}
}

// The pipeline hands records on with the identity their source gave them
// (it numbers nothing itself), the embedded transport says where each was
// delivered, and the saved position is the source's own.
func TestPipelineKeepsSourceIDs(t *testing.T) {
	src := &fakeSource{n: 30, k: 5}
	got := map[string]schema.ID{}
	var mu sync.Mutex
	store := &memStore{pos: map[string][]byte{}}
	e := newEmbedded(2, 4)
	p := &Pipeline{Name: "p", Source: src, Publisher: e.Publisher(), Subscriber: e.Subscriber(16), Sink: &idSink{seen: got, mu: &mu}, Positions: store}
	if err := runUntil(t, p, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 30 }); err != nil {
		t.Fatal(err)
	}
	for k, id := range got {
		if want := (schema.ID{Epoch: 1, Pos: uint64(mustAtoi(t, k))}); id != want {
			t.Fatalf("record %s reached the sink with ID %v, the source gave %v", k, id, want)
		}
	}
	if string(store.pos["p"]) != "tx-10" {
		t.Fatalf("saved %q, want the source's own position tx-10", store.pos["p"])
	}
}

// A position saved by a version that numbered records in the runtime
// ({"sluice_position":1,...}) still loads: the source opens at its source
// part.
func TestPipelineLoadsV1SavedPosition(t *testing.T) {
	src := &fakeSource{n: 3, k: 1}
	store := &memStore{pos: map[string][]byte{"p": []byte(`{"sluice_position":1,"source":"tx-7","seq":1796073297165392400,"fingerprint":"ab"}`)}}
	e := newEmbedded(1, 4)
	snk := &fakeSink{seen: map[int64][]int64{}}
	p := &Pipeline{Name: "p", Source: src, Publisher: e.Publisher(), Subscriber: e.Subscriber(16), Sink: snk, Positions: store}
	if err := runUntil(t, p, func() bool { return snk.count() == 3 }); err != nil {
		t.Fatal(err)
	}
	if string(src.opened) != "tx-7" {
		t.Fatalf("source opened at %q, want tx-7", src.opened)
	}
	if got := string(SourcePosition([]byte(`{"v":1,"flavor":"mariadb","file":"mysql-bin.000001","pos":4}`))); got != `{"v":1,"flavor":"mariadb","file":"mysql-bin.000001","pos":4}` {
		t.Fatalf("a binlog position is its own source position, got %q", got)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type idSink struct {
	mu   *sync.Mutex
	seen map[string]schema.ID
}

func (s *idSink) Write(_ context.Context, recs []schema.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		if r.Delivery == nil || r.Delivery.Topic != embedded.Topic || r.Delivery.Offset <= 0 {
			return fmt.Errorf("record without an embedded delivery: %+v", r.Delivery)
		}
		s.seen[fmt.Sprint(r.After[1])] = r.ID
	}
	return nil
}
func (s *idSink) Close() error { return nil }

// failingStore loads nothing and fails every Save with err.
type failingStore struct{ err error }

func (f failingStore) Load(context.Context, string) ([]byte, error) { return nil, nil }
func (f failingStore) Save(context.Context, string, []byte) error   { return f.err }

// A position that cannot be saved stops the pipeline (with the store's
// error) instead of letting it read on without positions.
func TestPipelineStopsWhenPositionsCannotBeSaved(t *testing.T) {
	fenced := schema.Fatal(fmt.Errorf("%w: test", storage.ErrFenced))
	e := newEmbedded(2, 4)
	p := &Pipeline{Name: "p", Source: &fakeSource{n: 1 << 30, k: 7}, Publisher: e.Publisher(), Subscriber: e.Subscriber(16),
		Sink: &fakeSink{seen: map[int64][]int64{}}, Positions: failingStore{fenced}, SaveInterval: 10 * time.Millisecond}
	errc := make(chan error, 1)
	go func() { errc <- p.Run(context.Background()) }()
	select {
	case err := <-errc:
		if !errors.Is(err, storage.ErrFenced) || !runtime.IsFatal(err) {
			t.Fatalf("Run = %v, want the store's fatal ErrFenced", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the pipeline kept reading although no position could be saved")
	}
}

// slowFatalSink fails every batch for good, after a while: long enough for
// the source to fill the queue and block publishing into it.
type slowFatalSink struct{ fakeSink }

func (s *slowFatalSink) Write(ctx context.Context, _ []schema.Record) error {
	select {
	case <-time.After(200 * time.Millisecond):
	case <-ctx.Done():
	}
	return schema.Fatal(errors.New("check constraint violated"))
}

// A fatal sink error ends the pipeline even while the source is blocked
// publishing into the queue whose consumer stopped: before, the embedded
// subscriber returned nothing and the source waited on the full queue
// forever.
func TestFatalSinkErrorUnblocksAFullQueue(t *testing.T) {
	src := &fakeSource{n: 3000, k: 7}
	e := newEmbedded(1, 1)
	p := &Pipeline{Name: "p", Source: src, Publisher: e.Publisher(), Subscriber: e.Subscriber(4), Sink: &slowFatalSink{},
		Positions: &memStore{pos: map[string][]byte{}}, MaxInFlight: 100000}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	select {
	case err := <-done:
		if !runtime.IsFatal(err) {
			t.Fatalf("Run returned %v, want the fatal sink error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the pipeline hung after a fatal sink error with its source blocked on a full queue")
	}
}

type msgSink struct {
	fakeSink
	msg string
}

func (s *msgSink) Write(context.Context, []schema.Record) error {
	return schema.Fatal(errors.New(s.msg))
}

// A sink error is said "sink: …" once: the runtime adds the prefix only to
// errors that do not carry it already (the sink's own do).
func TestSinkErrorPrefixedOnce(t *testing.T) {
	for _, msg := range []string{"column does not exist", "sink: column does not exist", `topic "t" queue 1 offset 0: sink: column does not exist`} {
		e := newEmbedded(1, 4)
		p := &Pipeline{Name: "p", Source: &fakeSource{n: 3, k: 1}, Publisher: e.Publisher(), Subscriber: e.Subscriber(8),
			Sink: &msgSink{msg: msg}, Positions: &memStore{pos: map[string][]byte{}}}
		err := p.Run(context.Background())
		if err == nil || strings.Count(err.Error(), "sink:") != 1 || !strings.Contains(err.Error(), "sink: column does not exist") {
			t.Errorf("sink error %q: Run returned %q, want it with one \"sink:\" prefix", msg, err)
		}
		if st := p.Status(); strings.Count(st.LastError, "sink:") != 1 {
			t.Errorf("sink error %q: last error %q", msg, st.LastError)
		}
	}
}

// startingSource is a fakeSource that says where it starts (StartPositioner).
type startingSource struct {
	fakeSource
	start []byte
}

func (s *startingSource) StartPosition() []byte { return s.start }

// A source that starts without a saved position has its start saved
// before the pipeline reports RUNNING, and the missing position is a WARN
// naming the folder looked in (issue 28, problem 1).
func TestStartPositionSavedBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	e := newEmbedded(2, 4)
	p := &Pipeline{Name: "p", Source: &startingSource{start: []byte("tx-0")}, Publisher: e.Publisher(), Subscriber: e.Subscriber(16),
		Sink: &fakeSink{seen: map[int64][]int64{}}, Positions: store, Log: log}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for p.Status().State != StateRunning && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	pos, err := store.Load(context.Background(), "p")
	cancel()
	if rerr := <-done; rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil || string(pos) != "tx-0" || !p.Ran() {
		t.Fatalf("at RUNNING: saved %q (%v), ran %v; want tx-0 saved", pos, err, p.Ran())
	}
	mu.Lock()
	defer mu.Unlock()
	if want := `level=WARN msg="no saved position; starting from the source's configured start" pipeline=p store="folder ` + dir; !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, logs.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// What a constructor opened beside its sink (Task.OnClose, moved to
// Pipeline.OnClose by the command) closes once, after the sink, when the
// pipeline stops; the sink itself is not wrapped, so it keeps its
// optional capabilities.
func TestOnCloseRunsAfterTheSink(t *testing.T) {
	snk := &fakeSink{seen: map[int64][]int64{}}
	e := newEmbedded(2, 4)
	task := &plugin.Task{}
	calls := 0
	task.OnClose(func() error { calls++; return nil })
	p := &Pipeline{Name: "p", Source: &fakeSource{n: 10, k: 3}, Publisher: e.Publisher(), Subscriber: e.Subscriber(8), Sink: snk,
		Positions: &memStore{pos: map[string][]byte{}}, OnClose: task.Closers()}
	if err := runUntil(t, p, func() bool { return snk.count() == 10 }); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("OnClose ran %d times, want 1", calls)
	}
}

// TestStatusPositionAfterResume: a pipeline resumed from a saved position
// reports that position before it saves a newer one, also once stopped
// (sluice run logs it at the stop: "" read like a lost position).
func TestStatusPositionAfterResume(t *testing.T) {
	store := &memStore{pos: map[string][]byte{"p": []byte("tx-42")}}
	e := newEmbedded(2, 4)
	p := &Pipeline{Name: "p", Source: &fakeSource{n: 0, k: 1}, Publisher: e.Publisher(), Subscriber: e.Subscriber(16),
		Sink: &fakeSink{seen: map[int64][]int64{}}, Positions: store}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for p.Status().State != StateRunning && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := p.Status(); st.State != StateRunning || st.Position != "tx-42" {
		t.Errorf("running after resuming at tx-42: %+v", st)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); st.State != StateStopped || st.Position != "tx-42" {
		t.Errorf("stopped without a newer position: %+v, want position tx-42", st)
	}
}
