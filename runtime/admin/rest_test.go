package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/engine"
)

// fakeCluster is an in-memory Cluster: configs by name, every task RUNNING
// on worker w1 until paused.
type fakeCluster struct {
	mu       sync.Mutex
	configs  map[string]json.RawMessage
	version  map[string]int64
	paused   map[string]bool
	failed   map[string]bool
	restarts int
	down     error // every call fails with it (a coordinator out of reach)
}

func newFake() *fakeCluster {
	return &fakeCluster{configs: map[string]json.RawMessage{}, version: map[string]int64{}, paused: map[string]bool{}, failed: map[string]bool{}}
}

func (f *fakeCluster) check(cfg json.RawMessage) error {
	var m map[string]any
	if err := json.Unmarshal(cfg, &m); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if _, ok := m["source"]; !ok {
		return fmt.Errorf("%w: source: required", ErrInvalid)
	}
	return nil
}

func (f *fakeCluster) infoLocked(name string) ConnectorInfo {
	return ConnectorInfo{Name: name, Config: f.configs[name], Tasks: []TaskID{{name, 0}, {name, 1}}, Type: "source", Version: f.version[name]}
}

func (f *fakeCluster) Connectors(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	var names []string
	for n := range f.configs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func (f *fakeCluster) Create(_ context.Context, name string, cfg json.RawMessage) (ConnectorInfo, error) {
	if err := f.check(cfg); err != nil {
		return ConnectorInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.configs[name]; ok {
		return ConnectorInfo{}, fmt.Errorf("connector %s: %w", name, ErrExists)
	}
	f.configs[name], f.version[name] = cfg, 1
	return f.infoLocked(name), nil
}

func (f *fakeCluster) Connector(_ context.Context, name string) (ConnectorInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.configs[name]; !ok {
		return ConnectorInfo{}, fmt.Errorf("connector %s: %w", name, ErrNotFound)
	}
	return f.infoLocked(name), nil
}

func (f *fakeCluster) PutConfig(_ context.Context, name string, cfg json.RawMessage) (ConnectorInfo, bool, error) {
	if err := f.check(cfg); err != nil {
		return ConnectorInfo{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, existed := f.configs[name]
	f.configs[name] = cfg
	f.version[name]++
	return f.infoLocked(name), !existed, nil
}

func (f *fakeCluster) Delete(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.configs[name]; !ok {
		return fmt.Errorf("connector %s: %w", name, ErrNotFound)
	}
	delete(f.configs, name)
	return nil
}

func (f *fakeCluster) Status(ctx context.Context, name string) (ConnectorStatus, error) {
	info, err := f.Connector(ctx, name)
	if err != nil {
		return ConnectorStatus{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	state, sink := "RUNNING", "RUNNING"
	if f.paused[name] {
		state, sink = "PAUSED", "PAUSED"
	}
	if f.failed[name] {
		sink = "FAILED"
	}
	return ConnectorStatus{Name: name, Connector: ConnectorState{State: state, WorkerID: "w1"}, Type: info.Type,
		Tasks: []TaskState{{ID: 0, Role: "source", State: state, WorkerID: "w1", Epoch: 3, Generation: info.Version},
			{ID: 1, Role: "sink", State: sink, WorkerID: "w2", Generation: info.Version}}}, nil
}

func (f *fakeCluster) Tasks(ctx context.Context, name string) ([]TaskInfo, error) {
	info, err := f.Connector(ctx, name)
	if err != nil {
		return nil, err
	}
	return []TaskInfo{{ID: TaskID{name, 0}, Role: "source", Config: info.Config}, {ID: TaskID{name, 1}, Role: "sink", Config: info.Config}}, nil
}

func (f *fakeCluster) setPaused(ctx context.Context, name string, p bool) error {
	if _, err := f.Connector(ctx, name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused[name] = p
	return nil
}

func (f *fakeCluster) Pause(ctx context.Context, name string) error {
	return f.setPaused(ctx, name, true)
}
func (f *fakeCluster) Resume(ctx context.Context, name string) error {
	return f.setPaused(ctx, name, false)
}
func (f *fakeCluster) Restart(ctx context.Context, name string) error {
	if _, err := f.Connector(ctx, name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restarts++
	f.failed[name] = false
	return nil
}

func (f *fakeCluster) Validate(_ context.Context, typ string, cfg json.RawMessage) (Validation, error) {
	if typ != "mysql" {
		return Validation{}, fmt.Errorf("plugin %s: %w", typ, ErrNotFound)
	}
	var m map[string]any
	_ = json.Unmarshal(cfg, &m)
	v := Validation{Name: typ, Configs: []ConfigInfo{{Value: ConfigValue{Name: "source", Value: m["source"], Errors: []string{}}}}}
	if sink, ok := m["sink"].(map[string]any); ok {
		v.Configs = append(v.Configs, ConfigInfo{Value: ConfigValue{Name: "sink.dsn", Value: sink["dsn"], Errors: []string{}}})
	}
	if err := f.check(cfg); err != nil {
		v.ErrorCount, v.Configs[0].Value.Errors = 1, []string{err.Error()}
	}
	return v, nil
}

func (f *fakeCluster) Plugins(context.Context) ([]Plugin, error) {
	return []Plugin{{Class: "mysql", Type: "source", Version: "1"}, {Class: "jdbc", Type: "sink", Version: "1"}}, nil
}

func (f *fakeCluster) Workers(context.Context) ([]WorkerInfo, error) {
	return []WorkerInfo{{ID: "w2", Alive: false, Tasks: nil}, {ID: "w1", Alive: true, Tasks: []string{"a/source"}}}, nil
}

func do(t *testing.T, h http.Handler, method, path, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// TestAPIConnectors walks the Kafka Connect calls over a fake cluster.
func TestAPIConnectors(t *testing.T) {
	f := newFake()
	h := NewHandler(f, "")
	expect := func(method, path, body string, code int, contains ...string) string {
		t.Helper()
		got, out := do(t, h, method, path, body)
		if got != code {
			t.Fatalf("%s %s: %d %s, want %d", method, path, got, out, code)
		}
		for _, c := range contains {
			if !strings.Contains(out, c) {
				t.Fatalf("%s %s: %s lacks %s", method, path, out, c)
			}
		}
		return out
	}
	expect("GET", "/connectors", "", 200, "[]")
	expect("POST", "/connectors", `{"name": "a", "config": {"source": {"host": "127.0.0.1"}}}`, 201,
		`"name":"a"`, `"config":{"source":{"host":"127.0.0.1"}}`, `"tasks":[{"connector":"a","task":0},{"connector":"a","task":1}]`, `"type":"source"`, `"version":1`)
	expect("POST", "/connectors", `{"name": "a", "config": {"source": {}}}`, 409, `"error_code":409`, "already exists")
	expect("POST", "/connectors", `{"name": "b", "config": {"sink": {}}}`, 400, `"error_code":400`, "source: required")
	expect("GET", "/connectors", "", 200, `["a"]`)
	expect("GET", "/connectors?expand=status", "", 200, `{"a":{"status":{"name":"a","connector":{"state":"RUNNING","worker_id":"w1"}`)
	expect("GET", "/connectors?expand=info", "", 200, `{"a":{"info":{"name":"a"`)
	expect("GET", "/connectors?expand=bogus", "", 400, "expand=status")
	expect("GET", "/connectors/a", "", 200, `"name":"a"`)
	expect("GET", "/connectors/a/config", "", 200, `{"source":{"host":"127.0.0.1"}}`)
	expect("PUT", "/connectors/a/config", `{"source": {"host": "localhost"}}`, 200, `"version":2`, `"localhost"`)
	expect("PUT", "/connectors/c/config", `{"source": {}}`, 201, `"name":"c"`)
	expect("PUT", "/connectors/c/config", `{"sink": {}}`, 400, "source: required")
	expect("GET", "/connectors/a/status", "", 200, `"tasks":[{"id":0,"role":"source","state":"RUNNING","worker_id":"w1","epoch":3,"generation":2}`, `"type":"source"`)
	expect("GET", "/connectors/a/tasks", "", 200, `[{"id":{"connector":"a","task":0},"role":"source","config":{"source"`)
	expect("GET", "/connectors/a/tasks/1/status", "", 200, `"worker_id":"w2"`)
	expect("GET", "/connectors/a/tasks/7/status", "", 404, "no task 7")
	expect("GET", "/connectors/a/tasks/x/status", "", 400, "not a number")
	expect("PUT", "/connectors/a/pause", "", 202)
	expect("GET", "/connectors/a/status", "", 200, `"connector":{"state":"PAUSED"`)
	expect("PUT", "/connectors/a/resume", "", 202)
	expect("POST", "/connectors/a/restart", "", 204)
	expect("POST", "/connectors/a/restart?onlyFailed=true", "", 202, `"tasks":[`)
	if f.restarts != 1 {
		t.Fatalf("onlyFailed restarted a connector with no failed task: %d restarts", f.restarts)
	}
	f.failed["a"] = true
	expect("POST", "/connectors/a/restart?includeTasks=true&onlyFailed=true", "", 202, `"role":"sink","state":"RUNNING"`)
	expect("POST", "/connectors/a/restart?includeTasks=yes", "", 400, "true or false")
	if f.restarts != 2 {
		t.Fatalf("restarts %d, want 2", f.restarts)
	}
	expect("PUT", "/connectors/a/stop", "", 405, "stop")
	expect("GET", "/connectors/a/offsets", "", 405)
	expect("DELETE", "/connectors/c", "", 204)
	for _, p := range []string{"/connectors/c", "/connectors/c/status", "/connectors/c/config", "/connectors/c/tasks"} {
		expect("GET", p, "", 404, `"error_code":404`, "no such connector")
	}
	expect("DELETE", "/connectors/c", "", 404)
	expect("PUT", "/connectors/c/pause", "", 404)
	expect("GET", "/connector-plugins", "", 200, `[{"class":"mysql","type":"source","version":"1"},{"class":"jdbc","type":"sink","version":"1"}]`)
	expect("PUT", "/connector-plugins/mysql/config/validate", `{"source": {}}`, 200, `"error_count":0`)
	expect("PUT", "/connector-plugins/mysql/config/validate", `{"sink": {}}`, 200, `"error_count":1`, "source: required")
	expect("PUT", "/connector-plugins/nope/config/validate", `{}`, 404)
	expect("GET", "/workers", "", 200, `"id":"w1"`)
	// Not a worker of a cluster (no WorkerMetricsReporter): no worker series.
	if m := expect("GET", "/metrics", "", 200, "sluice_build_info{"); strings.Contains(m, "sluice_worker_") {
		t.Errorf("metrics of a cluster without workers' figures have worker series:\n%s", m)
	}
	expect("GET", "/health", "", 200, `"status":"ok"`)
	expect("GET", "/nothing", "", 404, `"error_code":404`)
	expect("POST", "/connectors/a/pause", "", 405)
	f.down = errors.New("coordinator: connection refused")
	expect("GET", "/health", "", 503, "connection refused")
	expect("GET", "/connectors", "", 500, `"error_code":500`, "connection refused")
}

// TestAPIBadInput: malformed bodies, names and paths get a 4xx with Kafka
// Connect's error body, never a panic or a 5xx.
func TestAPIBadInput(t *testing.T) {
	h := NewHandler(newFake(), "")
	big := `{"name": "a", "config": {"x": "` + strings.Repeat("a", maxBody) + `"}}`
	for _, c := range []struct {
		method, path, body string
		code               int
	}{
		{"POST", "/connectors", "", 400},
		{"POST", "/connectors", "{", 400},
		{"POST", "/connectors", "[]", 400},
		{"POST", "/connectors", "null", 400},
		{"POST", "/connectors", `{"name": "a"}`, 400},
		{"POST", "/connectors", `{"name": "a", "config": "x"}`, 400},
		{"POST", "/connectors", `{"name": "a", "config": null}`, 400},
		{"POST", "/connectors", `{"name": "a", "config": []}`, 400},
		{"POST", "/connectors", `{"name": "", "config": {}}`, 400},
		{"POST", "/connectors", `{"name": 7, "config": {}}`, 400},
		{"POST", "/connectors", `{"name": "a/b", "config": {}}`, 400},
		{"POST", "/connectors", `{"name": "a\u0000b", "config": {}}`, 400},
		{"POST", "/connectors", "{\"name\": \"\xff\", \"config\": {}}", 400},
		{"POST", "/connectors", `{"name": "` + strings.Repeat("n", 201) + `", "config": {}}`, 400},
		{"POST", "/connectors", `{"name": "a", "config": {}} {"name": "b"}`, 400},
		{"POST", "/connectors", big, 400},
		{"PUT", "/connectors/a/config", "", 400},
		{"PUT", "/connectors/a/config", `"x"`, 400},
		{"PUT", "/connectors/a/config", big, 400},
		{"PUT", "/connector-plugins/mysql/config/validate", "[1]", 400},
		{"PUT", "/connectors/%2F/config", `{"source": {}}`, 404},
		{"PUT", "/connectors/a%2Fb/config", `{"source": {}}`, 400},
		{"GET", "/connectors/a/tasks/-1/status", "", 400},
		{"GET", "/connectors/a/tasks/99999999999999999999/status", "", 400},
		{"GET", "/connectors/%00", "", 404},
		{"GET", "/connectors/" + strings.Repeat("x", 5000), "", 404},
	} {
		code, body := do(t, h, c.method, c.path, c.body)
		if code != c.code {
			t.Errorf("%s %s %.60q: %d %s, want %d", c.method, c.path, c.body, code, body, c.code)
		}
		var e struct {
			Code    int    `json:"error_code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code != code || e.Message == "" {
			t.Errorf("%s %s: error body %q is not {error_code, message}", c.method, c.path, body)
		}
	}
}

// FuzzAPI: no request body or path makes the API panic or answer 5xx.
func FuzzAPI(f *testing.F) {
	for _, s := range []string{`{"name": "a", "config": {"source": {}}}`, `{"source": {}}`, `{"position": "x"}`, "", "{", "\x00"} {
		f.Add("POST", "/connectors", s)
		f.Add("PUT", "/connectors/a/config", s)
		f.Add("PUT", "/connector-plugins/mysql/config/validate", s)
	}
	f.Add("GET", "/connectors/a/tasks/0/status", "")
	f.Add("GET", "/connectors?expand=status&expand=info", "")
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body))
		if err != nil {
			return // not a request a client can send
		}
		fc := newFake()
		fc.configs["a"], fc.version["a"] = json.RawMessage(`{"source":{}}`), 1
		rec := httptest.NewRecorder()
		NewHandler(fc, "").ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q %q: %d %s", method, path, body, rec.Code, rec.Body.String())
		}
	})
}

// TestStatusExtra: Extra's members join the status body; the status' own
// fields win a clash; a null or absent Extra changes nothing.
func TestStatusExtra(t *testing.T) {
	st := ConnectorStatus{Name: "p", Connector: ConnectorState{State: "RUNNING"}, Type: "source", Extra: json.RawMessage(`{"records_read": 3, "name": "other"}`)}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"records_read":3`)) || !bytes.Contains(b, []byte(`"name":"p"`)) || bytes.Contains(b, []byte("other")) {
		t.Fatalf("merged: %s", b)
	}
	for _, extra := range []json.RawMessage{nil, json.RawMessage("null")} {
		st.Extra = extra
		if b, err := json.Marshal(st); err != nil || !bytes.HasPrefix(b, []byte(`{"name":"p","connector"`)) {
			t.Fatalf("extra %q: %s %v", extra, b, err)
		}
	}
	st.Extra = json.RawMessage(`[1]`)
	if _, err := json.Marshal(st); err == nil {
		t.Fatal("a non-object Extra was accepted")
	}
}

func call(t *testing.T, srv *httptest.Server, req *http.Request) (int, string) {
	t.Helper()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestTokenAndLoopbackRule(t *testing.T) {
	f := newFake()
	srv := httptest.NewServer(NewHandler(f, "s3cret"))
	defer srv.Close()
	get := func(auth string) int {
		req, _ := http.NewRequest("GET", srv.URL+"/connectors", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		code, _ := call(t, srv, req)
		return code
	}
	for _, c := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer s3cre", 401}, {"Bearer s3cret2", 401}, {"bearer s3cret", 401}, {"s3cret", 401}, {"Bearer s3cret", 200}} {
		if code := get(c.auth); code != c.want {
			t.Errorf("Authorization %q: %d, want %d", c.auth, code, c.want)
		}
	}
	_, _, err := Serve(context.Background(), "0.0.0.0:0", "", NewHandler(f, ""))
	if !errors.Is(err, runtime.ErrConfig) {
		t.Fatalf("non-loopback without token: %v", err)
	}
	if _, _, err := Serve(context.Background(), "no-port", "", NewHandler(f, "")); !errors.Is(err, runtime.ErrConfig) {
		t.Fatalf("address without a port: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr, errc, err := Serve(ctx, "127.0.0.1:0", "", NewHandler(f, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr.String() + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health over loopback: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestLoopbackHostAndOrigin: without a token, a request that a web page
// could send after DNS rebinding (its own name in Host, its origin in
// Origin) is refused; requests addressed to a loopback name pass.
func TestLoopbackHostAndOrigin(t *testing.T) {
	f := newFake()
	srv := httptest.NewServer(NewHandler(f, ""))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	send := func(method, host, origin string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+"/connectors", nil)
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		return call(t, srv, req)
	}
	for _, c := range []struct {
		host, origin string
		want         int
	}{
		{"127.0.0.1:" + port, "", 200},
		{"localhost:" + port, "", 200},
		{"LOCALHOST:" + port, "", 200},
		{"[::1]:" + port, "", 200},
		{"127.0.0.1:" + port, "http://localhost:3000", 200},
		{"127.0.0.1:" + port, "http://127.0.0.1:" + port, 200},
		{"evil.example:" + port, "", 403},
		{"evil.example:" + port, "http://evil.example:" + port, 403},
		{"127.0.0.1.nip.io:" + port, "", 403},
		{"localhost.evil.example:" + port, "", 403},
		{"127.0.0.1:1", "", 403},
		{"127.0.0.1", "", 403},
		{"127.0.0.1:" + port, "http://evil.example", 403},
		{"127.0.0.1:" + port, "null", 403},
		{"localhost:" + port, "file://", 403},
	} {
		code, body := send("GET", c.host, c.origin)
		if code != c.want {
			t.Errorf("Host %q Origin %q: %d %s, want %d", c.host, c.origin, code, body, c.want)
		}
		if code == 403 && (!strings.Contains(body, "SLUICE_REST_TOKEN") || !strings.Contains(body, `"error_code":403`)) {
			t.Errorf("Host %q Origin %q: the refusal does not say what to do: %s", c.host, c.origin, body)
		}
	}
	// A state-changing call from a rebinding page is refused as well.
	if code, _ := send("PUT", "evil.example:"+port, "http://evil.example:"+port); code != 403 {
		t.Errorf("PUT from a foreign origin: %d", code)
	}
	if code, _ := send("POST", "evil.example:"+port, ""); code != 403 {
		t.Errorf("POST from a foreign name: %d", code)
	}
	// With a token the name does not matter: the token is the guard.
	tsrv := httptest.NewServer(NewHandler(f, "s3cret"))
	defer tsrv.Close()
	req, _ := http.NewRequest("GET", tsrv.URL+"/connectors", nil)
	req.Host = "sluice.internal:8083"
	req.Header.Set("Authorization", "Bearer s3cret")
	if code, body := call(t, tsrv, req); code != 200 {
		t.Errorf("with token and another Host: %d %s", code, body)
	}
}

// selfReporting adds a worker's own figures to the fake.
type selfReporting struct{ *fakeCluster }

func (selfReporting) WorkerMetrics() WorkerMetrics {
	return WorkerMetrics{Worker: "w1", TasksHeld: 2, LiveWorkers: 3, FairShare: 2, LeaseRenewals: 40, LeasesLost: 1, HeartbeatAgeSeconds: 0.25}
}

// TestWorkerSelfMetrics: a cluster worker's /metrics has its own figures
// and every worker's alive and tasks, and the whole registry (go_*,
// process_*, sluice_build_info included) passes the client library's lint.
func TestWorkerSelfMetrics(t *testing.T) {
	_, m := do(t, NewHandler(selfReporting{newFake()}, ""), "GET", "/metrics", "")
	for _, want := range []string{
		"# TYPE sluice_worker_tasks_held gauge\nsluice_worker_tasks_held{worker=\"w1\"} 2\n",
		`sluice_worker_live_workers{worker="w1"} 3`, `sluice_worker_fair_share{worker="w1"} 2`,
		"# TYPE sluice_worker_lease_renewals_total counter\nsluice_worker_lease_renewals_total{worker=\"w1\"} 40\n",
		`sluice_worker_leases_lost_total{worker="w1"} 1`, `sluice_worker_lease_renew_failures_total{worker="w1"} 0`,
		`sluice_worker_heartbeat_age_seconds{worker="w1"} 0.25`, `sluice_worker_alive{worker="w1"} 1`, `sluice_worker_alive{worker="w2"} 0`,
		`sluice_worker_tasks{worker="w1"} 1`, `sluice_worker_tasks{worker="w2"} 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}
	if strings.Index(m, `sluice_worker_alive{worker="w1"}`) > strings.Index(m, `sluice_worker_alive{worker="w2"}`) {
		t.Errorf("workers not sorted:\n%s", m)
	}
	problems, err := testutil.GatherAndLint(metricsRegistry(selfReporting{newFake()}))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// hanging is a cluster whose coordinator never answers.
type hanging struct{ *fakeCluster }

func (hanging) Connectors(ctx context.Context) ([]string, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("list connectors: %w", ctx.Err())
}

// TestAPIBoundsClusterCalls: a call into a coordinator that hangs ends
// with 504 after the request timeout.
func TestAPIBoundsClusterCalls(t *testing.T) {
	saved := requestTimeout
	requestTimeout = 50 * time.Millisecond
	defer func() { requestTimeout = saved }()
	if code, body := do(t, NewHandler(hanging{newFake()}, ""), "GET", "/connectors", ""); code != 504 || !strings.Contains(body, "deadline") {
		t.Fatalf("%d %s", code, body)
	}
}

// slowPut is a cluster whose config change takes a while.
type slowPut struct{ *fakeCluster }

func (s slowPut) PutConfig(ctx context.Context, name string, cfg json.RawMessage) (ConnectorInfo, bool, error) {
	select {
	case <-time.After(300 * time.Millisecond):
	case <-ctx.Done():
		return ConnectorInfo{}, false, ctx.Err()
	}
	return s.fakeCluster.PutConfig(ctx, name, cfg)
}

// TestAPIBodyDeadline: a body that does not arrive in time ends the
// request; a handler running past that time after its body arrived is not
// cancelled.
func TestAPIBodyDeadline(t *testing.T) {
	saved := bodyTimeout
	bodyTimeout = 100 * time.Millisecond
	defer func() { bodyTimeout = saved }()
	srv := httptest.NewServer(NewHandler(slowPut{newFake()}, ""))
	defer srv.Close()
	req, _ := http.NewRequest("PUT", srv.URL+"/connectors/a/config", strings.NewReader(`{"source": {}}`))
	if code, body := call(t, srv, req); code != 201 {
		t.Fatalf("slow PUT: %d %s", code, body)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT /connectors/a/config HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\n{", strings.TrimPrefix(srv.URL, "http://"))
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(conn)
	if !strings.Contains(string(b), " 400 ") {
		t.Fatalf("a body that never arrives: %q", b)
	}
}

// taskRestarting is a Cluster that restarts single tasks.
type taskRestarting struct {
	*fakeCluster
	tasks []int
}

func (c *taskRestarting) RestartTask(_ context.Context, name string, task int) error {
	c.tasks = append(c.tasks, task)
	return nil
}

// TestAPIRootAndTaskRestart: GET / answers the version as Kafka Connect's
// root does; POST /connectors/{name}/tasks/{id}/restart (Kafka Connect's
// call to restart one task) restarts that task, or the connector's tasks
// with a Cluster that restarts connectors as a whole, and answers 404 for
// a task or connector that does not exist.
func TestAPIRootAndTaskRestart(t *testing.T) {
	f := newFake()
	h := NewHandler(f, "")
	code, out := do(t, h, "GET", "/", "")
	var v BuildInfo
	if err := json.Unmarshal([]byte(out), &v); code != 200 || err != nil || v.Version == "" {
		t.Fatalf("GET /: %d %s (%v), want 200 and the version", code, out, err)
	}
	if code, out := do(t, h, "DELETE", "/", ""); code != 405 || !strings.Contains(out, `"error_code":405`) {
		t.Fatalf("DELETE /: %d %s, want 405", code, out)
	}
	if code, out := do(t, h, "POST", "/connectors", `{"name": "a", "config": {"source": {}}}`); code != 201 {
		t.Fatalf("create: %d %s", code, out)
	}
	for _, c := range []struct {
		method, path string
		code         int
		contains     string
	}{
		{"POST", "/connectors/a/tasks/1/restart", 204, ""},
		{"POST", "/connectors/a/tasks/7/restart", 404, "no task 7"},
		{"POST", "/connectors/a/tasks/x/restart", 400, "not a number"},
		{"POST", "/connectors/nope/tasks/0/restart", 404, "no such connector"},
		{"GET", "/connectors/a/tasks/0/restart", 405, "allowed: POST"},
	} {
		code, out := do(t, h, c.method, c.path, "")
		if code != c.code || !strings.Contains(out, c.contains) {
			t.Errorf("%s %s: %d %s, want %d with %q", c.method, c.path, code, out, c.code, c.contains)
		}
	}
	if f.restarts != 1 {
		t.Errorf("task restarts on a Cluster without TaskRestarter: %d connector restarts, want 1", f.restarts)
	}
	tr := &taskRestarting{fakeCluster: f}
	h = NewHandler(tr, "")
	if code, out := do(t, h, "POST", "/connectors/a/tasks/1/restart", ""); code != 204 {
		t.Fatalf("restart task 1: %d %s", code, out)
	}
	if len(tr.tasks) != 1 || tr.tasks[0] != 1 || f.restarts != 1 {
		t.Errorf("RestartTask calls %v, connector restarts %d: want task 1 alone", tr.tasks, f.restarts)
	}
}

// asyncRestarts is a Cluster whose Restart is only recorded: the tasks
// stay as they were until a holder acts on it.
type asyncRestarts struct{ *fakeCluster }

func (a asyncRestarts) Restart(ctx context.Context, name string) error {
	if _, err := a.Connector(ctx, name); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.restarts++
	return nil
}
func (asyncRestarts) RestartsAsync() {}

// TestRestartAnswerShowsRestarting: a cluster records a restart for the
// holders to act on; the 202 answer of ?includeTasks=true (and of
// onlyFailed=true when something FAILED) shows the tasks it restarts as
// RESTARTING, as Kafka Connect does, not the FAILED state read before any
// holder noticed; a paused connector's tasks, which do not restart, stay
// PAUSED, and onlyFailed with nothing failed restarts nothing.
func TestRestartAnswerShowsRestarting(t *testing.T) {
	f := newFake()
	h := NewHandler(asyncRestarts{f}, "")
	if code, out := do(t, h, "POST", "/connectors", `{"name": "a", "config": {"source": {}}}`); code != 201 {
		t.Fatalf("create: %d %s", code, out)
	}
	f.failed["a"] = true
	code, out := do(t, h, "POST", "/connectors/a/restart?includeTasks=true&onlyFailed=true", "")
	var st ConnectorStatus
	if err := json.Unmarshal([]byte(out), &st); code != 202 || err != nil || len(st.Tasks) != 2 {
		t.Fatalf("restart: %d %s (%v)", code, out, err)
	}
	for _, ts := range st.Tasks {
		if ts.State != "RESTARTING" || ts.Trace != "" {
			t.Errorf("task %d in the restart's answer: %s %q, want RESTARTING", ts.ID, ts.State, ts.Trace)
		}
	}
	if st.Connector.State != "RESTARTING" || f.restarts != 1 {
		t.Errorf("connector %s after %d restarts, want RESTARTING after 1", st.Connector.State, f.restarts)
	}
	// The status itself is the cluster's: the holder has not acted yet.
	if _, out := do(t, h, "GET", "/connectors/a/status", ""); !strings.Contains(out, `"state":"FAILED"`) {
		t.Errorf("status after the recorded restart: %s", out)
	}
	f.failed["a"] = false
	if _, out := do(t, h, "POST", "/connectors/a/restart?onlyFailed=true", ""); strings.Contains(out, "RESTARTING") || f.restarts != 1 {
		t.Errorf("onlyFailed with nothing failed: %s after %d restarts", out, f.restarts)
	}
	if code, _ := do(t, h, "PUT", "/connectors/a/pause", ""); code != 202 {
		t.Fatal("pause")
	}
	if _, out := do(t, h, "POST", "/connectors/a/restart?includeTasks=true", ""); strings.Contains(out, "RESTARTING") || !strings.Contains(out, `"state":"PAUSED"`) {
		t.Errorf("restart of a paused connector: %s", out)
	}
}

// offsetting is a Cluster with Offsets: one saved position per connector.
type offsetting struct {
	*fakeCluster
	pos map[string]string
}

func (o *offsetting) Offset(_ context.Context, name string) (string, error) { return o.pos[name], nil }
func (o *offsetting) SetOffset(_ context.Context, name, position string) error {
	o.pos[name] = position
	return nil
}

// TestOffsetsKafkaConnectShape: GET, PATCH and DELETE .../offsets speak
// Kafka Connect's {"offsets": [{"partition": ..., "offset": ...}]}; what GET
// answers can be sent back as it is; the older {"position": "..."} body is
// still taken, with a Warning header.
func TestOffsetsKafkaConnectShape(t *testing.T) {
	pos := `{"v":1,"flavor":"mariadb","gtid":"0-1-42","file":"mariadb-bin.000001","pos":1234,"epoch":1796195540407670307}`
	o := &offsetting{fakeCluster: newFake(), pos: map[string]string{"a": pos}}
	h := NewHandler(o, "")
	code, out := do(t, h, "GET", "/connectors/a/offsets", "")
	var got ConnectorOffsets
	if err := json.Unmarshal([]byte(out), &got); code != 200 || err != nil {
		t.Fatalf("GET offsets: %d %s (%v)", code, out, err)
	}
	if len(got.Offsets) != 1 || got.Offsets[0].Partition["server"] != "a" || string(got.Offsets[0].Offset) != pos {
		t.Fatalf("GET offsets: %s, want one partition {\"server\":\"a\"} with the position as its offset", out)
	}
	if !strings.HasPrefix(out, `{"offsets":[{"partition":{"server":"a"},"offset":{"v":1,`) {
		t.Errorf("GET offsets: %s, not Kafka Connect's shape", out)
	}

	// What GET answered, with the offset changed, is what PATCH takes.
	moved := strings.Replace(out, `"pos":1234`, `"pos":4`, 1)
	code, out = do(t, h, "PATCH", "/connectors/a/offsets", moved)
	if code != 200 || !strings.Contains(out, `"message":"The offsets for this connector have been altered successfully"`) {
		t.Fatalf("PATCH offsets: %d %s", code, out)
	}
	if want := strings.Replace(pos, `"pos":1234`, `"pos":4`, 1); o.pos["a"] != want {
		t.Fatalf("PATCH stored %s, want %s", o.pos["a"], want)
	}

	// The older body, for one release, with a Warning header and a WARN
	// line in the log.
	logs := logToBuffer(t)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("PATCH", "http://127.0.0.1/connectors/a/offsets", strings.NewReader(`{"position": "`+strings.ReplaceAll(pos, `"`, `\"`)+`"}`)))
	if rec.Code != 200 || o.pos["a"] != pos || !strings.Contains(rec.Header().Get("Warning"), "deprecated") {
		t.Fatalf("PATCH with {\"position\"}: %d %s, stored %s, Warning %q", rec.Code, rec.Body, o.pos["a"], rec.Header().Get("Warning"))
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "is deprecated") || !strings.Contains(l, "connector=a") {
		t.Fatalf("PATCH with {\"position\"} logged %q, want a WARN line naming the connector", l)
	}

	for _, bad := range []string{`{"offsets": []}`, `{"offsets": [{"partition": {}, "offset": 5}]}`, `{"offsets": [{"offset": {}}, {"offset": {}}]}`, `[]`} {
		if code, out := do(t, h, "PATCH", "/connectors/a/offsets", bad); code != 400 || !strings.Contains(out, `GET .../offsets answers`) {
			t.Errorf("PATCH %s: %d %s, want 400 naming the form", bad, code, out)
		}
	}

	code, out = do(t, h, "DELETE", "/connectors/a/offsets", "")
	if code != 200 || o.pos["a"] != "" || !strings.Contains(out, "reset successfully") {
		t.Fatalf("DELETE offsets: %d %s, stored %q", code, out, o.pos["a"])
	}
	if code, out := do(t, h, "GET", "/connectors/a/offsets", ""); code != 200 || strings.TrimSpace(out) != `{"offsets":[]}` {
		t.Errorf("GET offsets with none saved: %d %s, want {\"offsets\":[]}", code, out)
	}
}

// TestAdminLoggers: Kafka Connect's /admin/loggers over the process's
// level: GET lists root, PUT changes what the logger writes at once.
func TestAdminLoggers(t *testing.T) {
	lv := new(slog.LevelVar)
	var out strings.Builder
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: lv}))
	h := NewHandler(newFake(), "", WithLogLevel(lv))
	if code, body := do(t, h, "GET", "/admin/loggers", ""); code != 200 || strings.TrimSpace(body) != `{"root":{"level":"INFO","last_modified":null}}` {
		t.Fatalf("GET /admin/loggers: %d %s", code, body)
	}
	log.Debug("before")
	code, body := do(t, h, "PUT", "/admin/loggers/root", `{"level": "debug"}`)
	if code != 200 || strings.TrimSpace(body) != `["root"]` {
		t.Fatalf("PUT root DEBUG: %d %s", code, body)
	}
	log.Debug("after")
	if strings.Contains(out.String(), "before") || !strings.Contains(out.String(), "after") {
		t.Fatalf("the level did not follow the PUT: %q", out.String())
	}
	if code, body := do(t, h, "GET", "/admin/loggers/root", ""); code != 200 || !strings.Contains(body, `"level":"DEBUG","last_modified":1`) {
		t.Fatalf("GET root: %d %s", code, body)
	}
	for _, c := range []struct {
		method, path, body string
		code               int
		contains           string
	}{
		{"PUT", "/admin/loggers/root", `{"level": "LOUD"}`, 400, "TRACE|DEBUG"},
		{"PUT", "/admin/loggers/root?scope=cluster", `{"level": "INFO"}`, 400, "scope=worker"},
		{"PUT", "/admin/loggers/org.apache.kafka", `{"level": "INFO"}`, 404, `sluice has one, \"root\"`},
		{"GET", "/admin/loggers/org.apache.kafka", "", 404, "no logger"},
	} {
		if code, body := do(t, h, c.method, c.path, c.body); code != c.code || !strings.Contains(body, c.contains) {
			t.Errorf("%s %s %s: %d %s, want %d with %q", c.method, c.path, c.body, code, body, c.code, c.contains)
		}
	}
	if code, _ := do(t, h, "PUT", "/admin/loggers/root", `{"level": "OFF"}`); code != 200 || lv.Level() <= slog.LevelError {
		t.Errorf("OFF: %d, level %v", code, lv.Level())
	}
	if code, body := do(t, NewHandler(newFake(), ""), "GET", "/admin/loggers", ""); code != 404 {
		t.Errorf("without WithLogLevel: %d %s, want 404", code, body)
	}
}

// GET / answers the version and commit set at link time when a build sets
// them (go build -ldflags "-X …/admin.BuildVersion=… -X …/admin.BuildCommit=…"),
// over Go's build information.
func TestAPIRootLinkTimeVersion(t *testing.T) {
	BuildVersion, BuildCommit = "v1.2.3", "feedbeef"
	t.Cleanup(func() { BuildVersion, BuildCommit = "", "" })
	code, out := do(t, NewHandler(newFake(), ""), "GET", "/", "")
	var v BuildInfo
	if err := json.Unmarshal([]byte(out), &v); code != 200 || err != nil || v != (BuildInfo{Version: "v1.2.3", Commit: "feedbeef"}) {
		t.Errorf("GET /: %d %s (%v), want v1.2.3 and feedbeef", code, out, err)
	}
}

// TestMetricsDocumented: every metric /metrics can serve, of a pipeline, a
// task, a cluster worker and the process, is in docs/operations.md.
func TestMetricsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 100)
	go func() {
		engine.NewCollector(func() ([]*engine.Pipeline, []string) { return nil, nil }, true).Describe(ch)
		newWorkerCollector(newFake(), selfReporting{}).Describe(ch)
		close(ch)
	}()
	names := []string{"sluice_build_info"}
	fq := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		names = append(names, m[1])
	}
	if len(names) < 30 {
		t.Fatalf("only %d metrics described: %v", len(names), names)
	}
	// Each row under a header naming the peers' columns (Debezium where it
	// has the figure, always Kafka Connect), each of them filled ("—" for
	// none).
	rows, header := map[string][]string{}, []string(nil)
	cells := func(l string) []string {
		c := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
		for i := range c {
			c[i] = strings.TrimSpace(c[i])
		}
		return c
	}
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "| metric |") {
			if header = cells(l); !slices.Contains(header, "Kafka Connect") {
				t.Errorf("docs/operations.md: a metric table without a Kafka Connect column: %s", l)
			}
		} else if strings.HasPrefix(l, "| `") && header != nil {
			c := cells(l)
			rows[strings.Trim(c[0], "`")] = c
			if len(c) != len(header) {
				t.Errorf("docs/operations.md: row %s has %d cells, its header %d", c[0], len(c), len(header))
				continue
			}
			for i, h := range header {
				if (strings.HasPrefix(h, "Debezium") || h == "Kafka Connect") && c[i] == "" {
					t.Errorf("docs/operations.md: row %s has no %s name (write — for none)", c[0], h)
				}
			}
		} else if !strings.HasPrefix(l, "|") {
			header = nil
		}
	}
	for _, n := range names {
		if rows[n] == nil {
			t.Errorf("docs/operations.md has no row for %s under a metric table's header", n)
		}
	}
}

// logToBuffer makes the default logger write text to the buffer it
// returns until the test ends.
func logToBuffer(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &buf
}

// TestLifecycleLogged: each lifecycle call through REST logs one INFO line
// naming the action, the connector and who asked; a failed one says why.
func TestLifecycleLogged(t *testing.T) {
	buf := logToBuffer(t)
	f := newFake()
	h := NewHandler(f, "")
	if code, body := do(t, h, "POST", "/connectors", `{"name": "c", "config": {"source": {}}}`); code != 201 {
		t.Fatalf("create: %d %s", code, body)
	}
	buf.Reset()
	for _, c := range []struct{ method, path, line string }{
		{"PUT", "/connectors/c/pause", "connector pause through REST"},
		{"PUT", "/connectors/c/resume", "connector resume through REST"},
		{"POST", "/connectors/c/restart", "connector restart through REST"},
		{"POST", "/connectors/c/tasks/0/restart", "connector restart of task 0 through REST"},
		{"PUT", "/connectors/nope/pause", "connector pause through REST failed"},
	} {
		do(t, h, c.method, c.path, "")
		out := buf.String()
		buf.Reset()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], `msg="`+c.line+`"`) ||
			!strings.Contains(lines[0], "remote=192.0.2.1:1234") || !strings.Contains(lines[0], "connector=") {
			t.Errorf("%s %s logged %q, want one INFO line %q with the connector and remote=192.0.2.1:1234", c.method, c.path, out, c.line)
		}
		if strings.HasSuffix(c.line, "failed") && !strings.Contains(out, "err=") {
			t.Errorf("%s %s: a failed call's line lacks its error: %s", c.method, c.path, out)
		}
	}
}

// signalingCluster records the signals POST .../signals hands on.
type signalingCluster struct {
	*fakeCluster
	got []string
}

func (s *signalingCluster) Signal(_ context.Context, name, id, typ, data string) (string, error) {
	if typ == "bad" {
		return "", fmt.Errorf("refused: %w", ErrInvalid)
	}
	s.got = append(s.got, name+"|"+id+"|"+typ+"|"+data)
	return "id-1", nil
}

// TestAPISignals: the body's data reaches the cluster as the text the
// signal table's data column would hold, from an object or from a string;
// a body without a type, or with data of another kind, is 400; a cluster
// without signals answers 405.
func TestAPISignals(t *testing.T) {
	sc := &signalingCluster{fakeCluster: newFake()}
	h := NewHandler(sc, "")
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"type": "execute-snapshot", "data": {"data-collections": ["d.t"]}}`, 202},
		{`{"id": "x", "type": "stop-snapshot", "data": "{\"data-collections\": [\"d.t\"]}"}`, 202},
		{`{"type": "pause-snapshot"}`, 202},
		{`{"type": "resume-snapshot", "data": null}`, 202},
		{`{"data": {}}`, 400},
		{`{"type": "execute-snapshot", "data": [1]}`, 400},
		{`{"type": "bad"}`, 400},
	} {
		if code, body := do(t, h, "POST", "/connectors/a/signals", c.body); code != c.code || code == 202 && !strings.Contains(body, `"id-1"`) {
			t.Errorf("POST %s: %d %s, want %d", c.body, code, body, c.code)
		}
	}
	want := []string{`a||execute-snapshot|{"data-collections": ["d.t"]}`, `a|x|stop-snapshot|{"data-collections": ["d.t"]}`, "a||pause-snapshot|", "a||resume-snapshot|"}
	if !slices.Equal(sc.got, want) {
		t.Fatalf("signals handed on:\n%q\nwant\n%q", sc.got, want)
	}
	if code, _ := do(t, NewHandler(newFake(), ""), "POST", "/connectors/a/signals", `{"type": "pause-snapshot"}`); code != http.StatusMethodNotAllowed {
		t.Fatalf("a cluster without signals: %d, want 405", code)
	}
}

// groupingCluster answers GET and POST .../groups.
type groupingCluster struct {
	*fakeCluster
	applied []string
}

func (g *groupingCluster) Groups(_ context.Context, name string, apply bool) (any, error) {
	if name == "binlog" {
		return nil, fmt.Errorf("no groups: %w", ErrInvalid)
	}
	if apply {
		g.applied = append(g.applied, name)
	}
	return []map[string]any{{"group": "g1", "applied": len(g.applied)}}, nil
}

// TestAPIGroups: GET .../groups reports and POST .../groups/failover
// applies (only it); a source without groups is 400, a cluster without the
// capability 405.
func TestAPIGroups(t *testing.T) {
	gc := &groupingCluster{fakeCluster: newFake()}
	h := NewHandler(gc, "")
	if code, body := do(t, h, "GET", "/connectors/r/groups", ""); code != 200 || body != `{"groups":[{"applied":0,"group":"g1"}]}`+"\n" || len(gc.applied) != 0 {
		t.Fatalf("GET: %d %q (applied %v)", code, body, gc.applied)
	}
	if code, body := do(t, h, "POST", "/connectors/r/groups/failover", ""); code != 200 || !strings.Contains(body, `"applied":1`) || !slices.Equal(gc.applied, []string{"r"}) {
		t.Fatalf("POST failover: %d %q (applied %v)", code, body, gc.applied)
	}
	if code, _ := do(t, h, "GET", "/connectors/binlog/groups", ""); code != http.StatusBadRequest {
		t.Fatalf("a source without groups: %d, want 400", code)
	}
	if code, _ := do(t, NewHandler(newFake(), ""), "GET", "/connectors/r/groups", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("a cluster without groups: %d, want 405", code)
	}
	if code, _ := do(t, h, "POST", "/connectors/r/groups/switchover", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("a cluster without switchover: %d, want 405", code)
	}
}

// TestSwitchoverErrors: a switchover's refusal (a config error: a
// consumer online on the source, a bad group name) is 400, a timeout 504,
// a source without groups 400, a stopped pipeline 409.
func TestSwitchoverErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("group g has consumers online on the source: %w", runtime.ErrConfig), http.StatusBadRequest},
		{fmt.Errorf("not drained: %w", context.DeadlineExceeded), http.StatusGatewayTimeout},
		{fmt.Errorf("p: %w", engine.ErrNoGroups), http.StatusBadRequest},
		{fmt.Errorf("p: %w", engine.ErrNotRunning), http.StatusConflict},
	} {
		if got := statusOf(switchoverError(c.err)); got != c.want {
			t.Errorf("%v: %d, want %d", c.err, got, c.want)
		}
	}
}

// switchingCluster answers POST .../groups/switchover.
type switchingCluster struct {
	*groupingCluster
	groups  []string
	timeout time.Duration
}

func (s *switchingCluster) Switchover(_ context.Context, name string, groups []string, timeout time.Duration) (any, error) {
	s.groups, s.timeout = groups, timeout
	if timeout < time.Second {
		return nil, fmt.Errorf("not drained: %w", context.DeadlineExceeded)
	}
	return map[string]any{"drained": true}, nil
}

// TestAPISwitchover: POST .../groups/switchover hands on the groups and the
// timeout (default DefaultSwitchoverTimeout); a timeout that passed is
// 504, a bad one 400.
func TestAPISwitchover(t *testing.T) {
	sc := &switchingCluster{groupingCluster: &groupingCluster{fakeCluster: newFake()}}
	h := NewHandler(sc, "")
	if code, body := do(t, h, "POST", "/connectors/r/groups/switchover?group=a&group=b", ""); code != 200 || body != `{"drained":true}`+"\n" ||
		!slices.Equal(sc.groups, []string{"a", "b"}) || sc.timeout != DefaultSwitchoverTimeout {
		t.Fatalf("POST: %d %q (groups %v, timeout %v)", code, body, sc.groups, sc.timeout)
	}
	if code, _ := do(t, h, "POST", "/connectors/r/groups/switchover?timeout=10ms", ""); code != http.StatusGatewayTimeout || sc.groups != nil {
		t.Fatalf("POST with a short timeout: %d (groups %v), want 504", code, sc.groups)
	}
	if code, _ := do(t, h, "POST", "/connectors/r/groups/switchover?timeout=soon", ""); code != http.StatusBadRequest {
		t.Fatalf("POST with a bad timeout: %d, want 400", code)
	}
}
