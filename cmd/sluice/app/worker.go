package app

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
	"os"
	"os/signal"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/cluster"
)

// clusterFile is CLUSTER.yaml, the config of `sluice worker`.
type clusterFile struct {
	Coordinator struct {
		Driver      string `yaml:"driver"` // postgres or mysql
		DSN         string `yaml:"dsn"`    // ${VAR} is expanded
		TablePrefix string `yaml:"table_prefix"`
	} `yaml:"coordinator"`
	ID        string        `yaml:"id"`   // default: host:port of rest
	REST      string        `yaml:"rest"` // the REST API's address, default 127.0.0.1:8083
	TTL       time.Duration `yaml:"ttl"`
	Heartbeat time.Duration `yaml:"heartbeat"`
	Margin    time.Duration `yaml:"margin"`
}

func loadClusterFile(path string) (*clusterFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read cluster config: %w", err)
	}
	var c clusterFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %v (keys: coordinator.driver, coordinator.dsn, coordinator.table_prefix, id, rest, ttl, heartbeat, margin): %w", path, err, runtime.ErrConfig)
	}
	c.Coordinator.DSN = os.ExpandEnv(c.Coordinator.DSN)
	if c.Coordinator.Driver == "" || c.Coordinator.DSN == "" {
		return nil, fmt.Errorf("%s: coordinator.driver (postgres or mysql) and coordinator.dsn are required: %w", path, runtime.ErrConfig)
	}
	if c.REST == "" {
		c.REST = "127.0.0.1:8083"
	}
	return &c, nil
}

// plugins are the connector types this binary registers.
var plugins = []admin.Plugin{{Type: "mysql", Class: "source"}, {Type: "mariadb", Class: "source"},
	{Type: "postgres", Class: "sink"}, {Type: "mysql", Class: "sink"}}

func cmdWorker(args []string, log *slog.Logger) error {
	fs, path, _ := configFlag("worker", args)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *path == "" {
		return fmt.Errorf("--config CLUSTER.yaml is required: %w", runtime.ErrConfig)
	}
	cf, err := loadClusterFile(*path)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	store, err := cluster.Open(ctx, cf.Coordinator.Driver, cf.Coordinator.DSN, cf.Coordinator.TablePrefix)
	if err != nil {
		return err
	}
	defer store.Close()
	token := os.Getenv("SLUICE_REST_TOKEN")
	ln, err := listenREST(cf.REST, token)
	if err != nil {
		return err
	}
	id := cf.ID
	if id == "" {
		id = ln.Addr().String()
	}
	w, err := cluster.NewWorker(store, cluster.Config{ID: id, URL: "http://" + ln.Addr().String(), TTL: cf.TTL, Heartbeat: cf.Heartbeat,
		Margin: cf.Margin, Build: Build, Log: log})
	if err != nil {
		ln.Close()
		return err
	}
	control := &cluster.Control{S: store, TTL: cf.TTL, PluginList: plugins, Check: func(cfg *runtime.Config) error {
		_, err := decodeAll(cfg, "")
		return err
	}}
	srv := &http.Server{Handler: clusterHandler(control, w, token), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("REST API stopped", "err", err)
		}
	}()
	log.Info("REST API listening", "addr", ln.Addr().String(), "worker", id)
	err = w.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return err
}

func listenREST(addr, token string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("rest address %q: %w: %w", addr, err, runtime.ErrConfig)
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && token == "" {
		return nil, fmt.Errorf("rest address %s is not loopback: set SLUICE_REST_TOKEN: %w", addr, runtime.ErrConfig)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rest: %w", err)
	}
	return ln, nil
}

// clusterHandler is the worker's REST API over admin.Cluster.
// TODO(#14): replace with admin.NewHandler once runtime/admin has it; this
// covers what the cluster tests drive.
func clusterHandler(c admin.Cluster, w *cluster.Worker, token string) http.Handler {
	mux := http.NewServeMux()
	reply := func(rw http.ResponseWriter, v any, err error) {
		code := http.StatusOK
		switch {
		case errors.Is(err, admin.ErrNotFound):
			code = http.StatusNotFound
		case errors.Is(err, admin.ErrExists), errors.Is(err, admin.ErrConflict):
			code = http.StatusConflict
		case errors.Is(err, admin.ErrInvalid):
			code = http.StatusBadRequest
		case err != nil:
			code = http.StatusInternalServerError
		}
		rw.Header().Set("Content-Type", "application/json")
		if err != nil {
			rw.WriteHeader(code)
			json.NewEncoder(rw).Encode(map[string]any{"error_code": code, "message": err.Error()})
			return
		}
		if v == nil {
			rw.WriteHeader(http.StatusNoContent)
			return
		}
		json.NewEncoder(rw).Encode(v)
	}
	body := func(r *http.Request) json.RawMessage {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		return b
	}
	mux.HandleFunc("GET /connectors", func(rw http.ResponseWriter, r *http.Request) {
		v, err := c.Connectors(r.Context())
		reply(rw, v, err)
	})
	mux.HandleFunc("POST /connectors", func(rw http.ResponseWriter, r *http.Request) {
		var req struct {
			Name   string          `json:"name"`
			Config json.RawMessage `json:"config"`
		}
		if err := json.Unmarshal(body(r), &req); err != nil || req.Name == "" {
			reply(rw, nil, fmt.Errorf("%w: send {\"name\": ..., \"config\": {...}}", admin.ErrInvalid))
			return
		}
		v, err := c.Create(r.Context(), req.Name, req.Config)
		if err == nil {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusCreated)
			json.NewEncoder(rw).Encode(v)
			return
		}
		reply(rw, v, err)
	})
	mux.HandleFunc("GET /connectors/{name}", func(rw http.ResponseWriter, r *http.Request) {
		v, err := c.Connector(r.Context(), r.PathValue("name"))
		reply(rw, v, err)
	})
	mux.HandleFunc("PUT /connectors/{name}/config", func(rw http.ResponseWriter, r *http.Request) {
		v, _, err := c.PutConfig(r.Context(), r.PathValue("name"), body(r))
		reply(rw, v, err)
	})
	mux.HandleFunc("DELETE /connectors/{name}", func(rw http.ResponseWriter, r *http.Request) {
		reply(rw, nil, c.Delete(r.Context(), r.PathValue("name")))
	})
	mux.HandleFunc("GET /connectors/{name}/status", func(rw http.ResponseWriter, r *http.Request) {
		v, err := c.Status(r.Context(), r.PathValue("name"))
		reply(rw, v, err)
	})
	mux.HandleFunc("PUT /connectors/{name}/pause", func(rw http.ResponseWriter, r *http.Request) {
		reply(rw, nil, c.Pause(r.Context(), r.PathValue("name")))
	})
	mux.HandleFunc("PUT /connectors/{name}/resume", func(rw http.ResponseWriter, r *http.Request) {
		reply(rw, nil, c.Resume(r.Context(), r.PathValue("name")))
	})
	mux.HandleFunc("POST /connectors/{name}/restart", func(rw http.ResponseWriter, r *http.Request) {
		reply(rw, nil, c.Restart(r.Context(), r.PathValue("name")))
	})
	mux.HandleFunc("GET /workers", func(rw http.ResponseWriter, r *http.Request) {
		v, err := c.Workers(r.Context())
		reply(rw, v, err)
	})
	mux.HandleFunc("GET /metrics", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; version=0.0.4")
		cluster.WritePrometheus(rw, w.Metrics())
		runtime.WritePrometheus(rw, w.Pipelines())
	})
	if token == "" {
		return mux
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(rw, r)
	})
}
