package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func fakeFactory(store *memStore, snk *fakeSink) Factory {
	return func(context.Context) (*Pipeline, error) {
		e := NewEmbedded(2, 4)
		return &Pipeline{Name: "p", Source: &fakeSource{n: 300, k: 7}, Publisher: e.Publisher(), Subscriber: e.Subscriber(16), Sink: snk, Positions: store}, nil
	}
}

func call(t *testing.T, srv *httptest.Server, method, path, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return send(t, srv, req)
}

func send(t *testing.T, srv *httptest.Server, req *http.Request) (int, string) {
	t.Helper()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func statusOf(t *testing.T, srv *httptest.Server) TaskStatus {
	t.Helper()
	code, body := call(t, srv, "GET", "/connectors/p/status", "")
	if code != 200 {
		t.Fatalf("status: %d %s", code, body)
	}
	var st TaskStatus
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestRESTLifecycle(t *testing.T) {
	store := &memStore{pos: map[string][]byte{}}
	snk := &fakeSink{seen: map[int64][]int64{}}
	w := NewWorker(nil)
	w.Add("p", store, fakeFactory(store, snk))
	srv := httptest.NewServer(NewRESTHandler(w, ""))
	defer srv.Close()
	if err := w.Start(context.Background(), "p"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for snk.count() < 300 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := statusOf(t, srv); st.State != StateRunning || st.RecordsApplied != 300 {
		t.Fatalf("status %+v", st)
	}
	if code, _ := call(t, srv, "PUT", "/connectors/p/pause", ""); code != 204 {
		t.Fatalf("pause: %d", code)
	}
	if st := statusOf(t, srv); st.State != StatePaused {
		t.Fatalf("after pause: %+v", st)
	}
	call(t, srv, "PUT", "/connectors/p/resume", "")
	if st := statusOf(t, srv); st.State != StateRunning {
		t.Fatalf("after resume: %+v", st)
	}
	_, metrics := call(t, srv, "GET", "/metrics", "")
	for _, want := range []string{`sluice_source_progress{pipeline="p",name="rows"} 300`, `sluice_records_in_total{pipeline="p",table="d.t"} 300`, `sluice_records_out_total{pipeline="p",table="d.t"} 300`, `sluice_apply_seconds_count{pipeline="p"}`} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("metrics lack %q:\n%s", want, metrics)
		}
	}
	if code, body := call(t, srv, "DELETE", "/connectors/p/offsets", ""); code != 409 || !strings.Contains(body, "stop it") {
		t.Fatalf("reset while running: %d %s", code, body)
	}
	if code, _ := call(t, srv, "PUT", "/connectors/p/stop", ""); code != 204 {
		t.Fatalf("stop: %d", code)
	}
	if st := statusOf(t, srv); st.State != StateStopped {
		t.Fatalf("after stop: %+v", st)
	}
	if code, body := call(t, srv, "GET", "/connectors/p/offsets", ""); code != 200 || !strings.Contains(body, `"tx-100"`) {
		t.Fatalf("offsets: %d %s", code, body)
	}
	if code, _ := call(t, srv, "GET", "/connectors/nope/status", ""); code != 404 {
		t.Fatalf("unknown pipeline: %d", code)
	}
	if code, _ := call(t, srv, "GET", "/health", ""); code != 200 {
		t.Fatalf("health: %d", code)
	}
}

func TestRESTTokenAndLoopbackRule(t *testing.T) {
	w := NewWorker(nil)
	srv := httptest.NewServer(NewRESTHandler(w, "s3cret"))
	defer srv.Close()
	if code, _ := call(t, srv, "GET", "/connectors", ""); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := call(t, srv, "GET", "/connectors", "s3cret"); code != 200 {
		t.Fatalf("with token: %d", code)
	}
	_, _, err := ServeREST(context.Background(), RESTConfig{Addr: "0.0.0.0:0"}, w)
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("non-loopback without token: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr, errc, err := ServeREST(ctx, RESTConfig{Addr: "127.0.0.1:0"}, w)
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

// TestRESTLoopbackHostAndOrigin: without a token, a request that a web page
// could send after DNS rebinding (its own name in Host, its origin in
// Origin) is refused; requests addressed to a loopback name pass.
func TestRESTLoopbackHostAndOrigin(t *testing.T) {
	w := NewWorker(nil)
	srv := httptest.NewServer(NewRESTHandler(w, ""))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	do := func(method, host, origin string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+"/connectors", nil)
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		return send(t, srv, req)
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
		code, body := do("GET", c.host, c.origin)
		if code != c.want {
			t.Errorf("Host %q Origin %q: %d %s, want %d", c.host, c.origin, code, body, c.want)
		}
		if code == 403 && !strings.Contains(body, "SLUICE_REST_TOKEN") {
			t.Errorf("Host %q Origin %q: the refusal does not say what to do: %s", c.host, c.origin, body)
		}
	}
	// A state-changing call from a rebinding page is refused as well.
	if code, _ := do("PUT", "evil.example:"+port, "http://evil.example:"+port); code != 403 {
		t.Errorf("PUT from a foreign origin: %d", code)
	}
	// With a token the name does not matter: the token is the guard.
	tsrv := httptest.NewServer(NewRESTHandler(w, "s3cret"))
	defer tsrv.Close()
	req, _ := http.NewRequest("GET", tsrv.URL+"/connectors", nil)
	req.Host = "sluice.internal:8083"
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := tsrv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("with token and another Host: %d", resp.StatusCode)
	}
}
