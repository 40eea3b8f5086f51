package app

import (
	"context"
	"errors"
	"fmt"
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
