package cluster

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
)

// Connector is one row of the connectors table.
type Connector struct {
	Name     string
	Config   json.RawMessage
	Version  int64
	Target   string // running or paused
	Restarts int64  // raised by each restart request
}

// Task is one task of a connector as workers host it.
type Task struct {
	Name      string // the lease task: storage.TaskName(connector, role)
	Connector string
	ID        int    // 0 the source (or embedded) task (0..n-1 for a source split into n), then the sink tasks
	Role      string // source, sink or source_sink
	Only      string // what app.Build builds: "source", "sink" or "" (both)
}

// sinkTasksKey is the one key of a connector document that `sluice run`
// does not have: how many sink tasks (consumers of the group) a RocketMQ
// connector runs, default 1.
const sinkTasksKey = "sink_tasks"

// splitDoc takes sink_tasks out of a connector document and parses the
// rest as a `sluice run` config.
func splitDoc(name string, doc json.RawMessage) (*plugin.Config, int, error) {
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil || m == nil {
		return nil, 0, fmt.Errorf("%w: connector %s: the config must be a JSON object with the keys of a sluice run file (name, source, transport, sink)", admin.ErrInvalid, name)
	}
	sinkTasks := 1
	if v, ok := m[sinkTasksKey]; ok {
		f, ok := v.(float64)
		if !ok || f < 1 || f > 64 || f != float64(int(f)) {
			return nil, 0, fmt.Errorf("%w: connector %s: %s must be a whole number from 1 to 64", admin.ErrInvalid, name, sinkTasksKey)
		}
		sinkTasks = int(f)
		delete(m, sinkTasksKey)
	}
	if n, ok := m["name"]; !ok {
		m["name"] = name
	} else if n != name {
		return nil, 0, fmt.Errorf("%w: connector %s: the config names %v; leave name out or give the same", admin.ErrInvalid, name, n)
	}
	b, _ := json.Marshal(m)
	cfg, err := plugin.ParseConfig(b, "connector "+name)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", admin.ErrInvalid, err)
	}
	return cfg, sinkTasks, nil
}

// ParseConnector reads a stored connector document into the config app.Build
// takes and its tasks.
func ParseConnector(name string, doc json.RawMessage) (*plugin.Config, []Task, error) {
	cfg, sinkTasks, err := splitDoc(name, doc)
	if err != nil {
		return nil, nil, err
	}
	var tasks []Task
	switch {
	case cfg.Transport.Type == "embedded":
		tasks = append(tasks, Task{Name: storage.TaskName(name, "source"), Connector: name, Role: "source_sink"})
	default:
		if cfg.Source != nil {
			n, err := cfg.Source.Tasks()
			if err != nil {
				return nil, nil, fmt.Errorf("%w: %w", admin.ErrInvalid, err)
			}
			for i := range n {
				tasks = append(tasks, Task{Name: sourceTaskName(name, i), Connector: name, ID: i, Role: "source", Only: "source"})
			}
		}
		if cfg.Sink != nil {
			first := max(len(tasks), 1) // the sink tasks' ids follow the source tasks'
			for i := 1; i <= sinkTasks; i++ {
				tasks = append(tasks, Task{Name: storage.TaskName(name, fmt.Sprintf("sink-%d", i)), Connector: name, ID: first - 1 + i, Role: "sink", Only: "sink"})
			}
		}
	}
	return cfg, tasks, nil
}

// sourceTaskName is the lease name of source task i of connector: "source"
// for the first (the only one, unless the source is split into tasks),
// "source-<i>" for the others, which save their positions in a row of
// their own (positionRow).
func sourceTaskName(connector string, i int) string {
	if i == 0 {
		return storage.TaskName(connector, "source")
	}
	return storage.TaskName(connector, fmt.Sprintf("source-%d", i))
}

// SourcePositionRows are the rows of the positions table where the n
// source tasks of connector keep their positions, the first's first: the
// connector's own row, then one per further task.
func SourcePositionRows(connector string, n int) []string {
	rows := make([]string, max(n, 1))
	for i := range rows {
		rows[i] = positionRow(sourceTaskName(connector, i))
	}
	return rows
}

// SourceTaskOf is which of its connector's source tasks the task of that
// lease name is (0 for every other task).
func SourceTaskOf(task string) int {
	var i int
	if _, err := fmt.Sscanf(task[len(connectorOf(task)):], "/source-%d", &i); err != nil || sourceTaskName(connectorOf(task), i) != task {
		return 0
	}
	return i
}

// positionRow is the positions row of a task: its connector's, or its
// own for a source task past the first of a split source.
func positionRow(task string) string {
	if SourceTaskOf(task) > 0 {
		return task
	}
	return connectorOf(task)
}

func connectorType(tasks []Task) string {
	has := map[string]bool{}
	for _, t := range tasks {
		has[t.Role] = true
	}
	switch {
	case has["source_sink"]:
		return "source_sink"
	case has["source"] && has["sink"]:
		return "source_sink"
	case has["source"]:
		return "source"
	}
	return "sink"
}

// Control is admin.Cluster over the control tables: any worker serves it,
// and what it stores is run somewhere in the cluster.
type Control struct {
	S *Store
	// Check checks a parsed connector config as `sluice validate`
	// would (app's decoder); nil accepts what parses.
	Check func(cfg *plugin.Config) error
	// PluginList is what Plugins returns.
	PluginList []admin.Plugin
	// PluginConfigs answers PluginConfig; nil: ErrNotFound for every type.
	PluginConfigs func(pluginType string) ([]admin.ConfigKeyInfo, error)
	// Validator, when set, answers Validate (the connector registry's
	// checks, key by key); nil: Check on the whole document.
	Validator func(pluginType string, config json.RawMessage) (admin.Validation, error)
	// Probe, when set, checks a connector against the servers it names
	// (source, target, broker), as `sluice check` does, before Create and
	// PutConfig store it and in Validate: the reasons it returns refuse the
	// config (400), as Kafka Connect refuses a connector that fails its
	// validation. nil: no server is asked.
	Probe func(ctx context.Context, cfg *plugin.Config) []string
	// TTL judges which workers are alive (heartbeat within TTL).
	TTL time.Duration
	// CheckPosition, when set, checks a position given to SetOffset as the
	// source will read it, so a mistyped one is refused (ErrInvalid)
	// rather than failing the task when it resumes.
	CheckPosition func(position string) error
	// Signals, when set, sends a snapshot signal for a connector from its
	// config (the binlog source writes it into its signal table, which any
	// worker can do, wherever the source task runs); a signal it refuses
	// wraps schema.ErrConfig. nil: POST .../signals answers 405.
	Signals func(ctx context.Context, cfg *plugin.Config, id, typ, data string) (string, error)
	// GroupsOf, when set, reports a replicator connector's consumer group
	// checkpoints from its config and saved position, and with apply
	// writes them on its target cluster (failover); a connector whose
	// source keeps none wraps engine.ErrNoGroups. nil: GET .../groups
	// answers 405.
	GroupsOf func(ctx context.Context, cfg *plugin.Config, position []byte, apply bool) (any, error)
	// SwitchOf, when set, carries out a replicator connector's planned
	// switchover of groups from its config, load reading the position the
	// coordinator keeps (again while it waits for the copy to drain, at
	// most timeout); errors as GroupsOf. nil: POST .../groups/switchover
	// answers 405.
	SwitchOf func(ctx context.Context, cfg *plugin.Config, load func(context.Context) ([]byte, error), groups []string, timeout time.Duration) (any, error)
	// MergePositions, when set, merges the positions of a source split
	// into tasks (one per task, the first's first) into the one that
	// GroupsOf and SwitchOf read; nil when a task has saved none yet.
	// nil: only the first task's position is read.
	MergePositions func(positions [][]byte) ([]byte, error)
}

var (
	_ admin.Cluster  = (*Control)(nil)
	_ admin.Signaler = (*Control)(nil)
	_ admin.Grouper  = (*Control)(nil)
	_ admin.Switcher = (*Control)(nil)
)

// Signal sends a snapshot signal for the connector name (Signals).
func (c *Control) Signal(ctx context.Context, name, id, typ, data string) (string, error) {
	if c.Signals == nil {
		return "", fmt.Errorf("signals: %w", admin.ErrReadOnly)
	}
	k, err := c.S.connector(ctx, name)
	if err != nil {
		return "", err
	}
	cfg, _, err := ParseConnector(name, k.Config)
	if err != nil {
		return "", fmt.Errorf("%w: %w", admin.ErrInvalid, err)
	}
	id, err = c.Signals(ctx, cfg, id, typ, data)
	if errors.Is(err, schema.ErrConfig) || errors.Is(err, engine.ErrNoSignals) {
		return "", fmt.Errorf("%w: %w", admin.ErrInvalid, err)
	}
	return id, err
}

func (c *Control) check(name string, doc json.RawMessage) error {
	if !safeConnector(name) {
		return fmt.Errorf("%w: connector name %q: use letters, digits, '.', '_' and '-'", admin.ErrInvalid, name)
	}
	cfg, _, err := ParseConnector(name, doc)
	if err == nil && c.Check != nil {
		if err = c.Check(cfg); err != nil {
			err = fmt.Errorf("%w: %w", admin.ErrInvalid, err)
		}
	}
	if err != nil {
		return c.allErrors(name, doc, err)
	}
	return nil
}

// probe refuses, with ErrInvalid and the reasons, a connector config whose
// servers fail Probe.
func (c *Control) probe(ctx context.Context, name string, doc json.RawMessage) error {
	if reasons := c.probeReasons(ctx, name, doc); len(reasons) > 0 {
		return fmt.Errorf("%w: connector %s fails its checks against its servers: %s", admin.ErrInvalid, name, strings.Join(reasons, "; "))
	}
	return nil
}

// probeReasons is what Probe says of doc (nothing without a Probe, or for
// a doc that does not parse: check reports that).
func (c *Control) probeReasons(ctx context.Context, name string, doc json.RawMessage) []string {
	if c.Probe == nil {
		return nil
	}
	cfg, _, err := ParseConnector(name, doc)
	if err != nil {
		return nil
	}
	return c.Probe(ctx, cfg)
}

// allErrors returns, for a config that failed with first, every problem
// the Validator finds in it (each section's plugin validating the
// document), as Kafka Connect's 400 lists every error of a config at once;
// first alone when the Validator finds no more than one.
func (c *Control) allErrors(name string, doc json.RawMessage, first error) error {
	var m map[string]any
	if c.Validator == nil || json.Unmarshal(doc, &m) != nil || m == nil {
		return first
	}
	delete(m, sinkTasksKey)
	if _, ok := m["name"]; !ok {
		m["name"] = name
	}
	b, err := json.Marshal(m)
	if err != nil {
		return first
	}
	seen := map[string]bool{}
	var msgs []string
	for _, sec := range []string{"source", "transport", "sink"} {
		s, _ := m[sec].(map[string]any)
		typ, _ := s["type"].(string)
		if typ == "" || seen["type "+typ] {
			continue
		}
		seen["type "+typ] = true
		v, err := c.Validator(typ, b)
		if err != nil {
			continue
		}
		for _, cv := range v.Configs {
			for _, e := range cv.Value.Errors {
				msg := cv.Value.Name + ": " + strings.TrimPrefix(e, "line 1: ")
				if !seen[msg] {
					seen[msg] = true
					msgs = append(msgs, msg)
				}
			}
		}
	}
	if len(msgs) < 2 {
		return first
	}
	return fmt.Errorf("%w: connector %s: the config has %d errors: %s", admin.ErrInvalid, name, len(msgs), strings.Join(msgs, "; "))
}

func safeConnector(name string) bool {
	if name == "" || len(name) > 200 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Connectors lists the connector names.
func (c *Control) Connectors(ctx context.Context) ([]string, error) {
	all, err := c.S.LoadConnectors(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(all))
	for _, k := range all {
		names = append(names, k.Name)
	}
	return names, nil
}

// LoadConnectors reads every connector, by name.
func (s *Store) LoadConnectors(ctx context.Context) ([]Connector, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name, config, version, target, restarts FROM "+s.Table("connectors")+" ORDER BY name")
	if err != nil {
		return nil, retriable("read connectors", err)
	}
	defer rows.Close()
	var out []Connector
	for rows.Next() {
		var k Connector
		var cfg string
		if err := rows.Scan(&k.Name, &cfg, &k.Version, &k.Target, &k.Restarts); err != nil {
			return nil, retriable("read connectors", err)
		}
		k.Config = json.RawMessage(cfg)
		out = append(out, k)
	}
	return out, rows.Err()
}

func (s *Store) connector(ctx context.Context, name string) (Connector, error) {
	k := Connector{Name: name}
	var cfg string
	err := s.db.QueryRowContext(ctx, s.q("SELECT config, version, target, restarts FROM "+s.Table("connectors")+" WHERE name = ?"), name).Scan(&cfg, &k.Version, &k.Target, &k.Restarts)
	if errors.Is(err, sql.ErrNoRows) {
		return k, fmt.Errorf("%w: %s", admin.ErrNotFound, name)
	}
	if err != nil {
		return k, retriable("read connector "+name, err)
	}
	k.Config = json.RawMessage(cfg)
	return k, nil
}

func info(k Connector) admin.ConnectorInfo {
	in := admin.ConnectorInfo{Name: k.Name, Config: k.Config, Version: k.Version}
	if _, tasks, err := ParseConnector(k.Name, k.Config); err == nil {
		for _, t := range tasks {
			in.Tasks = append(in.Tasks, admin.TaskID{Connector: k.Name, Task: t.ID})
		}
		in.Type = connectorType(tasks)
	}
	return in
}

func compact(doc json.RawMessage) (string, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return "", fmt.Errorf("%w: %w", admin.ErrInvalid, err)
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// Create stores a new connector (version 1, running).
func (c *Control) Create(ctx context.Context, name string, config json.RawMessage) (admin.ConnectorInfo, error) {
	if err := c.check(name, config); err != nil {
		return admin.ConnectorInfo{}, err
	}
	if err := c.probe(ctx, name, config); err != nil {
		return admin.ConnectorInfo{}, err
	}
	return c.create(ctx, name, config)
}

// create stores a new connector that passed its checks.
func (c *Control) create(ctx context.Context, name string, config json.RawMessage) (admin.ConnectorInfo, error) {
	doc, err := compact(config)
	if err != nil {
		return admin.ConnectorInfo{}, err
	}
	ins := "INSERT INTO " + c.S.Table("connectors") + " (name, config, version, target) VALUES (?, ?, 1, 'running') ON CONFLICT (name) DO NOTHING"
	if c.S.dialect == "mysql" {
		ins = "INSERT IGNORE INTO " + c.S.Table("connectors") + " (name, config, version, target) VALUES (?, ?, 1, 'running')"
	}
	res, err := c.S.db.ExecContext(ctx, c.S.q(ins), name, doc)
	if err != nil {
		return admin.ConnectorInfo{}, retriable("create connector "+name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return admin.ConnectorInfo{}, fmt.Errorf("%w: %s", admin.ErrExists, name)
	}
	return info(Connector{Name: name, Config: json.RawMessage(doc), Version: 1, Target: "running"}), nil
}

// Connector reads one connector.
func (c *Control) Connector(ctx context.Context, name string) (admin.ConnectorInfo, error) {
	k, err := c.S.connector(ctx, name)
	if err != nil {
		return admin.ConnectorInfo{}, err
	}
	return info(k), nil
}

// PutConfig creates or replaces a connector's config; a replacement is a
// compare-and-set on the version read, so two concurrent PUTs cannot both
// win silently (the loser gets ErrConflict).
func (c *Control) PutConfig(ctx context.Context, name string, config json.RawMessage) (admin.ConnectorInfo, bool, error) {
	if err := c.check(name, config); err != nil {
		return admin.ConnectorInfo{}, false, err
	}
	if err := c.probe(ctx, name, config); err != nil {
		return admin.ConnectorInfo{}, false, err
	}
	k, err := c.S.connector(ctx, name)
	if errors.Is(err, admin.ErrNotFound) {
		in, err := c.create(ctx, name, config)
		if errors.Is(err, admin.ErrExists) {
			return in, false, fmt.Errorf("%w: %s was created concurrently", admin.ErrConflict, name)
		}
		return in, err == nil, err
	}
	if err != nil {
		return admin.ConnectorInfo{}, false, err
	}
	doc, err := compact(config)
	if err != nil {
		return admin.ConnectorInfo{}, false, err
	}
	if doc == string(k.Config) {
		// The same document (a GET put back, a tool applying its config
		// again): no new version, so the tasks are not restarted for nothing.
		return info(k), false, nil
	}
	res, err := c.S.db.ExecContext(ctx, c.S.q("UPDATE "+c.S.Table("connectors")+" SET config = ?, version = version + 1, updated_at = CURRENT_TIMESTAMP(6) WHERE name = ? AND version = ?"), doc, name, k.Version)
	if err != nil {
		return admin.ConnectorInfo{}, false, retriable("update connector "+name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return admin.ConnectorInfo{}, false, fmt.Errorf("%w: connector %s changed since version %d", admin.ErrConflict, name, k.Version)
	}
	k.Config, k.Version = json.RawMessage(doc), k.Version+1
	return info(k), false, nil
}

// Delete removes a connector; its workers stop its tasks at their next
// tick. Its saved positions stay (a connector created again with the same
// name resumes from them).
func (c *Control) Delete(ctx context.Context, name string) error {
	res, err := c.S.db.ExecContext(ctx, c.S.q("DELETE FROM "+c.S.Table("connectors")+" WHERE name = ?"), name)
	if err != nil {
		return retriable("delete connector "+name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %s", admin.ErrNotFound, name)
	}
	_, _ = c.S.db.ExecContext(ctx, c.S.q("DELETE FROM "+c.S.Table("status")+" WHERE connector = ?"), name)
	_, _ = c.S.db.ExecContext(ctx, c.S.q("DELETE FROM "+c.S.Table("topics")+" WHERE connector = ?"), name)
	return nil
}

func (c *Control) set(ctx context.Context, name, what, set string) error {
	res, err := c.S.db.ExecContext(ctx, c.S.q("UPDATE "+c.S.Table("connectors")+" SET "+set+", updated_at = CURRENT_TIMESTAMP(6) WHERE name = ?"), name)
	if err != nil {
		return retriable(what+" connector "+name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %s", admin.ErrNotFound, name)
	}
	return nil
}

// Pause sets the connector's target state to paused: its tasks are drained
// and stopped, their leases released.
func (c *Control) Pause(ctx context.Context, name string) error {
	return c.set(ctx, name, "pause", "target = 'paused'")
}

var _ admin.Stopper = (*Control)(nil)

// Stop sets the connector's target state to stopped (Kafka Connect's
// STOPPED): as Pause, its tasks are drained and their leases released, and
// its status says STOPPED; resume runs it again.
func (c *Control) Stop(ctx context.Context, name string) error {
	return c.set(ctx, name, "stop", "target = 'stopped'")
}

// Resume sets the target state back to running.
func (c *Control) Resume(ctx context.Context, name string) error {
	return c.set(ctx, name, "resume", "target = 'running'")
}

// Restart asks the holders of the connector's tasks to restart them (with
// a new lease epoch).
func (c *Control) Restart(ctx context.Context, name string) error {
	return c.set(ctx, name, "restart", "restarts = restarts + 1")
}

var _ admin.AsyncRestarter = (*Control)(nil)

// RestartsAsync says that Restart only records the request: the tasks'
// holders drain and restart them at their next heartbeat.
func (c *Control) RestartsAsync() {}

// Tasks lists the connector's tasks with their config.
func (c *Control) Tasks(ctx context.Context, name string) ([]admin.TaskInfo, error) {
	k, err := c.S.connector(ctx, name)
	if err != nil {
		return nil, err
	}
	_, tasks, err := ParseConnector(name, k.Config)
	if err != nil {
		return nil, err
	}
	out := make([]admin.TaskInfo, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, admin.TaskInfo{ID: admin.TaskID{Connector: name, Task: t.ID}, Role: t.Role, Config: k.Config})
	}
	return out, nil
}

// statusRow is one row of the status table.
type statusRow struct {
	worker, state, trace string
	epoch, generation    int64
	detail               json.RawMessage // the task's engine.TaskStatus; nil when none was written
}

func (s *Store) statusRows(ctx context.Context, connector string) (map[string]statusRow, error) {
	rows, err := s.db.QueryContext(ctx, s.q("SELECT task, worker, state, epoch, generation, trace, detail FROM "+s.Table("status")+" WHERE connector = ?"), connector)
	if err != nil {
		return nil, retriable("read status", err)
	}
	defer rows.Close()
	out := map[string]statusRow{}
	for rows.Next() {
		var task string
		var r statusRow
		var trace, detail sql.NullString
		if err := rows.Scan(&task, &r.worker, &r.state, &r.epoch, &r.generation, &trace, &detail); err != nil {
			return nil, retriable("read status", err)
		}
		r.trace = trace.String
		if detail.Valid && json.Valid([]byte(detail.String)) {
			r.detail = json.RawMessage(detail.String)
		}
		out[task] = r
	}
	return out, rows.Err()
}

// Status reports where each task runs: the status row its worker wrote,
// checked against the lease table (a task whose lease is not live is
// UNASSIGNED, whatever its last worker wrote).
func (c *Control) Status(ctx context.Context, name string) (admin.ConnectorStatus, error) {
	k, err := c.S.connector(ctx, name)
	if err != nil {
		return admin.ConnectorStatus{}, err
	}
	_, tasks, err := ParseConnector(name, k.Config)
	if err != nil {
		return admin.ConnectorStatus{}, err
	}
	rows, err := c.S.statusRows(ctx, name)
	if err != nil {
		return admin.ConnectorStatus{}, err
	}
	leases, err := c.S.Leases(ctx)
	if err != nil {
		return admin.ConnectorStatus{}, err
	}
	st := admin.ConnectorStatus{Name: name, Type: connectorType(tasks), Connector: admin.ConnectorState{State: "RUNNING"}}
	switch k.Target {
	case "paused":
		st.Connector.State = "PAUSED"
	case "stopped":
		st.Connector.State = "STOPPED"
	}
	for _, t := range tasks {
		ts := admin.TaskState{ID: t.ID, Role: t.Role, State: string(engine.StateUnassigned)}
		r, hasRow := rows[t.Name]
		l, hasLease := leases[t.Name]
		switch {
		case k.Target == "paused" && !(hasLease && l.Live):
			ts.State = string(engine.StatePaused)
		case k.Target == "stopped" && !(hasLease && l.Live):
			ts.State = string(engine.StateStopped)
		case hasLease && l.Live:
			ts.WorkerID, ts.Epoch = l.Holder, l.Epoch
			ts.State = string(engine.StateRestarting) // held, its worker has not reported yet
			if hasRow && r.worker == l.Holder && r.epoch == l.Epoch {
				ts.State, ts.Generation, ts.Trace, ts.Extra = r.state, r.generation, r.trace, r.detail
			}
		case hasRow && r.state == string(engine.StateFailed):
			ts.State, ts.WorkerID, ts.Epoch, ts.Generation, ts.Trace, ts.Extra = r.state, r.worker, r.epoch, r.generation, r.trace, r.detail
		}
		if t.ID == 0 || st.Connector.WorkerID == "" {
			st.Connector.WorkerID = ts.WorkerID
		}
		st.Tasks = append(st.Tasks, ts)
	}
	if len(st.Tasks) == 1 {
		// One task (embedded): its status at the top level too, where
		// sluice run shows it.
		st.Extra = st.Tasks[0].Extra
	}
	return st, nil
}

// Validate checks a config for a plugin type, Kafka Connect's shape: the
// Validator's entries (or one entry with the first error the decoder
// meets), and an entry "servers" with what the probe found.
func (c *Control) Validate(ctx context.Context, pluginType string, config json.RawMessage) (admin.Validation, error) {
	name := "validate"
	var m map[string]any
	if json.Unmarshal(config, &m) == nil {
		if n, ok := m["name"].(string); ok && n != "" {
			name = n
		}
	}
	var v admin.Validation
	if c.Validator != nil {
		var err error
		if v, err = c.Validator(pluginType, config); err != nil {
			return v, err
		}
	} else {
		v = admin.Validation{Name: pluginType, Groups: []string{}}
		cv := admin.Problem("config")
		if err := c.check(name, config); err != nil {
			msg := strings.TrimPrefix(err.Error(), admin.ErrInvalid.Error()+": ")
			cv.Value.Errors = append(cv.Value.Errors, msg)
			v.ErrorCount = 1
		}
		v.Configs = []admin.ConfigInfo{cv}
	}
	if v.ErrorCount == 0 {
		// A config that decodes is asked of its servers too.
		if reasons := c.probeReasons(ctx, name, config); len(reasons) > 0 {
			v.Configs = append(v.Configs, admin.Problem("servers", reasons...))
			v.ErrorCount += len(reasons)
		}
	}
	return v, nil
}

// Plugins lists the registered connector types.
func (c *Control) Plugins(ctx context.Context) ([]admin.Plugin, error) {
	return append([]admin.Plugin(nil), c.PluginList...), nil
}

// PluginConfig is the definitions of the keys of the plugin that serves
// pluginType (PluginConfigs).
func (c *Control) PluginConfig(_ context.Context, pluginType string) ([]admin.ConfigKeyInfo, error) {
	if c.PluginConfigs == nil {
		return nil, fmt.Errorf("connector plugin %q: %w", pluginType, admin.ErrNotFound)
	}
	return c.PluginConfigs(pluginType)
}

// Workers lists the workers seen, with the leases each holds now.
func (c *Control) Workers(ctx context.Context) ([]admin.WorkerInfo, error) {
	ttl := c.TTL
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	rows, err := c.S.db.QueryContext(ctx, c.S.q("SELECT id, url, heartbeat_at, heartbeat_at > "+c.S.ago()+" FROM "+c.S.Table("workers")+" ORDER BY id"), micros(ttl))
	if err != nil {
		return nil, retriable("read workers", err)
	}
	defer rows.Close()
	var out []admin.WorkerInfo
	for rows.Next() {
		var w admin.WorkerInfo
		var at any
		if err := rows.Scan(&w.ID, &w.URL, &at, &w.Alive); err != nil {
			return nil, retriable("read workers", err)
		}
		w.LastHeartbeat = stamp(at)
		w.Tasks = []string{}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, retriable("read workers", err)
	}
	leases, err := c.S.Leases(ctx)
	if err != nil {
		return nil, err
	}
	for i := range out {
		for _, l := range leases {
			if l.Live && l.Holder == out[i].ID {
				out[i].Tasks = append(out[i].Tasks, l.Task)
			}
		}
		sort.Strings(out[i].Tasks)
	}
	return out, nil
}

// ago is the database's now minus one bound duration in microseconds.
func (s *Store) ago() string {
	if s.dialect == "postgres" {
		return "(CURRENT_TIMESTAMP(6) - CAST(? AS BIGINT) * INTERVAL '1 microsecond')"
	}
	return "(CURRENT_TIMESTAMP(6) - INTERVAL ? MICROSECOND)"
}

// stamp formats a timestamp column: time.Time (PostgreSQL, MySQL with
// parseTime) or the text MySQL sends otherwise (the session's time zone).
func stamp(v any) string {
	switch t := v.(type) {
	case time.Time:
		return t.UTC().Format(time.RFC3339Nano)
	case []byte:
		return string(t)
	case string:
		return t
	}
	return ""
}

var _ admin.Offsets = (*Control)(nil)

// Offset reads the connector's saved source position ("" when none). Of a
// source split into tasks, it is their positions merged
// (MergePositions), each queue once, as Kafka Connect shows a
// connector's offsets over its tasks; a task that has saved none yet
// adds nothing.
func (c *Control) Offset(ctx context.Context, name string) (string, error) {
	k, err := c.S.connector(ctx, name)
	if err != nil {
		return "", err
	}
	n := 1
	if cfg, _, err := ParseConnector(name, k.Config); err == nil {
		n = sourceTasks(cfg)
	}
	if n <= 1 || c.MergePositions == nil {
		pos, err := c.position(ctx, name)
		if err != nil || pos == nil {
			return "", err
		}
		return string(engine.SourcePosition(pos)), nil
	}
	all, err := c.taskPositions(ctx, name, n)
	if err != nil {
		return "", err
	}
	var saved [][]byte
	for _, pos := range all {
		if len(pos) > 0 {
			saved = append(saved, engine.SourcePosition(pos))
		}
	}
	if len(saved) == 0 {
		return "", nil
	}
	merged, err := c.MergePositions(saved)
	if err != nil {
		return "", fmt.Errorf("connector %s: merge the positions of its %d source tasks: %w", name, n, err)
	}
	return string(merged), nil
}

// position is the saved position of connector name (nil: none).
func (c *Control) position(ctx context.Context, name string) ([]byte, error) {
	var pos sql.NullString
	err := c.S.db.QueryRowContext(ctx, c.S.q("SELECT position FROM "+c.S.Table("positions")+" WHERE pipeline = ?"), name).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !pos.Valid {
		return nil, nil
	}
	if err != nil {
		return nil, retriable("read the position of "+name, err)
	}
	return []byte(pos.String), nil
}

// sourceTasks is how many source tasks cfg has (1 when it has no source).
func sourceTasks(cfg *plugin.Config) int {
	if cfg.Source == nil {
		return 1
	}
	n, err := cfg.Source.Tasks()
	if err != nil {
		return 1
	}
	return n
}

// sourcePosition is the saved position of connector name's source: of a
// source split into tasks, their positions merged (MergePositions).
func (c *Control) sourcePosition(ctx context.Context, name string, cfg *plugin.Config) ([]byte, error) {
	n := sourceTasks(cfg)
	if n <= 1 || c.MergePositions == nil {
		return c.position(ctx, name)
	}
	all, err := c.taskPositions(ctx, name, n)
	if err != nil {
		return nil, err
	}
	return c.MergePositions(all)
}

// taskPositions are the saved positions of connector name's n source
// tasks, the first's first (nil for a task that has saved none).
func (c *Control) taskPositions(ctx context.Context, name string, n int) ([][]byte, error) {
	all := make([][]byte, n)
	for i, row := range SourcePositionRows(name, n) {
		pos, err := c.position(ctx, row)
		if err != nil {
			return nil, err
		}
		all[i] = pos
	}
	return all, nil
}

// Groups reports, and with apply fails over, the consumer group
// checkpoints of connector name, from its config and its saved position
// (GroupsOf), from any worker.
func (c *Control) Groups(ctx context.Context, name string, apply bool) (any, error) {
	if c.GroupsOf == nil {
		return nil, fmt.Errorf("groups: %w", admin.ErrReadOnly)
	}
	cfg, err := c.parsed(ctx, name)
	if err != nil {
		return nil, err
	}
	pos, err := c.sourcePosition(ctx, name, cfg)
	if err != nil {
		return nil, err
	}
	return groupsError(c.GroupsOf(ctx, cfg, pos, apply))
}

// Switchover carries out a planned switchover of groups of connector name
// (SwitchOf), from any worker: the replicator's task may run on another,
// so the wait reads the position the coordinator keeps, again and again.
func (c *Control) Switchover(ctx context.Context, name string, groups []string, timeout time.Duration) (any, error) {
	if c.SwitchOf == nil {
		return nil, fmt.Errorf("switchover: %w", admin.ErrReadOnly)
	}
	cfg, err := c.parsed(ctx, name)
	if err != nil {
		return nil, err
	}
	load := func(ctx context.Context) ([]byte, error) { return c.sourcePosition(ctx, name, cfg) }
	return groupsError(c.SwitchOf(ctx, cfg, load, groups, timeout))
}

// parsed is the stored config of connector name.
func (c *Control) parsed(ctx context.Context, name string) (*plugin.Config, error) {
	k, err := c.S.connector(ctx, name)
	if err != nil {
		return nil, err
	}
	cfg, _, err := ParseConnector(name, k.Config)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", admin.ErrInvalid, err)
	}
	return cfg, nil
}

// groupsError classifies an error of GroupsOf or SwitchOf: a bad config,
// a bad group or a source without groups is ErrInvalid (400).
func groupsError(v any, err error) (any, error) {
	if errors.Is(err, schema.ErrConfig) || errors.Is(err, engine.ErrNoGroups) {
		return nil, fmt.Errorf("%w: %w", admin.ErrInvalid, err)
	}
	return v, err
}

// SetOffset replaces ("" removes) the saved position of a paused or stopped
// connector whose source task no worker holds any more; the same UPDATE
// checks both, so a resume racing it cannot have a task read the old one.
func (c *Control) SetOffset(ctx context.Context, name, position string) error {
	if position != "" && c.CheckPosition != nil {
		if err := c.CheckPosition(position); err != nil {
			return fmt.Errorf("%w: connector %s: %w (GET /connectors/%s/offsets shows the form)", admin.ErrInvalid, name, err, name)
		}
	}
	cfg, err := c.parsed(ctx, name)
	if err != nil {
		return err
	}
	if n := sourceTasks(cfg); n > 1 {
		return fmt.Errorf("%w: connector %s: its source is split into %d tasks, each with a position of its own; its offsets cannot be changed here", admin.ErrInvalid, name, n)
	}
	var val any
	if position != "" {
		val = position
	}
	res, err := c.S.db.ExecContext(ctx, c.S.q("UPDATE "+c.S.Table("positions")+" SET position = ?, updated_at = CURRENT_TIMESTAMP(6) WHERE pipeline = ?"+
		" AND EXISTS (SELECT 1 FROM "+c.S.Table("connectors")+" WHERE name = ? AND target IN ('paused', 'stopped'))"+
		" AND NOT EXISTS (SELECT 1 FROM "+c.S.Table("leases")+" WHERE task = ? AND expires_at > CURRENT_TIMESTAMP(6))"),
		val, name, name, storage.TaskName(name, "source"))
	if err != nil {
		return retriable("set the position of "+name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: connector %s: pause or stop it and wait until its source task is released (status PAUSED or STOPPED) before changing its position; a connector that never ran has no position row yet", admin.ErrState, name)
	}
	return nil
}
