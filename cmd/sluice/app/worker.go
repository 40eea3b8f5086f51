package app

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicecdc/sluice/binlog"
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
	// MemoryLimit is the Go memory limit of the worker process, for all
	// its tasks (a connector document's own memory_limit is not used: the
	// tasks share one process); as `sluice run`'s memory_limit: unset is
	// DefaultMemoryLimit, "off" none, GOMEMLIMIT in the environment wins.
	MemoryLimit runtime.ByteSize `yaml:"-"`
	MemoryText  string           `yaml:"memory_limit"`
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
		return nil, fmt.Errorf("%s: %v (keys: coordinator.driver, coordinator.dsn, coordinator.table_prefix, id, rest, ttl, heartbeat, margin, memory_limit): %w", path, err, runtime.ErrConfig)
	}
	raw := c.Coordinator.DSN
	c.Coordinator.DSN = os.ExpandEnv(raw)
	if raw != "" && c.Coordinator.DSN == "" {
		return nil, fmt.Errorf("%s: coordinator.dsn %s expands to nothing: set the environment variable it names: %w", path, raw, runtime.ErrConfig)
	}
	if c.Coordinator.Driver == "" || c.Coordinator.DSN == "" {
		return nil, fmt.Errorf("%s: coordinator.driver (postgres or mysql) and coordinator.dsn are required: %w", path, runtime.ErrConfig)
	}
	if c.REST == "" {
		c.REST = "127.0.0.1:8083"
	}
	if c.MemoryText != "" {
		if c.MemoryLimit, err = runtime.ParseByteSize(c.MemoryText); err != nil {
			return nil, fmt.Errorf("%s: memory_limit: %v: %w", path, err, runtime.ErrConfig)
		}
		if c.MemoryLimit == 0 {
			return nil, fmt.Errorf("%s: memory_limit: 0 is no limit: write off for none, or a size such as 200MiB: %w", path, runtime.ErrConfig)
		}
	}
	return &c, nil
}

// plugins are the connector types this binary registers.
// clusterPlugins lists the registry's connector plugins for GET
// /connector-plugins: each by its name and by every section type it serves.
func clusterPlugins() []admin.Plugin {
	var out []admin.Plugin
	for _, p := range Plugins() {
		seen := map[string]bool{}
		for _, t := range append([]string{p.Name}, p.Types...) {
			if !seen[t] {
				seen[t] = true
				out = append(out, admin.Plugin{Type: t, Class: p.Kind})
			}
		}
	}
	return out
}

// validateForCluster answers PUT /connector-plugins/{type}/config/validate
// with the registry's checks, one ConfigValue per key found wrong.
func validateForCluster(pluginType string, config json.RawMessage) (admin.Validation, error) {
	known := false
	for _, p := range clusterPlugins() {
		known = known || p.Type == pluginType
	}
	if !known {
		return admin.Validation{}, fmt.Errorf("connector plugin %q: GET /connector-plugins lists them: %w", pluginType, admin.ErrNotFound)
	}
	errs, err := ValidateConnector(pluginType, config)
	if err != nil {
		return admin.Validation{}, fmt.Errorf("%w: %w", admin.ErrInvalid, err)
	}
	v := admin.Validation{Name: pluginType, Configs: []admin.ConfigValue{}}
	for _, e := range errs {
		v.ErrorCount += len(e.Errors)
		cv := admin.ConfigValue{Name: e.Path, Errors: append([]string{}, e.Errors...)}
		if e.Value != "" {
			cv.Value = e.Value
		}
		v.Configs = append(v.Configs, cv)
	}
	return v, nil
}

// checkForCluster checks a connector's document as a worker will build
// it: decoded as a whole, with the coordinator keeping what history_store:
// database keeps, so that needs no positions section (a cluster ignores it).
func checkForCluster(cfg *runtime.Config) error {
	_, err := decodeTask(cfg, "", true)
	return err
}

// checkPosition checks a position set through PATCH .../offsets: the
// binlog source's, the one source there is.
func checkPosition(position string) error {
	_, err := binlog.ParsePosition([]byte(position))
	return err
}

func cmdWorker(args []string, log *slog.Logger) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	path := fs.String("config", "", "cluster config file (YAML): coordinator, id, rest, ttl, heartbeat, margin, memory_limit")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return fmt.Errorf("--config CLUSTER.yaml is required: %w", runtime.ErrConfig)
	}
	cf, err := loadClusterFile(*path)
	if err != nil {
		return err
	}
	limit := runtime.ApplyMemoryLimit(cf.MemoryLimit, os.Getenv)
	log.Debug("memory limit", "limit", limit.String())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	returned := make(chan struct{})
	defer close(returned) // before stop: a return is not a signal
	go func() {
		select {
		case <-ctx.Done():
		case <-returned:
			return
		}
		select {
		case <-returned:
			return // the worker returned (an error at start): nothing to drain
		default:
		}
		stop() // a second signal ends the process at once, without draining
		log.Info("stopping: draining the tasks, saving their positions and releasing their leases (signal again to exit now)")
	}()
	store, err := cluster.Open(ctx, cf.Coordinator.Driver, cf.Coordinator.DSN, cf.Coordinator.TablePrefix)
	if err != nil {
		return err
	}
	defer store.Close()
	token := os.Getenv("SLUICE_REST_TOKEN")
	control := &cluster.Control{S: store, TTL: cf.TTL, PluginList: clusterPlugins(), Validator: validateForCluster, Check: checkForCluster, Probe: probeForCluster,
		CheckPosition: checkPosition}
	n := &node{Control: control}
	addr, served, err := admin.Serve(ctx, cf.REST, token, admin.NewHandler(n, token))
	if err != nil {
		return err
	}
	id := cf.ID
	if id == "" {
		// host:port, with the host's name: every worker may serve its API
		// on 127.0.0.1:8083, but ids must differ across the cluster.
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		_, port, _ := net.SplitHostPort(addr.String())
		id = net.JoinHostPort(host, port)
	}
	w, err := cluster.NewWorker(store, cluster.Config{ID: id, URL: "http://" + addr.String(), TTL: cf.TTL, Heartbeat: cf.Heartbeat,
		Margin: cf.Margin, Build: buildLeased(store), Log: log})
	if err != nil {
		return err
	}
	n.w.Store(w)
	log.Info("REST API listening", "addr", addr.String(), "worker", id)
	go func() {
		if err := <-served; err != nil {
			log.Error("REST API stopped", "err", err)
		}
	}()
	return w.Run(ctx)
}

// buildLeased builds the tasks of the cluster on store: the worker fences
// positions with the lease itself, and a source with history_store:
// database keeps its schema history in the coordinator, fenced by the same
// lease in the same statement.
func buildLeased(store *cluster.Store) cluster.BuildFunc {
	return func(ctx context.Context, cfg *runtime.Config, only string, lease runtime.Lease, log *slog.Logger) (*runtime.Pipeline, error) {
		return BuildTask(ctx, cfg, TaskOptions{Only: only, Lease: lease, Log: log, HistoryDB: store.DB(), HistoryDialect: store.Dialect(),
			CoordinatorTables: store.Tables()})
	}
}

// node is the REST API's view of this worker: the cluster's connectors
// (cluster.Control) plus this worker's own figures for /metrics.
type node struct {
	*cluster.Control
	w atomic.Pointer[cluster.Worker]
}

var (
	_ admin.WorkerMetricsReporter = (*node)(nil)
	_ admin.MetricsWriter         = (*node)(nil)
)

// WorkerMetrics reports this worker's leases and membership.
func (n *node) WorkerMetrics() admin.WorkerMetrics {
	w := n.w.Load()
	if w == nil {
		return admin.WorkerMetrics{}
	}
	return admin.WorkerMetrics(w.Metrics())
}

// WriteMetrics writes the series of the pipelines of the tasks held here.
func (n *node) WriteMetrics(out io.Writer) {
	if w := n.w.Load(); w != nil {
		ps, tasks := w.Pipelines()
		runtime.WriteTaskMetrics(out, ps, tasks)
	}
}
