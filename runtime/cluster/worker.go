package cluster

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
)

// BuildFunc builds one task's pipeline: only "source", "sink" or "" (both,
// embedded). lease is the task's lease, for the durable writes the build
// wires itself (the schema history); the worker replaces the pipeline's
// Positions with a store fenced by the same lease.
type BuildFunc func(ctx context.Context, cfg *plugin.Config, only string, lease storage.Lease, log *slog.Logger) (*engine.Pipeline, error)

// Config is one worker's settings.
type Config struct {
	ID  string // unique in the cluster; `sluice worker` defaults it to host:port of its REST address
	URL string // where its REST API answers, for GET /workers
	// TTL is the lease time: a task whose holder has not renewed for TTL
	// (by the database's clock) may be taken by another worker. Default 10s.
	TTL time.Duration
	// Heartbeat is how often the worker heartbeats and looks for work
	// (default TTL/3); leases are renewed every TTL/3.
	Heartbeat time.Duration
	// Margin: the holder stops a task's reading and writing when its
	// monotonic clock says TTL minus Margin passed since the start of the
	// last successful renewal (default TTL/5), before the database would let
	// another worker take it.
	Margin time.Duration
	Build  BuildFunc
	Log    *slog.Logger
	// RestartBackoff of each task's engine.Worker (default 1s).
	RestartBackoff time.Duration
	// clock is this host's time (default time.Now); tests skew its wall
	// part (see Clocks in the package doc).
	clock func() time.Time
}

// Worker is one member of a cluster: it heartbeats, takes tasks up to its
// fair share, renews their leases and hosts them.
type Worker struct {
	cfg   Config
	s     *Store
	log   *slog.Logger
	zero  time.Time // monotonic origin
	mu    sync.Mutex
	tasks map[string]*hosted

	renewals      atomic.Int64
	renewFailures atomic.Int64
	lost          atomic.Int64
	acquired      atomic.Int64
	handoffs      atomic.Int64
	lastBeat      atomic.Int64 // w.now() of the last successful heartbeat
	live          atomic.Int64
	share         atomic.Int64
}

// hosted is a task this worker holds a lease on.
type hosted struct {
	t         Task
	cfg       *plugin.Config
	gen       int64 // connector version it runs
	restarts  int64
	lease     storage.Lease
	lastRenew atomic.Int64 // w.now() at the start of the last successful renewal
	rw        *engine.Worker
	store     atomic.Pointer[FencedPositions]
	leaving   bool // draining for a handoff or a config change
	dropped   atomic.Bool
	// cancelBuild ends a build still in progress; started is closed once
	// rw.Start returned, so a stop never races the start.
	cancelBuild context.CancelFunc
	started     chan struct{}
	// topicResets is the connector's number of topic resets the task's
	// topics are written under (-1: not read yet), written the topics
	// written under it (writeTopics; the tick's own).
	topicResets int64
	written     map[string]bool
}

// NewWorker returns a worker over the control tables of s.
func NewWorker(s *Store, cfg Config) (*Worker, error) {
	if cfg.ID == "" {
		return nil, fmt.Errorf("cluster worker: an id is required: %w", runtime.ErrConfig)
	}
	if cfg.Build == nil {
		return nil, fmt.Errorf("cluster worker: no build function: %w", runtime.ErrConfig)
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 10 * time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = cfg.TTL / 3
	}
	if cfg.Margin <= 0 {
		cfg.Margin = cfg.TTL / 5
	}
	if cfg.Margin >= cfg.TTL/2 || cfg.Heartbeat >= cfg.TTL {
		return nil, fmt.Errorf("cluster worker: ttl %s, heartbeat %s, margin %s: the heartbeat must be shorter than the ttl and the margin under half of it: %w", cfg.TTL, cfg.Heartbeat, cfg.Margin, runtime.ErrConfig)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.clock == nil {
		cfg.clock = time.Now
	}
	return &Worker{cfg: cfg, s: s, log: cfg.Log.With("worker", cfg.ID), zero: cfg.clock(), tasks: map[string]*hosted{}}, nil
}

// now is the monotonic time since the worker was made (a Sub of two
// readings: the wall clock's skew and steps do not enter it).
func (w *Worker) now() int64 { return int64(w.cfg.clock().Sub(w.zero)) }

// valid is the holder's own view of a lease: true while less than TTL
// minus Margin passed on this process's monotonic clock since the start
// of the last successful renewal. A process paused (SIGSTOP, GC) or cut
// off from the database past that stops the task before the database lets
// another worker take it, and refuses every write when it wakes.
func (w *Worker) valid(h *hosted) bool {
	return !h.dropped.Load() && time.Duration(w.now()-h.lastRenew.Load()) < w.cfg.TTL-w.cfg.Margin
}

// Run works until ctx is done, then drains every task, releases its
// leases and leaves the cluster.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.waitOwnID(ctx); err != nil {
		return err
	}
	if err := w.heartbeat(ctx); err != nil {
		return err
	}
	w.log.Info("worker joined the cluster", "ttl", w.cfg.TTL, "heartbeat", w.cfg.Heartbeat)
	renewDone := make(chan struct{})
	rctx, stopRenew := context.WithCancel(context.WithoutCancel(ctx))
	go func() { defer close(renewDone); w.renewLoop(rctx) }()
	t := time.NewTicker(w.cfg.Heartbeat)
	defer t.Stop()
	for {
		if err := w.tick(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("worker tick failed; retrying at the next heartbeat", "err", err)
		}
		select {
		case <-ctx.Done():
			w.leave()
			stopRenew()
			<-renewDone
			return nil
		case <-t.C:
		}
	}
}

// waitOwnID waits until no live worker has this worker's id: a
// predecessor killed a moment ago (its heartbeat ages out within the ttl)
// is waited out; a second live worker of the same id, which would take
// this one's leases as its own, is an error.
func (w *Worker) waitOwnID(ctx context.Context) error {
	deadline := w.cfg.clock().Add(2*w.cfg.TTL + w.cfg.Heartbeat)
	for logged := false; ; {
		var live bool
		err := w.s.db.QueryRowContext(ctx, w.s.q("SELECT heartbeat_at > "+w.s.ago()+" FROM "+w.s.Table("workers")+" WHERE id = ?"), micros(w.cfg.TTL), w.cfg.ID).Scan(&live)
		switch {
		case errors.Is(err, sql.ErrNoRows) || err == nil && !live:
			return nil
		case err != nil:
			return retriable("read the workers table", err)
		case w.cfg.clock().After(deadline): // monotonic: both readings carry it
			return fmt.Errorf("cluster worker: another worker with id %q is alive (it heartbeats): give every worker its own id: %w", w.cfg.ID, runtime.ErrConfig)
		case !logged:
			logged = true
			w.log.Info("a worker with this id heartbeated within the ttl: waiting for it to expire before joining")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(w.cfg.Heartbeat):
		}
	}
}

// leave drains every task (positions saved), releases the leases and
// deletes this worker's row, so the others take the tasks at once.
func (w *Worker) leave() {
	w.mu.Lock()
	var all []*hosted
	for _, h := range w.tasks {
		all = append(all, h)
	}
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, h := range all {
		wg.Add(1)
		go func() { defer wg.Done(); w.handoff(h) }()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = w.s.db.ExecContext(ctx, w.s.q("DELETE FROM "+w.s.Table("workers")+" WHERE id = ?"), w.cfg.ID)
	w.log.Info("worker left the cluster")
}

func (w *Worker) heartbeat(ctx context.Context) error {
	q := "INSERT INTO " + w.s.Table("workers") + " (id, url, heartbeat_at) VALUES (?, ?, CURRENT_TIMESTAMP(6)) ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, heartbeat_at = EXCLUDED.heartbeat_at"
	if w.s.dialect == "mysql" {
		q = "INSERT INTO " + w.s.Table("workers") + " (id, url, heartbeat_at) VALUES (?, ?, CURRENT_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE url = VALUES(url), heartbeat_at = VALUES(heartbeat_at)"
	}
	start := w.now()
	if _, err := w.s.db.ExecContext(ctx, w.s.q(q), w.cfg.ID, w.cfg.URL); err != nil {
		return retriable("heartbeat", err)
	}
	w.lastBeat.Store(start)
	return nil
}

func (w *Worker) liveWorkers(ctx context.Context) (int, error) {
	var n int
	if err := w.s.db.QueryRowContext(ctx, w.s.q("SELECT COUNT(*) FROM "+w.s.Table("workers")+" WHERE heartbeat_at > "+w.s.ago()), micros(w.cfg.TTL)).Scan(&n); err != nil {
		return 0, retriable("count live workers", err)
	}
	return max(n, 1), nil
}

type desired struct {
	t        Task
	cfg      *plugin.Config
	version  int64
	target   string
	restarts int64
}

// tick is one round of membership and assignment.
func (w *Worker) tick(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.TTL)
	defer cancel()
	if err := w.heartbeat(ctx); err != nil {
		return err
	}
	conns, err := w.s.LoadConnectors(ctx)
	if err != nil {
		return err
	}
	want := map[string]desired{}
	var runnable []string
	for _, k := range conns {
		cfg, tasks, err := ParseConnector(k.Name, k.Config)
		if err != nil {
			continue // stored before a change of the rules; status shows it unassigned
		}
		for _, t := range tasks {
			want[t.Name] = desired{t: t, cfg: cfg, version: k.Version, target: k.Target, restarts: k.Restarts}
			if k.Target == "running" {
				runnable = append(runnable, t.Name)
			}
		}
	}
	live, err := w.liveWorkers(ctx)
	if err != nil {
		return err
	}
	share := (len(runnable) + live - 1) / live
	w.live.Store(int64(live))
	w.share.Store(int64(share))

	// Tasks whose connector changed, paused, went away or asked for a
	// restart are drained and released; a dropped one (lease lost) is gone.
	w.mu.Lock()
	var mine []*hosted
	for name, h := range w.tasks {
		if h.dropped.Load() {
			delete(w.tasks, name)
			continue
		}
		if h.leaving {
			continue
		}
		d, ok := want[name]
		if !ok || d.target != "running" || d.version != h.gen || d.restarts != h.restarts {
			h.leaving = true
			go w.handoff(h)
			continue
		}
		mine = append(mine, h)
	}
	w.mu.Unlock()

	if len(mine) > share {
		// Over the fair share (a worker joined): hand off one task per
		// tick, the one this worker ranks lowest.
		sort.Slice(mine, func(i, j int) bool { return w.rank(mine[i].t.Name) < w.rank(mine[j].t.Name) })
		h := mine[0]
		w.mu.Lock()
		h.leaving = true
		w.mu.Unlock()
		w.handoffs.Add(1)
		w.log.Info("handing a task off: over the fair share", "task", h.t.Name, "held", len(mine), "share", share, "live_workers", live)
		go w.handoff(h)
		mine = mine[1:]
	}
	if len(mine) < share {
		leases, err := w.s.Leases(ctx)
		if err != nil {
			return err
		}
		var cands []string
		w.mu.Lock()
		for _, name := range runnable {
			if _, held := w.tasks[name]; held {
				continue
			}
			if l, ok := leases[name]; ok && l.Live {
				continue
			}
			cands = append(cands, name)
		}
		w.mu.Unlock()
		sort.Slice(cands, func(i, j int) bool { return w.rank(cands[i]) > w.rank(cands[j]) })
		for _, name := range cands {
			if len(mine) >= share {
				break
			}
			h, err := w.take(ctx, want[name])
			if err != nil {
				return err
			}
			if h != nil {
				mine = append(mine, h)
			}
		}
	}
	return w.writeStatus(ctx)
}

// rank orders tasks per worker (rendezvous hashing), so that workers
// looking for work try different tasks first.
func (w *Worker) rank(task string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(w.cfg.ID + "\x00" + task))
	return h.Sum64()
}

// take acquires d's lease and starts the task; nil when another worker
// was faster.
func (w *Worker) take(ctx context.Context, d desired) (*hosted, error) {
	start := w.now()
	l, ok, err := w.s.Acquire(ctx, d.t.Name, w.cfg.ID, w.cfg.TTL)
	if err != nil || !ok {
		return nil, err
	}
	w.acquired.Add(1)
	h := &hosted{t: d.t, cfg: d.cfg, gen: d.version, restarts: d.restarts, lease: l, started: make(chan struct{}), topicResets: -1}
	h.lastRenew.Store(start)
	log := w.log.With("task", d.t.Name, "epoch", l.Epoch)
	rw := engine.NewWorker(log)
	rw.RestartBackoff = w.cfg.RestartBackoff
	h.rw = rw
	rw.Add(d.cfg.Name, nil, func(ctx context.Context) (*engine.Pipeline, error) {
		if !w.valid(h) {
			return nil, schema.Fatal(fmt.Errorf("%w: task %s: the lease ran out before the task was built", storage.ErrFenced, d.t.Name))
		}
		p, err := w.cfg.Build(ctx, d.cfg, d.t.Only, l, log)
		if err != nil {
			return nil, err
		}
		if p.Source != nil {
			// Every durable write of the source task carries the lease.
			fp := w.s.NewFencedPositions(l, func() bool { return w.valid(h) })
			h.store.Store(fp)
			p.Positions = fp
			p.Publisher = gatedPublisher{p.Publisher, func() bool { return w.valid(h) }, d.t.Name}
		}
		return p, nil
	})
	w.mu.Lock()
	w.tasks[d.t.Name] = h
	w.mu.Unlock()
	log.Info("task acquired", "generation", d.version, "role", d.t.Role)
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.cancelBuild = cancel
	go func() {
		defer close(h.started)
		if err := rw.Start(bctx, d.cfg.Name); err != nil {
			log.Error("task failed to start", "err", err)
		}
	}()
	return h, nil
}

// handoff drains h (graceful stop: in-flight records applied, the position
// saved under the lease), then releases the lease.
func (w *Worker) handoff(h *hosted) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h.cancelBuild()
	<-h.started
	if err := h.rw.Stop(ctx, h.cfg.Name); err != nil {
		w.log.Warn("task did not drain in time", "task", h.t.Name, "err", err)
	}
	if !h.dropped.Load() {
		if err := w.s.Release(ctx, h.lease); err != nil {
			w.log.Warn("could not release the lease; it expires after the ttl", "task", h.t.Name, "err", err)
		}
	}
	h.dropped.Store(true)
	w.mu.Lock()
	if w.tasks[h.t.Name] == h {
		delete(w.tasks, h.t.Name)
	}
	w.mu.Unlock()
	w.log.Info("task handed off", "task", h.t.Name, "epoch", h.lease.Epoch)
}

// drop stops a task whose lease is lost, without releasing it (it is not
// ours any more); the process goes on.
func (w *Worker) drop(h *hosted, why string) {
	if h.dropped.Swap(true) {
		return
	}
	w.lost.Add(1)
	w.log.Warn("lease lost: the task stops here and writes nothing more", "task", h.t.Name, "epoch", h.lease.Epoch, "why", why)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		h.cancelBuild()
		<-h.started
		_ = h.rw.Stop(ctx, h.cfg.Name)
		w.mu.Lock()
		if w.tasks[h.t.Name] == h {
			delete(w.tasks, h.t.Name)
		}
		w.mu.Unlock()
	}()
}

// renewLoop renews every held lease every TTL/3 and, every 100ms (in a
// goroutine of its own, so that a renewal hanging on a black-holed
// connection does not delay it), drops tasks whose lease ran out on the
// monotonic clock or was refused by the database.
func (w *Worker) renewLoop(ctx context.Context) {
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); w.watchLoop(ctx) }()
	defer func() { <-watchDone }()
	renew := time.NewTicker(w.cfg.TTL / 3)
	defer renew.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			for _, h := range w.held() {
				if !w.valid(h) {
					continue
				}
				start := w.now()
				rctx, cancel := context.WithTimeout(ctx, w.cfg.TTL/3)
				ok, err := w.s.Renew(rctx, h.lease, w.cfg.TTL)
				cancel()
				switch {
				case err != nil:
					w.renewFailures.Add(1)
					w.log.Warn("lease renewal failed; the task stops if it keeps failing", "task", h.t.Name, "err", err)
				case !ok:
					w.renewFailures.Add(1)
					w.drop(h, "the database refused the renewal: expired or taken")
				default:
					w.renewals.Add(1)
					h.lastRenew.Store(start)
				}
			}
		}
	}
}

// watchLoop drops, every 100ms, the tasks whose lease ran out on the
// monotonic clock or whose fenced write the database refused.
func (w *Worker) watchLoop(ctx context.Context) {
	watch := time.NewTicker(100 * time.Millisecond)
	defer watch.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-watch.C:
			for _, h := range w.held() {
				if !w.valid(h) {
					w.drop(h, fmt.Sprintf("no successful renewal for %s (ttl %s minus margin %s)", time.Duration(w.now()-h.lastRenew.Load()).Round(time.Millisecond), w.cfg.TTL, w.cfg.Margin))
					continue
				}
				if fp := h.store.Load(); fp != nil {
					select {
					case <-fp.Fenced():
						w.drop(h, "the database refused a fenced write")
					default:
					}
				}
			}
		}
	}
}

func (w *Worker) held() []*hosted {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*hosted, 0, len(w.tasks))
	for _, h := range w.tasks {
		if !h.dropped.Load() {
			out = append(out, h)
		}
	}
	return out
}

// writeStatus records the state of each held task in the status table:
// not of a task being handed off (its connector may be deleted, and Delete
// removed its rows), and only while its connector exists (the statement
// checks it, so a tick that read the connectors before a Delete does not
// write a row back after it).
func (w *Worker) writeStatus(ctx context.Context) error {
	num := "?"
	if w.s.dialect == "postgres" {
		num = "CAST(? AS BIGINT)" // a SELECT list gives no type to a bare parameter
	}
	sel := " SELECT ?, ?, ?, ?, " + num + ", " + num + ", ?, ?, CURRENT_TIMESTAMP(6) WHERE EXISTS (SELECT 1 FROM " + w.s.Table("connectors") + " WHERE name = ?)"
	q := "INSERT INTO " + w.s.Table("status") + " (task, connector, worker, state, epoch, generation, trace, detail, updated_at)" + sel + " ON CONFLICT (task) DO UPDATE SET connector = EXCLUDED.connector, worker = EXCLUDED.worker, state = EXCLUDED.state, epoch = EXCLUDED.epoch, generation = EXCLUDED.generation, trace = EXCLUDED.trace, detail = EXCLUDED.detail, updated_at = EXCLUDED.updated_at"
	if w.s.dialect == "mysql" {
		q = "INSERT INTO " + w.s.Table("status") + " (task, connector, worker, state, epoch, generation, trace, detail, updated_at)" + strings.Replace(sel, " WHERE EXISTS", " FROM DUAL WHERE EXISTS", 1) + " ON DUPLICATE KEY UPDATE connector = VALUES(connector), worker = VALUES(worker), state = VALUES(state), epoch = VALUES(epoch), generation = VALUES(generation), trace = VALUES(trace), detail = VALUES(detail), updated_at = VALUES(updated_at)"
	}
	var errs []error
	for _, h := range w.held() {
		w.mu.Lock()
		leaving := h.leaving
		w.mu.Unlock()
		if leaving {
			continue
		}
		st, err := h.rw.Status(h.cfg.Name)
		if err != nil {
			continue
		}
		// What sluice run's status shows (counters, position, lag,
		// snapshot, last error), for the cluster's GET status.
		detail, err := json.Marshal(st)
		if err != nil {
			continue
		}
		// Only while the lease is ours: the condition keeps a worker that
		// lost it from overwriting its successor's row.
		if !w.valid(h) {
			continue
		}
		if _, err := w.s.db.ExecContext(ctx, w.s.q(q), h.t.Name, h.t.Connector, w.cfg.ID, string(st.State), h.lease.Epoch, h.gen, st.LastError, string(detail), h.t.Connector); err != nil {
			errs = append(errs, retriable("write status of "+h.t.Name, err))
		}
		errs = append(errs, w.writeTopics(ctx, h))
	}
	return errors.Join(errs...)
}

// gatedPublisher refuses batches once the holder's own clock says the
// lease ran out: a worker woken from a pause publishes nothing before its
// task is stopped.
type gatedPublisher struct {
	runtime.Publisher
	valid func() bool
	task  string
}

func (g gatedPublisher) Publish(ctx context.Context, recs []schema.Record, ack runtime.AckFunc) error {
	if !g.valid() {
		return schema.Fatal(fmt.Errorf("%w: task %s: its lease ran out on this worker's clock; not publishing", storage.ErrFenced, g.task))
	}
	return g.Publisher.Publish(ctx, recs, ack)
}

// Metrics is a worker's view of itself for /metrics.
type Metrics struct {
	Worker              string  `json:"worker"`
	TasksHeld           int     `json:"tasks_held"`
	LiveWorkers         int64   `json:"live_workers"`
	FairShare           int64   `json:"fair_share"`
	LeaseRenewals       int64   `json:"lease_renewals"`
	LeaseRenewFailures  int64   `json:"lease_renew_failures"`
	LeasesLost          int64   `json:"leases_lost"`
	LeasesAcquired      int64   `json:"leases_acquired"`
	Handoffs            int64   `json:"handoffs"`
	HeartbeatAgeSeconds float64 `json:"heartbeat_age_seconds"`
}

// Metrics returns the worker's counters and gauges.
func (w *Worker) Metrics() Metrics {
	return Metrics{Worker: w.cfg.ID, TasksHeld: len(w.held()), LiveWorkers: w.live.Load(), FairShare: w.share.Load(),
		LeaseRenewals: w.renewals.Load(), LeaseRenewFailures: w.renewFailures.Load(), LeasesLost: w.lost.Load(),
		LeasesAcquired: w.acquired.Load(), Handoffs: w.handoffs.Load(),
		HeartbeatAgeSeconds: time.Duration(w.now() - w.lastBeat.Load()).Seconds()}
}

// Pipelines returns the pipelines of the held tasks and their task names,
// for the pipeline metrics (engine.WriteTaskMetrics).
func (w *Worker) Pipelines() (ps []*engine.Pipeline, tasks []string) {
	for _, h := range w.held() {
		for _, p := range h.rw.Pipelines() {
			ps, tasks = append(ps, p), append(tasks, h.t.Name)
		}
	}
	return ps, tasks
}

// Held lists the lease task names this worker holds, with their epochs.
func (w *Worker) Held() map[string]int64 {
	out := map[string]int64{}
	for _, h := range w.held() {
		out[h.t.Name] = h.lease.Epoch
	}
	return out
}
