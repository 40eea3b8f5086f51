// Package app is the sluice command: it registers the connectors and
// transports and starts the runtime. It is a package (not just main) so the
// integration tests can build pipelines exactly as the binary does.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/schema"
)

const usage = `sluice: change-data-capture from MySQL/MariaDB to RocketMQ and PostgreSQL/MySQL

Usage:
  sluice [--log-format text|json] COMMAND ...     logs as text lines (default) or JSON objects on stderr (also SLUICE_LOG_FORMAT)
  sluice version                                  print the version and the commit it was built from
  sluice run --config FILE [--only source|sink]   run a pipeline until SIGTERM/SIGINT
  sluice worker --config CLUSTER.yaml             join a cluster of workers sharing connectors through a coordinator database
  sluice validate --config FILE                   check the config file and exit
  sluice check --config FILE                      check the source (binlog settings, privileges, keys), the target and the broker
  sluice positions show|reset --config FILE       read or reset the saved source position
  sluice config-reference                         print the reference of every config key (docs/configuration.md)
  sluice replicator status|failover|switchover --config FILE [--json] [--groups G,H] [--timeout 1m]
                                                  a replicator's synced groups on the target: lag, checkpoint age,
                                                  duplicate window; failover writes their checkpoints as the target's offsets;
                                                  switchover waits until everything is copied and writes final checkpoints
  sluice tail --config FILE [--from beginning|now] [--follow] [--table db.table] [--key K] [--limit N] [--schemas] [--dlq]
                                                  print the records on the pipeline's RocketMQ topics as JSON lines (sink offsets untouched)
  sluice bench [--rows N] [--txn N] [--updates F] [--transport embedded|rocketmq] [--debezium DIR] [--json FILE]
                                                  end-to-end benchmark on the servers of scripts/servers.sh's env file:
                                                  throughput against raw limits measured in the same run, lag, memory
`

// Main runs the command line and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	format, args, err := logFormat(args)
	if err != nil {
		fmt.Fprintf(stderr, "sluice: %v\n", err)
		return 2
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	opts := &slog.HandlerOptions{Level: logLevelVar}
	logLevelVar.Set(logLevel())
	var h slog.Handler = slog.NewTextHandler(stderr, opts)
	if format == "json" {
		h = slog.NewJSONHandler(stderr, opts)
	}
	log := slog.New(runtime.UniqueKeys(h))
	// Packages that log without a logger handed to them (the admin API's
	// deprecation warnings) write through the same handler.
	slog.SetDefault(log)
	switch args[0] {
	case "run":
		err = cmdRun(args[1:], log)
	case "worker":
		err = cmdWorker(args[1:], log)
	case "validate":
		err = cmdValidate(args[1:], stdout, log)
	case "positions":
		err = cmdPositions(args[1:], stdout)
	case "check":
		err = cmdCheck(args[1:], stdout, log)
	case "tail":
		err = cmdTail(args[1:], stdout)
	case "replicator":
		err = cmdReplicator(args[1:], stdout)
	case "bench":
		err = cmdBench(args[1:], stdout, log)
	case "config-reference":
		err = cmdConfigReference(args[1:], stdout)
	case "version", "--version":
		v := admin.Version()
		fmt.Fprintf(stdout, "sluice %s", v.Version)
		if v.Commit != "" {
			fmt.Fprintf(stdout, " (commit %s)", v.Commit)
		}
		fmt.Fprintln(stdout)
	default:
		fmt.Fprintf(stderr, "sluice: unknown command %q", args[0])
		if s := plugin.Suggest(args[0], commands); s != "" {
			fmt.Fprintf(stderr, ": did you mean %s?", s)
		}
		fmt.Fprintf(stderr, "\n\n%s", usage)
		return 2
	}
	if fe := (flagError{}); errors.As(err, &fe) {
		// The flag package's own words, once: the refusal and the flags
		// (for -h, only the flags, on stdout).
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, fe.usage)
			return 0
		}
		fmt.Fprint(stderr, fe.usage)
		return 2
	}
	if err != nil {
		switch {
		case errors.As(err, new(reportedError)):
		case format == "json": // every line of stderr is one JSON object
			log.Error("command failed", "command", args[0], "err", err)
		default:
			fmt.Fprintf(stderr, "sluice: %v\n", err)
		}
		if errors.Is(err, schema.ErrConfig) || errors.Is(err, flag.ErrHelp) {
			return 2
		}
		return 1
	}
	return 0
}

// commands are Main's commands, for "did you mean".
var commands = []string{"run", "worker", "validate", "positions", "check", "tail", "bench", "config-reference", "version"}

// logLevelVar is the level of the process's logger: SLUICE_LOG_LEVEL at
// start, then PUT /admin/loggers/root.
var logLevelVar = new(slog.LevelVar)

// logFormat takes the global --log-format text|json off the front of args
// (before the command); SLUICE_LOG_FORMAT is its default, text when unset.
func logFormat(args []string) (string, []string, error) {
	format := os.Getenv("SLUICE_LOG_FORMAT")
	for len(args) > 0 && (args[0] == "--log-format" || strings.HasPrefix(args[0], "--log-format=")) {
		if v, ok := strings.CutPrefix(args[0], "--log-format="); ok {
			format, args = v, args[1:]
		} else if len(args) > 1 {
			format, args = args[1], args[2:]
		} else {
			return "", nil, fmt.Errorf("--log-format needs a value: text or json: %w", runtime.ErrConfig)
		}
	}
	switch format {
	case "", "text":
		return "text", args, nil
	case "json":
		return "json", args, nil
	}
	return "", nil, fmt.Errorf("log format %q (--log-format or SLUICE_LOG_FORMAT): use text or json: %w", format, runtime.ErrConfig)
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("SLUICE_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}

func configFlag(name string, args []string) (*flag.FlagSet, *string, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	cfg := fs.String("config", "", "pipeline config file (YAML)")
	only := fs.String("only", "", "run only the source side or the sink side: source|sink")
	return fs, cfg, only
}

var restAddr string

func init() {
	restAddr = os.Getenv("SLUICE_REST")
}

func loadConfig(fs *flag.FlagSet, path *string, args []string) (*plugin.Config, error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if *path == "" {
		return nil, fmt.Errorf("--config FILE is required: %w", runtime.ErrConfig)
	}
	return plugin.LoadConfig(*path)
}

func cmdRun(args []string, log *slog.Logger) error {
	fs, path, only := configFlag("run", args)
	rest := fs.String("rest", restAddr, "serve the REST API and /metrics on this address, e.g. 127.0.0.1:8083 (non-loopback needs SLUICE_REST_TOKEN); empty: no API")
	cfg, err := loadConfig(fs, path, args)
	if err != nil {
		return err
	}
	d, err := decodeAll(cfg, *only)
	if err != nil {
		return err
	}
	limit := runtime.ApplyMemoryLimit(cfg.MemoryLimit, os.Getenv)
	log.Debug("memory limit", "limit", limit.String())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	w := engine.NewWorker(log)
	w.MaxStartRetries = cfg.MaxStartRetries()
	w.Add(cfg.Name, nil, func(ctx context.Context) (*engine.Pipeline, error) { return Build(ctx, cfg, *only, log) })
	if *rest != "" {
		token := os.Getenv("SLUICE_REST_TOKEN")
		api := admin.NewHandler(&admin.Local{W: w, WorkerID: *rest, Type: map[string]string{"source": "source", "sink": "sink"}[*only],
			PluginList: clusterPlugins(), Configs: pluginConfig}, token, admin.WithLogLevel(logLevelVar), admin.WithPositionOrder(orderPositions))
		addr, _, err := admin.Serve(ctx, *rest, token, api)
		if err != nil {
			return err
		}
		log.Info("REST API listening", "addr", addr.String())
	}
	log.Info("pipeline starting", d.paths("pipeline", cfg.Name, "only", *only, "config", cfg.File)...)
	if err := w.Start(ctx, cfg.Name); err != nil {
		return err
	}
	if isTerminal(os.Stderr) {
		go showSnapshotProgress(ctx, os.Stderr, w)
	}
	// The process ends when its pipeline has ended by itself (FINISHED at
	// the end of its input, or FAILED) or on a signal. A stop or restart
	// through the REST API acts on the pipeline only. With the REST API, a
	// FAILED pipeline keeps the process up (/health 503) so the failure can
	// be read and the pipeline restarted; a signal then ends it with exit 1.
	for {
		select {
		case <-ctx.Done():
			stop() // a second signal now ends the process at once
			log.Info("stopping: draining in-flight records and saving the position (signal again to exit now)")
			if err := w.StopAll(context.Background()); err != nil {
				return err
			}
			return runResult(w, cfg.Name, log)
		case <-w.Ended():
			st, err := w.Status(cfg.Name)
			if err != nil {
				return err
			}
			switch {
			case st.State == engine.StateFailed && *rest != "":
				log.Error("pipeline failed; the REST API stays up: read GET /connectors/"+cfg.Name+"/status, fix the cause and POST /connectors/"+cfg.Name+"/restart, or stop the process (exit code 1)", "pipeline", cfg.Name)
			case st.State == engine.StateFailed || st.State == engine.StateFinished:
				return runResult(w, cfg.Name, log)
			}
		}
	}
}

// flagError is a command line fs.Parse refused; usage is what the flag
// package wrote about it (the refusal, then the flags), which Main prints
// instead of the error.
type flagError struct {
	err   error
	usage string
}

func (e flagError) Error() string { return e.err.Error() }
func (e flagError) Unwrap() error { return e.err }

// parseFlags is fs.Parse with the flag package's output kept for Main
// (it wrote to the process's stderr, and Main then printed the error a
// second time).
func parseFlags(fs *flag.FlagSet, args []string) error {
	var b strings.Builder
	fs.SetOutput(&b)
	if err := fs.Parse(args); err != nil {
		return flagError{err: err, usage: b.String()}
	}
	return nil
}

// reportedError is an error already logged where it happened: Main ends
// with its exit code without printing it a second time.
type reportedError struct{ error }

func (r reportedError) Unwrap() error { return r.error }

// runResult is how `sluice run` ends: an error (exit 1) when the pipeline
// FAILED or was stopped before it ever ran, nil (exit 0) when it FINISHED
// or was stopped after it ran.
func runResult(w *engine.Worker, name string, log *slog.Logger) error {
	st, err := w.Status(name)
	if err != nil {
		return err
	}
	switch {
	case st.State == engine.StateFailed:
		// The worker logged the failure with its error when it happened.
		return reportedError{fmt.Errorf("pipeline %s failed: %s", name, st.LastError)}
	case !w.Ran(name):
		// stopped while it tried to start: it never captured anything
		err := fmt.Errorf("pipeline %s stopped before it ever ran", name)
		if st.LastError != "" {
			err = fmt.Errorf("%w (last error: %s)", err, st.LastError)
		}
		return err
	case st.State == engine.StateFinished:
		logEnd(log, "pipeline finished: its input is complete", name, st.Position, hasSource(w, name))
	default:
		logEnd(log, "pipeline stopped", name, st.Position, hasSource(w, name))
	}
	return nil
}

// hasSource reports whether pipeline name reads a source (not --only sink).
func hasSource(w *engine.Worker, name string) bool {
	for _, p := range w.Pipelines() {
		if p.Name == name {
			return p.Source != nil
		}
	}
	return false
}

// logEnd logs how a pipeline ended, msg, with the source position it
// saved; a sink-only pipeline has none (the sink keeps its progress per
// queue in the target), and a source that saved none says where the next
// run starts, rather than position="" reading like a lost position.
func logEnd(log *slog.Logger, msg, name, position string, source bool) {
	switch {
	case position != "":
		log.Info(msg, "pipeline", name, "position", position)
	case !source:
		log.Info(msg+"; the sink keeps its progress per queue in the target's progress table", "pipeline", name)
	default:
		log.Info(msg+" before a source position was saved: the next run starts at the source's configured start", "pipeline", name)
	}
}

func cmdValidate(args []string, stdout io.Writer, log *slog.Logger) error {
	fs, path, only := configFlag("validate", args)
	cfg, err := loadConfig(fs, path, args)
	if err != nil {
		return err
	}
	if _, err := decodeAll(cfg, *only); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok\n", cfg.File)
	return nil
}

func cmdPositions(args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "show" && args[0] != "reset") {
		return fmt.Errorf("positions: say show or reset: %w", runtime.ErrConfig)
	}
	fs, path, _ := configFlag("positions", args[1:])
	cfg, err := loadConfig(fs, path, args[1:])
	if err != nil {
		return err
	}
	d, err := decodeAll(cfg, "")
	if err != nil {
		return err
	}
	ctx := context.Background()
	store, err := openPositions(ctx, d.positions)
	if err != nil {
		return err
	}
	if args[0] == "reset" {
		if err := store.Reset(ctx, cfg.Name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "position of %s reset: the next start begins at the source's configured start\n", cfg.Name)
		return nil
	}
	pos, err := loadSourcePosition(ctx, store, cfg, false)
	if err != nil {
		return err
	}
	if pos == nil {
		fmt.Fprintf(stdout, "%s: no saved position (in %s)\n", cfg.Name, d.positions.where())
		return nil
	}
	fmt.Fprintf(stdout, "%s\n", engine.SourcePosition(pos))
	return nil
}
