package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/runtime"
)

// The runtime reads the connectors' own errors, as they make them, with
// the contract's classes: the binlog source's fatal errors stop the task
// (before, runtime.IsFatal was false for all of them and the runtime's test
// faked one the real source never produced), its end of input finishes it.
func TestRuntimeClassifiesTheSourcesErrors(t *testing.T) {
	for _, e := range []error{binlog.ErrConfig, binlog.ErrBadPosition, binlog.ErrPositionPurged, binlog.ErrMissingMetadata,
		binlog.ErrUnsupported, binlog.ErrUnparsedDDL, binlog.ErrAccessDenied, binlog.ErrServerIDInUse} {
		err := fmt.Errorf("open source: %w", fmt.Errorf("%w: detail", e))
		if !runtime.IsFatal(err) {
			t.Errorf("%v is not fatal to the runtime", e)
		}
	}
	if err := fmt.Errorf("read source: %w", binlog.ErrSnapshotDone); runtime.IsFatal(err) || !runtime.IsEndOfInput(err) {
		t.Errorf("ErrSnapshotDone: fatal %v, end of input %v", runtime.IsFatal(err), runtime.IsEndOfInput(err))
	}
	for _, err := range []error{errors.New("connection reset"), context.DeadlineExceeded} {
		if runtime.IsFatal(err) {
			t.Errorf("%v is fatal", err)
		}
	}
	if !runtime.IsFatal(fmt.Errorf("x: %w", runtime.ErrConfig)) {
		t.Error("runtime.ErrConfig is not fatal")
	}
}

// A configuration error found when the pipeline is built (here by the
// binlog source's own checks) exits with the config code 2, like those the
// config loader finds; it exited 1.
func TestRunExitsTwoOnAConnectorConfigError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	writeFile(t, path, "name: p\nsource:\n  type: mariadb\n  host: 127.0.0.1\n  port: 1\n  user: u\n  server_id: 7\n  include: [\"nodot\"]\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: postgres://x@127.0.0.1:1/x\npositions:\n  type: file\n  dir: "+filepath.Join(filepath.Dir(path), "pos")+"\n")
	var out, errb bytes.Buffer
	if code := Main([]string{"run", "--config", path}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `table pattern "nodot" must have the form db.table`) {
		t.Fatalf("exit code %d, want 2 naming the pattern:\n%s", code, errb.String())
	}
}
