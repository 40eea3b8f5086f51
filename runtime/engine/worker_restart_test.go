package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// failingSource fails its first Read with err.
type failingSource struct{ err error }

func (s *failingSource) Open(context.Context, []byte) error { return nil }
func (s *failingSource) Close() error                       { return nil }
func (s *failingSource) Read(context.Context) ([]schema.Record, error) {
	return nil, s.err
}

// flakyFactory builds failing pipelines (failing with err) for its first
// fails builds, and healthy ones after; every build is counted.
func flakyFactory(fails int, err error, store *memStore, snk *fakeSink, builds *atomic.Int32) Factory {
	return func(context.Context) (*Pipeline, error) {
		n := builds.Add(1)
		e := newEmbedded(2, 4)
		var src runtime.Source = &fakeSource{n: 300, k: 7}
		if int(n) <= fails {
			src = &failingSource{err: err}
		}
		return &Pipeline{Name: "p", Source: src, Publisher: e.Publisher(), Subscriber: e.Subscriber(16), Sink: snk, Positions: store}, nil
	}
}

// runFlaky runs pipeline "p" of flakyFactory(fails, a retriable error) on
// a worker (stopped at the test's end) until its 300 records are applied
// or 10 s passed; it returns the worker, the sink and the build count.
func runFlaky(t *testing.T, fails int) (*Worker, *fakeSink, *atomic.Int32) {
	t.Helper()
	store := &memStore{pos: map[string][]byte{}}
	snk := &fakeSink{seen: map[int64][]int64{}}
	builds := new(atomic.Int32)
	w := NewWorker(nil)
	w.RestartBackoff = 10 * time.Millisecond
	w.Add("p", store, flakyFactory(fails, errors.New("broker unreachable"), store, snk, builds))
	if err := w.Start(context.Background(), "p"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.StopAll(context.Background()) })
	deadline := time.Now().Add(10 * time.Second)
	for snk.count() < 300 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return w, snk, builds
}

func TestWorkerRestartsAfterRetriableFailure(t *testing.T) {
	w, snk, builds := runFlaky(t, 3)
	if snk.count() != 300 || builds.Load() != 4 {
		t.Fatalf("applied %d records after %d builds, want 300 after 4 (3 failed runs, then a good one)", snk.count(), builds.Load())
	}
	if st, _ := w.Status("p"); st.State != StateRunning {
		t.Fatalf("status after recovery: %+v", st)
	}
}

func TestWorkerDoesNotRestartFatalOrBeyondBound(t *testing.T) {
	for _, tc := range []struct {
		name        string
		err         error
		maxRestarts int
		wantBuilds  int32
	}{
		{"fatal", schema.Fatal(errors.New("retrying cannot help")), 0, 1},
		{"never", errors.New("transient"), -1, 1},
		{"bounded", errors.New("transient"), 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &memStore{pos: map[string][]byte{}}
			var builds atomic.Int32
			w := NewWorker(nil)
			w.RestartBackoff = time.Millisecond
			w.MaxRestarts = tc.maxRestarts
			w.Add("p", store, flakyFactory(100, tc.err, store, &fakeSink{seen: map[int64][]int64{}}, &builds))
			if err := w.Start(context.Background(), "p"); err != nil {
				t.Fatal(err)
			}
			select {
			case <-w.Ended():
			case <-time.After(10 * time.Second):
				t.Fatal("the pipeline never ended")
			}
			st, _ := w.Status("p")
			if st.State != StateFailed || builds.Load() != tc.wantBuilds {
				t.Fatalf("state %s after %d builds, want FAILED after %d", st.State, builds.Load(), tc.wantBuilds)
			}
		})
	}
}

func TestWorkerStopDuringRestartBackoff(t *testing.T) {
	store := &memStore{pos: map[string][]byte{}}
	var builds atomic.Int32
	w := NewWorker(nil)
	w.RestartBackoff = time.Hour
	w.Add("p", store, flakyFactory(100, errors.New("transient"), store, &fakeSink{seen: map[int64][]int64{}}, &builds))
	if err := w.Start(context.Background(), "p"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the first run fails at once; the backoff is long
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Stop(ctx, "p"); err != nil {
		t.Fatalf("stop during the restart backoff: %v", err)
	}
	if builds.Load() != 1 {
		t.Fatalf("%d builds, want 1", builds.Load())
	}
}

// unreachableSource never opens: a server that was never reached.
type unreachableSource struct{ failingSource }

func (s *unreachableSource) Open(context.Context, []byte) error { return s.err }

// A pipeline that never reached RUNNING (its source never opened) is
// restarted MaxStartRetries times, then FAILED with the error, and is not
// reported as having run (issue 28, problem 5); one that did open is
// restarted as before, past that bound. Before, both were restarted for
// ever unless MaxRestarts, which no config set, bounded them.
func TestWorkerBoundsRestartsBeforeTheFirstRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		src        func(error) runtime.Source
		wantFailed bool
	}{
		{"never opened", func(err error) runtime.Source { return &unreachableSource{failingSource{err}} }, true},
		{"opened, then lost", func(err error) runtime.Source { return &failingSource{err} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &memStore{pos: map[string][]byte{}}
			var builds atomic.Int32
			w := NewWorker(nil)
			w.RestartBackoff, w.MaxStartRetries = time.Millisecond, 2
			w.Add("p", store, func(context.Context) (*Pipeline, error) {
				builds.Add(1)
				e := newEmbedded(2, 4)
				return &Pipeline{Name: "p", Source: tc.src(errors.New("connection refused")), Publisher: e.Publisher(),
					Subscriber: e.Subscriber(16), Sink: &fakeSink{seen: map[int64][]int64{}}, Positions: store}, nil
			})
			if err := w.Start(context.Background(), "p"); err != nil {
				t.Fatal(err)
			}
			defer w.StopAll(context.Background())
			if !tc.wantFailed {
				deadline := time.Now().Add(10 * time.Second)
				for builds.Load() <= 5 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if st, _ := w.Status("p"); st.State == StateFailed || builds.Load() <= 5 || !w.Ran("p") {
					t.Fatalf("%s after %d builds (ran %v): want restarts past the start bound", st.State, builds.Load(), w.Ran("p"))
				}
				return
			}
			select {
			case <-w.Ended():
			case <-time.After(10 * time.Second):
				t.Fatal("the pipeline that never started was never FAILED")
			}
			st, _ := w.Status("p")
			if st.State != StateFailed || builds.Load() != 3 || w.Ran("p") || !strings.Contains(st.LastError, "connection refused") {
				t.Fatalf("%+v after %d builds (ran %v), want FAILED with the error after 3", st, builds.Load(), w.Ran("p"))
			}
		})
	}
}
