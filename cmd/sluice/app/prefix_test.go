package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime/admin"
)

// Config errors say what they are once (issue 33, item 5): a connector's
// own config error ("binlog: invalid config: …") was retold with the key
// and ": invalid configuration" appended again.
func TestConfigErrorsSayItOnce(t *testing.T) {
	base := "name: p\nsource:\n  type: mariadb\n  host: 127.0.0.1\n  port: 3306\n  user: u\n  password: p\n  server_id: 5\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: \"postgres://u@127.0.0.1:1/x?sslmode=disable\"\n"
	for _, tc := range []struct{ name, from, to, want string }{
		{"binlog port", "port: 3306", "port: 99999", "source.port: binlog: invalid config: port 99999 is out of range"},
		{"binlog server_id", "server_id: 5", "server_id: 0", "source.server_id: binlog: invalid config: server_id must be set"},
		{"sink template", "type: postgres\n", "type: postgres\n  schema: \"$${db\"\n", `sink.schema: sink: invalid configuration: template "${db" has an unclosed ${`},
	} {
		path := filepath.Join(t.TempDir(), "p.yaml")
		writeFile(t, path, strings.Replace(base, tc.from, tc.to, 1))
		var out, errOut bytes.Buffer
		code := Main([]string{"validate", "--config", path}, &out, &errOut)
		msg := errOut.String()
		if code != 2 || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: exit %d, %q, want 2 and %q", tc.name, code, msg, tc.want)
		}
		if n := strings.Count(msg, "invalid config"); n != 1 {
			t.Errorf("%s: %q says invalid config %d times", tc.name, msg, n)
		}
	}
}

// A flag the command does not know is reported once, on Main's stderr,
// with the command's flags, and exits 2 (issue 33, item 5): the flag
// package printed it to the process's stderr and Main printed it again.
// -h prints the flags on stdout and exits 0.
func TestFlagErrorPrintedOnce(t *testing.T) {
	for _, cmd := range []string{"check", "run", "validate", "worker", "bench"} {
		var out, errOut bytes.Buffer
		code := Main([]string{cmd, "--bogus"}, &out, &errOut)
		if code != 2 || strings.Count(errOut.String(), "flag provided but not defined: -bogus") != 1 || !strings.Contains(errOut.String(), "Usage of "+cmd+":") {
			t.Errorf("%s --bogus: exit %d, stderr %q: want 2 and the refusal once with the flags", cmd, code, errOut.String())
		}
		out.Reset()
		errOut.Reset()
		if code := Main([]string{cmd, "-h"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Usage of "+cmd+":") || errOut.Len() != 0 {
			t.Errorf("%s -h: exit %d, stdout %q, stderr %q: want 0 and the flags on stdout", cmd, code, out.String(), errOut.String())
		}
	}
}

// A name server off loopback is no warning (issue 33, item 5): loopback is
// a rule of sluice's tests, not of its users, and every real deployment's
// validate and run logged "name server is not on loopback".
func TestNoLoopbackWarning(t *testing.T) {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	path := filepath.Join(t.TempDir(), "p.yaml")
	writeFile(t, path, "name: p\nsource:\n  type: mariadb\n  host: db.example.com\n  port: 3306\n  user: u\n  password: p\n  server_id: 5\ntransport:\n  type: rocketmq\n  name_servers: [\"mq.example.com:9876\"]\nsink:\n  type: postgres\n  dsn: \"postgres://u@pg.example.com:5432/x?sslmode=disable\"\n")
	var out, errOut bytes.Buffer
	if code := Main([]string{"validate", "--config", path}, &out, &errOut); code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if all := logs.String() + errOut.String(); strings.Contains(all, "loopback") {
		t.Errorf("validate warned of a name server off loopback:\n%s", all)
	}
}

// --log-format json (or SLUICE_LOG_FORMAT=json) makes every line sluice
// writes on stderr one JSON object with time, level and msg, for log
// shippers (issue 33, item 5); an unknown format is a usage error.
func TestJSONLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	writeFile(t, path, "name: p\nstart_retries: 0\nsource:\n  type: mariadb\n  host: 127.0.0.1\n  port: 1\n  user: u\n  password: p\n  server_id: 5\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: \"postgres://u@127.0.0.1:1/x?sslmode=disable&connect_timeout=2\"\n")
	for _, args := range [][]string{{"--log-format", "json", "run", "--config", path}, {"--log-format=json", "run", "--config", path}} {
		var out, errOut bytes.Buffer
		if code := Main(args, &out, &errOut); code != 1 {
			t.Errorf("%v: exit %d, want 1 (the target is down)\n%s", args, code, errOut.String())
		}
		lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
		var levels []string
		for _, l := range lines {
			var rec struct{ Time, Level, Msg string }
			if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Time == "" || rec.Level == "" || rec.Msg == "" {
				t.Errorf("%v: stderr line is not a JSON log record (%v): %q", args, err, l)
			}
			levels = append(levels, rec.Level)
		}
		if len(lines) < 2 || !slices.Contains(levels, "INFO") || !slices.Contains(levels, "ERROR") {
			t.Errorf("%v: want INFO and ERROR records, got %v", args, levels)
		}
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"--log-format", "xml", "version"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `log format "xml"`) {
		t.Errorf("--log-format xml: exit %d, %q", code, errOut.String())
	}
}

// `sluice version` prints the version and the commit (issue 33, item 5);
// values set at link time (-ldflags -X …/admin.BuildVersion=…) win.
func TestVersionCommand(t *testing.T) {
	admin.BuildVersion, admin.BuildCommit = "v9.8.7", "0123abcd"
	t.Cleanup(func() { admin.BuildVersion, admin.BuildCommit = "", "" })
	for _, arg := range []string{"version", "--version"} {
		var out, errOut bytes.Buffer
		if code := Main([]string{arg}, &out, &errOut); code != 0 || out.String() != "sluice v9.8.7 (commit 0123abcd)\n" {
			t.Errorf("%s: exit %d, %q %q", arg, code, out.String(), errOut.String())
		}
	}
}

// TestStopLineNamesThePosition: how sluice run logs a pipeline's end never
// shows position="" (it read like a lost position): a sink-only pipeline
// says where its progress is, a source that saved none where it restarts.
func TestStopLineNamesThePosition(t *testing.T) {
	for _, c := range []struct {
		position string
		source   bool
		want     string
	}{
		{"mysql-bin.000003:1234", true, `msg="pipeline stopped" pipeline=p position=mysql-bin.000003:1234`},
		{"", false, "the sink keeps its progress per queue in the target's progress table"},
		{"", true, "before a source position was saved: the next run starts at the source's configured start"},
	} {
		var buf bytes.Buffer
		logEnd(slog.New(slog.NewTextHandler(&buf, nil)), "pipeline stopped", "p", c.position, c.source)
		if out := buf.String(); !strings.Contains(out, c.want) || strings.Contains(out, `position=""`) || strings.Count(out, "\n") != 1 {
			t.Errorf("position %q, source %v: logged %q, want one line with %q", c.position, c.source, out, c.want)
		}
	}
}

// An unknown command is refused once, exit 2, with the usage and, when it
// looks like a misspelling, the command meant (issue 33, item 5:
// suggestions, without a CLI library).
func TestUnknownCommandSuggests(t *testing.T) {
	for cmd, want := range map[string]string{
		"valdate": `sluice: unknown command "valdate": did you mean validate?`,
		"wroker":  `sluice: unknown command "wroker": did you mean worker?`,
		"xyzzy":   `sluice: unknown command "xyzzy"` + "\n",
	} {
		var out, errOut bytes.Buffer
		code := Main([]string{cmd}, &out, &errOut)
		if code != 2 || !strings.HasPrefix(errOut.String(), want) || strings.Count(errOut.String(), "unknown command") != 1 || !strings.Contains(errOut.String(), "config-reference") {
			t.Errorf("%s: exit %d, stderr %q: want 2 and %q, then the usage", cmd, code, errOut.String(), want)
		}
	}
	for _, cmd := range commands { // the suggestions are Main's commands
		var out, errOut bytes.Buffer
		if Main([]string{cmd, "-h"}, &out, &errOut); strings.Contains(errOut.String(), "unknown command") {
			t.Errorf("%s, suggested, is no command: %s", cmd, errOut.String())
		}
	}
}
