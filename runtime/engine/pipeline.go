package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// State is a task's lifecycle state, as Kafka Connect names them.
type State string

// Task states.
const (
	StateUnassigned State = "UNASSIGNED"
	StateRunning    State = "RUNNING"
	StatePaused     State = "PAUSED"
	StateFailed     State = "FAILED"
	StateStopped    State = "STOPPED"
	// StateFinished: the source reached the end of its input (an
	// initial_only snapshot is complete); everything read was applied and
	// the position saved.
	StateFinished State = "FINISHED"
	// StateRestarting: a retriable failure; the worker builds the pipeline
	// again after a backoff (Worker.RestartBackoff).
	StateRestarting State = "RESTARTING"
)

// Pipeline runs one source task, one sink task, or both, joined by a
// transport. Fields are set before Run and not changed after.
type Pipeline struct {
	Name       string
	Source     runtime.Source     // nil: no source side in this process
	Publisher  runtime.Publisher  // required with Source
	Subscriber runtime.Subscriber // nil: no sink side in this process
	Sink       runtime.Sink       // required with Subscriber
	Positions  runtime.PositionStore
	Log        *slog.Logger
	// Tables lists the source's captured tables (and their shapes, when
	// it is a ShapeLister) for the start check of a sink side
	// (TableChecker, ShapeChecker) when Source is nil or no TableLister (a
	// sink-only process); optional.
	Tables runtime.TableLister
	// OnClose runs after the sink side closed, in order: what a
	// connector's constructor opened beside it (Task.OnClose).
	OnClose []func() error

	MaxInFlight  int           // records published but not acknowledged; default 8192
	SaveInterval time.Duration // how often a committed position is saved; default 200ms
	DrainTimeout time.Duration // how long shutdown waits for acknowledgements; default 30s
	// MaxInFlightBytes caps the same records as MaxInFlight by their
	// estimated size (schema.Record.Size); default 16 MiB. A batch larger
	// than the cap is admitted alone.
	MaxInFlightBytes int
	// SaveRetry is how long a position store that refuses writes with an
	// error not marked retriable (a positions folder that is read-only,
	// full or gone) is tried again, while the pipeline runs on, before the
	// pipeline fails (FAILED): a restart would not change it. Default 30s.
	// A store's retriable errors (a database down) restart the pipeline.
	SaveRetry time.Duration

	stats   Stats
	backlog backlogState
	gcOnce  sync.Once
	gc      *groupCommit
	tally   barrierTally // counts each barrier once in records_applied
	mOnce   sync.Once
	m       *Metrics
	win     atomic.Pointer[window]
	pauseMu sync.Mutex
	resumed chan struct{} // nil while running; closed on resume
	// sinkFailed is set when the sink side's failure stopped the source:
	// Run reports that error, so the source side does not say it again.
	sinkFailed atomic.Bool
	// ran is set once the pipeline reported RUNNING: its source opened and
	// its start position saved (see Ran).
	ran atomic.Bool
}

func (p *Pipeline) metrics() *Metrics {
	p.mOnce.Do(func() { p.m = newMetrics() })
	return p.m
}

// keepMetrics makes p count on in prev's Metrics: p restarts prev's task.
// Call it before p runs.
func (p *Pipeline) keepMetrics(prev *Pipeline) {
	m := prev.metrics()
	p.mOnce.Do(func() { p.m = m })
}

// Pause stops reading the source; records in flight are still delivered.
func (p *Pipeline) Pause() {
	p.pauseMu.Lock()
	defer p.pauseMu.Unlock()
	if p.resumed == nil {
		p.resumed = make(chan struct{})
		p.setState(StatePaused, nil)
	}
}

// Resume undoes Pause.
func (p *Pipeline) Resume() {
	p.pauseMu.Lock()
	defer p.pauseMu.Unlock()
	if p.resumed != nil {
		close(p.resumed)
		p.resumed = nil
		p.setState(StateRunning, nil)
	}
}

// markRunning reports RUNNING (PAUSED stays, when a pause came first):
// for a source side, once it is open and its start position saved.
func (p *Pipeline) markRunning() {
	p.pauseMu.Lock()
	defer p.pauseMu.Unlock()
	p.ran.Store(true)
	if p.resumed == nil {
		p.setState(StateRunning, nil)
	}
}

// Ran reports whether the pipeline has reported RUNNING: with a source,
// it connected to it and saved the position it starts from.
func (p *Pipeline) Ran() bool { return p.ran.Load() }

func (p *Pipeline) waitResumed(ctx context.Context) error {
	p.pauseMu.Lock()
	ch := p.resumed
	p.pauseMu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats are the pipeline's counters; read them with Snapshot.
type Stats struct {
	RecordsRead    atomic.Int64
	RecordsApplied atomic.Int64
	BatchesFailed  atomic.Int64
	mu             sync.Mutex
	state          State
	lastErr        string
	position       []byte
}

// Status is a point-in-time view of a pipeline.
type Status struct {
	Name           string `json:"name"`
	State          State  `json:"state"`
	RecordsRead    int64  `json:"records_read"`
	RecordsApplied int64  `json:"records_applied"`
	Position       string `json:"position,omitempty"`
	LastError      string `json:"last_error,omitempty"`
}

// Status returns the current state and counters.
func (p *Pipeline) Status() Status {
	p.stats.mu.Lock()
	defer p.stats.mu.Unlock()
	st := p.stats.state
	if st == "" {
		st = StateUnassigned
	}
	return Status{Name: p.Name, State: st, RecordsRead: p.stats.RecordsRead.Load(),
		RecordsApplied: p.stats.RecordsApplied.Load(), Position: string(p.stats.position), LastError: p.stats.lastErr}
}

func (p *Pipeline) setState(s State, err error) {
	p.stats.mu.Lock()
	defer p.stats.mu.Unlock()
	p.stats.state = s
	if err != nil {
		p.stats.lastErr = err.Error()
	}
}

func (p *Pipeline) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.Default()
}

// Run runs until ctx is done (a graceful stop: returns nil after draining),
// the source ends its input (schema.ErrEndOfInput: returns nil after
// draining and saving the position, state FINISHED) or a task fails
// (returns its error, state FAILED).
func (p *Pipeline) Run(ctx context.Context) error {
	if p.Source == nil && p.Subscriber == nil {
		return fmt.Errorf("pipeline %s: nothing to run (no source and no sink): %w", p.Name, runtime.ErrConfig)
	}
	if p.Source != nil && (p.Publisher == nil || p.Positions == nil) {
		return fmt.Errorf("pipeline %s: a source needs a transport and a position store: %w", p.Name, runtime.ErrConfig)
	}
	if p.Subscriber != nil && p.Sink == nil {
		return fmt.Errorf("pipeline %s: a subscriber needs a sink: %w", p.Name, runtime.ErrConfig)
	}
	ctx = runtime.WithLogger(ctx, p.log())
	if err := p.checkTables(ctx); err != nil {
		// Nothing ran, but the constructors opened the transport's sides
		// and the sink: a restarted or rebuilt pipeline makes new ones, so
		// these are closed here (a Kafka consumer left open stays in its
		// group, heartbeating, and keeps half the partitions from the next
		// run's consumer).
		if cerr := p.closeUnstarted(ctx); cerr != nil {
			err = errors.Join(err, cerr)
		}
		p.setState(StateFailed, err)
		return err
	}
	if p.Source == nil {
		p.markRunning() // a source side reports it once its start is saved
	}

	// The sink side outlives the source side on shutdown, so that batches
	// already published can still be applied and acknowledged.
	sinkCtx, stopSink := context.WithCancel(runtime.WithLogger(context.WithoutCancel(ctx), p.log()))
	defer stopSink()
	failed := make(chan error, 2)
	var sinkDone chan struct{}
	if p.Subscriber != nil {
		sinkDone = make(chan struct{})
		go func() {
			defer close(sinkDone)
			err := p.Subscriber.Consume(sinkCtx, p.apply)
			if err != nil && sinkCtx.Err() == nil {
				failed <- prefixed("sink", err)
			}
		}()
	}

	srcCtx, stopSrc := context.WithCancel(ctx)
	defer stopSrc()
	var runErr error
	finished := false
	if p.Source != nil {
		go func() {
			select {
			case err := <-failed:
				failed <- err // keep it for the report below
				p.sinkFailed.Store(true)
				stopSrc()
			case <-srcCtx.Done():
			}
		}()
		finished, runErr = p.runSource(srcCtx)
		if runErr != nil && errors.Is(runErr, context.Canceled) && ctx.Err() != nil {
			runErr = nil
		}
	} else {
		select {
		case <-ctx.Done():
		case runErr = <-failed:
		}
	}
	select {
	case err := <-failed:
		if runErr == nil {
			runErr = err
		}
	default:
	}

	stopSink()
	if sinkDone != nil {
		<-sinkDone
	}
	if p.Subscriber != nil {
		runErr = errors.Join(runErr, p.Subscriber.Close(context.Background()), p.Sink.Close())
		for _, f := range p.OnClose {
			runErr = errors.Join(runErr, f())
		}
	}
	if runErr != nil {
		p.setState(StateFailed, runErr)
		return runErr
	}
	if finished {
		p.log().Info("pipeline finished: the source's input is complete, everything read was applied and the position saved", "pipeline", p.Name)
		p.setState(StateFinished, nil)
		return nil
	}
	p.setState(StateStopped, nil)
	return nil
}

// closeUnstarted closes what Run would have closed, for a pipeline that
// stops before either side started: the publisher of the source side, the
// subscriber, the sink and the OnClose functions of the sink side.
func (p *Pipeline) closeUnstarted(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var err error
	if p.Source != nil {
		err = p.Publisher.Close(cctx)
	}
	if p.Subscriber != nil {
		err = errors.Join(err, p.Subscriber.Close(cctx), p.Sink.Close())
		for _, f := range p.OnClose {
			err = errors.Join(err, f())
		}
	}
	return err
}

func (p *Pipeline) apply(ctx context.Context, recs []schema.Record) error {
	m := p.metrics()
	start := time.Now()
	p.gcOnce.Do(func() {
		lanes := groupLanes
		if qs, ok := p.Sink.(runtime.QueueSplitter); ok && qs.SplitsQueues() {
			lanes = 0 // every batch alone
		}
		p.gc = newGroupCommit(p.Sink.Write, lanes, maxGroupLanes)
	})
	if err := p.gc.Write(ctx, recs); err != nil {
		p.stats.BatchesFailed.Add(1)
		m.countError(errorApply, err)
		return err
	}
	m.observeApply(time.Since(start))
	counted := p.tally.counted(recs)
	p.stats.RecordsApplied.Add(changes(counted))
	countByTable(m, m.recordsOut, counted)
	var newest int64
	for i := range recs {
		newest = max(newest, recs[i].Source.TsMs)
	}
	if newest > 0 {
		m.lagMs.Store(max(0, time.Now().UnixMilli()-newest))
	}
	return nil
}

// countByTable adds the data records of a batch to per-table, per-op
// counters, taking the counter map's lock once per run of one table and op.
func countByTable(m *Metrics, by map[tableOp]*atomic.Int64, recs []schema.Record) {
	// Runs of one table and op are counted together; the table's name is
	// made once a run, not once a record.
	var cur schema.TableID
	var op schema.Op
	var n int64
	for i := range recs {
		if !recs[i].Op.IsData() {
			continue
		}
		if t := recs[i].Table; t != cur || recs[i].Op != op {
			if n > 0 {
				counter(m, by, tableOp{cur.String(), op}).Add(n)
			}
			cur, op, n = t, recs[i].Op, 0
		}
		n++
	}
	if n > 0 {
		counter(m, by, tableOp{cur.String(), op}).Add(n)
	}
}

// InFlight is the number of records published but not yet acknowledged.
func (p *Pipeline) InFlight() int {
	n, _ := p.InFlightBytes()
	return n
}

// InFlightBytes is the number of records published but not yet
// acknowledged and their estimated bytes.
func (p *Pipeline) InFlightBytes() (records, bytes int) {
	w := p.win.Load()
	if w == nil {
		return 0, 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inFlight, w.bytes
}

// errInputEnded is readLoop's word for the source's end of input.
var errInputEnded = errors.New("runtime: end of input")

// runSource runs the source side until ctx is done, a failure, or the end
// of the source's input (finished true, err nil once drained and saved).
func (p *Pipeline) runSource(ctx context.Context) (finished bool, err error) {
	log := p.log()
	// Until the read loop owns the publisher, an early return must close it
	// (a restarted task builds a new one).
	closePub := func(err error) error {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return errors.Join(err, p.Publisher.Close(cctx))
	}
	store := p.Positions
	if c, ok := store.(runtime.Claimer); ok {
		// From here on, an earlier run of this pipeline still going
		// somewhere cannot save positions over ours.
		if store, err = c.Claim(ctx, p.Name); err != nil {
			return false, closePub(err)
		}
		if r, ok := store.(releaser); ok {
			defer r.Release()
		}
	}
	stored, err := store.Load(ctx, p.Name)
	if err != nil {
		return false, closePub(err)
	}
	if k, ok := p.Source.(runtime.PositionKeeper); ok {
		k.KeepPositions(store, p.Name)
	}
	var pos []byte
	if stored == nil {
		log.Warn("no saved position; starting from the source's configured start", "pipeline", p.Name, "store", storeWhere(p.Positions))
	} else {
		pos = SourcePosition(stored)
		log.Info("resuming from saved position", "pipeline", p.Name, "position", string(pos), "store", storeWhere(p.Positions))
		// status shows where it resumed until a newer position is saved
		p.stats.mu.Lock()
		p.stats.position = pos
		p.stats.mu.Unlock()
	}
	if err := p.Source.Open(ctx, pos); err != nil {
		return false, closePub(fmt.Errorf("open source: %w", err))
	}
	defer func() { err = errors.Join(err, p.Source.Close()) }()
	// Where the source began without a saved position (its configured
	// start, a new snapshot) is saved before RUNNING: a stop at any moment
	// from here on resumes there, not at a later "current" position.
	if sp, ok := p.Source.(runtime.StartPositioner); ok {
		if start := sp.StartPosition(); start != nil {
			if err := store.Save(ctx, p.Name, start); err != nil {
				return false, closePub(fmt.Errorf("save the start position: %w", err))
			}
			p.stats.mu.Lock()
			p.stats.position = SourcePosition(start)
			p.stats.mu.Unlock()
			log.Info("start position saved", "pipeline", p.Name, "position", string(start), "store", storeWhere(p.Positions))
		}
	}
	p.markRunning()

	w := newWindow(p.MaxInFlight, p.MaxInFlightBytes)
	p.win.Store(w)
	saveEvery := p.SaveInterval
	if saveEvery <= 0 {
		saveEvery = 200 * time.Millisecond
	}
	saverDone := make(chan error, 1)
	saverCtx, stopSaver := context.WithCancel(context.WithoutCancel(ctx))
	// A position that cannot be saved (or a claim another run took over)
	// stops reading: going on would only pile up work to replay.
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	saveRetry := p.SaveRetry
	if saveRetry <= 0 {
		saveRetry = 30 * time.Second
	}
	go func() {
		t := time.NewTicker(saveEvery)
		defer t.Stop()
		held, _ := store.(runtime.Holder)
		lastCheck := time.Now()
		var failing time.Time // since when saves fail and are retried here
		for {
			select {
			case <-saverCtx.Done():
				saverDone <- nil
				return
			case <-t.C:
				err := p.save(saverCtx, store, w)
				if err != nil && runtime.ClassOf(err) == schema.ClassUnknown {
					if failing.IsZero() {
						failing = time.Now()
						log.Warn("cannot save the position; trying again before the pipeline fails", "pipeline", p.Name, "for", saveRetry, "err", err)
					}
					if time.Since(failing) < saveRetry {
						continue
					}
					err = schema.Fatal(fmt.Errorf("%w (failed for %s: make the position store writable, then start the pipeline again)", err, saveRetry.Round(time.Second)))
				} else if err == nil && !failing.IsZero() {
					failing = time.Time{}
					log.Info("position saved again", "pipeline", p.Name)
				}
				if err == nil && held != nil && time.Since(lastCheck) >= claimCheckEvery {
					// Saves notice a lost claim; an idle pipeline checks.
					lastCheck = time.Now()
					err = held.Held(saverCtx, p.Name)
				}
				if err != nil {
					saverDone <- err
					stopReading()
					return
				}
			}
		}
	}()

	readErr := p.readLoop(readCtx, w)
	if errors.Is(readErr, errInputEnded) {
		readErr, finished = nil, true
	}

	// Graceful stop: wait for what is in flight, then save the final position.
	drain := p.DrainTimeout
	if drain <= 0 {
		drain = 30 * time.Second
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	waitErr := w.wait(dctx)
	closeErr := p.Publisher.Close(dctx)
	stopSaver()
	saveErr := <-saverDone
	if err := p.save(context.WithoutCancel(ctx), store, w); err != nil && saveErr == nil {
		saveErr = err // else the saver's failure says it already
	}
	if waitErr != nil && readErr == nil && ctx.Err() != nil {
		// A batch cut off by the stop is not committed: it is read again at
		// the next start, which is the at-least-once contract, not a fault.
		level := slog.LevelWarn
		if errors.Is(waitErr, context.Canceled) {
			level = slog.LevelInfo
		}
		if !p.sinkFailed.Load() { // else the batch's error is the failure Run reports
			log.Log(ctx, level, "stopped with batches unacknowledged; they will be read again at the next start", "err", waitErr)
		}
		waitErr = nil
	}
	if readErr != nil && waitErr != nil && errors.Is(readErr, waitErr) {
		waitErr = nil // the read loop stopped on that failed batch: say it once
	}
	err = errors.Join(readErr, waitErr, closeErr, saveErr)
	return finished && err == nil, err
}

// releaser is a claimed position store that holds a resource (a lock)
// until the run ends.
type releaser interface{ Release() }

const claimCheckEvery = 5 * time.Second

func (p *Pipeline) save(ctx context.Context, store runtime.PositionStore, w *window) error {
	pos, ok := w.take()
	if !ok {
		return nil
	}
	if err := store.Save(ctx, p.Name, pos); err != nil {
		w.untake() // tried again at the next save
		return fmt.Errorf("save position: %w", err)
	}
	p.stats.mu.Lock()
	p.stats.position = SourcePosition(pos)
	p.stats.mu.Unlock()
	return nil
}

func (p *Pipeline) readLoop(ctx context.Context, w *window) error {
	for {
		if err := p.waitResumed(ctx); err != nil {
			return nil
		}
		recs, err := p.Source.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if runtime.IsEndOfInput(err) {
				p.log().Info("the source's input is complete; draining and saving the position", "pipeline", p.Name, "reason", err)
				return errInputEnded
			}
			return fmt.Errorf("read source: %w", err)
		}
		if len(recs) == 0 {
			continue
		}
		// Records carry their identity from the source; the newest
		// resumable point of the batch is what gets saved.
		var pos []byte
		for i := range recs {
			if recs[i].Position != nil {
				pos = recs[i].Position
			}
		}
		seq, err := w.add(ctx, len(recs), schema.RecordsSize(recs), pos)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("transport failed: %w", err)
		}
		w.stamp(seq, batchTime(recs))
		p.stats.RecordsRead.Add(changes(recs))
		countByTable(p.metrics(), p.metrics().recordsIn, recs)
		if err := p.Publisher.Publish(ctx, recs, func(err error) { w.ack(seq, err) }); err != nil {
			// The batch was not taken, so no ack will come for it: fail its
			// slot, or the drain would wait the whole DrainTimeout for it.
			w.ack(seq, fmt.Errorf("publish: %w", err))
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("publish: %w", err)
		}
	}
}

// prefixed returns err with "prefix: " in front, unless its text says
// "prefix: " already (the sink's own errors do, also behind a transport's
// "topic … queue … offset …: "): one prefix, not two.
func prefixed(prefix string, err error) error {
	if msg := err.Error(); strings.HasPrefix(msg, prefix+": ") || strings.Contains(msg, ": "+prefix+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// checkTables hands the source's captured tables, and their shapes when
// the source lists them and the sink checks them (ShapeLister,
// ShapeChecker), to a sink that checks them (TableChecker) before anything
// runs: a table the sink refuses stops the start with its fatal error
// instead of the first record of the table.
// A lister that cannot reach the source is no reason not to start: the sink
// checks every table again at its first record.
func (p *Pipeline) checkTables(ctx context.Context) error {
	if p.Subscriber == nil {
		return nil
	}
	l, _ := p.Source.(runtime.TableLister)
	if l == nil {
		l = p.Tables
	}
	if l == nil {
		return nil
	}
	if c, ok := p.Sink.(runtime.TableChecker); ok {
		ids, err := l.CapturedTables(ctx)
		if err != nil {
			// Debug: the source says the same again, as its own error, when it
			// starts (a wrong password must be printed once).
			p.log().Debug("cannot list the source's tables to check them against the sink before starting; each is checked at its first record", "pipeline", p.Name, "err", err)
			return nil
		}
		if err := c.CheckTables(ids); err != nil {
			return fmt.Errorf("pipeline %s: %w", p.Name, err)
		}
	}
	sc, ok := p.Sink.(runtime.ShapeChecker)
	sl, ok2 := l.(runtime.ShapeLister)
	if !ok || !ok2 {
		return nil
	}
	if w, ok := p.Sink.(interface{ WantsShapes() bool }); ok && !w.WantsShapes() {
		return nil // the sink would ignore them: read no catalogue at start
	}
	shapes, err := sl.CapturedShapes(ctx)
	if err != nil {
		p.log().Debug("cannot read the shapes of the source's tables to check them against the sink before starting; each is checked at its first record", "pipeline", p.Name, "err", err)
		return nil
	}
	if err := sc.CheckShapes(ctx, shapes); err != nil {
		if schema.ClassOf(err) == schema.ClassFatal {
			return fmt.Errorf("pipeline %s: %w", p.Name, err)
		}
		p.log().Warn("cannot check the source's tables against the target before starting; each is checked at its first record", "pipeline", p.Name, "err", err)
	}
	return nil
}

// storeWhere says where s keeps positions, or its type.
func storeWhere(s runtime.PositionStore) string {
	if w, ok := s.(runtime.Where); ok {
		return w.Where()
	}
	return fmt.Sprintf("%T", s)
}
