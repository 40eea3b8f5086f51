package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// incrementalSnapshotWhileStreaming: rows written before the pipeline ever
// ran (snapshot: never) reach the target only through an incremental
// snapshot, triggered by an execute-snapshot row in the signal table while
// three workloads insert, update and delete orders and items in
// and around the chunks being read (chunks of 100 rows). The target ends equal
// to the source, and no order's amount ever goes back (the regression
// watcher): a chunk row older than a change between its watermarks is
// dropped, and chunk rows never overtake later changes.
func incrementalSnapshotWhileStreaming(t *testing.T, k *kit) {
	db, my := k.db, k.src
	mustExec(t, my, "CREATE TABLE "+db+".sluice_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT NULL)")
	grantee := fmt.Sprintf("'%s'@'%s'", k.e["SLUICE_MYSQL_CDC_USER"], k.e["SLUICE_MYSQL_HOST"])
	mustExec(t, my, "GRANT INSERT, DELETE ON "+db+".sluice_signal TO "+grantee)
	t.Cleanup(func() { my.Exec("REVOKE INSERT, DELETE ON " + db + ".sluice_signal FROM " + grantee) })
	w := newWorkload(my, db)
	w.run(t, 3000) // before sluice ever ran: only the incremental snapshot brings these rows
	path := k.config(t)
	editConfig(t, path, "  snapshot: never\n", "  snapshot: never\n  snapshot_chunk: 100\n  signal_table: "+db+".sluice_signal\n")
	r := startPipeline(t, path)
	k.waitStreaming(t, r)
	assertNoRegressions := k.watchRegressions(t)
	mustExec(t, my, "INSERT INTO "+db+`.sluice_signal VALUES ('adhoc-1', 'execute-snapshot', ?)`,
		fmt.Sprintf(`{"data-collections": ["%s.orders", "%s.items"], "type": "incremental"}`, db, db))
	// while the snapshot runs: three writers, each on orders of its own
	// (so that each order's amount still only grows in commit order)
	ws := []*workload{w, newWorkload(my, db), newWorkload(my, db)}
	for i, x := range ws[1:] {
		x.rnd, x.nextID = rand.New(rand.NewSource(int64(i+7))), int64(i+1)*1_000_000
	}
	errs := make(chan error, len(ws))
	for _, x := range ws {
		go func() { errs <- x.runErr(2000) }()
	}
	for range ws {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	k.waitEqual(t, r)
	w.run(t, 500)
	k.waitEqual(t, r)
	r.stop(t)
	assertNoRegressions(t)
	if n := k.targetCount("sluice_signal", ""); n > 0 {
		t.Fatalf("the signal table's rows reached the target (%d)", n)
	}
}

// TestIncrementalSnapshotSignalsOverREST: `sluice run --rest` takes
// Debezium's snapshot signals on POST /connectors/{name}/signals, with no
// row written by the user: an execute-snapshot of t and of a table created
// while the pipeline runs, then pause-snapshot, whose effect the status
// (incremental_snapshot: table, rows, paused) and /metrics show, then
// resume-snapshot, after which both tables are whole in the target and
// the status counts them done. A signal the source would ignore is refused
// with 400, an unknown connector with 404.
func TestIncrementalSnapshotSignalsOverREST(t *testing.T) {
	bin := buildSluice(t)
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	name, my, pg := faultTables(t, e)
	mustExec(t, my, "CREATE TABLE `"+name+"`.sluice_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT NULL)")
	grantee := fmt.Sprintf("'%s'@'%s'", e["SLUICE_MYSQL_CDC_USER"], e["SLUICE_MYSQL_HOST"])
	mustExec(t, my, "GRANT INSERT, DELETE ON `"+name+"`.sluice_signal TO "+grantee)
	t.Cleanup(func() { my.Exec("REVOKE INSERT, DELETE ON `" + name + "`.sluice_signal FROM " + grantee) })
	mustExec(t, my, "INSERT INTO `"+name+"`.t SELECT seq, seq FROM (SELECT a.n * 100 + b.n * 10 + c.n + 2 AS seq FROM "+
		"(SELECT 0 n UNION SELECT 1 UNION SELECT 2 UNION SELECT 3 UNION SELECT 4 UNION SELECT 5 UNION SELECT 6 UNION SELECT 7 UNION SELECT 8 UNION SELECT 9) a, "+
		"(SELECT 0 n UNION SELECT 1 UNION SELECT 2 UNION SELECT 3 UNION SELECT 4 UNION SELECT 5 UNION SELECT 6 UNION SELECT 7 UNION SELECT 8 UNION SELECT 9) b, "+
		"(SELECT 0 n UNION SELECT 1 UNION SELECT 2 UNION SELECT 3 UNION SELECT 4 UNION SELECT 5 UNION SELECT 6 UNION SELECT 7 UNION SELECT 8 UNION SELECT 9) c) s")
	// t: keys 1..1001, read in chunks of 10 (about 100 chunks)
	r := startSluice(t, bin, faultConfig(t, e, name, "embedded", fmt.Sprintf("  snapshot: never\n  snapshot_chunk: 10\n  signal_table: %s.sluice_signal\n  snapshot_new_tables: false\n", name)))
	r.waitState(t, name, "RUNNING")
	mustExec(t, my, "CREATE TABLE `"+name+"`.late (id INT PRIMARY KEY, v INT)")
	mustExec(t, my, "INSERT INTO `"+name+"`.late VALUES (1, 1), (2, 2), (3, 3)")

	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(r.rest+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	signals := "/connectors/" + name + "/signals"
	if code, body := post(signals, fmt.Sprintf(`{"type": "execute-snapshot", "data": {"data-collections": ["%s.t"], "type": "blocking"}}`, name)); code != http.StatusBadRequest || !strings.Contains(body, "incremental") {
		t.Fatalf("a blocking snapshot: %d %s, want 400 saying only incremental ones are supported", code, body)
	}
	if code, body := post("/connectors/nope/signals", `{"type": "pause-snapshot"}`); code != http.StatusNotFound {
		t.Fatalf("an unknown connector: %d %s, want 404", code, body)
	}
	code, body := post(signals, fmt.Sprintf(`{"id": "rest-1", "type": "execute-snapshot", "data": {"data-collections": ["%s.t", "%s.late"], "type": "incremental"}}`, name, name))
	if code != http.StatusAccepted || !strings.Contains(body, `"rest-1"`) {
		t.Fatalf("execute-snapshot: %d %s, want 202 with its id", code, body)
	}
	if code, body := post(signals, `{"type": "pause-snapshot"}`); code != http.StatusAccepted {
		t.Fatalf("pause-snapshot: %d %s", code, body)
	}
	type incr struct {
		Running      bool     `json:"running"`
		Paused       bool     `json:"paused"`
		Signal       string   `json:"signal"`
		Table        string   `json:"table"`
		Tables       int64    `json:"tables"`
		TablesDone   int64    `json:"tables_done"`
		Rows         int64    `json:"rows"`
		TableRows    int64    `json:"table_rows"`
		TablePercent *float64 `json:"table_percent"`
	}
	status := func() incr {
		t.Helper()
		code, body := r.get(t, "/connectors/"+name+"/status")
		var st struct {
			Incr *incr `json:"incremental_snapshot"`
		}
		if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
			t.Fatalf("status: %d %s %v", code, body, err)
		}
		if st.Incr == nil {
			return incr{}
		}
		return *st.Incr
	}
	var st incr
	deadline := time.Now().Add(90 * time.Second)
	for st = status(); !st.Paused; st = status() {
		if time.Now().After(deadline) || st.Signal != "" && !st.Running {
			t.Fatalf("status never showed the snapshot paused: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !st.Running || st.Signal != "rest-1" || st.Table != name+".t" || st.Tables != 2 || st.TablesDone != 0 || st.Rows >= 1001 || st.TableRows != st.Rows ||
		st.TablePercent != nil && (*st.TablePercent < 0 || *st.TablePercent > 100) {
		t.Fatalf("status while paused: %+v, want table %s.t of 2 running, fewer than its 1001 rows", st, name)
	}
	if _, metrics := r.get(t, "/metrics"); !strings.Contains(metrics, fmt.Sprintf("sluice_incremental_snapshot_paused{pipeline=%q} 1", name)) ||
		!strings.Contains(metrics, fmt.Sprintf("sluice_incremental_snapshot_tables{pipeline=%q} 2", name)) {
		t.Fatalf("/metrics does not show the paused snapshot of 2 tables:\n%s", metrics)
	}
	if code, body := post(signals, `{"type": "resume-snapshot", "data": null}`); code != http.StatusAccepted {
		t.Fatalf("resume-snapshot: %d %s", code, body)
	}
	waitRows(t, r, my, pg, name, 1001)
	for st = status(); st.Running; st = status() {
		if time.Now().After(deadline.Add(time.Minute)) {
			t.Fatalf("the snapshot never ended: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st.TablesDone != 2 || st.Rows != 1004 || st.Table != "" {
		t.Fatalf("status at the end: %+v, want 2 tables done, 1004 rows", st)
	}
	var late int
	if err := pg.QueryRow(`SELECT count(*) FROM "` + name + `".late`).Scan(&late); err != nil || late != 3 {
		t.Fatalf("the table created while running has %d rows in the target (%v), want 3", late, err)
	}
	// the source cannot write the signal: 500 with the server's reason;
	// a stopped pipeline: 409
	mustExec(t, my, "REVOKE INSERT, DELETE ON `"+name+"`.sluice_signal FROM "+grantee)
	if code, body := post(signals, `{"type": "pause-snapshot"}`); code != http.StatusInternalServerError || !strings.Contains(body, "grant INSERT") {
		t.Fatalf("a signal the source may not write: %d %s, want 500 saying so", code, body)
	}
	req, _ := http.NewRequest("PUT", r.rest+"/connectors/"+name+"/stop", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("stop: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	r.waitState(t, name, "STOPPED")
	if code, body := post(signals, `{"type": "pause-snapshot"}`); code != http.StatusConflict || !strings.Contains(body, "not running") {
		t.Fatalf("a signal to a stopped pipeline: %d %s, want 409", code, body)
	}
	if code := r.stop(t); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	out := r.output()
	if strings.Count(out, "incremental snapshot of table started") != 2 || strings.Count(out, "incremental snapshot of table done") != 2 ||
		!strings.Contains(out, "table="+name+".t rows=1001") {
		t.Errorf("want a log line as each table starts and one as it ends with its rows:\n%s", out)
	}
}

// newTableKilledMidSnapshot: a table with 30,000 rows that starts being
// captured while the pipeline streams (RENAME TABLE from a database
// outside include) is snapshotted incrementally by itself
// (snapshot_new_tables, on by default), in chunks of 500 rows, while two
// writers update, insert and delete its rows and three workloads write
// orders and items. Once the saved position carries the snapshot's
// progress after a chunk of the new table (the snapshot is mid-way) and a
// third of its rows are in the target, the `sluice run` process reading
// the source is killed with SIGKILL and started again. No row of orders
// or of the new table ever goes back (the regression watchers) and the
// target ends equal to the source, the new table's rows from before the
// RENAME included: the progress saved with the position resumes the
// snapshot (without it, the restarted source would have no snapshot to
// resume, and the rows after the saved chunk would never arrive). With a
// signal table from MariaDB, in read-only mode (GTID watermarks) from
// MySQL 9.7.
func newTableKilledMidSnapshot(t *testing.T, k *kit) {
	const rows = 30000
	db, my := k.db, k.src
	stash := db + "_stash"
	mustExec(t, my, "CREATE DATABASE "+stash)
	t.Cleanup(func() { my.Exec("DROP DATABASE IF EXISTS " + stash) })
	mustExec(t, my, "CREATE TABLE "+stash+".big LIKE "+db+".orders")
	mustExec(t, my, "INSERT INTO "+stash+".big SELECT seq, CONCAT('c', seq), 100.00, 'new', '2024-01-01 00:00:00', NULL FROM "+seqRows(rows))
	k.tables = append(k.tables, "big") // its topic is consumed
	cfg := k.config(t)
	extra := "  snapshot: never\n  snapshot_chunk: 500\n"
	if k.source != mysql97 {
		mustExec(t, my, "CREATE TABLE "+db+".sluice_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT NULL)")
		grantee := fmt.Sprintf("'%s'@'%s'", k.e["SLUICE_MYSQL_CDC_USER"], k.e["SLUICE_MYSQL_HOST"])
		mustExec(t, my, "GRANT INSERT, DELETE ON "+db+".sluice_signal TO "+grantee)
		t.Cleanup(func() { my.Exec("REVOKE INSERT, DELETE ON " + db + ".sluice_signal FROM " + grantee) })
		extra += "  signal_table: " + db + ".sluice_signal\n"
	}
	editConfig(t, cfg, "  snapshot: never\n", extra)

	bin := buildSluice(t)
	var started []*process
	start := func() *process {
		only := ""
		if k.transport != "embedded" {
			only = "source"
		}
		p := startProcess(t, bin, only, cfg)
		started = append(started, p)
		return p
	}
	t.Cleanup(func() {
		if t.Failed() {
			logProcesses(t, started)
		}
	})
	src := start()
	watched := src.running // where the target's rows come from
	if k.transport != "embedded" {
		sink := startProcess(t, bin, "sink", cfg)
		started = append(started, sink)
		watched = sink.running
	}
	k.waitStreaming(t, watched)
	assertOrders := k.watchRegressions(t)

	// writers until stopped: three workloads on orders and items, and,
	// once big is renamed in, two on big that only ever increase an
	// amount, insert rows above its greatest key and delete rows
	ctx, stopWriters := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	defer func() { stopWriters(); wg.Wait() }()
	for i := range 3 {
		x := newWorkload(my, db)
		x.rnd, x.nextID = rand.New(rand.NewSource(int64(i+7))), int64(i+1)*1_000_000
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := x.runErr(20); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	mustExec(t, my, "RENAME TABLE "+stash+".big TO "+db+".big")
	var bigWrites atomic.Int64
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(int64(i + 11)))
			next := (i + 1) * 10_000_000
			for ctx.Err() == nil {
				var err error
				switch r := rnd.Intn(10); {
				case r < 8:
					_, err = my.ExecContext(ctx, "UPDATE "+db+".big SET amount = amount + 1, status = 'paid' WHERE id = ?", 1+rnd.Intn(rows))
				case r < 9:
					next++
					_, err = my.ExecContext(ctx, "INSERT INTO "+db+".big VALUES (?, 'w', 1.00, 'new', '2024-01-02 00:00:00', 'inserted')", next)
				default:
					_, err = my.ExecContext(ctx, "DELETE FROM "+db+".big WHERE id = ?", 1+rnd.Intn(rows))
				}
				if err != nil && ctx.Err() == nil {
					errs <- fmt.Errorf("writer of big: %w", err)
					return
				}
				bigWrites.Add(1)
			}
		}()
	}
	failIfWriterFailed := func() {
		t.Helper()
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}

	// the watcher goes on big once the sink created it (a row can only go
	// back after the restart)
	schematest.Eventually(t, 2*time.Minute, 10*time.Millisecond, "the target never got the table renamed into the capture", func() (bool, string) {
		watched.failIfStopped(t)
		return k.targetCount("big", "") >= 0, ""
	})
	assertBig := watchRegressionsOf(t, k.dst, k.schema, "big")

	// kill once the saved position has the snapshot of big mid-way and a
	// third of its rows are in the target
	posFile := filepath.Join(k.dir, "positions", db+".position")
	saved := func() *binlog.IncrementalProgress {
		b, err := os.ReadFile(posFile)
		if err != nil {
			return nil
		}
		p, err := binlog.ParsePosition(b)
		if err != nil {
			t.Fatalf("saved position %s: %v", b, err)
		}
		return p.Incremental
	}
	midway := func(p *binlog.IncrementalProgress) bool {
		return p != nil && len(p.Tables) > 0 && p.Tables[0] == db+".big" && len(p.Key) > 0
	}
	schematest.Eventually(t, 2*time.Minute, 5*time.Millisecond, "the snapshot of big never got a third of the way", func() (bool, string) {
		src.failIfStopped(t)
		watched.failIfStopped(t)
		failIfWriterFailed()
		p, n := saved(), k.targetCount("big", "")
		return midway(p) && n >= rows/3, fmt.Sprintf("saved progress %+v, %d rows of big in the target", p, n)
	})
	src.kill(t)
	p := saved()
	if !midway(p) || p.ID != "sluice-new-tables" {
		t.Fatalf("after the kill the saved position has the progress %+v, want the snapshot sluice-new-tables of %s.big after a chunk", p, db)
	}
	t.Logf("killed with the snapshot saved after key %q, %d rows of big in the target, %d writes of big", p.Key, k.targetCount("big", ""), bigWrites.Load())

	src = start()
	if k.transport == "embedded" {
		watched = src.running
	}
	// the writers go on until the resumed snapshot is done
	schematest.Eventually(t, 2*time.Minute, 20*time.Millisecond, "the resumed snapshot never finished", func() (bool, string) {
		src.failIfStopped(t)
		watched.failIfStopped(t)
		failIfWriterFailed()
		p := saved()
		return p == nil, fmt.Sprintf("saved progress %+v", p)
	})
	stopWriters()
	wg.Wait()
	failIfWriterFailed()
	bigQueries := [][2]string{{
		"SELECT id, customer, CAST(amount AS CHAR), status, DATE_FORMAT(updated_at, '%Y-%m-%d %H:%i:%s.%f'), note FROM " + db + ".big ORDER BY id",
		`SELECT id, customer, amount::text, status, to_char(updated_at, 'YYYY-MM-DD HH24:MI:SS.US'), note FROM "` + k.schema + `"."big" ORDER BY id`,
	}}
	waitSame(t, watched, func() (bool, string, error) {
		return compareQueries(my, k.dst, append(workloadQueries(db), bigQueries...))
	})
	for _, p := range started {
		if p.cmd.ProcessState == nil {
			p.stopProcess(t)
		}
	}
	assertOrders(t)
	assertBig(t)
}
