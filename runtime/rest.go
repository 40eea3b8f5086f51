package runtime

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// RESTConfig configures the REST API.
type RESTConfig struct {
	Addr  string // default 127.0.0.1:8083
	Token string // required when Addr is not a loopback address
}

// NewRESTHandler returns the API, shaped like Kafka Connect's:
//
//	GET    /connectors                      names
//	GET    /connectors/{name}/status        state, counters, position, lag, last error
//	PUT    /connectors/{name}/pause|resume|stop
//	POST   /connectors/{name}/restart
//	GET    /connectors/{name}/offsets       the saved source position
//	DELETE /connectors/{name}/offsets       reset it (pipeline stopped)
//	PATCH  /connectors/{name}/offsets       set it: {"position": "..."} (pipeline stopped)
//	GET    /metrics                         Prometheus text format
//	GET    /health                          200 while no pipeline has failed
func NewRESTHandler(w *Worker, token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /connectors", func(rw http.ResponseWriter, r *http.Request) {
		writeJSON(rw, http.StatusOK, w.Names())
	})
	mux.HandleFunc("GET /connectors/{name}/status", func(rw http.ResponseWriter, r *http.Request) {
		st, err := w.Status(r.PathValue("name"))
		respond(rw, st, err)
	})
	mux.HandleFunc("PUT /connectors/{name}/pause", func(rw http.ResponseWriter, r *http.Request) {
		respond(rw, nil, w.Pause(r.PathValue("name")))
	})
	mux.HandleFunc("PUT /connectors/{name}/resume", func(rw http.ResponseWriter, r *http.Request) {
		respond(rw, nil, w.Resume(r.PathValue("name")))
	})
	mux.HandleFunc("PUT /connectors/{name}/stop", func(rw http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
		defer cancel()
		respond(rw, nil, w.Stop(ctx, r.PathValue("name")))
	})
	mux.HandleFunc("POST /connectors/{name}/restart", func(rw http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
		defer cancel()
		respond(rw, nil, w.Restart(ctx, r.PathValue("name")))
	})
	mux.HandleFunc("GET /connectors/{name}/offsets", func(rw http.ResponseWriter, r *http.Request) {
		stored, err := w.Position(r.Context(), r.PathValue("name"))
		respond(rw, map[string]any{"position": string(SourcePosition(stored))}, err)
	})
	mux.HandleFunc("DELETE /connectors/{name}/offsets", func(rw http.ResponseWriter, r *http.Request) {
		respond(rw, nil, w.ResetPosition(r.Context(), r.PathValue("name"), nil))
	})
	mux.HandleFunc("PATCH /connectors/{name}/offsets", func(rw http.ResponseWriter, r *http.Request) {
		var body struct {
			Position string `json:"position"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil || body.Position == "" {
			writeJSON(rw, http.StatusBadRequest, map[string]string{"error": `send {"position": "<position text>"}`})
			return
		}
		respond(rw, nil, w.ResetPosition(r.Context(), r.PathValue("name"), []byte(body.Position)))
	})
	mux.HandleFunc("GET /metrics", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; version=0.0.4")
		WritePrometheus(rw, w.Pipelines())
	})
	mux.HandleFunc("GET /health", func(rw http.ResponseWriter, r *http.Request) {
		for _, n := range w.Names() {
			if st, _ := w.Status(n); st.State == StateFailed {
				writeJSON(rw, http.StatusServiceUnavailable, map[string]string{"status": "failed", "pipeline": n, "error": st.LastError})
				return
			}
		}
		writeJSON(rw, http.StatusOK, map[string]string{"status": "ok"})
	})
	if token == "" {
		return loopbackOnly(mux)
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		if subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+token)) != 1 {
			writeJSON(rw, http.StatusUnauthorized, map[string]string{"error": "send Authorization: Bearer <token>"})
			return
		}
		mux.ServeHTTP(rw, r)
	})
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
			writeJSON(rw, http.StatusForbidden, map[string]string{"error": msg +
				": without a token the API answers only requests addressed to 127.0.0.1, localhost or [::1] " +
				"(DNS rebinding guard); set SLUICE_REST_TOKEN to use it by another name"})
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

func respond(rw http.ResponseWriter, v any, err error) {
	switch {
	case errors.Is(err, ErrUnknownPipeline):
		writeJSON(rw, http.StatusNotFound, map[string]string{"error": err.Error()})
	case err != nil:
		writeJSON(rw, http.StatusConflict, map[string]string{"error": err.Error()})
	case v == nil:
		rw.WriteHeader(http.StatusNoContent)
	default:
		writeJSON(rw, http.StatusOK, v)
	}
}

func writeJSON(rw http.ResponseWriter, code int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	_ = json.NewEncoder(rw).Encode(v)
}

// ServeREST serves the API until ctx is done. It refuses to listen on a
// non-loopback address without a token.
func ServeREST(ctx context.Context, cfg RESTConfig, w *Worker) (net.Addr, <-chan error, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8083"
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("rest address %q: %w: %w", cfg.Addr, err, ErrConfig)
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && cfg.Token == "" {
		return nil, nil, fmt.Errorf("rest address %s is not loopback: set a token (SLUICE_REST_TOKEN) to expose the API: %w", cfg.Addr, ErrConfig)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("rest: listen on %s: %w (is another sluice running? choose another --rest address)", cfg.Addr, err)
	}
	srv := &http.Server{Handler: NewRESTHandler(w, cfg.Token), ReadHeaderTimeout: 5 * time.Second}
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
