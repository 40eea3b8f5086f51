package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink"
	"github.com/sluicecdc/sluice/sink/dialect"
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

// The error vocabulary is one: every package's configuration errors, as
// its own checks make them, match schema.ErrConfig and their package's
// sentinel (no other's) and are fatal; the packages' fatal errors are
// fatal, their retriable ones retriable, the end of input is the end of
// input; and nothing but the contract's marks classifies (a driver's own
// Fatal method, lib/pq's severity FATAL, is not read).
func TestErrorVocabulary(t *testing.T) {
	sentinels := map[string]error{
		"binlog": binlog.ErrConfig, "converter": converter.ErrConfig, "kafka": kafka.ErrConfig,
		"rocketmq": rocketmq.ErrConfig, "sink": sink.ErrConfig, "runtime": runtime.ErrConfig,
	}
	if sink.ErrConfig != dialect.ErrConfig {
		t.Error("sink.ErrConfig is not the dialects' ErrConfig")
	}
	boom := errors.New("boom")
	cases := []struct {
		name  string
		err   error
		pkg   string // the package whose ErrConfig it must match ("" none)
		class schema.Class
		is    []error // further sentinels it must match
	}{
		{"binlog config", (&binlog.Config{}).Validate(), "binlog", schema.ClassFatal, nil},
		{"converter option", converter.Options{DecimalMode: "exact"}.Validate(), "converter", schema.ClassFatal, nil},
		{"kafka config", kafka.Config{}.Validate(), "kafka", schema.ClassFatal, nil},
		{"rocketmq config", rocketmq.Config{Pipeline: "p"}.Validate(), "rocketmq", schema.ClassFatal, nil},
		{"sink config", sink.Validate(sink.Config{Dialect: "oracle", DSN: "x"}), "sink", schema.ClassFatal, nil},
		{"sink DSN", sink.CheckDSN("postgres", "postgres://%zz"), "sink", schema.ClassFatal, nil},
		{"dialect DSN", dialect.CheckDSNError("mysql", "u:p@tcp(h)/d", "user:password@tcp(host:3306)/db", boom), "sink", schema.ClassFatal, nil},
		{"runtime config", parseConfigErr("name: p\nsource: [\n"), "runtime", schema.ClassFatal, nil},
		{"runtime config key", parseConfigErr("name: p\nnope: 1\n"), "runtime", schema.ClassFatal, nil},
		{"wrapped twice", fmt.Errorf("start: %w", fmt.Errorf("%w: port", rocketmq.ErrConfig)), "rocketmq", schema.ClassFatal, nil},
		{"schema.Fatal", fmt.Errorf("x: %w", schema.Fatal(boom)), "", schema.ClassFatal, []error{boom}},
		{"schema.Retriable", fmt.Errorf("x: %w", schema.Retriable(boom)), "", schema.ClassRetriable, []error{boom}},
		{"outermost mark", schema.Retriable(schema.Fatal(boom)), "", schema.ClassRetriable, nil},
		{"sink value", dialect.ValueErr("c", &schema.Schema{Type: schema.String}, 1, "want string"), "", schema.ClassFatal, []error{sink.ErrValue}},
		{"binlog purged", fmt.Errorf("x: %w", binlog.ErrPositionPurged), "", schema.ClassFatal, nil},
		{"runtime locked", storage.ErrPipelineLocked, "", schema.ClassFatal, nil},
		{"end of input", fmt.Errorf("read: %w", binlog.ErrSnapshotDone), "", schema.ClassEndOfInput, []error{schema.ErrEndOfInput}},
		{"unclassified", boom, "", schema.ClassUnknown, nil},
		{"lib/pq severity FATAL", fmt.Errorf("x: %w", &pq.Error{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}), "", schema.ClassUnknown, nil},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if got := runtime.ClassOf(c.err); got != c.class || runtime.IsFatal(c.err) != (c.class == schema.ClassFatal) {
			t.Errorf("%s: %v: class %v, want %v", c.name, c.err, got, c.class)
		}
		if got := errors.Is(c.err, schema.ErrConfig); got != (c.pkg != "") {
			t.Errorf("%s: %v: errors.Is(err, schema.ErrConfig) = %v", c.name, c.err, got)
		}
		for pkg, s := range sentinels {
			if want := pkg == c.pkg || pkg == "runtime" && c.pkg != ""; errors.Is(c.err, s) != want {
				t.Errorf("%s: %v: errors.Is(err, %s.ErrConfig) = %v, want %v", c.name, c.err, pkg, !want, want)
			}
		}
		for _, s := range c.is {
			if !errors.Is(c.err, s) {
				t.Errorf("%s: %v does not match %v", c.name, c.err, s)
			}
		}
	}
}

func parseConfigErr(yaml string) error {
	_, err := plugin.ParseConfig([]byte(yaml), "p.yaml")
	return err
}
