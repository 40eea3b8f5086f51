package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/sluicecdc/sluice/runtime"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// Factory builds a fresh pipeline, connecting to its servers. A worker calls
// it at every start and restart.
type Factory func(ctx context.Context) (*Pipeline, error)

// ErrUnknownPipeline is returned for a name the worker does not host.
var ErrUnknownPipeline = errors.New("runtime: unknown pipeline")

// Worker hosts pipelines and manages their lifecycle: start, stop, pause,
// resume, restart, status and positions. It is what the REST API drives.
type Worker struct {
	// Restart policy for a pipeline whose run (or build: a target or broker
	// down at start) fails with a retriable error (IsFatal false): it is
	// rebuilt with its factory after a backoff that starts at
	// RestartBackoff (default 1s) and doubles up to MaxRestartBackoff
	// (default 30s); a run that lasted MaxRestartBackoff or more starts the
	// backoff over. MaxRestarts bounds consecutive restarts (0: no bound;
	// negative: never restart). While it waits, its state is RESTARTING.
	// A fatal error stops it as FAILED; the end of input as FINISHED.
	// Set before Start.
	RestartBackoff    time.Duration
	MaxRestartBackoff time.Duration
	MaxRestarts       int
	// MaxStartRetries bounds the restarts of a pipeline that has not yet
	// reported RUNNING since it was added (a server never reached: a wrong
	// port, a name server or target down at the first start): past it the
	// pipeline is FAILED with the last error, as Kafka Connect fails a
	// task that cannot start. 0: no bound (MaxRestarts alone); negative:
	// no restart before the first RUNNING. Once it has run, MaxRestarts
	// alone applies. Set before Start.
	MaxStartRetries int

	mu    sync.Mutex
	tasks map[string]*task
	log   *slog.Logger
	ended chan string // names of pipelines whose Run returned
}

type task struct {
	factory    Factory
	store      runtime.PositionStore
	p          *Pipeline
	cancel     context.CancelFunc
	done       chan struct{}
	err        error
	state      State // once the run ended, or when no pipeline was built
	restarting bool  // waiting out a restart backoff
	requested  bool  // Stop ended the run (not the pipeline itself)
	retryErr   error // the error being retried while restarting
	starting   bool  // Start is building the pipeline
	ran        bool  // a run of it reported RUNNING (Worker.Ran)
	// topics are the topics its pipelines before t.p used since the
	// last ResetTopics (Worker.Topics).
	topics map[string]bool
}

// setPipeline makes p the task's pipeline; the topics the one it replaces
// used stay in t.topics.
func (t *task) setPipeline(p *Pipeline) {
	if t.p != nil && t.p != p {
		for _, topic := range t.p.topics() {
			if t.topics == nil {
				t.topics = map[string]bool{}
			}
			t.topics[topic] = true
		}
	}
	t.p = p
}

// NewWorker returns an empty worker.
func NewWorker(log *slog.Logger) *Worker {
	if log == nil {
		log = slog.Default()
	}
	return &Worker{tasks: map[string]*task{}, log: log, ended: make(chan string, 16)}
}

// Add registers a pipeline; store is where its positions live (for the
// offsets API while it is stopped).
func (w *Worker) Add(name string, store runtime.PositionStore, f Factory) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tasks[name] = &task{factory: f, store: store, state: StateStopped}
}

// Names lists the hosted pipelines.
func (w *Worker) Names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := make([]string, 0, len(w.tasks))
	for n := range w.tasks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (w *Worker) get(name string) (*task, error) {
	t, ok := w.tasks[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownPipeline, name)
	}
	return t, nil
}

// Ended delivers the name of each pipeline whose run ended by itself
// (FINISHED or FAILED); a pipeline ended by Stop or Restart is not sent.
func (w *Worker) Ended() <-chan string { return w.ended }

// Start builds and runs a pipeline in the background; a running one is left
// alone. A build that fails with a fatal error (or any error when
// MaxRestarts is negative) is returned, and the pipeline is FAILED; after a
// retriable one, the pipeline is RESTARTING: built again after the backoff.
func (w *Worker) Start(ctx context.Context, name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, err := w.get(name)
	if err != nil {
		return err
	}
	if t.starting {
		return nil
	}
	if t.done != nil {
		select {
		case <-t.done:
		default:
			return nil
		}
	}
	// Build without the lock: a build may wait on a server for a while,
	// and status and health must answer meanwhile.
	t.starting = true
	w.mu.Unlock()
	p, err := t.factory(ctx)
	w.mu.Lock()
	t.starting = false
	if err != nil && (runtime.IsFatal(err) || w.MaxRestarts < 0 || ctx.Err() != nil) {
		t.setPipeline(nil)
		t.err, t.state = err, StateFailed
		return err
	}
	if p != nil {
		if p.Positions != nil {
			t.store = p.Positions
		}
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t.setPipeline(p)
	t.cancel, t.done, t.err, t.requested, t.restarting = cancel, make(chan struct{}), nil, false, false
	t.retryErr = err
	go func(t *task, done chan struct{}) {
		err := w.runRestarting(rctx, name, t, p, err)
		w.mu.Lock()
		t.err, t.restarting = err, false
		switch {
		case err != nil:
			t.state = StateFailed
		case t.p != nil && t.p.Status().State == StateFinished:
			t.state = StateFinished
		default:
			t.state = StateStopped
		}
		if t.p != nil {
			t.p.setState(t.state, err) // also ends a RESTARTING shown during a backoff
		}
		requested := t.requested
		w.mu.Unlock()
		if err != nil {
			w.log.Error("pipeline failed", "pipeline", name, "err", err)
		}
		close(done)
		if requested {
			return
		}
		select {
		case w.ended <- name:
		default:
		}
	}(t, t.done)
	return nil
}

// runRestarting runs p, and rebuilds and reruns the pipeline after a
// retriable failure, following the restart policy; p nil means its first
// build failed with the retriable err. It returns the last run's result
// (nil when ctx ended a backoff: that is a stop).
func (w *Worker) runRestarting(ctx context.Context, name string, t *task, p *Pipeline, err error) error {
	first := w.RestartBackoff
	if first <= 0 {
		first = time.Second
	}
	ceiling := w.MaxRestartBackoff
	if ceiling <= 0 {
		ceiling = 30 * time.Second
	}
	restarts := 0
	w.mu.Lock()
	started := t.ran
	w.mu.Unlock()
	for {
		if p != nil {
			began := time.Now()
			err = p.Run(ctx)
			if err != nil && ctx.Err() == nil && !runtime.IsEndOfInput(err) {
				p.metrics().countError(errorRun, err)
			}
			if p.Ran() && !started {
				started = true
				w.mu.Lock()
				t.ran = true
				w.mu.Unlock()
			}
			if err == nil || runtime.IsFatal(err) || ctx.Err() != nil || w.MaxRestarts < 0 {
				return err
			}
			if runtime.IsEndOfInput(err) {
				return nil
			}
			if started && time.Since(began) >= ceiling {
				restarts = 0 // it ran healthy for a while: a new incident
			}
		}
		for {
			restarts++
			if !started && w.MaxStartRetries != 0 && restarts > max(w.MaxStartRetries, 0) {
				return fmt.Errorf("did not start: %d attempts failed before it ever ran (start_retries %d); the last: %w", restarts, max(w.MaxStartRetries, 0), err)
			}
			if w.MaxRestarts > 0 && restarts > w.MaxRestarts {
				return fmt.Errorf("gave up after %d restarts: %w", w.MaxRestarts, err)
			}
			delay := min(first<<min(restarts-1, 16), ceiling)
			w.log.Warn("pipeline failed with a retriable error; restarting it", "pipeline", name, "in", delay, "restart", restarts, "err", err)
			w.mu.Lock()
			t.restarting, t.retryErr = true, err
			if t.p != nil {
				t.p.setState(StateRestarting, err)
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(delay):
			}
			np, ferr := t.factory(ctx)
			if ferr != nil {
				if ctx.Err() != nil {
					return nil
				}
				if p != nil {
					p.metrics().countError(errorRun, ferr)
				}
				if runtime.IsFatal(ferr) {
					return ferr
				}
				err = ferr
				continue
			}
			if p != nil {
				np.keepMetrics(p) // the task's counters go on growing
			}
			w.mu.Lock()
			t.setPipeline(np)
			t.restarting = false
			if np.Positions != nil {
				t.store = np.Positions
			}
			w.mu.Unlock()
			p = np
			break
		}
	}
}

// Stop stops a pipeline gracefully and waits for it (bounded by ctx).
func (w *Worker) Stop(ctx context.Context, name string) error {
	w.mu.Lock()
	t, err := w.get(name)
	if err != nil {
		w.mu.Unlock()
		return err
	}
	cancel, done := t.cancel, t.done
	if cancel != nil {
		select {
		case <-done:
		default:
			t.requested = true
		}
	}
	w.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pipeline %s did not stop in time: %w", name, ctx.Err())
	}
}

// StopAll stops every pipeline.
func (w *Worker) StopAll(ctx context.Context) error {
	var errs []error
	for _, n := range w.Names() {
		errs = append(errs, w.Stop(ctx, n))
	}
	return errors.Join(errs...)
}

// Restart stops and starts a pipeline with a freshly built task; a
// FAILED or FINISHED one is started again.
func (w *Worker) Restart(ctx context.Context, name string) error {
	if err := w.Stop(ctx, name); err != nil {
		return err
	}
	return w.Start(ctx, name)
}

func (w *Worker) running(name string) (*Pipeline, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, err := w.get(name)
	if err != nil {
		return nil, err
	}
	if t.done == nil {
		return nil, nil
	}
	select {
	case <-t.done:
		return nil, nil
	default:
		return t.p, nil
	}
}

// Ran reports whether the pipeline has reported RUNNING since it was added
// (Pipeline.Ran): until then it is not ready (GET /health), and `sluice
// run` stopped before it exits non-zero.
func (w *Worker) Ran(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.tasks[name]
	return ok && (t.ran || t.p != nil && t.p.Ran())
}

// Pause stops a running pipeline from reading its source.
func (w *Worker) Pause(name string) error {
	p, err := w.running(name)
	if err != nil || p == nil {
		return errors.Join(err, notRunning(name, p))
	}
	p.Pause()
	return nil
}

// Resume undoes Pause.
func (w *Worker) Resume(name string) error {
	p, err := w.running(name)
	if err != nil || p == nil {
		return errors.Join(err, notRunning(name, p))
	}
	p.Resume()
	return nil
}

// ErrNoSignals: a signal sent to a pipeline whose source takes none.
var ErrNoSignals = errors.New("the pipeline's source takes no signals (the binlog source does)")

// Signal hands a snapshot signal to a running pipeline's source (a
// Signaler) and returns the signal's id.
func (w *Worker) Signal(ctx context.Context, name, id, typ, data string) (string, error) {
	p, err := w.running(name)
	if err != nil || p == nil {
		return "", errors.Join(err, notRunning(name, p))
	}
	sg, ok := p.Source.(runtime.Signaler)
	if !ok {
		return "", fmt.Errorf("%s: %w", name, ErrNoSignals)
	}
	return sg.Signal(ctx, id, typ, data)
}

// ErrNoGroups: group checkpoints asked of a pipeline whose source keeps none.
var ErrNoGroups = errors.New("the pipeline's source keeps no group checkpoints (the rocketmq replicator does)")

// Groups reports the group checkpoints of a running pipeline's source (a
// GroupReporter) and, with apply, writes them on the target (failover).
func (w *Worker) Groups(ctx context.Context, name string, apply bool) (any, error) {
	p, err := w.running(name)
	if err != nil || p == nil {
		return nil, errors.Join(err, notRunning(name, p))
	}
	g, ok := p.Source.(runtime.GroupReporter)
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, ErrNoGroups)
	}
	return g.Groups(ctx, apply)
}

// Switchover carries out a planned switchover of groups of a running
// pipeline's source (a GroupSwitcher).
func (w *Worker) Switchover(ctx context.Context, name string, groups []string, timeout time.Duration) (any, error) {
	p, err := w.running(name)
	if err != nil || p == nil {
		return nil, errors.Join(err, notRunning(name, p))
	}
	g, ok := p.Source.(runtime.GroupSwitcher)
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, ErrNoGroups)
	}
	return g.Switchover(ctx, groups, timeout)
}

// ErrNotRunning: a call that needs the pipeline running (pause, resume,
// signal) found it stopped, finished or failed.
var ErrNotRunning = errors.New("not running")

func notRunning(name string, p *Pipeline) error {
	if p != nil {
		return nil
	}
	return fmt.Errorf("pipeline %s is %w: start or restart it first", name, ErrNotRunning)
}

// TaskStatus is a pipeline's status as the REST API reports it.
type TaskStatus struct {
	Status
	// LagSeconds: with a source, now minus the source time of the newest
	// committed record (heartbeats included), 0 when caught up; without
	// one (a sink-only process), the lag of the newest applied batch when
	// it was applied.
	LagSeconds float64 `json:"lag_seconds"`
	InFlight   int     `json:"in_flight"`
	// CaughtUp (with a source): nothing in flight and the server has
	// logged nothing after the committed position.
	CaughtUp *bool `json:"caught_up,omitempty"`
	// BehindBytes and BehindTransactions: how much the server logged
	// after the committed position, when the source can tell.
	BehindBytes        *int64          `json:"behind_bytes,omitempty"`
	BehindTransactions *int64          `json:"behind_transactions,omitempty"`
	Snapshot           *SnapshotStatus `json:"snapshot,omitempty"`
	// IncrementalSnapshot: the newest incremental snapshot (signals).
	IncrementalSnapshot *runtime.IncrementalSnapshotStatus `json:"incremental_snapshot,omitempty"`
	// UnconsumedTopics: topics the source publishes to that no consumer
	// group reads (RocketMQ, in a process without the sink): their
	// records reach no target.
	UnconsumedTopics []string `json:"unconsumed_topics,omitempty"`
	// UnreachableBrokers: brokers the source's publisher waits for
	// (RocketMQ: no live master), with the queues whose records wait and
	// since when. The pipeline stays RUNNING and resumes when they return.
	UnreachableBrokers []runtime.Unreachable `json:"unreachable_brokers,omitempty"`
}

// Status reports a pipeline's state, counters, position and last error.
func (w *Worker) Status(name string) (TaskStatus, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, err := w.get(name)
	if err != nil {
		return TaskStatus{}, err
	}
	var st TaskStatus
	if t.starting {
		st = TaskStatus{Status: Status{Name: name, State: StateUnassigned}}
	} else if t.p == nil {
		st = TaskStatus{Status: Status{Name: name, State: t.state}}
	} else {
		// The counters first, then lag and in-flight from one read of the
		// window: a record counted as applied here is acknowledged, or
		// still in flight, in what follows; never in flight here and
		// missing from the lag there.
		status := t.p.Status()
		pr := t.p.progress(time.Now())
		st = TaskStatus{Status: status, LagSeconds: pr.lagSeconds, InFlight: pr.inFlight,
			CaughtUp: pr.caughtUp, BehindBytes: pr.bytes, BehindTransactions: pr.txs, Snapshot: pr.snapshot, IncrementalSnapshot: pr.incr,
			UnconsumedTopics: pr.unconsumed, UnreachableBrokers: pr.unreachable}
	}
	ended := false
	if t.done != nil {
		select {
		case <-t.done:
			ended = true
		default:
		}
	}
	switch {
	case t.starting:
	case ended:
		st.State = t.state
	case t.restarting || (t.done != nil && t.p == nil):
		st.State = StateRestarting
	case t.done != nil && st.State == StateFailed:
		// The run ended and runRestarting has not yet decided: a retriable
		// error restarts it, a fatal one ends the task FAILED (then ended).
		// Until then it is not FAILED: a monitor must never see FAILED
		// flicker between a lost connection and its restart.
		st.State = StateRestarting
	}
	if t.err != nil {
		st.LastError = t.err.Error()
	} else if st.State == StateRestarting && t.retryErr != nil {
		st.LastError = t.retryErr.Error()
	}
	return st, nil
}

// Pipelines returns the pipelines that have been started, for metrics.
func (w *Worker) Pipelines() []*Pipeline {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ps []*Pipeline
	for _, n := range w.namesLocked() {
		if p := w.tasks[n].p; p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

func (w *Worker) namesLocked() []string {
	names := make([]string, 0, len(w.tasks))
	for n := range w.tasks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Position reads a pipeline's saved source position.
func (w *Worker) Position(ctx context.Context, name string) ([]byte, error) {
	w.mu.Lock()
	t, err := w.get(name)
	w.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if t.store == nil {
		return nil, fmt.Errorf("pipeline %s has no source position (sink-only)", name)
	}
	return t.store.Load(ctx, name)
}

// Topics lists, sorted, the topics a pipeline's runs have published to or
// consumed from since it was added or since ResetTopics: none on the
// embedded transport, which has no topics (TopicTracker).
func (w *Worker) Topics(name string) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, err := w.get(name)
	if err != nil {
		return nil, err
	}
	set := maps.Clone(t.topics)
	if set == nil {
		set = map[string]bool{}
	}
	if t.p != nil {
		for _, topic := range t.p.topics() {
			set[topic] = true
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// ResetTopics empties the list Topics answers; a running pipeline's next
// send or delivery adds its topic again.
func (w *Worker) ResetTopics(name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, err := w.get(name)
	if err != nil {
		return err
	}
	t.topics = nil
	if t.p != nil {
		t.p.resetTopics()
	}
	return nil
}

// ResetPosition removes (pos nil) or replaces a stopped pipeline's saved position.
func (w *Worker) ResetPosition(ctx context.Context, name string, pos []byte) error {
	if p, err := w.running(name); err != nil {
		return err
	} else if p != nil {
		return fmt.Errorf("pipeline %s is running: stop it before changing its position", name)
	}
	w.mu.Lock()
	t := w.tasks[name]
	w.mu.Unlock()
	if t.store == nil {
		return fmt.Errorf("pipeline %s has no source position (sink-only)", name)
	}
	if pos == nil {
		if r, ok := t.store.(interface {
			Reset(context.Context, string) error
		}); ok {
			return r.Reset(ctx, name)
		}
		return fmt.Errorf("the position store of %s cannot reset", name)
	}
	return t.store.Save(ctx, name, pos)
}
