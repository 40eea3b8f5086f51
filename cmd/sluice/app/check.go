package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/secure"
	"github.com/sluicecdc/sluice/sink"
)

// errChecksFailed makes `sluice check` exit 1 after it printed the problems.
var errChecksFailed = errors.New("some checks failed")

// cmdCheck verifies every side a config sets up and prints one line per
// problem with its fix: the source server and account (binlog.Check), the
// target (sink.Check: reachable, and the right to create and alter tables
// in the schemas the captured tables map to, and the shapes of the mapped
// tables that exist) and the broker (rocketmq.Check: reachable,
// credentials, topic creation, Pub and Sub under ACL); and a MySQL
// target's durability settings.
func cmdCheck(args []string, stdout io.Writer, log *slog.Logger) error {
	fs, path, _ := configFlag("check", args)
	timeout := fs.Duration("timeout", 30*time.Second, "give up on each side's checks (source, target, broker) after this long")
	cfg, err := loadConfig(fs, path, args)
	if err != nil {
		return err
	}
	d, err := decodeAll(cfg, "") // as validate does: the whole file must be valid
	if err != nil {
		return err
	}
	if d.source == nil && d.sink == nil {
		return fmt.Errorf("%s: check reads a MySQL or MariaDB source or a JDBC sink, and the config has neither: %w", cfg.File, runtime.ErrConfig)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	problems := probe(ctx, d, log, *timeout)
	failed, warned := 0, 0
	for _, p := range problems {
		fmt.Fprintln(stdout, p.String())
		if p.Warning {
			warned++
		} else {
			failed++
		}
	}
	if d.sink != nil && d.sink.Dialect == sink.DialectMySQL && reachable(problems) {
		// PostgreSQL targets commit durably whatever the server's default
		// (the sink asks per transaction); MySQL's settings are global.
		dctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		switch msg, err := sink.Durability(dctx, *d.sink); {
		case err != nil:
			fmt.Fprintf(stdout, "WARN target: cannot read the target's durability settings: %v; fix: check sink.dsn and that the target is up\n", secure.RedactDSNError(err, d.sink.DSN))
			warned++
		case msg != "":
			fmt.Fprintf(stdout, "WARN target_durability: %s\n", msg)
			warned++
		}
	}
	// The verdict is always the last line of stdout, whole (a script reading
	// stdout, or a terminal, sees it before the shell's next prompt).
	fmt.Fprintln(stdout, verdict(failed, warned))
	if failed > 0 {
		return fmt.Errorf("%s: %w", cfg.File, errChecksFailed)
	}
	return nil
}

func verdict(failed, warned int) string {
	plural := func(n int, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	switch {
	case failed > 0 && warned > 0:
		return fmt.Sprintf("%s failed, %s: fix the FAIL lines and run check again", plural(failed, "check"), plural(warned, "warning"))
	case failed > 0:
		return fmt.Sprintf("%s failed: fix the FAIL lines and run check again", plural(failed, "check"))
	case warned > 0:
		return fmt.Sprintf("all checks passed (%s)", plural(warned, "warning"))
	}
	return "all checks passed"
}

// reachable reports whether the target answered the probe (no
// target_reachable problem).
func reachable(problems []schema.Problem) bool {
	for _, p := range problems {
		if p.Check == "target_reachable" {
			return false
		}
	}
	return true
}

// probe runs the checks of every side d sets up: the source server and
// account (binlog.Check), the target (sink.Check, for the schemas the
// captured tables map to) and the broker (rocketmq.Check).
func probe(ctx context.Context, d *decoded, log *slog.Logger, timeout time.Duration) []schema.Problem {
	// Each side has its own time: a slow source (a catalogue of many
	// tables) must not leave the target none and report it unreachable.
	side := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, timeout) }
	var problems []schema.Problem
	var tables []schema.Table
	if d.source != nil {
		log.Debug("checking the source", "host", d.source.Host, "port", d.source.Port, "user", d.source.User)
		sctx, cancel := side()
		sp := binlog.Check(sctx, *d.source)
		problems = append(problems, sp...)
		if d.sink != nil && !failed(sp) {
			var ps []schema.Problem
			tables, ps = capturedShapes(sctx, *d.source, log)
			problems = append(problems, ps...)
		}
		cancel()
	}
	if d.sink != nil {
		log.Debug("checking the target", "dialect", d.sink.Dialect, "tables", len(tables))
		tctx, cancel := side()
		problems = append(problems, sink.Check(tctx, *d.sink, tables)...)
		cancel()
	}
	if d.rocketmq != nil {
		log.Debug("checking the broker", "name_servers", d.rocketmq.NameServers)
		bctx, cancel := side()
		problems = append(problems, rocketmq.Check(bctx, *d.rocketmq, rocketmq.Use{Publish: d.source != nil, Subscribe: d.sink != nil})...)
		cancel()
	}
	return problems
}

// failed reports a FAIL among ps.
func failed(ps []schema.Problem) bool {
	return slices.ContainsFunc(ps, func(p schema.Problem) bool { return !p.Warning })
}

// capturedShapes lists the tables the source captures, for the target
// schemas they map to, with the shapes the sink compares existing target
// tables with; a table whose shape cannot be read comes by its name only.
// Reading the shapes (a catalogue query per table) gets half the time
// left, so that a large schema leaves the rest of the checks their time;
// the problem says when the shapes were not read.
func capturedShapes(ctx context.Context, cfg binlog.Config, log *slog.Logger) ([]schema.Table, []schema.Problem) {
	src, err := binlog.NewSource(cfg, log)
	if err != nil {
		return nil, nil
	}
	ids, err := src.CapturedTables(ctx)
	if err != nil {
		return nil, nil // binlog.Check reached the server: it reports what fails
	}
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		sctx, cancel = context.WithTimeout(ctx, time.Until(dl)/2)
	}
	defer cancel()
	shapes, err := src.CapturedShapes(sctx)
	var ps []schema.Problem
	if err != nil {
		ps = append(ps, schema.Problem{Check: "target_table", Warning: true,
			Detail: fmt.Sprintf("the captured tables' shapes were not read (%v): existing target tables were not compared with them", err),
			Fix:    "run check again with a longer --timeout"})
	}
	have := make(map[schema.TableID]bool, len(shapes))
	for _, t := range shapes {
		have[t.ID] = true
	}
	for _, id := range ids {
		if !have[id] {
			shapes = append(shapes, schema.Table{ID: id})
		}
	}
	return shapes, ps
}

// probeTimeout bounds each side's checks of a connector created over REST.
const probeTimeout = 20 * time.Second

// probeForCluster is cluster.Control's Probe: the failed checks of a
// connector's servers, each as `sluice check` prints it (warnings do not
// refuse a connector).
func probeForCluster(ctx context.Context, cfg *plugin.Config) []string {
	d, err := decodeTask(cfg, "", true)
	if err != nil {
		return nil // Check reports it
	}
	var reasons []string
	for _, p := range probe(ctx, d, slog.New(slog.DiscardHandler), probeTimeout) {
		if !p.Warning {
			reasons = append(reasons, p.String())
		}
	}
	return reasons
}
