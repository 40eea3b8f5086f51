package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/runtime"
)

// errChecksFailed makes `sluice check` exit 1 after it printed the problems.
var errChecksFailed = errors.New("some checks failed")

// cmdCheck verifies the source server and account of a config
// (binlog.Check) and prints one line per problem with its fix.
func cmdCheck(args []string, stdout io.Writer, log *slog.Logger) error {
	fs, path, _ := configFlag("check", args)
	timeout := fs.Duration("timeout", 30*time.Second, "give up on the checks after this long")
	cfg, err := loadConfig(fs, path, args)
	if err != nil {
		return err
	}
	if cfg.Source == nil {
		return fmt.Errorf("%s: the config has no source section to check: %w", cfg.File, runtime.ErrConfig)
	}
	d, err := decodeAll(cfg, "") // as validate does: the whole file must be valid
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	log.Debug("checking the source", "host", d.source.Host, "port", d.source.Port, "user", d.source.User)
	failed, warned := 0, 0
	for _, p := range binlog.Check(ctx, *d.source) {
		fmt.Fprintln(stdout, p.String())
		if p.Warning {
			warned++
		} else {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%s: %d %w", cfg.File, failed, errChecksFailed)
	}
	if warned > 0 {
		fmt.Fprintf(stdout, "all checks passed (%d warnings)\n", warned)
		return nil
	}
	fmt.Fprintln(stdout, "all checks passed")
	return nil
}
