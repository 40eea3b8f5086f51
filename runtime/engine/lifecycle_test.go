package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
)

// endingSource is a fakeSource whose input ends (schema.ErrEndOfInput)
// once its n records are read.
type endingSource struct{ fakeSource }

func (s *endingSource) Read(ctx context.Context) ([]schema.Record, error) {
	if s.next >= s.n {
		return nil, fmt.Errorf("snapshot complete: %w", schema.ErrEndOfInput)
	}
	return s.fakeSource.Read(ctx)
}

// The end of input is a clean stop: everything read is applied, the last
// position saved, the state FINISHED, and the worker neither restarts the
// pipeline nor reports a failure (before, it restarted it forever).
func TestEndOfInputFinishesThePipeline(t *testing.T) {
	store := &memStore{pos: map[string][]byte{}}
	snk := &fakeSink{seen: map[int64][]int64{}}
	var builds atomic.Int32
	w := NewWorker(nil)
	w.RestartBackoff = time.Millisecond
	w.Add("p", store, func(context.Context) (*Pipeline, error) {
		builds.Add(1)
		e := newEmbedded(4, 4)
		return &Pipeline{Name: "p", Source: &endingSource{fakeSource{n: 90, k: 7}}, Publisher: e.Publisher(), Subscriber: e.Subscriber(16), Sink: snk, Positions: store}, nil
	})
	if err := w.Start(context.Background(), "p"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Ended():
	case <-time.After(20 * time.Second):
		t.Fatal("the pipeline did not end at the end of its input")
	}
	st, _ := w.Status("p")
	if st.State != StateFinished || st.LastError != "" || snk.count() != 90 || builds.Load() != 1 {
		t.Fatalf("status %+v, %d applied after %d builds; want FINISHED, 90, 1", st, snk.count(), builds.Load())
	}
	if pos := SourcePosition(store.pos["p"]); string(pos) != "tx-30" {
		t.Fatalf("saved position %q, want tx-30", pos)
	}
}

// Stop and Restart act on the pipeline only: they do not report it as
// ended, so `sluice run` keeps the process (and the REST API) up.
func TestStopAndRestartAreNotAnEnd(t *testing.T) {
	store := &memStore{pos: map[string][]byte{}}
	snk := &fakeSink{seen: map[int64][]int64{}}
	w := NewWorker(nil)
	w.Add("p", store, func(context.Context) (*Pipeline, error) {
		e := newEmbedded(2, 4)
		return &Pipeline{Name: "p", Source: &fakeSource{n: 30, k: 3}, Publisher: e.Publisher(), Subscriber: e.Subscriber(16), Sink: snk, Positions: store}, nil
	})
	ctx := context.Background()
	if err := w.Start(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if err := w.Restart(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	waitState(t, w, "p", StateRunning)
	if err := w.Stop(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if st, _ := w.Status("p"); st.State != StateStopped {
		t.Fatalf("after stop: %+v", st)
	}
	// stopped: its position can be changed, then it starts again
	if err := w.ResetPosition(ctx, "p", []byte("tx-2")); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-w.Ended():
		t.Fatalf("%s reported as ended after a stop and a restart", n)
	case <-time.After(100 * time.Millisecond):
	}
	if err := w.Start(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	defer w.StopAll(ctx)
	waitState(t, w, "p", StateRunning)
}

// A retriable failure to build (a target or broker down at start) is
// retried with the restart backoff, RESTARTING meanwhile, instead of
// ending the process; a fatal one is returned at once.
func TestStartRetriesARetriableBuildFailure(t *testing.T) {
	store := &memStore{pos: map[string][]byte{}}
	snk := &fakeSink{seen: map[int64][]int64{}}
	var builds atomic.Int32
	w := NewWorker(nil)
	w.RestartBackoff = 50 * time.Millisecond
	w.Add("p", store, func(context.Context) (*Pipeline, error) {
		if builds.Add(1) <= 2 {
			return nil, errors.New("dial tcp 127.0.0.1:1: connection refused")
		}
		e := newEmbedded(2, 4)
		return &Pipeline{Name: "p", Source: &fakeSource{n: 30, k: 3}, Publisher: e.Publisher(), Subscriber: e.Subscriber(16), Sink: snk, Positions: store}, nil
	})
	if err := w.Start(context.Background(), "p"); err != nil {
		t.Fatalf("a retriable build failure was returned: %v", err)
	}
	defer w.StopAll(context.Background())
	if st, _ := w.Status("p"); st.State != StateRestarting || !strings.Contains(st.LastError, "connection refused") {
		t.Fatalf("status while retrying: %+v", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for snk.count() < 30 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st, _ := w.Status("p"); snk.count() != 30 || st.State != StateRunning || builds.Load() != 3 {
		t.Fatalf("%d applied, status %+v after %d builds", snk.count(), st, builds.Load())
	}

	f := NewWorker(nil)
	f.Add("q", store, func(context.Context) (*Pipeline, error) { return nil, schema.Fatal(errors.New("bad password")) })
	if err := f.Start(context.Background(), "q"); err == nil || !runtime.IsFatal(err) {
		t.Fatalf("fatal build error: %v", err)
	}
	if st, _ := f.Status("q"); st.State != StateFailed {
		t.Fatalf("after a fatal build error: %+v", st)
	}
}

// brokenPublisher refuses every batch.
type brokenPublisher struct{ closed atomic.Bool }

func (p *brokenPublisher) Publish(context.Context, []schema.Record, runtime.AckFunc) error {
	return errors.New("broker refused the batch")
}
func (p *brokenPublisher) Close(context.Context) error { p.closed.Store(true); return nil }

// A batch the publisher refuses gets no ack: the pipeline must not wait
// the whole drain timeout for it (it did: 30 s by default).
func TestPublishErrorDoesNotStallShutdown(t *testing.T) {
	pub := &brokenPublisher{}
	p := &Pipeline{Name: "p", Source: &fakeSource{n: 30, k: 3}, Publisher: pub, Positions: &memStore{pos: map[string][]byte{}}, DrainTimeout: time.Hour}
	errc := make(chan error, 1)
	go func() { errc <- p.Run(context.Background()) }()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "broker refused the batch") || !pub.closed.Load() {
			t.Fatalf("Run = %v (publisher closed %v)", err, pub.closed.Load())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run waited out the drain timeout for a batch that was never taken")
	}
}

// A second run of a pipeline on one positions folder stops by itself with
// a fatal error naming the lock; once the first ends, the pipeline can run.
func TestFileStoreClaimLocksThePipeline(t *testing.T) {
	s, err := storage.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := s.Claim(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "p"); !errors.Is(err, storage.ErrPipelineLocked) || !runtime.IsFatal(err) || !strings.Contains(err.Error(), "p.lock") {
		t.Fatalf("second claim: %v", err)
	}
	if _, err := s.Claim(ctx, "other"); err != nil {
		t.Fatalf("another pipeline: %v", err)
	}
	first.(releaser).Release()
	again, err := s.Claim(ctx, "p")
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	again.(releaser).Release()
}

// waitState waits (up to 5s) for a pipeline to report state: RUNNING comes
// once its source is open and its start position saved, not at the build.
func waitState(t *testing.T, w *Worker, name string, state State) {
	t.Helper()
	st, _ := w.Status(name)
	for deadline := time.Now().Add(5 * time.Second); st.State != state && time.Now().Before(deadline); st, _ = w.Status(name) {
		time.Sleep(5 * time.Millisecond)
	}
	if st.State != state {
		t.Fatalf("%s: %+v, want %s", name, st, state)
	}
}
