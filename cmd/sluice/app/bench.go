package app

import (
	"context"
	"flag"
	"io"
	"log/slog"

	"github.com/sluicecdc/sluice/cmd/sluice/internal/bench"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
)

// cmdBench is `sluice bench`: the benchmark harness lives in its own
// package (cmd/sluice/internal/bench); it runs sluice as `sluice run`
// builds it.
func cmdBench(args []string, stdout io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	c := bench.NewCommand(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return c.Run(stdout, log, func(ctx context.Context, cfg *plugin.Config, log *slog.Logger) (*engine.Pipeline, error) {
		return Build(ctx, cfg, "", log)
	})
}
