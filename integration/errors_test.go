package integration

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// TestFaultClassesEndTheProcess is the proof of the error vocabulary: the
// sluice binary, started against each class of fault on the real servers,
// ends (or reports) the way the error table of docs/operations.md says, with the state,
// /health, exit code and message it promises.
func TestFaultClassesEndTheProcess(t *testing.T) {
	bin := buildSluice(t)
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")

	// fatal: the pipeline is FAILED, /health 503 with the message, the API
	// stays up; a signal then ends the process with exit code 1.
	failedRun := func(t *testing.T, r *sluiceRun, name string, want ...string) {
		t.Helper()
		st := r.waitState(t, name, "FAILED")
		code, body := r.get(t, "/health")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, `"failed"`) {
			t.Fatalf("/health = %d %s, want 503 failed", code, body)
		}
		for _, w := range want {
			if !strings.Contains(st.LastError, w) || !strings.Contains(body, w) {
				t.Errorf("last error %q (health %s) does not say %q", st.LastError, body, w)
			}
		}
		if code, metrics := r.get(t, "/metrics"); code != 200 || !strings.Contains(metrics, fmt.Sprintf("sluice_failed{pipeline=%q} 1", name)) || !strings.Contains(metrics, fmt.Sprintf("sluice_up{pipeline=%q} 0", name)) {
			t.Errorf("metrics do not show the failure:\n%s", metrics)
		}
		if code := r.stop(t); code != 1 {
			t.Errorf("exit code %d after a fatal error, want 1", code)
		}
		for _, w := range want {
			if !strings.Contains(r.output(), w) {
				t.Errorf("the process output does not say %q", w)
			}
		}
		if strings.Contains(r.output(), "restarting it") {
			t.Errorf("a fatal error was retried:\n%s", r.output())
		}
		if n := strings.Count(r.output(), want[0]); n != 1 { // one line per event
			t.Errorf("the process output says %q %d times, want once:\n%s", want[0], n, r.output())
		}
		assertNoRepeatedPrefix(t, "last error", st.LastError)
		assertNoRepeatedPrefix(t, "output", r.output())
	}

	t.Run("purged position", func(t *testing.T) {
		name, _, _ := faultTables(t, e)
		cfg := faultConfig(t, e, name, "embedded", "")
		pos := binlog.EncodePosition(binlog.Position{Flavor: e["SLUICE_MYSQL_FLAVOR"], File: "nosuch-bin.000999", Pos: 4})
		saved, _ := json.Marshal(map[string]any{"sluice_position": 1, "source": string(pos), "seq": 1})
		if err := os.WriteFile(filepath.Join(filepath.Dir(cfg), "positions", name+".position"), saved, 0o600); err != nil {
			t.Fatal(err)
		}
		failedRun(t, startSluice(t, bin, cfg), name, "position no longer available", "snapshot the tables again")
	})

	for _, transport := range []string{"embedded", "rocketmq"} {
		t.Run("permanent sink error/"+transport, func(t *testing.T) {
			if transport == "rocketmq" {
				e = servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN", "SLUICE_ROCKETMQ_NAMESRV")
			}
			name, my, pg := faultTables(t, e)
			mustExec(t, pg, `CREATE SCHEMA "`+name+`"`)
			mustExec(t, pg, `CREATE TABLE "`+name+`".t (id INT PRIMARY KEY, v INT CONSTRAINT v_below_100 CHECK (v < 100))`)
			r := startSluice(t, bin, faultConfig(t, e, name, transport, ""))
			r.waitState(t, name, "RUNNING")
			waitRows(t, r, my, pg, name, 1) // streaming: the row before the bad one arrives
			mustExec(t, my, "INSERT INTO `"+name+"`.t VALUES (2, 500)")
			failedRun(t, r, name, "v_below_100")
		})
	}

	t.Run("end of an initial_only snapshot", func(t *testing.T) {
		name, my, pg := faultTables(t, e)
		for i := 2; i <= 50; i++ {
			mustExec(t, my, fmt.Sprintf("INSERT INTO `%s`.t VALUES (%d, %d)", name, i, i))
		}
		r := startSluice(t, bin, faultConfig(t, e, name, "embedded", "  snapshot: initial_only\n"))
		code := r.wait(t, 90*time.Second)
		if code != 0 || !strings.Contains(r.output(), "pipeline finished") {
			t.Fatalf("exit code %d, want 0 with \"pipeline finished\":\n%s", code, r.output())
		}
		var n int
		if err := pg.QueryRow(`SELECT count(*) FROM "` + name + `".t`).Scan(&n); err != nil || n != 50 {
			t.Fatalf("target has %d rows (%v), want 50", n, err)
		}
		if strings.Contains(r.output(), "restarting it") {
			t.Fatalf("the finished snapshot was restarted:\n%s", r.output())
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		name, _, _ := faultTables(t, e)
		cfg := faultConfig(t, e, name, "embedded", "")
		editConfig(t, cfg, "password: ${SLUICE_IT_CDC_PASSWORD}", "password: not-the-password-42")
		r := startSluice(t, bin, cfg)
		failedRun(t, r, name, "access denied", "check the source user and password")
		if strings.Contains(r.output(), "not-the-password-42") {
			t.Error("the password appears in the output")
		}
	})

	t.Run("statement-logged DML", func(t *testing.T) {
		name, my, pg := faultTables(t, e)
		r := startSluice(t, bin, faultConfig(t, e, name, "embedded", ""))
		r.waitState(t, name, "RUNNING")
		waitRows(t, r, my, pg, name, 1)
		conn, err := my.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, q := range []string{"SET SESSION binlog_format=STATEMENT", "UPDATE `" + name + "`.t SET v = 7 WHERE id = 1"} {
			if _, err := conn.ExecContext(context.Background(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		failedRun(t, r, name, "UPDATE on "+name+".t was logged as a statement", "binlog_format=ROW")
	})

	t.Run("binlog_format=STATEMENT", func(t *testing.T) {
		port := os.Getenv("SLUICE_MYSQL_SCRATCH_PORT")
		if port == "" {
			schematest.NoServer(t, "SLUICE_MYSQL_SCRATCH_PORT is not set: start a throwaway MariaDB whose globals tests may change (SLUICE_SERVERS_ROOT=/tmp/sluice-hist SLUICE_MARIADB_PORT=23307 scripts/servers.sh start mariadb) and set it")
		}
		se := env{}
		for k, v := range e {
			se[k] = v
		}
		se["SLUICE_MYSQL_PORT"] = port
		schematest.LockScratch(t, port, true)
		name, my, _ := faultTables(t, se)
		mustExec(t, my, "SET GLOBAL binlog_format=STATEMENT")
		t.Cleanup(func() { _, _ = my.Exec("SET GLOBAL binlog_format=ROW") })
		r := startSluice(t, bin, faultConfig(t, se, name, "embedded", ""))
		st := r.waitState(t, name, "FAILED")
		_, _ = my.Exec("SET GLOBAL binlog_format=ROW") // as soon as possible: the server is shared
		if !strings.Contains(st.LastError, "binlog_format is STATEMENT; set binlog_format=ROW") {
			t.Errorf("last error %q", st.LastError)
		}
		if code, _ := r.get(t, "/health"); code != http.StatusServiceUnavailable {
			t.Errorf("/health %d, want 503", code)
		}
		if code := r.stop(t); code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		if strings.Contains(r.output(), "restarting it") {
			t.Errorf("a fatal error was retried:\n%s", r.output())
		}
		assertNoRepeatedPrefix(t, "last error", st.LastError)
		assertNoRepeatedPrefix(t, "output", r.output())
	})

	t.Run("second process of a pipeline", func(t *testing.T) {
		name, _, _ := faultTables(t, e)
		cfg := faultConfig(t, e, name, "embedded", "")
		first := startSluice(t, bin, cfg)
		first.waitState(t, name, "RUNNING")
		second := startSluice(t, bin, cfg)
		failedRun(t, second, name, "another sluice process runs this pipeline", name+".lock")
		if st := first.waitState(t, name, "RUNNING"); st.LastError != "" {
			t.Errorf("the first process: %+v", st)
		}
		if code := first.stop(t); code != 0 {
			t.Errorf("first process exit code %d after SIGTERM, want 0", code)
		}
	})

	// A server never reached (issue 28, problem 5: a wrong source port, a
	// target or name server down at the first start) is retried
	// start_retries times (default 3), not ready meanwhile (/health 503
	// "starting"), then FAILED with its error, and the process exits
	// non-zero. Before, it was retried for ever with /health 200 and exit 0.
	downConfig := func(t *testing.T, down, name string) string {
		t.Helper()
		switch down {
		case "source":
			cfg := faultConfig(t, e, name, "embedded", "")
			editConfig(t, cfg, "  port: "+e["SLUICE_MYSQL_PORT"]+"\n", "  port: 1\n")
			return cfg
		case "target":
			cfg := faultConfig(t, e, name, "embedded", "")
			editConfig(t, cfg, "dsn: "+e["SLUICE_PG_DSN"], "dsn: postgres://sluice@127.0.0.1:1/sluice?sslmode=disable")
			return cfg
		}
		return faultConfig(t, env{"SLUICE_ROCKETMQ_NAMESRV": "127.0.0.1:1"}.with(e), name, "rocketmq", "")
	}
	for _, down := range []string{"source", "target", "broker"} {
		t.Run(down+" down at start", func(t *testing.T) {
			name, _, _ := faultTables(t, e)
			r := startSluice(t, bin, downConfig(t, down, name))
			st := r.waitState(t, name, "RESTARTING")
			if !strings.Contains(st.LastError, "127.0.0.1:1") {
				t.Errorf("last error %q does not name the %s", st.LastError, down)
			}
			if code, body := r.get(t, "/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"starting"`) {
				t.Errorf("/health %d %s before the pipeline ever ran, want 503 starting", code, body)
			}
			st = r.waitState(t, name, "FAILED")
			if !strings.Contains(st.LastError, "127.0.0.1:1") || !strings.Contains(st.LastError, "4 attempts failed before it ever ran (start_retries 3)") {
				t.Errorf("last error %q: want the attempts and the %s", st.LastError, down)
			}
			if code, body := r.get(t, "/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"failed"`) {
				t.Errorf("/health %d %s after it failed, want 503 failed", code, body)
			}
			if code := r.stop(t); code != 1 {
				t.Errorf("exit code %d after SIGTERM of a pipeline that never ran, want 1", code)
			}
			if n := strings.Count(r.output(), "restarting it"); n != 3 {
				t.Errorf("%d retries logged, want 3:\n%s", n, r.output())
			}
			assertNoRepeatedPrefix(t, "last error", st.LastError)
			assertNoRepeatedPrefix(t, "output", r.output())
		})
	}

	t.Run("stopped before it ever ran", func(t *testing.T) {
		name, _, _ := faultTables(t, e)
		cfg := downConfig(t, "source", name)
		editConfig(t, cfg, "name: ", "start_retries: -1\nname: ") // no bound: it is still trying when stopped
		r := startSluice(t, bin, cfg)
		r.waitState(t, name, "RESTARTING")
		if code, body := r.get(t, "/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"starting"`) {
			t.Errorf("/health %d %s before the pipeline ever ran, want 503 starting", code, body)
		}
		if code := r.stop(t); code != 1 || !strings.Contains(r.output(), "stopped before it ever ran") {
			t.Errorf("exit code %d after SIGTERM, want 1 saying it never ran:\n%s", code, r.output())
		}
	})

	t.Run("REST stop, offsets, restart", func(t *testing.T) {
		name, my, pg := faultTables(t, e)
		r := startSluice(t, bin, faultConfig(t, e, name, "embedded", ""))
		r.waitState(t, name, "RUNNING")
		waitRows(t, r, my, pg, name, 1)
		call := func(method, path, body string) int {
			t.Helper()
			code, b := r.call(t, method, path, body)
			if code >= 300 {
				t.Fatalf("%s %s: %d %s", method, path, code, b)
			}
			return code
		}
		call("PUT", "/connectors/"+name+"/stop", "")
		r.waitState(t, name, "STOPPED")
		_, body := r.get(t, "/connectors/"+name+"/offsets")
		var off struct {
			Offsets []struct {
				Partition map[string]string `json:"partition"`
				Offset    json.RawMessage   `json:"offset"`
			} `json:"offsets"`
		}
		if err := json.Unmarshal([]byte(body), &off); err != nil || len(off.Offsets) != 1 || off.Offsets[0].Partition["server"] != name || len(off.Offsets[0].Offset) < 2 {
			t.Fatalf("offsets %s: %v; want Kafka Connect's {\"offsets\": [{\"partition\": {\"server\": %q}, \"offset\": {...}}]}", body, err, name)
		}
		call("PATCH", "/connectors/"+name+"/offsets", body) // what GET answered, only while stopped
		time.Sleep(500 * time.Millisecond)
		select {
		case <-r.exited:
			t.Fatalf("the process ended after a REST stop (exit code %d)", r.cmd.ProcessState.ExitCode())
		default:
		}
		call("POST", "/connectors/"+name+"/restart", "")
		r.waitState(t, name, "RUNNING")
		mustExec(t, my, "INSERT INTO `"+name+"`.t VALUES (2, 2)")
		waitRows(t, r, my, pg, name, 2)
		if code := r.stop(t); code != 0 {
			t.Errorf("exit code %d after SIGTERM, want 0", code)
		}
	})

	t.Run("misspelled nested key", func(t *testing.T) {
		name, _, _ := faultTables(t, e)
		cfg := faultConfig(t, e, name, "embedded", "  mask:\n    - columns: \""+name+".t.v\"\n      kind: hash\n      slat: pepper\n")
		r := startSluice(t, bin, cfg)
		if code := r.wait(t, 30*time.Second); code != 2 || !strings.Contains(r.output(), "slat") {
			t.Fatalf("exit code %d, want 2 naming the key slat:\n%s", code, r.output())
		}
		assertNoRepeatedPrefix(t, "output", r.output())
	})
}

// with returns e with the settings of base it does not set itself.
func (e env) with(base env) env {
	out := env{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range e {
		out[k] = v
	}
	return out
}

// faultTables makes a source database with table t (one row) and returns
// its name (also the pipeline's and the target schema's) and connections.
func faultTables(t *testing.T, e env) (string, *sql.DB, *sql.DB) {
	t.Helper()
	name := uniqueName("fc")
	my := openDB(t, "mysql", e.mysqlDSN(""))
	pg := openDB(t, "postgres", e["SLUICE_PG_DSN"])
	mustExec(t, my, "CREATE DATABASE `"+name+"`")
	t.Cleanup(func() {
		my.Exec("DROP DATABASE IF EXISTS `" + name + "`")
		pg.Exec(`DROP SCHEMA IF EXISTS "` + name + `" CASCADE`)
	})
	mustExec(t, my, "CREATE TABLE `"+name+"`.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, my, "INSERT INTO `"+name+"`.t VALUES (1, 1)")
	return name, my, pg
}

// faultConfig writes the config of a pipeline over table t; source is
// appended to the source section. Snapshot initial gets row 1 across.
func faultConfig(t *testing.T, e env, name, transport, source string) string {
	t.Helper()
	if source == "" {
		source = "  snapshot: initial\n"
	}
	tr := "  type: embedded\n"
	if transport == "rocketmq" {
		tr = fmt.Sprintf("  type: rocketmq\n  name_servers: [%q]\n  topic_prefix: %s\n  group: %s\n  topics: [%s]\n",
			e["SLUICE_ROCKETMQ_NAMESRV"], name, name+"_sink", rocketmq.TopicName(name, name, "t", "table"))
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf("name: %s\nsource:\n  type: %s\n  host: %s\n  port: %s\n  user: %s\n  password: ${SLUICE_IT_CDC_PASSWORD}\n  server_id: %d\n  include: [\"%s.*\"]\n%stransport:\n%ssink:\n  type: postgres\n  dsn: %s\npositions:\n  type: file\n  dir: %s\n",
		name, e["SLUICE_MYSQL_FLAVOR"], e["SLUICE_MYSQL_HOST"], e["SLUICE_MYSQL_PORT"], e["SLUICE_MYSQL_CDC_USER"],
		serverID(), name, source, tr, e["SLUICE_PG_DSN"], filepath.Join(dir, "positions"))
	t.Setenv("SLUICE_IT_CDC_PASSWORD", e["SLUICE_MYSQL_CDC_PASSWORD"])
	if err := os.MkdirAll(filepath.Join(dir, "positions"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sluiceRun is a `sluice run --rest` child process.
type sluiceRun struct {
	cmd    *exec.Cmd
	out    *syncWriter
	rest   string
	exited chan struct{}
}

func startSluice(t *testing.T, bin, cfg string) *sluiceRun {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "run", "--config", cfg, "--rest", addr)
	cmd.Dir = filepath.Dir(cfg)
	r := &sluiceRun{cmd: cmd, out: &syncWriter{w: &bytes.Buffer{}}, rest: "http://" + addr, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.out, r.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = cmd.Process.Kill()
			<-r.exited
		}
		if t.Failed() {
			t.Logf("sluice output:\n%s", r.output())
		}
	})
	return r
}

func (r *sluiceRun) output() string {
	r.out.mu.Lock()
	defer r.out.mu.Unlock()
	return r.out.w.String()
}

func (r *sluiceRun) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(r.rest + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type taskStatus struct {
	State     string `json:"state"`
	LastError string `json:"last_error"`
}

// waitState polls the pipeline's status until it is in state; it fails
// when the process exits first or after 90 s.
func (r *sluiceRun) waitState(t *testing.T, name, state string) taskStatus {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var st taskStatus
	for time.Now().Before(deadline) {
		select {
		case <-r.exited:
			t.Fatalf("sluice exited (code %d) before the pipeline was %s (last %+v)", r.cmd.ProcessState.ExitCode(), state, st)
		default:
		}
		if code, body := r.get(t, "/connectors/"+name+"/status"); code == 200 {
			st = taskStatus{}
			_ = json.Unmarshal([]byte(body), &st)
			if st.State == state {
				return st
			}
			if st.State == "FAILED" {
				t.Fatalf("pipeline FAILED, want %s: %s", state, st.LastError)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("pipeline not %s after 90s (last %+v)", state, st)
	return st
}

// stop sends SIGTERM and returns the exit code.
func (r *sluiceRun) stop(t *testing.T) int {
	t.Helper()
	select {
	case <-r.exited:
		t.Fatalf("sluice exited (code %d) before it was stopped", r.cmd.ProcessState.ExitCode())
	default:
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return r.wait(t, 90*time.Second)
}

// wait waits for the process to exit by itself and returns its exit code.
func (r *sluiceRun) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-r.exited:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("sluice did not exit within %s", d)
		return -1
	}
}

// waitRows waits until the target table holds n rows.
func waitRows(t *testing.T, r *sluiceRun, my, pg *sql.DB, name string, n int) {
	t.Helper()
	// A generous bound, as waitForOr's: CI runs six test processes at
	// once on two cores, and an incremental snapshot of 1,001 rows in
	// chunks of 10 took over 60 s there.
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var got int
		if err := pg.QueryRow(`SELECT count(*) FROM "` + name + `".t`).Scan(&got); err == nil && got >= n {
			return
		}
		select {
		case <-r.exited:
			t.Fatalf("sluice exited while waiting for %d rows", n)
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("target has not %d rows after 3 minutes", n)
}
