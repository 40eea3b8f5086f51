package integration

import (
	"database/sql"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
)

// brokerOutageRows is how many orders the broker outage test moves: enough
// that both brokers' queues get some.
const brokerOutageRows = 40

// TestFaultBrokerOutageKeepsKeysOnTheirQueues (issue 27, problem 1) is the
// reproducer of a RocketMQ broker outage, on the fault servers' two
// brokers (faultBroker), once per message format (json and packed, two
// pipelines through the same outage): 40 orders at amount 1 in the target;
// the sink stops; every order goes to 2 and the source publishes it; kill
// -9 of broker-a; every order goes to 3 while broker-a is down; the sink
// starts again; broker-a restarts. The source must keep each key on its
// queue: while broker-a is down its records wait in the running source
// task (no restart: the task's pipeline is the same one from start to end),
// which reports the outage in its status (unreachable_brokers) and metrics
// (sluice_unreachable_brokers) and is not caught up, and once it is back
// every order ends at 3 with no write moving one back. Before, the rebuilt
// publisher hashed the keys over broker-b's queues alone: broker-a's stored
// amounts of 2 were applied after the 3s sent to broker-b, and stayed;
// later, the source task restarted again and again while broker-a was down,
// each time resending every record since its position.
func TestFaultBrokerOutageKeepsKeysOnTheirQueues(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	fe := faultBroker(t)
	if fe["SLUICE_ROCKETMQ_BROKER_B"] == "" {
		t.Fatal("the fault RocketMQ has no second broker (SLUICE_ROCKETMQ_BROKER_B)")
	}
	e2 := maps.Clone(e)
	e2["SLUICE_ROCKETMQ_NAMESRV"] = fe["SLUICE_ROCKETMQ_NAMESRV"]

	type side struct {
		format       string
		db           string
		my, pg       *sql.DB
		cfg          string
		source, sink *running
		sourceWorker *runtime.Worker
		sourceName   string
		sourcePipe   *runtime.Pipeline // the source task's one pipeline: no restart
		sourceStatus func() runtime.TaskStatus
		noRegression func(*testing.T)
	}
	var sides []*side
	for _, format := range []string{"json", "packed"} {
		s := &side{format: format}
		s.db, s.my, s.pg = sourceAndTarget(t, e, "it_bo_"+format[:1])
		s.cfg = writeConfig(t, e2, s.db, "rocketmq")
		if format == "packed" {
			editConfig(t, s.cfg, "  queues: 4\n", "  queues: 4\n  format: packed\n")
		}
		s.source, s.sourceWorker, s.sourceName = startWorkerOf(t, s.cfg, "source")
		s.sourceStatus = func() runtime.TaskStatus {
			st, _ := s.sourceWorker.Status(s.sourceName)
			return st
		}
		s.sink, _ = startWorkerTask(t, s.cfg, "sink")
		sides = append(sides, s)
	}
	update := func(amount int) {
		for _, s := range sides {
			mustExec(t, s.my, fmt.Sprintf("UPDATE %s.orders SET amount = %d WHERE id > 0", s.db, amount))
		}
	}
	// countAt counts s's target orders (the canary, id 0, aside) at amount.
	countAt := func(s *side, amount int) int {
		var n int
		if err := s.pg.QueryRow(fmt.Sprintf(`SELECT count(*) FROM "%s".orders WHERE id > 0 AND amount = %d`, s.db, amount)).Scan(&n); err != nil {
			return -1
		}
		return n
	}
	for _, s := range sides {
		waitStreaming(t, s.my, s.pg, s.db, s.sink)
		s.sourcePipe = onlyPipeline(s.sourceWorker)
		var vals []string
		for id := 1; id <= brokerOutageRows; id++ {
			vals = append(vals, fmt.Sprintf("(%d, 'c%d', 1, 'new', '2024-01-01 00:00:00', NULL)", id, id))
		}
		mustExec(t, s.my, "INSERT INTO "+s.db+".orders VALUES "+strings.Join(vals, ", "))
	}
	for _, s := range sides {
		waitFor(t, s.sink, func() bool { return countAt(s, 1) == brokerOutageRows }, s.format+": the target never had every order at amount 1")
		s.noRegression = watchRegressions(t, s.pg, s.db)
		s.sink.stop(t)
	}

	update(2)
	for _, s := range sides {
		waitFor(t, s.source, func() bool { return caughtUp(s.sourceStatus()) }, s.format+": the source never caught up after the update to 2")
	}
	down := time.Now()
	killFaultBrokerA(t)
	t.Logf("broker-a killed (kill -9)")
	update(3)
	for _, s := range sides {
		waitFor(t, s.source, func() bool {
			return slices.ContainsFunc(s.sourceStatus().UnreachableBrokers, func(u runtime.Unreachable) bool { return u.Broker == "broker-a" })
		}, s.format+": the source task never reported broker-a as unreachable in its status")
		var m strings.Builder
		runtime.WritePrometheus(&m, s.sourceWorker.Pipelines())
		if !regexp.MustCompile(`(?m)^sluice_unreachable_brokers\{[^}]*\} 1$`).MatchString(m.String()) {
			t.Errorf("%s: the metrics do not show one unreachable broker:\n%s", s.format, m.String())
		}
	}
	// The source waits in place: RUNNING, not caught up (its records for
	// broker-a wait), the outage in its status, and the same pipeline.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		for _, s := range sides {
			st := s.sourceStatus()
			if st.State != runtime.StateRunning || caughtUp(st) || len(st.UnreachableBrokers) == 0 || onlyPipeline(s.sourceWorker) != s.sourcePipe {
				t.Fatalf("%s: while broker-a is down the source task is %s, caught up %v, unreachable %+v, last error %q, restarted %v; want it RUNNING, waiting for broker-a",
					s.format, st.State, caughtUp(st), st.UnreachableBrokers, st.LastError, onlyPipeline(s.sourceWorker) != s.sourcePipe)
			}
		}
	}
	for _, s := range sides {
		st := s.sourceStatus()
		t.Logf("%s: source waiting for broker-a: state %s, unreachable %+v", s.format, st.State, st.UnreachableBrokers)
	}
	for _, s := range sides {
		s.sink, _ = startWorkerTask(t, s.cfg, "sink")
	}
	// The sinks apply what broker-b holds; broker-a's keys stay at 1 or 2.
	for _, s := range sides {
		waitFor(t, s.sink, func() bool { return countAt(s, 3) > 0 }, s.format+": the sink never applied broker-b's queues")
	}
	faultServers(t, "start", "rocketmq")
	t.Logf("broker-a back after %s down", time.Since(down).Round(time.Millisecond))
	up := time.Now()
	deadline := time.Now().Add(2 * time.Minute)
	for _, s := range sides {
		for countAt(s, 3) != brokerOutageRows && time.Now().Before(deadline) {
			s.source.failIfStopped(t)
			s.sink.failIfStopped(t)
			time.Sleep(200 * time.Millisecond)
		}
		if n := countAt(s, 3); n != brokerOutageRows {
			rows, _ := dump(s.pg, fmt.Sprintf(`SELECT id, amount FROM "%s".orders WHERE id > 0 AND amount <> 3 ORDER BY id`, s.db))
			t.Errorf("%s: %d of %d orders never reached amount 3 after broker-a came back: %v", s.format, brokerOutageRows-n, brokerOutageRows, rows)
			continue
		}
		t.Logf("%s: every order at amount 3, %s after broker-a was back", s.format, time.Since(up).Round(time.Millisecond))
	}
	if t.Failed() {
		for _, s := range sides {
			s.noRegression(t)
		}
		return
	}
	// Stored messages of broker-a applied late would show now.
	time.Sleep(3 * time.Second)
	for _, s := range sides {
		if n := countAt(s, 3); n != brokerOutageRows {
			t.Errorf("%s: %d of %d orders at amount 3 a moment later", s.format, n, brokerOutageRows)
		}
		if st := s.sourceStatus(); st.State != runtime.StateRunning || len(st.UnreachableBrokers) > 0 || onlyPipeline(s.sourceWorker) != s.sourcePipe {
			t.Errorf("%s: after broker-a's return the source task is %s, unreachable %+v, restarted %v; want it RUNNING as it was, with no outage",
				s.format, st.State, st.UnreachableBrokers, onlyPipeline(s.sourceWorker) != s.sourcePipe)
		}
		s.noRegression(t)
		s.sink.stop(t)
		s.source.stop(t)
	}
}

// TestFaultBrokerKillDuringBarrier (issue 27, item 3): broker-a of the fault
// servers' two (faultBroker) is killed (kill -9) right after two barriers
// are written, a TRUNCATE of t and an ALTER TABLE of orders (schema_changes:
// apply), each copied to every queue of its topic on both brokers, while a
// workload writes orders and items; rows of t follow the TRUNCATE while
// broker-a is down, and it starts again. Round after round t ends with
// exactly the rows written after its TRUNCATE, the added column holds the
// source's values, the workload's tables end equal to the source, and no
// order ever moved back.
func TestFaultBrokerKillDuringBarrier(t *testing.T) {
	e := maps.Clone(servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN"))
	e["SLUICE_ROCKETMQ_NAMESRV"] = faultBroker(t)["SLUICE_ROCKETMQ_NAMESRV"]
	k := makeKitOn(t, pair{transport: "rocketmq", target: "postgres"}, e, "it_bb", true)
	k.sink = "  schema_changes: apply\n"
	k.createTable(t, "t", "id BIGINT PRIMARY KEY, v BIGINT NULL")
	r := startWorker(t, k.config(t))
	k.waitStreaming(t, r)
	assertNoRegressions := k.watchRegressions(t)
	t.Cleanup(func() {
		if t.Failed() {
			// CI of December 7: 2 orders rows the source had deleted
			// stayed in the target after round 1; which queues they hash
			// to, and those queues' progress, tell lost deletes from a
			// queue never consumed again.
			k.logStaleByQueue(t)
		}
	})
	w := newWorkload(k.src, k.db)
	for round := 1; round <= 2; round++ {
		written := make(chan struct{})
		go func() { defer close(written); w.run(t, 1500) }()
		base := round * 1000
		k.insertRange(t, "t", base+1, base+200, round)
		mustExec(t, k.src, "TRUNCATE TABLE "+k.db+".t")
		mustExec(t, k.src, fmt.Sprintf("ALTER TABLE %s.orders ADD COLUMN c%d INT NOT NULL DEFAULT %d", k.db, round, round))
		down := time.Now()
		killFaultBrokerA(t)
		k.insertRange(t, "t", base+201, base+400, round)
		faultServers(t, "start", "rocketmq")
		t.Logf("round %d: broker-a killed after the barriers and back after %s", round, time.Since(down).Round(time.Millisecond))
		<-written
		// Not beside the workload: its updates of many orders would
		// deadlock with the workload's.
		mustExec(t, k.src, fmt.Sprintf("UPDATE %s.orders SET c%d = id %% 97", k.db, round))
		k.sameRows(t, r, "t", "id, v", 3*time.Minute)
		k.waitEqual(t, r)
		k.sameRows(t, r, "orders", fmt.Sprintf("id, c%d", round), 2*time.Minute)
	}
	r.stop(t)
	assertNoRegressions(t)
}

// caughtUp tells whether a source task's status says it is caught up.
func caughtUp(st runtime.TaskStatus) bool { return st.CaughtUp != nil && *st.CaughtUp }

// onlyPipeline is the pipeline of w's one task (nil between restarts).
func onlyPipeline(w *runtime.Worker) *runtime.Pipeline {
	if ps := w.Pipelines(); len(ps) > 0 {
		return ps[0]
	}
	return nil
}

// killFaultBrokerA ends the fault servers' broker-a with kill -9 and waits
// until it is gone; `faultServers(t, "start", "rocketmq")` starts it again.
func killFaultBrokerA(t *testing.T) {
	t.Helper()
	killPidFile(t, filepath.Join(faultRoot, "rocketmq", "broker.pid"), "broker-a")
}
