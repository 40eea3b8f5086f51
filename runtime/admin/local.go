package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/schema"
)

// Local is the Cluster of one process (`sluice run`): the pipelines of one
// engine.Worker, each one connector with the one task 0. Its connectors
// come from the config file, so create, delete and config changes answer
// ErrReadOnly; it adds stop, offsets, metrics and health.
type Local struct {
	W        *engine.Worker
	WorkerID string // shown as worker_id, e.g. the REST address; default "local"
	// Type is the connectors' type: "source" (--only source), "sink"
	// (--only sink) or, by default, "source_sink" (both sides in one process).
	Type string
	// PluginList and Configs serve GET /connector-plugins and GET
	// /connector-plugins/{type}/config as a worker does; nil: not served.
	PluginList []Plugin
	Configs    func(pluginType string) ([]ConfigKeyInfo, error)
}

var (
	_ Cluster          = (*Local)(nil)
	_ Stopper          = (*Local)(nil)
	_ Offsets          = (*Local)(nil)
	_ Topics           = (*Local)(nil)
	_ MetricsCollector = (*Local)(nil)
	_ HealthChecker    = (*Local)(nil)
	_ Signaler         = (*Local)(nil)
	_ Grouper          = (*Local)(nil)
)

// errRunReadOnly says where the operations of a cluster are.
var errRunReadOnly = fmt.Errorf("sluice run hosts the pipeline of its config file: edit the file and restart it, or run a cluster with `sluice worker` to manage connectors through this API: %w", ErrReadOnly)

func (l *Local) workerID() string {
	if l.WorkerID == "" {
		return "local"
	}
	return l.WorkerID
}

func (l *Local) connType() string {
	if l.Type == "" {
		return "source_sink"
	}
	return l.Type
}

// classify marks the worker's errors for the API: an unknown name is
// ErrNotFound, a refused lifecycle step ErrState; the message stays the
// worker's.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrUnknownPipeline):
		return marked{err, ErrNotFound}
	default:
		return marked{err, ErrState}
	}
}

type marked struct{ err, class error }

func (m marked) Error() string   { return m.err.Error() }
func (m marked) Unwrap() []error { return []error{m.err, m.class} }

func (l *Local) known(name string) error {
	for _, n := range l.W.Names() {
		if n == name {
			return nil
		}
	}
	return classify(fmt.Errorf("%w %q", engine.ErrUnknownPipeline, name))
}

// Connectors lists the pipelines.
func (l *Local) Connectors(context.Context) ([]string, error) { return l.W.Names(), nil }

// Create is not possible here.
func (l *Local) Create(context.Context, string, json.RawMessage) (ConnectorInfo, error) {
	return ConnectorInfo{}, errRunReadOnly
}

// Connector describes a pipeline; its config is its file's (not served).
func (l *Local) Connector(_ context.Context, name string) (ConnectorInfo, error) {
	if err := l.known(name); err != nil {
		return ConnectorInfo{}, err
	}
	return ConnectorInfo{Name: name, Tasks: []TaskID{{Connector: name, Task: 0}}, Type: l.connType()}, nil
}

// PutConfig is not possible here.
func (l *Local) PutConfig(context.Context, string, json.RawMessage) (ConnectorInfo, bool, error) {
	return ConnectorInfo{}, false, errRunReadOnly
}

// Delete is not possible here.
func (l *Local) Delete(context.Context, string) error { return errRunReadOnly }

// Status is Kafka Connect's shape with the pipeline's engine.TaskStatus
// (counters, position, lag, backlog, snapshot) at the top level.
func (l *Local) Status(_ context.Context, name string) (ConnectorStatus, error) {
	st, err := l.W.Status(name)
	if err != nil {
		return ConnectorStatus{}, classify(err)
	}
	extra, err := json.Marshal(st)
	if err != nil {
		return ConnectorStatus{}, err
	}
	state := string(st.State)
	return ConnectorStatus{
		Name:      name,
		Connector: ConnectorState{State: state, WorkerID: l.workerID()},
		Tasks:     []TaskState{{ID: 0, Role: l.connType(), State: state, WorkerID: l.workerID(), Trace: st.LastError}},
		Type:      l.connType(),
		Extra:     extra,
	}, nil
}

// Tasks is the one task.
func (l *Local) Tasks(_ context.Context, name string) ([]TaskInfo, error) {
	if err := l.known(name); err != nil {
		return nil, err
	}
	return []TaskInfo{{ID: TaskID{Connector: name, Task: 0}, Role: l.connType()}}, nil
}

// Pause stops reading the source.
func (l *Local) Pause(_ context.Context, name string) error { return classify(l.W.Pause(name)) }

// Resume undoes Pause, and runs a STOPPED pipeline again, as Kafka
// Connect's resume does for a stopped connector (a FAILED one still needs
// a restart).
func (l *Local) Resume(ctx context.Context, name string) error {
	st, err := l.W.Status(name)
	if err != nil {
		return classify(err)
	}
	if st.State == engine.StateStopped {
		return classify(l.W.Start(ctx, name))
	}
	return classify(l.W.Resume(name))
}

// Restart rebuilds the pipeline; it also starts a stopped, failed or finished one.
func (l *Local) Restart(ctx context.Context, name string) error {
	return classify(l.W.Restart(ctx, name))
}

// Stop drains and stops the pipeline; the process stays up.
func (l *Local) Stop(ctx context.Context, name string) error { return classify(l.W.Stop(ctx, name)) }

// Signal hands a snapshot signal to the pipeline's source: a signal the
// source refuses, or a source that takes none, is ErrInvalid; a pipeline
// that does not run ErrState; the source's failure to write it stays
// unclassified (500).
func (l *Local) Signal(ctx context.Context, name, id, typ, data string) (string, error) {
	id, err := l.W.Signal(ctx, name, id, typ, data)
	switch {
	case err == nil:
		return id, nil
	case errors.Is(err, schema.ErrConfig), errors.Is(err, engine.ErrNoSignals):
		return "", marked{err, ErrInvalid}
	case errors.Is(err, engine.ErrUnknownPipeline), errors.Is(err, engine.ErrNotRunning):
		return "", classify(err)
	}
	return "", err
}

// Groups reports (and with apply, fails over) the group checkpoints of the
// pipeline's source: a source that keeps none is ErrInvalid, a pipeline
// that does not run ErrState.
func (l *Local) Groups(ctx context.Context, name string, apply bool) (any, error) {
	sts, err := l.W.Groups(ctx, name, apply)
	return sts, groupsError(err)
}

// Switchover carries out a planned switchover of the pipeline's groups
// (engine.Worker.Switchover), classified as Groups; a bad request (an
// unknown group name, consumers online on the source) is ErrInvalid.
func (l *Local) Switchover(ctx context.Context, name string, groups []string, timeout time.Duration) (any, error) {
	rep, err := l.W.Switchover(ctx, name, groups, timeout)
	return rep, switchoverError(err)
}

// switchoverError classifies an error of Switchover.
func switchoverError(err error) error {
	if errors.Is(err, runtime.ErrConfig) {
		return marked{err, ErrInvalid}
	}
	return groupsError(err)
}

// groupsError classifies an error of Groups or Switchover.
func groupsError(err error) error {
	switch {
	case errors.Is(err, engine.ErrNoGroups):
		return marked{err, ErrInvalid}
	case errors.Is(err, engine.ErrUnknownPipeline), errors.Is(err, engine.ErrNotRunning):
		return classify(err)
	}
	return err
}

// Offset reads the saved source position.
func (l *Local) Offset(ctx context.Context, name string) (string, error) {
	stored, err := l.W.Position(ctx, name)
	if err != nil {
		return "", classify(err)
	}
	return string(engine.SourcePosition(stored)), nil
}

// Topics lists the topics the pipeline's runs have used since the process
// started or since ResetTopics (engine.Worker.Topics).
func (l *Local) Topics(_ context.Context, name string) ([]string, error) {
	ts, err := l.W.Topics(name)
	return ts, classify(err)
}

// ResetTopics empties that list.
func (l *Local) ResetTopics(_ context.Context, name string) error {
	return classify(l.W.ResetTopics(name))
}

// SetOffset resets ("") or sets the position of a stopped pipeline.
func (l *Local) SetOffset(ctx context.Context, name, position string) error {
	var pos []byte
	if position != "" {
		pos = []byte(position)
	}
	return classify(l.W.ResetPosition(ctx, name, pos))
}

// Validate is `sluice validate` here.
func (l *Local) Validate(context.Context, string, json.RawMessage) (Validation, error) {
	return Validation{}, fmt.Errorf("check a config file with `sluice validate --config FILE`; a `sluice worker` validates through this API: %w", ErrReadOnly)
}

// Plugins lists PluginList.
func (l *Local) Plugins(context.Context) ([]Plugin, error) {
	if l.PluginList == nil {
		return nil, fmt.Errorf("connector plugins are listed by a `sluice worker`: %w", ErrReadOnly)
	}
	return l.PluginList, nil
}

// PluginConfig is Configs' answer.
func (l *Local) PluginConfig(_ context.Context, pluginType string) ([]ConfigKeyInfo, error) {
	if l.Configs == nil {
		return nil, fmt.Errorf("connector plugins are listed by a `sluice worker`: %w", ErrReadOnly)
	}
	return l.Configs(pluginType)
}

// Workers is this process, holding its running pipelines.
func (l *Local) Workers(context.Context) ([]WorkerInfo, error) {
	tasks := []string{}
	for _, n := range l.W.Names() {
		if st, err := l.W.Status(n); err == nil && (st.State == engine.StateRunning || st.State == engine.StatePaused || st.State == engine.StateRestarting || st.State == engine.StateUnassigned) {
			tasks = append(tasks, n)
		}
	}
	return []WorkerInfo{{ID: l.workerID(), LastHeartbeat: time.Now().UTC().Format(time.RFC3339), Alive: true, Tasks: tasks}}, nil
}

// MetricsCollector collects the series of the pipelines running here.
func (l *Local) MetricsCollector() prometheus.Collector {
	return engine.NewCollector(func() ([]*engine.Pipeline, []string) { return l.W.Pipelines(), nil }, false)
}

// Health is "failed" while a pipeline is FAILED, else "restarting" while
// one that has been RUNNING restarts after a failure (a lost server: its
// changes wait), else "starting" while one has not yet been RUNNING
// (Worker.Ran), else "ok". A pipeline paused or stopped through the API is
// an operator's choice, not an outage: "ok".
func (l *Local) Health(context.Context) Health {
	var starting, restarting *Health
	for _, n := range l.W.Names() {
		st, _ := l.W.Status(n)
		if st.State == engine.StateFailed {
			return Health{Status: "failed", Pipeline: n, Error: st.LastError}
		}
		if restarting == nil && st.State == engine.StateRestarting && l.W.Ran(n) {
			restarting = &Health{Status: "restarting", Pipeline: n, Error: st.LastError}
		}
		if starting == nil && !l.W.Ran(n) {
			// not ready until it has been RUNNING (its source reached, its
			// start position saved), as Kafka Connect's /health answers
			// 503 while the worker starts
			starting = &Health{Status: "starting", Pipeline: n, Error: st.LastError}
		}
	}
	if restarting != nil {
		return *restarting
	}
	if starting != nil {
		return *starting
	}
	return Health{Status: "ok"}
}
