package engine_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/engine"
)

func call(t *testing.T, srv *httptest.Server, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func statusOf(t *testing.T, srv *httptest.Server) engine.TaskStatus {
	t.Helper()
	code, body := call(t, srv, "GET", "/connectors/p/status", "")
	if code != 200 {
		t.Fatalf("status: %d %s", code, body)
	}
	var st engine.TaskStatus
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRESTLifecycle drives a Worker's pipeline through the REST API of
// `sluice run` (admin.Local): status in Kafka Connect's shape with the
// pipeline's own fields at the top level, pause, resume, stop, offsets,
// restart, metrics and health; the cluster's calls answer 405.
func TestRESTLifecycle(t *testing.T) {
	f, store, applied := engine.NewFakePipeline()
	w := engine.NewWorker(nil)
	w.Add("p", store, f)
	srv := httptest.NewServer(admin.NewHandler(&admin.Local{W: w, WorkerID: "127.0.0.1:8083"}, ""))
	defer srv.Close()
	if err := w.Start(context.Background(), "p"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for applied() < 300 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := statusOf(t, srv); st.State != engine.StateRunning || st.RecordsApplied != 300 {
		t.Fatalf("status %+v", st)
	}
	_, body := call(t, srv, "GET", "/connectors/p/status", "")
	var kc admin.ConnectorStatus
	if err := json.Unmarshal([]byte(body), &kc); err != nil {
		t.Fatal(err)
	}
	if kc.Name != "p" || kc.Connector.State != "RUNNING" || kc.Connector.WorkerID != "127.0.0.1:8083" || len(kc.Tasks) != 1 ||
		kc.Tasks[0].State != "RUNNING" || kc.Tasks[0].ID != 0 || kc.Type != "source_sink" {
		t.Fatalf("Kafka Connect status shape: %s", body)
	}
	for _, field := range []string{`"records_read":300`, `"lag_seconds":`, `"in_flight":`} {
		if !strings.Contains(body, field) {
			t.Errorf("status lacks %s: %s", field, body)
		}
	}
	if code, body := call(t, srv, "GET", "/connectors", ""); code != 200 || strings.TrimSpace(body) != `["p"]` {
		t.Fatalf("connectors: %d %s", code, body)
	}
	if code, body := call(t, srv, "GET", "/connectors?expand=status&expand=info", ""); code != 200 ||
		!strings.Contains(body, `"p":{"info":{"name":"p"`) || !strings.Contains(body, `"status":{`) {
		t.Fatalf("expand: %d %s", code, body)
	}
	if code, body := call(t, srv, "GET", "/connectors/p/tasks/0/status", ""); code != 200 || !strings.Contains(body, `"state":"RUNNING"`) {
		t.Fatalf("task status: %d %s", code, body)
	}
	if code, _ := call(t, srv, "PUT", "/connectors/p/pause", ""); code != 202 {
		t.Fatalf("pause: %d", code)
	}
	if st := statusOf(t, srv); st.State != engine.StatePaused {
		t.Fatalf("after pause: %+v", st)
	}
	if code, _ := call(t, srv, "PUT", "/connectors/p/resume", ""); code != 202 {
		t.Fatalf("resume: %d", code)
	}
	if st := statusOf(t, srv); st.State != engine.StateRunning {
		t.Fatalf("after resume: %+v", st)
	}
	_, metrics := call(t, srv, "GET", "/metrics", "")
	for _, want := range []string{`sluice_snapshot_rows{pipeline="p"} 300`, `sluice_records_in_total{op="u",pipeline="p",table="d.t"} 300`,
		`sluice_records_out_total{op="u",pipeline="p",table="d.t"} 300`, `sluice_apply_seconds_count{pipeline="p"}`,
		"\nsluice_build_info{commit=", "\ngo_goroutines ", "\nprocess_cpu_seconds_total "} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("metrics lack %q:\n%s", want, metrics)
		}
	}
	// sluice run is one process, not a cluster of workers.
	if strings.Contains(metrics, "sluice_worker_") {
		t.Fatalf("sluice run's metrics have worker series:\n%s", metrics)
	}
	if code, body := call(t, srv, "DELETE", "/connectors/p/offsets", ""); code != 409 || !strings.Contains(body, "stop it") || !strings.Contains(body, `"error_code":409`) {
		t.Fatalf("reset while running: %d %s", code, body)
	}
	if code, _ := call(t, srv, "PUT", "/connectors/p/stop", ""); code != 202 {
		t.Fatalf("stop: %d", code)
	}
	if st := statusOf(t, srv); st.State != engine.StateStopped {
		t.Fatalf("after stop: %+v", st)
	}
	if code, body := call(t, srv, "GET", "/connectors/p/offsets", ""); code != 200 || !strings.Contains(body, `"tx-100"`) {
		t.Fatalf("offsets: %d %s", code, body)
	}
	if code, body := call(t, srv, "PATCH", "/connectors/p/offsets", `{"offsets": [{"partition": {"server": "p"}, "offset": {"position": "tx-50"}}]}`); code != 200 {
		t.Fatalf("set offsets: %d %s", code, body)
	}
	if code, body := call(t, srv, "GET", "/connectors/p/offsets", ""); code != 200 || !strings.Contains(body, `"tx-50"`) {
		t.Fatalf("offsets after PATCH: %d %s", code, body)
	}
	if code, body := call(t, srv, "PATCH", "/connectors/p/offsets", `{}`); code != 400 {
		t.Fatalf("PATCH without a position: %d %s", code, body)
	}
	if code, _ := call(t, srv, "GET", "/connectors/nope/status", ""); code != 404 {
		t.Fatalf("unknown pipeline: %d", code)
	}
	if code, _ := call(t, srv, "PUT", "/connectors/nope/pause", ""); code != 404 {
		t.Fatalf("pause of an unknown pipeline: %d", code)
	}
	if code, body := call(t, srv, "PUT", "/connectors/p/pause", ""); code != 409 || !strings.Contains(body, "not running") {
		t.Fatalf("pause while stopped: %d %s", code, body)
	}
	if code, _ := call(t, srv, "GET", "/health", ""); code != 200 {
		t.Fatalf("health: %d", code)
	}
	// The cluster's calls: 405, pointing at sluice worker.
	for _, c := range [][3]string{
		{"POST", "/connectors", `{"name": "q", "config": {}}`},
		{"PUT", "/connectors/p/config", `{}`},
		{"DELETE", "/connectors/p", ""},
		{"GET", "/connectors/p/config", ""},
	} {
		if code, body := call(t, srv, c[0], c[1], c[2]); code != 405 || !strings.Contains(body, "sluice") {
			t.Errorf("%s %s: %d %s, want 405", c[0], c[1], code, body)
		}
	}
	// Resume of a STOPPED pipeline runs it again, as Kafka Connect's does
	// (it answered 409 before).
	if code, body := call(t, srv, "PUT", "/connectors/p/resume", ""); code != 202 {
		t.Fatalf("resume while stopped: %d %s", code, body)
	}
	rs := statusOf(t, srv)
	for deadline := time.Now().Add(5 * time.Second); rs.State != engine.StateRunning && time.Now().Before(deadline); rs = statusOf(t, srv) {
		time.Sleep(5 * time.Millisecond)
	}
	if rs.State != engine.StateRunning {
		t.Fatalf("after resume of a stopped pipeline: %+v", rs)
	}
	if code, _ := call(t, srv, "PUT", "/connectors/p/stop", ""); code != 202 {
		t.Fatalf("stop again: %d", code)
	}
	if code, _ := call(t, srv, "POST", "/connectors/p/restart", ""); code != 204 {
		t.Fatalf("restart: %d", code)
	}
	// RUNNING once the rebuilt source is open and its start saved.
	st := statusOf(t, srv)
	for deadline := time.Now().Add(5 * time.Second); st.State != engine.StateRunning && time.Now().Before(deadline); st = statusOf(t, srv) {
		time.Sleep(5 * time.Millisecond)
	}
	if st.State != engine.StateRunning {
		t.Fatalf("after restart: %+v", st)
	}
	_ = w.StopAll(context.Background())
}

// TestTaskMetricsLabels: a worker hosting two tasks of one connector (their
// pipelines share the name) writes each series once per task.
func TestTaskMetricsLabels(t *testing.T) {
	f, _, _ := engine.NewFakePipeline()
	a, _ := f(context.Background())
	b, _ := f(context.Background())
	var sb strings.Builder
	engine.WriteTaskMetrics(&sb, []*engine.Pipeline{a, b}, []string{"p/source", "p/sink-1"})
	seen := map[string]bool{}
	for _, line := range strings.Split(sb.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series, _, _ := strings.Cut(line, " ")
		if seen[series] {
			t.Errorf("series %s twice", series)
		}
		seen[series] = true
	}
	for _, want := range []string{`sluice_up{pipeline="p",task="p/source"}`, `sluice_up{pipeline="p",task="p/sink-1"}`, `sluice_apply_seconds_bucket{pipeline="p",task="p/sink-1",le="+Inf"}`} {
		if !seen[want] {
			t.Errorf("no series %s:\n%s", want, sb.String())
		}
	}
	sb.Reset()
	engine.WritePrometheus(&sb, []*engine.Pipeline{a})
	if !strings.Contains(sb.String(), "sluice_up{pipeline=\"p\"} 0\n") {
		t.Errorf("WritePrometheus lost its labels:\n%s", sb.String())
	}
}

// TestHealthNotReadyWhileRestarting: /health is 503 "restarting" while a
// pipeline that has been RUNNING restarts after losing its server (issue
// 27: readiness is not 200 while a pipeline is not RUNNING); before, it
// stayed 200.
func TestHealthNotReadyWhileRestarting(t *testing.T) {
	f, store := engine.NewLostSourcePipeline()
	w := engine.NewWorker(nil)
	w.RestartBackoff = time.Minute // stays RESTARTING for the test
	w.Add("p", store, f)
	srv := httptest.NewServer(admin.NewHandler(&admin.Local{W: w, WorkerID: "127.0.0.1:8083"}, ""))
	defer srv.Close()
	if err := w.Start(context.Background(), "p"); err != nil {
		t.Fatal(err)
	}
	defer w.StopAll(context.Background())
	st := statusOf(t, srv)
	for deadline := time.Now().Add(10 * time.Second); (st.State != engine.StateRestarting || !w.Ran("p")) && time.Now().Before(deadline); st = statusOf(t, srv) {
		time.Sleep(10 * time.Millisecond)
	}
	if st.State != engine.StateRestarting || !w.Ran("p") {
		t.Fatalf("state %s (ran %v), want RESTARTING after a run", st.State, w.Ran("p"))
	}
	code, body := call(t, srv, "GET", "/health", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"restarting"`) || !strings.Contains(body, "connection refused") {
		t.Fatalf("/health %d %s, want 503 restarting with the last error", code, body)
	}
}
