package integration

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFaultBrokerRestart streams a workload through RocketMQ (a separate
// broker, see faultBroker) while the broker and its name server are stopped
// and started again. The worker restarts the failed pipeline by itself and
// the target ends equal to the source, with no row ever moved back.
func TestFaultBrokerRestart(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	fe := faultBroker(t)
	e2 := maps.Clone(e)
	e2["SLUICE_ROCKETMQ_NAMESRV"] = fe["SLUICE_ROCKETMQ_NAMESRV"]
	db, my, pg := sourceAndTarget(t, e, "it_brk")
	cfgPath := writeConfig(t, e2, db, "rocketmq")
	w := newWorkload(my, db)

	r := startWorker(t, cfgPath)
	waitStreaming(t, my, pg, db, r)
	assertNoRegressions := watchRegressions(t, pg, db)
	w.run(t, 2000)
	began := time.Now()
	faultServers(t, "stop", "rocketmq")
	t.Logf("broker and name server stopped in %s", time.Since(began).Round(time.Millisecond))
	w.run(t, 2000) // written while the broker is down
	faultServers(t, "start", "rocketmq")
	up := time.Now()
	t.Logf("broker back after %s down", up.Sub(began).Round(time.Millisecond))
	w.run(t, 1000)
	waitEqual(t, my, pg, db, r)
	t.Logf("target equal to the source %s after the broker was back", time.Since(up).Round(time.Millisecond))
	r.stop(t)
	assertNoRegressions(t)
}

// TestFaultNoGoroutineLeak starts and stops an embedded pipeline in this
// process and checks no goroutine of ours is left behind (the client
// libraries' own goroutines are not counted).
func TestFaultNoGoroutineLeak(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	db, my, pg := sourceAndTarget(t, e, "it_leak")
	cfg := writeConfig(t, e, db, "embedded")
	if left := ourGoroutines(); len(left) > 0 {
		t.Logf("goroutines of ours before the test (left by earlier tests, ignored): %d", len(left))
	}
	baseline := len(ourGoroutines())
	w := newWorkload(my, db)
	for round := range 2 {
		r := startPipeline(t, cfg)
		waitStreaming(t, my, pg, db, r)
		if len(ourGoroutines()) <= baseline {
			t.Fatal("no goroutine of the running pipeline is seen: this check could not detect a leak")
		}
		w.run(t, 300*(round+1))
		waitEqual(t, my, pg, db, r)
		r.stop(t)
	}
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if left = ourGoroutines(); len(left) <= baseline {
			return
		}
	}
	t.Fatalf("%d goroutines of sluice left after the pipeline stopped (baseline %d):\n%s", len(left), baseline, strings.Join(left, "\n\n"))
}

// TestFaultConnectionCuts runs a workload while the source's connection to
// MariaDB and the sink's connections to PostgreSQL are reset again and
// again, and each server is unreachable for a second now and then (TCP
// proxies between sluice and the servers). Nothing may be lost and no row
// may move back to an older version while sluice reconnects and replays.
func TestFaultConnectionCuts(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	db, my, pg := sourceAndTarget(t, e, "it_cut")

	myProxy := newFaultProxy(t, net.JoinHostPort(e["SLUICE_MYSQL_HOST"], e["SLUICE_MYSQL_PORT"]))
	pgURL, err := url.Parse(e["SLUICE_PG_DSN"])
	if err != nil {
		t.Fatal(err)
	}
	pgProxy := newFaultProxy(t, pgURL.Host)
	viaProxies := maps.Clone(e)
	viaProxies["SLUICE_MYSQL_HOST"], viaProxies["SLUICE_MYSQL_PORT"], _ = strings.Cut(myProxy.addr(), ":")
	pgURL.Host = pgProxy.addr()
	viaProxies["SLUICE_PG_DSN"] = pgURL.String()
	cfg := writeConfig(t, viaProxies, db, "embedded")

	r := startWorker(t, cfg)
	waitStreaming(t, my, pg, db, r)
	assertNoRegressions := watchRegressions(t, pg, db)
	stop := make(chan struct{})
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			p := myProxy
			if i%2 == 0 {
				p = pgProxy
			}
			p.cut()
			if i%7 == 0 { // unreachable for a second
				p.setDown(true)
				select {
				case <-stop:
				case <-time.After(time.Second):
				}
				p.setDown(false)
			}
		}
	}()
	// The workload goes on, in parts, until both sides had connections
	// reset and reopened: on a loaded machine the source spent a whole
	// 20,000-change workload in its reconnect backoff (each new binlog
	// connection was cut before its first event), so the sink had nothing
	// to write and PostgreSQL's connections were reset only twice (CI run
	// of December 7).
	hitEnough := func() bool {
		return myProxy.cuts.Load() >= 3 && pgProxy.cuts.Load() >= 3 && myProxy.served.Load() >= 4 && pgProxy.served.Load() >= 4
	}
	w := newWorkload(my, db)
	w.run(t, 10000)
	for part := 0; part < 20 && !hitEnough(); part++ {
		w.run(t, 1000)
		time.Sleep(time.Second) // the sink's turn to write while cuts go on
	}
	close(stop)
	<-chaosDone
	waitEqual(t, my, pg, db, r)
	r.stop(t)
	assertNoRegressions(t)
	t.Logf("MariaDB: %d connections reset, %d opened; PostgreSQL: %d reset, %d opened",
		myProxy.cuts.Load(), myProxy.served.Load(), pgProxy.cuts.Load(), pgProxy.served.Load())
	if !hitEnough() {
		t.Fatal("too few connections were reset and reopened for this test to mean anything")
	}
}

// TestFaultServerRestarts restarts the source database, and in a second
// run the target database (each on both transports; over RocketMQ, the
// fault servers' brokers), while a pipeline streams a workload (each
// on servers of its own: see faultServer). The worker restarts the
// pipeline as needed; the target must end equal to the source with no row
// moved back.
func TestFaultServerRestarts(t *testing.T) {
	for _, c := range []struct{ kind, transport string }{
		{"mariadb", "embedded"}, {"postgres", "embedded"}, {"mariadb", "rocketmq"}, {"postgres", "rocketmq"},
	} {
		kind := c.kind
		name := kind
		if c.transport != "embedded" {
			name += "-" + c.transport
		}
		t.Run(name, func(t *testing.T) {
			e := maps.Clone(servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN"))
			if c.transport == "rocketmq" {
				e["SLUICE_ROCKETMQ_NAMESRV"] = faultBroker(t)["SLUICE_ROCKETMQ_NAMESRV"]
			}
			if kind == "mariadb" {
				fe := faultServer(t, kind, "SLUICE_MYSQL_PORT")
				for _, k := range []string{"SLUICE_MYSQL_HOST", "SLUICE_MYSQL_PORT", "SLUICE_MYSQL_USER", "SLUICE_MYSQL_PASSWORD", "SLUICE_MYSQL_CDC_USER", "SLUICE_MYSQL_CDC_PASSWORD"} {
					e[k] = fe[k]
				}
			} else {
				e["SLUICE_PG_DSN"] = faultServer(t, kind, "SLUICE_PG_DSN")["SLUICE_PG_DSN"]
			}
			db, my, pg := sourceAndTarget(t, e, "it_rst")
			r := startWorker(t, writeConfig(t, e, db, c.transport))
			waitStreaming(t, my, pg, db, r)
			assertNoRegressions := watchRegressions(t, pg, db)
			w := newWorkload(my, db)
			w.run(t, 3000)
			began := time.Now()
			faultServers(t, "stop", kind)
			if kind == "postgres" {
				w.run(t, 2000) // written while the target is down
			}
			faultServers(t, "start", kind)
			t.Logf("%s down for %s", kind, time.Since(began).Round(time.Millisecond))
			up := time.Now()
			w.run(t, 2000)
			waitEqual(t, my, pg, db, r)
			t.Logf("target equal to the source %s after %s was back", time.Since(up).Round(time.Millisecond), kind)
			r.stop(t)
			assertNoRegressions(t)
		})
	}
}

// TestFaultSecondRunFencesFirst starts a pipeline whose positions live in
// PostgreSQL, then a second run of the same pipeline (a restart on another
// machine while the first is still alive): the second claims the positions,
// the first stops with ErrFenced at its next save instead of overwriting
// them, and the second keeps the target equal to the source with no row
// moved back.
func TestFaultSecondRunFencesFirst(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	db, my, pg := sourceAndTarget(t, e, "it_fence")
	cfg := writeConfig(t, e, db, "embedded")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(b), "positions:")
	table := db + "_positions"
	t.Cleanup(func() { pg.Exec("DROP TABLE IF EXISTS " + table) })
	if err := os.WriteFile(cfg, []byte(head+fmt.Sprintf("positions:\n  type: postgres\n  dsn: %s\n  table: %s\n", e["SLUICE_PG_DSN"], table)), 0o600); err != nil {
		t.Fatal(err)
	}
	first := startWorker(t, cfg)
	waitStreaming(t, my, pg, db, first)
	assertNoRegressions := watchRegressions(t, pg, db)
	w := newWorkload(my, db)
	w.run(t, 1000)
	waitEqual(t, my, pg, db, first)

	// The second run is another machine's: same pipeline and positions,
	// its own replica server_id (with the same one, the server itself would
	// evict the first reader; that is tested in binlog).
	b2, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg2 := filepath.Join(t.TempDir(), "second.yaml")
	if err := os.WriteFile(cfg2, []byte(regexp.MustCompile(`server_id: \d+`).ReplaceAllString(string(b2), "server_id: 999")), 0o600); err != nil {
		t.Fatal(err)
	}
	second := startWorker(t, cfg2)
	w.run(t, 1000)
	select {
	case err := <-first.errc:
		if err == nil || !strings.Contains(err.Error(), "took over") {
			t.Fatalf("the first run ended with %v, want the fencing error", err)
		}
		t.Logf("first run stopped: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the first run kept running after the second claimed the pipeline")
	}
	w.run(t, 1000)
	waitEqual(t, my, pg, db, second)
	second.stop(t)
	assertNoRegressions(t)
}

// The crash-safe PostgreSQL of TestFaultPostgresCrash: its own root and
// port (it is crashed on purpose), beside the fault servers' (moved with
// them by SLUICE_IT_FAULT_ROOT and SLUICE_IT_FAULT_PORT_BASE), fsync on,
// synchronous_commit off as its default (scripts/servers.sh,
// SLUICE_POSTGRES_DURABLE=1).
var (
	crashRoot   = faultRoot + "-durable"
	crashPGPort = strconv.Itoa(faultPortBase + 532)
)

// TestFaultPostgresCrash: the target PostgreSQL crashes (pg_ctl restart -m
// immediate: its processes killed, its shared memory lost) while the source
// is written and the pipeline streams, three times on the embedded
// transport, where the source position moves once the sink's commit
// returns, and twice over RocketMQ (the fault servers' brokers), where the
// consumer's offset does. The pipeline resumes by itself each time, and
// the target ends equal to the source with no row moved back: no
// acknowledged commit was lost (the sink asks for synchronous_commit
// itself).
func TestFaultPostgresCrash(t *testing.T) {
	crashEnv := append(os.Environ(), "SLUICE_SERVERS_ROOT="+crashRoot, "SLUICE_POSTGRES_PORT="+crashPGPort, "SLUICE_POSTGRES_DURABLE=1")
	script := func(verb string) {
		t.Helper()
		cmd := exec.Command("../scripts/servers.sh", verb, "postgres")
		cmd.Env = crashEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("servers.sh %s postgres (crash server): %v\n%s", verb, err, out)
		}
	}
	script("start")
	t.Cleanup(func() { script("stop") })
	ce, err := readEnvFile(filepath.Join(crashRoot, "servers.env"))
	if err != nil || ce["SLUICE_PG_DURABLE"] != "on" {
		t.Fatalf("crash server: %s/servers.env says durable %q (%v)", crashRoot, ce["SLUICE_PG_DURABLE"], err)
	}
	data := ce["SLUICE_PG_DATA"]
	crash := func(t *testing.T) {
		t.Helper()
		args := []string{filepath.Join(ce["SLUICE_PG_BIN"], "pg_ctl"), "-D", data, "-l", filepath.Join(filepath.Dir(data), "postgres.log"), "-m", "immediate", "-w", "restart"}
		if os.Geteuid() == 0 {
			args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
		}
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, c := range []struct {
		transport string
		crashes   int
	}{{"embedded", 3}, {"rocketmq", 2}} {
		t.Run(c.transport, func(t *testing.T) {
			e := maps.Clone(servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN"))
			e["SLUICE_PG_DSN"] = ce["SLUICE_PG_DSN"]
			if c.transport == "rocketmq" {
				e["SLUICE_ROCKETMQ_NAMESRV"] = faultBroker(t)["SLUICE_ROCKETMQ_NAMESRV"]
			}
			db, my, pg := sourceAndTarget(t, e, "it_crash")
			r := startWorker(t, writeConfig(t, e, db, c.transport))
			waitStreaming(t, my, pg, db, r)
			assertNoRegressions := watchRegressions(t, pg, db)
			w := newWorkload(my, db)
			for round := range c.crashes {
				written := make(chan struct{})
				go func() { defer close(written); w.run(t, 2000) }()
				time.Sleep(500 * time.Millisecond)
				began := time.Now()
				crash(t)
				t.Logf("crash %d: PostgreSQL back after %s", round+1, time.Since(began).Round(time.Millisecond))
				<-written
			}
			waitEqual(t, my, pg, db, r)
			r.stop(t)
			assertNoRegressions(t)
		})
	}
}
