package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/cluster"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/runtime/storage"
)

// clusterFile is CLUSTER.yaml, the config of `sluice worker`.
type clusterFile struct {
	Coordinator struct {
		Driver      string `yaml:"driver" sluice:"required"` // postgres or mysql
		DSN         string `yaml:"dsn" sluice:"required"`    // ${VAR} is expanded
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

// clusterPlugins lists the registry's connector plugins for GET
// /connector-plugins as Kafka Connect does: each once, its class the
// plugin's name (mysql, jdbc, embedded, rocketmq), its type the section it
// fills (source, sink, transport), and the binary's version. The plugin
// endpoints take a section type (postgres, mariadb, ...) as well.
func clusterPlugins() []admin.Plugin {
	var out []admin.Plugin
	version := admin.Version().Version
	for _, p := range Plugins() {
		out = append(out, admin.Plugin{Class: p.Name, Type: p.Kind, Version: version})
	}
	return out
}

// pluginConfig answers GET /connector-plugins/{type}/config: the
// definitions of the keys of the plugin named pluginType or serving that
// section type, from its spec.
func pluginConfig(pluginType string) ([]admin.ConfigKeyInfo, error) {
	p, ok := connectors.Plugin(pluginType)
	if !ok {
		return nil, fmt.Errorf("connector plugin %q: GET /connector-plugins lists them: %w", pluginType, admin.ErrNotFound)
	}
	keys, err := p.ConfigKeys()
	if err != nil {
		return nil, err
	}
	return admin.KeyInfos(p.Kind, keys), nil
}

// validateForCluster answers PUT /connector-plugins/{type}/config/validate
// with the registry's checks in Kafka Connect's shape: every key of the
// plugin's section with its definition, the value given and its errors,
// then an entry for each problem of no such key (a list element's key such
// as source.mask[0].kind, with its key's definition; another section's).
func validateForCluster(pluginType string, config json.RawMessage) (admin.Validation, error) {
	p, known := connectors.Plugin(pluginType)
	if !known {
		return admin.Validation{}, fmt.Errorf("connector plugin %q: GET /connector-plugins lists them: %w", pluginType, admin.ErrNotFound)
	}
	errs, err := ValidateConnector(pluginType, config)
	if err != nil {
		return admin.Validation{}, fmt.Errorf("%w: %w", admin.ErrInvalid, err)
	}
	keys, err := p.ConfigKeys()
	if err != nil {
		return admin.Validation{}, err
	}
	given := sectionValues(config, p.Kind)
	v := admin.Validation{Name: pluginType, Groups: []string{p.Kind}, Configs: []admin.ConfigInfo{}}
	byPath := map[string]int{}
	for i, def := range admin.KeyInfos(p.Kind, keys) {
		def.Name = p.Kind + "." + def.Name
		cv := admin.ConfigValue{Name: def.Name, Value: given[keys[i].Name], RecommendedValues: append([]string{}, keys[i].Values...), Errors: []string{}, Visible: true}
		byPath[def.Name] = len(v.Configs)
		v.Configs = append(v.Configs, admin.ConfigInfo{Definition: &def, Value: cv})
	}
	for _, e := range errs {
		v.ErrorCount += len(e.Errors)
		key := listIndex.ReplaceAllString(e.Path, "[]")
		i, defined := byPath[key]
		if defined && key == e.Path {
			c := &v.Configs[i].Value
			c.Errors = append(c.Errors, e.Errors...)
			if e.Value != "" {
				c.Value = e.Value
			}
			continue
		}
		ci := admin.Problem(e.Path, e.Errors...)
		if defined {
			ci.Definition = v.Configs[i].Definition
		}
		if e.Value != "" {
			ci.Value.Value = e.Value
		}
		v.Configs = append(v.Configs, ci)
	}
	return v, nil
}

// listIndex is the index of a list element in a key's path.
var listIndex = regexp.MustCompile(`\[[0-9]+\]`)

// sectionValues are the values doc (a section, or a whole document with a
// section of kind) gives the section's keys, as text: scalars as written,
// lists of scalars comma-separated; mappings are left out.
func sectionValues(doc []byte, kind string) map[string]any {
	var m map[string]any
	if yaml.Unmarshal(doc, &m) != nil {
		return nil
	}
	if sec, ok := m[kind].(map[string]any); ok {
		m = sec
	}
	out := map[string]any{}
	for k, val := range m {
		switch x := val.(type) {
		case map[string]any, nil:
		case []any:
			var parts []string
			for _, e := range x {
				if _, nested := e.(map[string]any); nested {
					parts = nil
					break
				}
				parts = append(parts, fmt.Sprint(e))
			}
			if parts != nil {
				out[k] = strings.Join(parts, ",")
			}
		default:
			out[k] = fmt.Sprint(x)
		}
	}
	return out
}

// checkForCluster checks a connector's document as a worker will build
// it: decoded as a whole, with the coordinator keeping what history_store:
// database keeps, so that needs no positions section (a cluster ignores it).
func checkForCluster(cfg *plugin.Config) error {
	_, err := decodeTask(cfg, "", true)
	return err
}

// signalForCluster sends a snapshot signal for a connector of the cluster
// from any worker: its binlog source, never opened, writes the signal into
// the signal table, where the source task reads it wherever it runs.
func signalForCluster(ctx context.Context, cfg *plugin.Config, id, typ, data string) (string, error) {
	if cfg.Source == nil {
		return "", fmt.Errorf("connector %s has no source: %w", cfg.Name, engine.ErrNoSignals)
	}
	d, err := decodeTask(cfg, "", true)
	if err != nil {
		return "", err
	}
	if d.source == nil {
		return "", fmt.Errorf("connector %s: %w", cfg.Name, engine.ErrNoSignals)
	}
	if d.source.SignalTable == "" {
		return "", fmt.Errorf("%w: connector %s: in a cluster signals are written into the source's signal_table, which it does not set", binlog.ErrConfig, cfg.Name)
	}
	src, err := binlog.NewSource(*d.source, slog.New(slog.DiscardHandler))
	if err != nil {
		return "", err
	}
	return src.Signal(ctx, id, typ, data)
}

// checkPosition checks a position set through PATCH .../offsets: the
// binlog source's, the one source there is.
func checkPosition(position string) error {
	_, err := binlog.ParsePosition([]byte(position))
	return err
}

// orderPositions orders two positions for PATCH .../offsets
// (admin.WithPositionOrder); a position the source cannot read is
// admin.ErrInvalid.
func orderPositions(a, b string) (int, error) {
	c, err := binlog.OrderPositions([]byte(a), []byte(b))
	if errors.Is(err, binlog.ErrBadPosition) {
		return 0, fmt.Errorf("%w: %w (GET .../offsets shows the form)", admin.ErrInvalid, err)
	}
	return c, err
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
	control := &cluster.Control{S: store, TTL: cf.TTL, PluginList: clusterPlugins(), PluginConfigs: pluginConfig, Validator: validateForCluster, Check: checkForCluster, Probe: probeForCluster,
		CheckPosition: checkPosition, Signals: signalForCluster, GroupsOf: groupsForCluster, SwitchOf: switchoverForCluster,
		MergePositions: rocketmq.MergePositions}
	n := &node{Control: control}
	addr, served, err := admin.Serve(ctx, cf.REST, token, admin.NewHandler(n, token, admin.WithLogLevel(logLevelVar), admin.WithPositionOrder(orderPositions)))
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
	return func(ctx context.Context, cfg *plugin.Config, only string, lease storage.Lease, log *slog.Logger) (*engine.Pipeline, error) {
		return BuildTask(ctx, cfg, TaskOptions{Only: only, Lease: lease, Log: log, HistoryDB: store.DB(), HistoryDialect: store.Dialect(),
			CoordinatorTables: store.Tables(), SourceTask: cluster.SourceTaskOf(lease.Task)})
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
	_ admin.MetricsCollector      = (*node)(nil)
	_ admin.Topics                = (*node)(nil) // GET /connectors/{name}/topics, from the coordinator
	_ admin.Offsets               = (*node)(nil)
	_ admin.Signaler              = (*node)(nil) // POST .../signals (Control.Signal)
)

// WorkerMetrics reports this worker's leases and membership.
func (n *node) WorkerMetrics() admin.WorkerMetrics {
	w := n.w.Load()
	if w == nil {
		return admin.WorkerMetrics{}
	}
	return admin.WorkerMetrics(w.Metrics())
}

// MetricsCollector collects the series of the pipelines of the tasks held
// here, labelled by task.
func (n *node) MetricsCollector() prometheus.Collector {
	return engine.NewCollector(func() ([]*engine.Pipeline, []string) {
		if w := n.w.Load(); w != nil {
			return w.Pipelines()
		}
		return nil, nil
	}, true)
}

// clusterKeys documents the keys of `sluice worker`'s cluster file
// (clusterFile).
var clusterKeys = plugin.KeyDocs{
	"coordinator":              {Doc: "The coordinator database, where the workers share connectors, leases and positions."},
	"coordinator.driver":       {Doc: "Kind of the coordinator database.", Values: []string{"postgres", "mysql"}},
	"coordinator.dsn":          {Doc: "Connection string of the coordinator database; ${VAR} is expanded."},
	"coordinator.table_prefix": {Doc: "Prefix of the control tables' names: letters, digits and _.", Default: "sluice_"},
	"id":                       {Doc: "The worker's id, unique in the cluster; default: the host's name and the REST port."},
	"rest":                     {Doc: "Address of the REST API (non-loopback needs SLUICE_REST_TOKEN).", Default: "127.0.0.1:8083"},
	"ttl":                      {Doc: "A lease not renewed for this long expires, and its tasks move to another worker.", Default: "10s"},
	"heartbeat":                {Doc: "How often the worker heartbeats and looks for work, shorter than ttl; default: ttl/3."},
	"margin":                   {Doc: "A worker stops a task's reading and writing when ttl minus margin passed since its last renewal, before another may take it; under ttl/2, default: ttl/5."},
	"memory_limit":             {Doc: "Go memory limit of the worker process, for all its tasks; off for none. GOMEMLIMIT in the environment wins.", Default: runtime.DefaultMemoryLimit.String()},
}
