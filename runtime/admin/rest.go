package admin

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sluicecdc/sluice/runtime"
)

// Optional capabilities of a Cluster; the API serves their endpoints only
// when the Cluster has them (405 otherwise).
type (
	// Stopper serves PUT /connectors/{name}/stop.
	Stopper interface {
		Stop(ctx context.Context, name string) error
	}
	// Offsets serves GET, DELETE and PATCH /connectors/{name}/offsets: the
	// saved source position as text; SetOffset with "" removes it.
	Offsets interface {
		Offset(ctx context.Context, name string) (string, error)
		SetOffset(ctx context.Context, name, position string) error
	}
	// Topics serves GET /connectors/{name}/topics and PUT
	// /connectors/{name}/topics/reset: the broker topics the connector has
	// published to or consumed from since it was made or since the last
	// reset, sorted (none on the embedded transport, which has no topics).
	Topics interface {
		Topics(ctx context.Context, name string) ([]string, error)
		ResetTopics(ctx context.Context, name string) error
	}
	// Signaler serves POST /connectors/{name}/signals: it hands a
	// snapshot signal (Debezium's type and JSON data) to the connector's
	// source and returns the signal's id (a new one when id is empty).
	Signaler interface {
		Signal(ctx context.Context, name, id, typ, data string) (string, error)
	}
	// Grouper serves GET /connectors/{name}/groups and POST
	// /connectors/{name}/groups/failover: a replicator's consumer group
	// checkpoints on its target, and with apply their offsets written there.
	Grouper interface {
		Groups(ctx context.Context, name string, apply bool) (any, error)
	}
	// Switcher serves POST /connectors/{name}/groups/switchover: a
	// replicator's planned switchover of groups (?group=, repeated; none:
	// its configured groups), waiting until everything is copied
	// (?timeout=, default DefaultSwitchoverTimeout).
	Switcher interface {
		Switchover(ctx context.Context, name string, groups []string, timeout time.Duration) (any, error)
	}
	// HealthChecker decides GET /health; without it, /health is 200 while
	// the Cluster can list its connectors.
	HealthChecker interface {
		Health(ctx context.Context) Health
	}
)

// Health is the body of GET /health: 200 when Status is "ok", else 503.
type Health struct {
	Status   string `json:"status"`             // "ok", "starting" (not yet RUNNING) or "failed"
	Pipeline string `json:"pipeline,omitempty"` // the failed connector
	Error    string `json:"error,omitempty"`
}

// maxBody bounds every request body; bodyTimeout is how long it may take
// to arrive.
const maxBody = 1 << 20

var bodyTimeout = 30 * time.Second

// lifecycleTimeout bounds a stop or restart called through the API.
const lifecycleTimeout = time.Minute

// NewHandler returns the API over c, shaped like Kafka Connect's:
//
//	GET    /                                    the version of sluice and the commit it was built from
//	GET    /connectors                          names; ?expand=status and/or ?expand=info: a map by name
//	POST   /connectors                          {"name": ..., "config": {...}}: 201 and the ConnectorInfo
//	GET    /connectors/{name}                   ConnectorInfo
//	GET    /connectors/{name}/config            the config document
//	PUT    /connectors/{name}/config            create (201) or replace (200) it
//	DELETE /connectors/{name}                   204
//	GET    /connectors/{name}/status            connector and task states, where they run
//	GET    /connectors/{name}/tasks             the tasks and their configs
//	GET    /connectors/{name}/tasks/{id}/status one task's state
//	POST   /connectors/{name}/tasks/{id}/restart 204 (TaskRestarter; else the connector's tasks restart together)
//	PUT    /connectors/{name}/pause|resume|stop 202
//	POST   /connectors/{name}/restart           204; ?includeTasks=true or ?onlyFailed=true: 202 and the status
//	GET    /connectors/{name}/topics            {"<name>": {"topics": [...]}}: the topics used since the last reset (Topics)
//	PUT    /connectors/{name}/topics/reset      200, no body (Topics)
//	POST   /connectors/{name}/signals           {"id": ..., "type": "execute-snapshot", "data": {...}}: 202 {"id": ...} (Signaler)
//	GET    /connectors/{name}/offsets           {"offsets": [{"partition": {"server": name}, "offset": {...}}]} (Offsets)
//	DELETE /connectors/{name}/offsets           reset it: 200 {"message": ...} (Offsets)
//	PATCH  /connectors/{name}/offsets           set it: the body GET answers; 200 {"message": ...} (Offsets); one that would skip changes needs ?skip=true (WithPositionOrder)
//	GET    /connector-plugins                   the connector types
//	GET    /connector-plugins/{type}/config       the definitions of its keys
//	PUT    /connector-plugins/{type}/config/validate
//	GET    /workers                             the workers and the tasks they hold
//	GET    /admin/loggers[/root], PUT /admin/loggers/root  the log level (WithLogLevel)
//	GET    /metrics                             Prometheus metrics (metricsHandler)
//	GET    /health                              200, or 503
//
// Errors answer {"error_code": N, "message": "..."} as Kafka Connect does.
// Every config it answers with has its secrets masked (RedactConfig).
// With a token every request must carry Authorization: Bearer <token>;
// without one only requests addressed to a loopback name pass.
func NewHandler(c Cluster, token string, opts ...Option) http.Handler {
	a := &api{c: c}
	for _, o := range opts {
		o(a)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(rw http.ResponseWriter, r *http.Request) { writeJSON(rw, http.StatusOK, Version()) })
	mux.HandleFunc("GET /connectors", a.list)
	mux.HandleFunc("POST /connectors", a.create)
	mux.HandleFunc("GET /connectors/{name}", a.info)
	mux.HandleFunc("DELETE /connectors/{name}", func(rw http.ResponseWriter, r *http.Request) {
		respond(rw, http.StatusNoContent, nil, logLifecycle(r, "delete", c.Delete(r.Context(), r.PathValue("name"))))
	})
	mux.HandleFunc("GET /connectors/{name}/config", func(rw http.ResponseWriter, r *http.Request) {
		info, err := c.Connector(r.Context(), r.PathValue("name"))
		if err == nil && info.Config == nil {
			err = fmt.Errorf("this process keeps no config document for %s (sluice run reads its file): %w", info.Name, ErrReadOnly)
		}
		respond(rw, http.StatusOK, RedactConfig(info.Config), err)
	})
	mux.HandleFunc("PUT /connectors/{name}/config", a.putConfig)
	mux.HandleFunc("GET /connectors/{name}/status", func(rw http.ResponseWriter, r *http.Request) {
		st, err := c.Status(r.Context(), r.PathValue("name"))
		st.Tasks = nonNil(st.Tasks)
		respond(rw, http.StatusOK, st, err)
	})
	mux.HandleFunc("GET /connectors/{name}/tasks", func(rw http.ResponseWriter, r *http.Request) {
		ts, err := c.Tasks(r.Context(), r.PathValue("name"))
		respond(rw, http.StatusOK, redactTasks(ts), err)
	})
	mux.HandleFunc("GET /connectors/{name}/tasks/{id}/status", a.taskStatus)
	mux.HandleFunc("POST /connectors/{name}/tasks/{id}/restart", a.restartTask)
	mux.HandleFunc("PUT /connectors/{name}/pause", func(rw http.ResponseWriter, r *http.Request) {
		respond(rw, http.StatusAccepted, nil, logLifecycle(r, "pause", c.Pause(r.Context(), r.PathValue("name"))))
	})
	mux.HandleFunc("PUT /connectors/{name}/resume", func(rw http.ResponseWriter, r *http.Request) {
		respond(rw, http.StatusAccepted, nil, logLifecycle(r, "resume", c.Resume(r.Context(), r.PathValue("name"))))
	})
	mux.HandleFunc("PUT /connectors/{name}/stop", func(rw http.ResponseWriter, r *http.Request) {
		s, ok := capable[Stopper](rw, c, "stop")
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), lifecycleTimeout)
		defer cancel()
		respond(rw, http.StatusAccepted, nil, logLifecycle(r, "stop", s.Stop(ctx, r.PathValue("name"))))
	})
	mux.HandleFunc("POST /connectors/{name}/restart", a.restart)
	mux.HandleFunc("GET /connectors/{name}/topics", a.topics)
	mux.HandleFunc("PUT /connectors/{name}/topics/reset", a.topics)
	mux.HandleFunc("POST /connectors/{name}/signals", a.signal)
	mux.HandleFunc("GET /connectors/{name}/groups", a.groups)
	mux.HandleFunc("POST /connectors/{name}/groups/failover", a.groups)
	mux.HandleFunc("POST /connectors/{name}/groups/switchover", a.switchover)
	mux.HandleFunc("GET /connectors/{name}/offsets", a.offsets)
	mux.HandleFunc("DELETE /connectors/{name}/offsets", a.offsets)
	mux.HandleFunc("PATCH /connectors/{name}/offsets", a.offsets)
	mux.HandleFunc("GET /connector-plugins", func(rw http.ResponseWriter, r *http.Request) {
		ps, err := c.Plugins(r.Context())
		respond(rw, http.StatusOK, nonNil(ps), err)
	})
	mux.HandleFunc("PUT /connector-plugins/{type}/config/validate", a.validate)
	mux.HandleFunc("GET /connector-plugins/{type}/config", func(rw http.ResponseWriter, r *http.Request) {
		pc, ok := capable[PluginConfigs](rw, c, "plugin configs")
		if !ok {
			return
		}
		keys, err := pc.PluginConfig(r.Context(), r.PathValue("type"))
		respond(rw, http.StatusOK, keys, err)
	})
	mux.HandleFunc("GET /workers", func(rw http.ResponseWriter, r *http.Request) {
		ws, err := c.Workers(r.Context())
		respond(rw, http.StatusOK, nonNil(ws), err)
	})
	mux.HandleFunc("GET /admin/loggers", a.listLoggers)
	mux.HandleFunc("GET /admin/loggers/{logger}", a.getLogger)
	mux.HandleFunc("PUT /admin/loggers/{logger}", a.putLogger)
	mux.Handle("GET /metrics", metricsHandler(c))
	mux.HandleFunc("GET /health", a.health)
	h := bounded(errorBodies(mux))
	if token == "" {
		return loopbackOnly(h)
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeError(rw, http.StatusUnauthorized, "send Authorization: Bearer <token>")
			return
		}
		h.ServeHTTP(rw, r)
	})
}

// requestTimeout bounds every call into the Cluster (a coordinator that
// hangs answers 504 rather than holding the request); above lifecycleTimeout.
var requestTimeout = lifecycleTimeout + 10*time.Second

func bounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		next.ServeHTTP(rw, r.WithContext(ctx))
	})
}

// errorBodies answers the requests no pattern matches (404, 405 with its
// Allow header) with Kafka Connect's error body instead of the mux's text.
func errorBodies(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(rw, r)
			return
		}
		c := &codeOnly{header: http.Header{}}
		h.ServeHTTP(c, r)
		if allow := c.header.Get("Allow"); allow != "" {
			rw.Header().Set("Allow", allow)
		}
		switch {
		case c.code == http.StatusMethodNotAllowed:
			writeError(rw, c.code, fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, c.header.Get("Allow")))
		case c.code >= 300 && c.code < 400: // the mux's redirect to a clean path
			rw.Header().Set("Location", c.header.Get("Location"))
			rw.WriteHeader(c.code)
		default:
			writeError(rw, http.StatusNotFound, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
		}
	})
}

// codeOnly keeps the status and headers a handler writes, not its body.
type codeOnly struct {
	header http.Header
	code   int
}

func (c *codeOnly) Header() http.Header { return c.header }
func (c *codeOnly) Write(b []byte) (int, error) {
	if c.code == 0 {
		c.code = http.StatusOK
	}
	return len(b), nil
}
func (c *codeOnly) WriteHeader(code int) {
	if c.code == 0 {
		c.code = code
	}
}

type api struct {
	c       Cluster
	loggers *loggers                       // nil: no /admin/loggers
	order   func(a, b string) (int, error) // nil: any offset is taken (WithPositionOrder)
}

func (a *api) list(rw http.ResponseWriter, r *http.Request) {
	names, err := a.c.Connectors(r.Context())
	if err != nil {
		respond(rw, 0, nil, err)
		return
	}
	var status, info bool
	for _, e := range r.URL.Query()["expand"] {
		switch e {
		case "status":
			status = true
		case "info":
			info = true
		default:
			writeError(rw, http.StatusBadRequest, fmt.Sprintf("expand=%q: say expand=status or expand=info", e))
			return
		}
	}
	if !status && !info {
		writeJSON(rw, http.StatusOK, nonNil(names))
		return
	}
	out := make(map[string]map[string]any, len(names))
	for _, n := range names {
		e := map[string]any{}
		if status {
			st, err := a.c.Status(r.Context(), n)
			if errors.Is(err, ErrNotFound) {
				continue // deleted meanwhile
			} else if err != nil {
				respond(rw, 0, nil, err)
				return
			}
			e["status"] = st
		}
		if info {
			ci, err := a.c.Connector(r.Context(), n)
			if errors.Is(err, ErrNotFound) {
				continue
			} else if err != nil {
				respond(rw, 0, nil, err)
				return
			}
			e["info"] = redactInfo(ci)
		}
		out[n] = e
	}
	writeJSON(rw, http.StatusOK, out)
}

func (a *api) create(rw http.ResponseWriter, r *http.Request) {
	var body struct {
		Name   string          `json:"name"`
		Config json.RawMessage `json:"config"`
	}
	if err := decodeBody(rw, r, &body); err != nil {
		writeError(rw, http.StatusBadRequest, err.Error()+`: send {"name": "...", "config": {...}}`)
		return
	}
	if msg := checkName(body.Name); msg != "" {
		writeError(rw, http.StatusBadRequest, msg)
		return
	}
	if !isObject(body.Config) {
		writeError(rw, http.StatusBadRequest, `"config" must be a JSON object: send {"name": "...", "config": {...}}`)
		return
	}
	info, err := a.c.Create(r.Context(), body.Name, body.Config)
	respond(rw, http.StatusCreated, redactInfo(info), logAction(r, body.Name, "create", err))
}

func (a *api) info(rw http.ResponseWriter, r *http.Request) {
	info, err := a.c.Connector(r.Context(), r.PathValue("name"))
	respond(rw, http.StatusOK, redactInfo(info), err)
}

func (a *api) putConfig(rw http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if msg := checkName(name); msg != "" {
		writeError(rw, http.StatusBadRequest, msg)
		return
	}
	var cfg json.RawMessage
	if err := decodeBody(rw, r, &cfg); err != nil || !isObject(cfg) {
		writeError(rw, http.StatusBadRequest, "send the connector's config as a JSON object")
		return
	}
	if old, err := a.c.Connector(r.Context(), name); err == nil {
		cfg = Unmask(cfg, old.Config) // a config read here and put back keeps its secrets
	}
	info, created, err := a.c.PutConfig(r.Context(), name, cfg)
	err = logLifecycle(r, "config change", err)
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	respond(rw, code, redactInfo(info), err)
}

// restart restarts a connector; with onlyFailed=true only when it or one
// of its tasks FAILED. With either parameter it answers 202 and the status,
// as Kafka Connect does.
func (a *api) restart(rw http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	flag := func(key string) (bool, bool) {
		v := r.URL.Query().Get(key)
		if v == "" {
			return false, true
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(rw, http.StatusBadRequest, fmt.Sprintf("%s=%q: say true or false", key, v))
		}
		return b, err == nil
	}
	includeTasks, ok := flag("includeTasks")
	if !ok {
		return
	}
	onlyFailed, ok := flag("onlyFailed")
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), lifecycleTimeout)
	defer cancel()
	restart := true
	if onlyFailed {
		st, err := a.c.Status(ctx, name)
		if err != nil {
			respond(rw, 0, nil, err)
			return
		}
		restart = st.Connector.State == "FAILED"
		for _, t := range st.Tasks {
			restart = restart || t.State == "FAILED"
		}
	}
	if restart {
		if err := logLifecycle(r, "restart", a.c.Restart(ctx, name)); err != nil {
			respond(rw, 0, nil, err)
			return
		}
	} else {
		slog.Info("connector restart through REST: nothing FAILED, nothing restarted (onlyFailed=true)", "connector", name, "remote", r.RemoteAddr)
	}
	if !includeTasks && !onlyFailed {
		rw.WriteHeader(http.StatusNoContent)
		return
	}
	st, err := a.c.Status(ctx, name)
	if _, async := a.c.(AsyncRestarter); err == nil && restart && async {
		// The holders act on the request at their next heartbeat: answer
		// what is going to happen, as Kafka Connect does, not the states
		// read before they noticed (a FAILED task would look untouched).
		for i, t := range st.Tasks {
			if t.State != "PAUSED" && t.State != "STOPPED" {
				st.Tasks[i].State, st.Tasks[i].Trace = "RESTARTING", ""
			}
		}
		if st.Connector.State != "PAUSED" && st.Connector.State != "STOPPED" {
			st.Connector.State = "RESTARTING"
		}
	}
	respond(rw, http.StatusAccepted, st, err)
}

// AsyncRestarter marks a Cluster whose Restart only records the request
// for the tasks' holders to act on later (a cluster's workers, at their
// next heartbeat). The answer of a restart with includeTasks or onlyFailed
// then shows the tasks it restarts as RESTARTING, as Kafka Connect's does;
// without it (sluice run restarts before answering) it shows the states
// read after the restart.
type AsyncRestarter interface {
	RestartsAsync()
}

// task finds the task of the request's {name} and {id}; false when it
// answered an error.
func (a *api) task(ctx context.Context, rw http.ResponseWriter, r *http.Request) (TaskState, bool) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id < 0 {
		writeError(rw, http.StatusBadRequest, fmt.Sprintf("task id %q is not a number", r.PathValue("id")))
		return TaskState{}, false
	}
	st, err := a.c.Status(ctx, r.PathValue("name"))
	if err != nil {
		respond(rw, 0, nil, err)
		return TaskState{}, false
	}
	for _, t := range st.Tasks {
		if t.ID == id {
			return t, true
		}
	}
	writeError(rw, http.StatusNotFound, fmt.Sprintf("connector %s has no task %d (GET /connectors/%s/tasks lists them)", st.Name, id, st.Name))
	return TaskState{}, false
}

func (a *api) taskStatus(rw http.ResponseWriter, r *http.Request) {
	if t, ok := a.task(r.Context(), rw, r); ok {
		writeJSON(rw, http.StatusOK, t)
	}
}

// TaskRestarter restarts one task of a connector (POST
// /connectors/{name}/tasks/{id}/restart); a Cluster without it restarts
// all the connector's tasks for that call.
type TaskRestarter interface {
	RestartTask(ctx context.Context, name string, task int) error
}

func (a *api) restartTask(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), lifecycleTimeout)
	defer cancel()
	t, ok := a.task(ctx, rw, r)
	if !ok {
		return
	}
	var err error
	if tr, ok := a.c.(TaskRestarter); ok {
		err = tr.RestartTask(ctx, r.PathValue("name"), t.ID)
	} else {
		err = a.c.Restart(ctx, r.PathValue("name"))
	}
	respond(rw, http.StatusNoContent, nil, logLifecycle(r, "restart of task "+strconv.Itoa(t.ID), err))
}

// logLifecycle logs, at INFO, the lifecycle action a REST call asked for
// on the connector of its path, who asked (the client's address) and,
// when it failed, why; it returns err.
func logLifecycle(r *http.Request, action string, err error) error {
	return logAction(r, r.PathValue("name"), action, err)
}

// logAction logs one INFO line for a call that changes connector name:
// the action, the connector and who asked; a failed call with its error.
// Never the config: it may hold secrets.
func logAction(r *http.Request, name, action string, err error) error {
	args := []any{"connector", name, "remote", r.RemoteAddr}
	if err != nil {
		slog.Info("connector "+action+" through REST failed", append(args, "err", err)...)
		return err
	}
	slog.Info("connector "+action+" through REST", args...)
	return nil
}

// BuildInfo is GET /: what Kafka Connect's root answers (version, commit),
// for sluice.
type BuildInfo struct {
	Version string `json:"version"` // the module version, "devel" for a build from a work tree
	Commit  string `json:"commit"`  // the VCS revision the binary was built from, "" when unknown
}

// BuildVersion and BuildCommit, when set at link time (go build -ldflags
// "-X github.com/sluicecdc/sluice/runtime/admin.BuildVersion=v1.2.3 -X
// github.com/sluicecdc/sluice/runtime/admin.BuildCommit=<sha>"), win over
// the build information Go records (a build outside a git work tree, or
// from a source archive, has none).
var BuildVersion, BuildCommit string

// Version reads the binary's build information: the module version and
// vcs.revision Go records, or what BuildVersion and BuildCommit say.
func Version() BuildInfo {
	v := BuildInfo{Version: "devel"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Commit = s.Value
			}
		}
	}
	if BuildVersion != "" {
		v.Version = BuildVersion
	}
	if BuildCommit != "" {
		v.Commit = BuildCommit
	}
	return v
}

// capable is c as its optional capability T; without it, it answers 405.
func capable[T any](rw http.ResponseWriter, c Cluster, what string) (T, bool) {
	t, ok := c.(T)
	if !ok {
		respond(rw, 0, nil, fmt.Errorf("%s: %w", what, ErrReadOnly))
	}
	return t, ok
}

// topics answers Kafka Connect's {"<name>": {"topics": [...]}}, or resets
// the list (200, no body, as Kafka Connect answers).
func (a *api) topics(rw http.ResponseWriter, r *http.Request) {
	t, ok := capable[Topics](rw, a.c, "topics")
	if !ok {
		return
	}
	name := r.PathValue("name")
	if r.Method == http.MethodPut {
		respond(rw, http.StatusOK, nil, logLifecycle(r, "topics reset", t.ResetTopics(r.Context(), name)))
		return
	}
	ts, err := t.Topics(r.Context(), name)
	respond(rw, http.StatusOK, map[string]map[string][]string{name: {"topics": nonNil(ts)}}, err)
}

// groups answers a replicator's groups, or applies their checkpoints.
func (a *api) groups(rw http.ResponseWriter, r *http.Request) {
	g, ok := capable[Grouper](rw, a.c, "groups")
	if !ok {
		return
	}
	apply := r.Method == http.MethodPost
	sts, err := g.Groups(r.Context(), r.PathValue("name"), apply)
	if apply {
		err = logLifecycle(r, "groups failover", err)
	}
	respond(rw, http.StatusOK, map[string]any{"groups": sts}, err)
}

// DefaultSwitchoverTimeout bounds a switchover's wait for the replicator
// to copy everything, when the request names no timeout.
const DefaultSwitchoverTimeout = time.Minute

// switchover carries out a replicator's planned switchover of groups.
func (a *api) switchover(rw http.ResponseWriter, r *http.Request) {
	s, ok := capable[Switcher](rw, a.c, "switchover")
	if !ok {
		return
	}
	timeout := DefaultSwitchoverTimeout
	if v := r.URL.Query().Get("timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			respond(rw, 0, nil, fmt.Errorf("timeout %q: a duration such as 30s: %w", v, ErrInvalid))
			return
		}
		timeout = d
	}
	rep, err := s.Switchover(r.Context(), r.PathValue("name"), r.URL.Query()["group"], timeout)
	respond(rw, http.StatusOK, rep, logLifecycle(r, "groups switchover", err))
}

// SignalRequest is the body of POST /connectors/{name}/signals: the
// columns of Debezium's signal table. Data is a JSON object, or a string
// holding one (as the table's data column does); id may be absent.
type SignalRequest struct {
	ID   string          `json:"id"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

func (a *api) signal(rw http.ResponseWriter, r *http.Request) {
	sg, ok := capable[Signaler](rw, a.c, "signals")
	if !ok {
		return
	}
	var req SignalRequest
	if err := decodeBody(rw, r, &req); err != nil {
		writeError(rw, http.StatusBadRequest, err.Error())
		return
	}
	if req.Type == "" {
		writeError(rw, http.StatusBadRequest, `the signal needs a "type" (execute-snapshot, stop-snapshot, pause-snapshot or resume-snapshot)`)
		return
	}
	data := string(bytes.TrimSpace(req.Data))
	if data == "null" {
		data = ""
	} else if strings.HasPrefix(data, `"`) {
		if err := json.Unmarshal(req.Data, &data); err != nil {
			writeError(rw, http.StatusBadRequest, fmt.Sprintf("data: %v", err))
			return
		}
	} else if data != "" && !isObject(req.Data) {
		writeError(rw, http.StatusBadRequest, `"data" must be a JSON object, or a string holding one`)
		return
	}
	id, err := sg.Signal(r.Context(), r.PathValue("name"), req.ID, req.Type, data)
	err = logLifecycle(r, "signal "+req.Type, err)
	respond(rw, http.StatusAccepted, struct {
		ID string `json:"id"`
	}{id}, err)
}

func (a *api) offsets(rw http.ResponseWriter, r *http.Request) {
	o, ok := capable[Offsets](rw, a.c, "offsets")
	if !ok {
		return
	}
	name := r.PathValue("name")
	switch r.Method {
	case http.MethodGet:
		pos, err := o.Offset(r.Context(), name)
		respond(rw, http.StatusOK, offsetsOf(name, pos), err)
	case http.MethodDelete:
		respond(rw, http.StatusOK, offsetsMessage{"The offsets for this connector have been reset successfully"}, logLifecycle(r, "offsets reset", o.SetOffset(r.Context(), name, "")))
	default:
		pos, deprecated, err := positionOf(rw, r)
		if err != nil {
			writeError(rw, http.StatusBadRequest, err.Error())
			return
		}
		if msg, err := a.skips(r, o, name, pos); err != nil {
			respond(rw, 0, nil, err)
			return
		} else if msg != "" {
			writeError(rw, http.StatusBadRequest, msg)
			return
		}
		if deprecated {
			rw.Header().Set("Warning", `299 sluice "the {\"position\": ...} body is deprecated: send {\"offsets\": [...]}"`)
			slog.Warn(`PATCH .../offsets with {"position": "..."} is deprecated and will be refused in a later release: send {"offsets": [{"partition": {...}, "offset": {...}}]}, the form GET .../offsets answers`, "connector", name)
		}
		respond(rw, http.StatusOK, offsetsMessage{"The offsets for this connector have been altered successfully"}, logLifecycle(r, "offsets alter", o.SetOffset(r.Context(), name, pos)))
	}
}

// WithPositionOrder makes PATCH /connectors/{name}/offsets refuse (400),
// unless it says ?skip=true, an offset after the saved one or that order
// cannot place: order compares two positions as the source reads them (-1
// before, 0 same, 1 after); its error wraps ErrInvalid for a position the
// source cannot read, otherwise it says why the two are not ordered.
func WithPositionOrder(order func(a, b string) (int, error)) Option {
	return func(a *api) { a.order = order }
}

// skips says why a PATCH of the offsets to pos is refused (WithPositionOrder):
// pos is after the saved position, or cannot be ordered with it, so the
// source would skip the changes between them and they would never reach
// the target; ?skip=true takes it anyway. A position before the saved one
// is taken: the source reads the changes after it again and the sink skips
// those it applied. An error is the request's or the Cluster's (a bad
// position: ErrInvalid, 400).
func (a *api) skips(r *http.Request, o Offsets, name, pos string) (string, error) {
	if a.order == nil {
		return "", nil
	}
	skip := false
	if v := r.URL.Query().Get("skip"); v != "" {
		var err error
		if skip, err = strconv.ParseBool(v); err != nil {
			return "", fmt.Errorf("skip=%q: say true or false: %w", v, ErrInvalid)
		}
	}
	cur, err := o.Offset(r.Context(), name)
	if err != nil || cur == "" || skip {
		return "", err // no saved position: the source would start from its configured start
	}
	c, err := a.order(pos, cur)
	switch {
	case errors.Is(err, ErrInvalid):
		return "", err
	case err != nil:
		return fmt.Sprintf("the new offset cannot be ordered with the saved one (%v): the source could skip changes, which would never reach the target; send PATCH .../offsets?skip=true to set it anyway", err), nil
	case c > 0:
		return "the new offset is after the saved one: the source would skip the changes between them, which would never reach the target; send PATCH .../offsets?skip=true to skip them (an offset before the saved one is taken: the changes after it are read again, and the sink skips those it applied)", nil
	}
	return "", nil
}

// ConnectorOffsets is Kafka Connect's body of GET and PATCH
// /connectors/{name}/offsets. A pipeline has one source partition,
// {"server": <connector name>} (Debezium's MySQL connector names its
// partition by server the same way), and its offset is the saved position
// as a JSON object. Position repeats the offset as the text earlier
// releases answered, for scripts written against them; it goes away in a
// later release.
type ConnectorOffsets struct {
	Offsets  []PartitionOffset `json:"offsets"`
	Position string            `json:"position,omitempty"`
}

// PartitionOffset is one source partition and its offset.
type PartitionOffset struct {
	Partition map[string]any  `json:"partition"`
	Offset    json.RawMessage `json:"offset"`
}

type offsetsMessage struct {
	Message string `json:"message"`
}

// offsetsOf is the GET answer for a saved position pos ("" when none).
func offsetsOf(name, pos string) ConnectorOffsets {
	out := ConnectorOffsets{Offsets: []PartitionOffset{}, Position: pos}
	if pos == "" {
		return out
	}
	off := json.RawMessage(pos)
	if !json.Valid(off) || !isObject(off) {
		// Not a JSON object (no source writes one today): keep the text.
		b, _ := json.Marshal(map[string]string{"position": pos})
		off = b
	}
	out.Offsets = append(out.Offsets, PartitionOffset{Partition: map[string]any{"server": name}, Offset: off})
	return out
}

// positionOf reads a PATCH body: Kafka Connect's {"offsets": [...]} with
// one partition, or the deprecated {"position": "..."}.
func positionOf(rw http.ResponseWriter, r *http.Request) (pos string, deprecated bool, err error) {
	const form = `send {"offsets": [{"partition": {"server": "<connector>"}, "offset": {...}}]}, the form GET .../offsets answers`
	var body struct {
		Offsets  []PartitionOffset `json:"offsets"`
		Position string            `json:"position"`
	}
	if err := decodeBody(rw, r, &body); err != nil {
		return "", false, fmt.Errorf("%v: %s", err, form)
	}
	switch {
	case len(body.Offsets) == 0 && body.Position != "":
		return body.Position, true, nil
	case len(body.Offsets) != 1:
		return "", false, fmt.Errorf("a pipeline has one source partition, the body has %d: %s", len(body.Offsets), form)
	}
	off := body.Offsets[0].Offset
	if !isObject(off) {
		return "", false, fmt.Errorf("the offset must be a JSON object: %s", form)
	}
	var legacy map[string]json.RawMessage
	if err := json.Unmarshal(off, &legacy); err == nil && len(legacy) == 1 {
		if p, ok := legacy["position"]; ok { // a position GET kept as text
			var text string
			if json.Unmarshal(p, &text) == nil {
				return text, false, nil
			}
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, off); err != nil {
		return "", false, fmt.Errorf("the offset: %v: %s", err, form)
	}
	return compact.String(), false, nil
}

func (a *api) validate(rw http.ResponseWriter, r *http.Request) {
	var cfg json.RawMessage
	if err := decodeBody(rw, r, &cfg); err != nil || !isObject(cfg) {
		writeError(rw, http.StatusBadRequest, "send the config to validate as a JSON object")
		return
	}
	v, err := a.c.Validate(r.Context(), r.PathValue("type"), cfg)
	respond(rw, http.StatusOK, redactValidation(v), err)
}

func (a *api) health(rw http.ResponseWriter, r *http.Request) {
	var h Health
	if hc, ok := a.c.(HealthChecker); ok {
		h = hc.Health(r.Context())
	} else if _, err := a.c.Connectors(r.Context()); err != nil {
		h = Health{Status: "failed", Error: err.Error()}
	} else {
		h = Health{Status: "ok"}
	}
	code := http.StatusOK
	if h.Status != "ok" {
		code = http.StatusServiceUnavailable
	}
	writeJSON(rw, code, h)
}

// decodeBody reads one JSON value from a size-limited body into v and
// refuses trailing data.
func decodeBody(rw http.ResponseWriter, r *http.Request, v any) error {
	// The body must arrive in bodyTimeout. Not the server's ReadTimeout:
	// its deadline outlives the read and cancels the context of a handler
	// that runs longer (a stop draining its pipeline).
	rc := http.NewResponseController(rw)
	_ = rc.SetReadDeadline(time.Now().Add(bodyTimeout)) // unsupported by test recorders
	dec := json.NewDecoder(http.MaxBytesReader(rw, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		// Do not wait for the rest of a body that failed: close the
		// connection after the answer.
		rw.Header().Set("Connection", "close")
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("the body exceeds %d bytes", maxBody)
		}
		return fmt.Errorf("the body is not the JSON expected (%v)", err)
	}
	if dec.More() {
		rw.Header().Set("Connection", "close")
		return errors.New("the body has data after its JSON value")
	}
	_ = rc.SetReadDeadline(time.Time{})
	return nil
}

func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 1 && b[0] == '{'
}

// checkName returns why a connector name is refused, or "".
func checkName(name string) string {
	switch {
	case name == "":
		return `the connector needs a "name"`
	case len(name) > 200:
		return "the connector name is longer than 200 bytes"
	case strings.ContainsRune(name, '/'):
		return fmt.Sprintf("the connector name %q contains '/'", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0 || !utf8.ValidString(name):
		return fmt.Sprintf("the connector name %q contains control characters or invalid UTF-8", name)
	}
	return ""
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// statusOf maps a Cluster error to its HTTP code.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrExists), errors.Is(err, ErrConflict), errors.Is(err, ErrState):
		return http.StatusConflict
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrReadOnly):
		return http.StatusMethodNotAllowed
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// respond writes err as an error body, or v with code (no body when v is nil).
func respond(rw http.ResponseWriter, code int, v any, err error) {
	switch {
	case err != nil:
		writeError(rw, statusOf(err), err.Error())
	case v == nil:
		rw.WriteHeader(code)
	default:
		writeJSON(rw, code, v)
	}
}

// writeError writes Kafka Connect's error body.
func writeError(rw http.ResponseWriter, code int, msg string) {
	writeJSON(rw, code, struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}{code, msg})
}

func writeJSON(rw http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(fmt.Sprintf(`{"error_code":500,"message":%q}`, "encoding the answer: "+err.Error()))
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	_, _ = rw.Write(append(b, '\n'))
}

// loopbackOnly guards the API served without a token against DNS
// rebinding: a web page whose name resolves to 127.0.0.1 reaches the port,
// but its requests carry its own name in Host and its own origin in Origin.
// A request passes when Host is 127.0.0.1 (any loopback IP), localhost or
// [::1], with the port the request came in on, and Origin is absent or a
// loopback origin too.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if msg := checkLoopbackRequest(r); msg != "" {
			writeError(rw, http.StatusForbidden, msg+
				": without a token the API answers only requests addressed to 127.0.0.1, localhost or [::1] "+
				"(DNS rebinding guard); set SLUICE_REST_TOKEN to use it by another name")
			return
		}
		next.ServeHTTP(rw, r)
	})
}

// checkLoopbackRequest returns why r fails the loopback rule, or "".
func checkLoopbackRequest(r *http.Request) string {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = r.Host, ""
	}
	if !loopbackName(host) {
		return fmt.Sprintf("Host %q is not a loopback name", r.Host)
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, lport, err := net.SplitHostPort(la.String()); err == nil && port != lport && !(port == "" && lport == "80") {
			return fmt.Sprintf("Host %q does not name the port %s the API listens on", r.Host, lport)
		}
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !loopbackName(u.Hostname()) {
			return fmt.Sprintf("Origin %q is not a loopback origin", o)
		}
	}
	return ""
}

func loopbackName(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// DefaultAddr is where the API listens when no address is given.
const DefaultAddr = "127.0.0.1:8083"

// Serve serves h on addr until ctx is done; the channel delivers the
// server's end (nil after ctx). It refuses to listen on a non-loopback
// address without a token (runtime.ErrConfig): h must then be a handler
// made with that token.
func Serve(ctx context.Context, addr, token string, h http.Handler) (net.Addr, <-chan error, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("rest address %q: %w: %w", addr, err, runtime.ErrConfig)
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && token == "" {
		return nil, nil, fmt.Errorf("rest address %s is not loopback: set a token (SLUICE_REST_TOKEN) to expose the API: %w", addr, runtime.ErrConfig)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("rest: listen on %s: %w (is another sluice running? choose another --rest address)", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		errc <- err
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), errc, nil
}
