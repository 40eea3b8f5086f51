package integration

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/cmd/sluice/app"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildSluice builds the sluice binary once per test run.
func buildSluice(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "sluice")
		out, err := exec.Command("go", "build", "-o", builtBin, "github.com/sluicecdc/sluice/cmd/sluice").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// process is a `sluice run --only` child; it is also a *running so that the
// harness's waits notice when it exits by itself.
type process struct {
	*running
	cmd    *exec.Cmd
	exited chan struct{}
	out    *syncWriter // the process's stdout and stderr
}

// logText returns what the process has written so far.
func (p *process) logText() string {
	p.out.mu.Lock()
	defer p.out.mu.Unlock()
	return p.out.w.String()
}

func startProcess(t *testing.T, bin, only, cfg string) *process {
	t.Helper()
	cmd := exec.Command(bin, "run", "--config", cfg, "--only", only)
	cmd.Dir = filepath.Dir(cfg)
	var logBuf bytes.Buffer
	lw := &syncWriter{w: &logBuf}
	cmd.Stdout, cmd.Stderr = lw, lw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{running: &running{p: &engine.Pipeline{Name: only + " process"}, cancel: func() {}, errc: make(chan error, 1)},
		cmd: cmd, exited: make(chan struct{}), out: lw}
	go func() {
		err := cmd.Wait()
		if err == nil {
			err = errors.New("exited")
		}
		lw.mu.Lock()
		tail := logBuf.String()
		lw.mu.Unlock()
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		p.errc <- fmt.Errorf("%s process: %w; log tail:\n%s", only, err, tail)
		close(p.exited)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// kill sends SIGKILL and waits for the exit.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// stopProcess sends SIGTERM and checks the process drains and exits 0.
func (p *process) stopProcess(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(90 * time.Second):
		t.Fatal("process did not stop within 90s of SIGTERM")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("process exited %d after SIGTERM: %v", code, <-p.errc)
	}
}

// Fault servers: a MariaDB, a PostgreSQL and a RocketMQ name server and
// two master brokers of their own, which fault tests may stop and start
// without disturbing other tests. SLUICE_IT_FAULT_ROOT and
// SLUICE_IT_FAULT_PORT_BASE (default 29000: MariaDB at base+306,
// MySQL 9.7 source +307, target +308 and scratch +309, PostgreSQL +432, name server +876, brokers +1911 and +2011; keep them
// below the kernel's ephemeral ports, 32768, which outgoing connections
// take) move them, e.g. for two engineers on one machine;
// SLUICE_IT_FAULT_STORE moves the RocketMQ store.
var (
	faultRoot        = cmp.Or(os.Getenv("SLUICE_IT_FAULT_ROOT"), "/tmp/sluice-faults")
	faultPortBase    = faultPortBaseFromEnv()
	faultMariaDBPort = strconv.Itoa(faultPortBase + 306)
	faultPGPort      = strconv.Itoa(faultPortBase + 432)
	faultNamesrvPort = strconv.Itoa(faultPortBase + 876)
	faultBrokerPort  = strconv.Itoa(faultPortBase + 1911)
	faultBrokerBPort = strconv.Itoa(faultPortBase + 2011)
	faultMySQLPort   = strconv.Itoa(faultPortBase + 307) // MySQL 9.7 source
	faultMySQLTgt    = strconv.Itoa(faultPortBase + 308) // MySQL 9.7 target
	faultMySQLScr    = strconv.Itoa(faultPortBase + 309) // MySQL 9.7 scratch (started with the others)
	faultStore       = cmp.Or(os.Getenv("SLUICE_IT_FAULT_STORE"), "/dev/shm/sluice-faults-store")
)

func faultPortBaseFromEnv() int {
	if n, err := strconv.Atoi(os.Getenv("SLUICE_IT_FAULT_PORT_BASE")); err == nil && n > 0 {
		return n
	}
	return 29000
}

func faultEnv() []string {
	// SLUICE_ROCKETMQ_PROBE=0: no probe topic and message at each broker
	// start. The probe runs mqadmin twice, each a JVM whose send times out
	// after 3 s; on a loaded machine every try timed out for two minutes
	// after a restart and the start failed (CI, December 7), although the
	// main servers' probe had already proved the same brokers. The tests
	// here wait for their pipelines, which ride out a slow broker.
	// SLUICE_START_TIMEOUT=300: a restarted broker registered only after
	// the default 120 s at a load average of 85-95 (December 7); the test
	// waits for it rather than fail on the machine's pace.
	return append(os.Environ(), "SLUICE_ROCKETMQ_PROBE=0", "SLUICE_START_TIMEOUT=300", "SLUICE_SERVERS_ROOT="+faultRoot, "SLUICE_ROCKETMQ_NAMESRV_PORT="+faultNamesrvPort,
		"SLUICE_ROCKETMQ_BROKER_PORT="+faultBrokerPort, "SLUICE_ROCKETMQ_BROKER_B_PORT="+faultBrokerBPort, "SLUICE_ROCKETMQ_STORE="+faultStore,
		"SLUICE_MARIADB_PORT="+faultMariaDBPort, "SLUICE_POSTGRES_PORT="+faultPGPort,
		"SLUICE_MYSQL97_PORT="+faultMySQLPort, "SLUICE_MYSQL97_TARGET_PORT="+faultMySQLTgt, "SLUICE_MYSQL97_SCRATCH_PORT="+faultMySQLScr)
}

// faultServer starts a fault server (rocketmq, mariadb or postgres) with
// the project's script (a no-op when it runs already), stops it when the
// test ends, and returns the fault servers' env; want is a key it must set.
func faultServer(t *testing.T, kind, want string) env {
	t.Helper()
	faultServers(t, "start", kind)
	t.Cleanup(func() { faultServers(t, "stop", kind) })
	fe, err := readEnvFile(filepath.Join(faultRoot, "servers.env"))
	if err != nil || fe[want] == "" {
		t.Fatalf("fault %s started but %s/servers.env has no %s: %v", kind, faultRoot, want, err)
	}
	return fe
}

// faultBroker is faultServer for RocketMQ.
func faultBroker(t *testing.T) env { return faultServer(t, "rocketmq", "SLUICE_ROCKETMQ_NAMESRV") }

// faultServers runs scripts/servers.sh start|stop KIND on the fault servers.
func faultServers(t *testing.T, verb, kind string) {
	t.Helper()
	cmd := exec.Command("../scripts/servers.sh", verb, kind)
	cmd.Env = faultEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("servers.sh %s %s (fault servers): %v\n%s", verb, kind, err, out)
	}
}

// startWorker runs the pipeline under a engine.Worker, as `sluice run`
// does, so that it is restarted after retriable failures. The returned
// running reports a failure only once the worker gives up.
func startWorker(t *testing.T, configPath string) *running {
	t.Helper()
	r, _ := startWorkerTask(t, configPath, "")
	return r
}

// startWorkerTask is startWorker for the task that only names ("source",
// "sink" or "" for both, as `sluice run --only`), also returning a reader
// of the worker's status of it.
func startWorkerTask(t *testing.T, configPath, only string) (*running, func() engine.TaskStatus) {
	t.Helper()
	r, w, name := startWorkerOf(t, configPath, only)
	return r, func() engine.TaskStatus {
		st, _ := w.Status(name)
		return st
	}
}

// startWorkerOf is startWorkerTask returning the worker and the task's
// name, for a test that reads more than its status (its pipeline, its
// metrics).
func startWorkerOf(t *testing.T, configPath, only string) (*running, *engine.Worker, string) {
	t.Helper()
	cfg, err := plugin.LoadConfig(configPath)
	if err != nil {
		t.Fatal(err)
	}
	level := slog.LevelWarn
	_ = level.UnmarshalText([]byte(os.Getenv("SLUICE_TEST_LOG")))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	w := engine.NewWorker(log)
	w.RestartBackoff = 500 * time.Millisecond
	w.MaxRestartBackoff = 5 * time.Second
	w.Add(cfg.Name, nil, func(ctx context.Context) (*engine.Pipeline, error) { return app.Build(ctx, cfg, only, log) })
	if err := w.Start(context.Background(), cfg.Name); err != nil {
		t.Fatal(err)
	}
	r := &running{p: &engine.Pipeline{Name: cfg.Name}, errc: make(chan error, 1)}
	stopped := make(chan struct{})
	r.cancel = func() {
		close(stopped)
		err := w.StopAll(context.Background())
		if st, _ := w.Status(cfg.Name); err == nil && st.State == engine.StateFailed {
			err = errors.New(st.LastError)
		}
		r.errc <- err
	}
	go func() {
		select {
		case <-w.Ended():
			select {
			case <-stopped:
				return // a requested stop, reported by cancel
			default:
			}
			st, _ := w.Status(cfg.Name)
			r.errc <- fmt.Errorf("worker gave up: %s", st.LastError)
		case <-stopped:
		}
	}()
	return r, w, cfg.Name
}

// ourGoroutines returns the stacks of goroutines (other than the caller's)
// that mention this module's code.
func ourGoroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:goruntime.Stack(buf, true)]
	self := make([]byte, 64)
	self = self[:goruntime.Stack(self, false)]
	selfHeader, _, _ := strings.Cut(string(self), " [")
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.HasPrefix(g, selfHeader+" [") {
			continue
		}
		if strings.Contains(g, "github.com/sluicecdc/sluice/") && !strings.Contains(g, "testing.tRunner") {
			out = append(out, g)
		}
	}
	return out
}
