package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// TestKafkaConnect runs one Kafka Connect worker (standalone, from the jars
// `scripts/servers.sh start kafka` fetches; JsonConverter with schemas for
// key and value) and on it a connector per subtest:
//
//   - jdbc_sink: sluice's Kafka topics (MariaDB source, the Kafka
//     transport's Debezium JSON with schemas) are read by Debezium's JDBC
//     sink into PostgreSQL: snapshot rows, inserts, updates (NULLs among
//     them), deletes, a TRUNCATE and an ALTER, over several column types
//     and a composite key, and the target equals the source;
//   - debezium_source: sluice's sink reads the topics that Debezium's own
//     MySQL connector (3.6.1) writes from the MySQL 9.7 server (that
//     connector no longer reads MariaDB: it asks for SHOW BINARY LOG
//     STATUS, which MariaDB refuses): records without sluice's identity
//     header get one derived from Debezium's source block, and the target
//     equals the source after a snapshot, inserts, updates, deletes (with
//     Debezium's tombstones) and a transaction of several statements on the
//     same rows, on four partitions.
//
// Needs MariaDB, MySQL 9.7, PostgreSQL, Kafka, the jars and java.
func TestKafkaConnect(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_MYSQL97_PORT", "SLUICE_PG_DSN", "SLUICE_KAFKA_BROKERS",
		"SLUICE_KAFKA_CONNECT_LIB", "SLUICE_KAFKA_CONNECT_PLUGINS")
	c := startConnect(t, e)
	// One after the other (their pipeline configs set the environment);
	// the worker starts while the first one prepares its databases.
	t.Run("jdbc_sink", func(t *testing.T) { connectJDBCSink(t, c) })
	t.Run("debezium_source", func(t *testing.T) { connectDebeziumSource(t, c) })
}

// connectJDBCSink is TestKafkaConnect/jdbc_sink.
func connectJDBCSink(t *testing.T, c *connectRun) {
	t0 := time.Now()
	k := newKit(t, pair{transport: "kafka", target: "postgres"}, "kcjdbc")
	e := k.e
	// Source and target tables: the JDBC sink writes into tables made here,
	// so that every value's type is known; it adds the column of the ALTER
	// below itself (schema.evolution=basic).
	k.createTable(t, "items", itemsColumns)
	k.createTable(t, "pairs", "a VARCHAR(20), b INT, w VARCHAR(20), PRIMARY KEY (a, b)")
	mustExec(t, k.dst, `CREATE SCHEMA "`+k.schema+`"`)
	mustExec(t, k.dst, `CREATE TABLE "`+k.schema+`".items (id int PRIMARY KEY, v int, name varchar(40), price numeric(12,2), qty bigint, `+
		`ratio double precision, born date, "at" timestamp(6), small smallint, raw bytea, note text)`)
	mustExec(t, k.dst, `CREATE TABLE "`+k.schema+`".pairs (a varchar(20), b int, w varchar(20), PRIMARY KEY (a, b))`)
	items := func(from, to int) string { return insertItems(k.db, from, to) }
	mustExec(t, k.src, items(1, 151))
	mustExec(t, k.src, "INSERT INTO "+k.db+".pairs VALUES ('x', 1, 'a'), ('x', 2, 'b'), ('y', 1, 'c')")

	// sluice's source side only, with a snapshot: the Kafka topics are the
	// interface under test.
	cfg := k.config(t)
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, bytes.Replace(b, []byte("  snapshot: never\n"), []byte("  snapshot: initial\n"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	// Under a worker, as `sluice run --only source`: the changes below
	// come while the snapshot runs, and their TRUNCATE makes MariaDB fail
	// a snapshot read of that table with 1412 ("Table definition has
	// changed") when it comes first, which the worker retries (the
	// snapshot resumes at a new consistent point).
	src, _ := startWorkerTask(t, cfg, "source")
	t.Cleanup(func() { src.stop(t) })

	// Streaming changes: inserts, updates (NULLs, new values of every
	// type), deletes, a TRUNCATE and rows after it.
	mustExec(t, k.src, items(151, 301))
	mustExec(t, k.src, "UPDATE "+k.db+".items SET v = v + 1, name = CONCAT(name, ' upd'), price = price * 2, ratio = ratio / 4, "+
		"born = DATE_ADD(born, INTERVAL 1 YEAR), at = TIMESTAMPADD(SECOND, 1, at), raw = UNHEX('ff'), note = NULL WHERE id % 3 = 0")
	mustExec(t, k.src, "UPDATE "+k.db+".items SET v = NULL, name = NULL, price = NULL, qty = NULL, ratio = NULL, born = NULL, at = NULL, "+
		"small = NULL, raw = NULL WHERE id % 10 = 1")
	mustExec(t, k.src, "DELETE FROM "+k.db+".items WHERE id % 7 = 0")
	mustExec(t, k.src, "UPDATE "+k.db+".pairs SET w = 'bb' WHERE a = 'x' AND b = 2")
	mustExec(t, k.src, "DELETE FROM "+k.db+".pairs WHERE a = 'y'")
	mustExec(t, k.src, "TRUNCATE TABLE "+k.db+".pairs")
	mustExec(t, k.src, "INSERT INTO "+k.db+".pairs VALUES ('z', 9, 'after truncate'), ('x', 1, 'again')")
	// A schema change: its event goes to the table's topic, ahead of the
	// rows with the new column (the sink adds the column itself).
	mustExec(t, k.src, "ALTER TABLE "+k.db+".items ADD COLUMN extra VARCHAR(10)")
	mustExec(t, k.src, "UPDATE "+k.db+".items SET extra = CONCAT('e', id) WHERE id % 5 = 0")

	var topics []string
	for _, tb := range k.tables {
		topics = append(topics, kafka.TopicName(k.db, k.db, tb))
	}
	pg, err := url.Parse(e["SLUICE_PG_DSN"])
	if err != nil {
		t.Fatal(err)
	}
	pass, _ := pg.User.Password()
	name := k.db + "-jdbc"
	c.add(t, map[string]string{
		"name":                   name,
		"connector.class":        "io.debezium.connector.jdbc.JdbcSinkConnector",
		"tasks.max":              "1",
		"topics":                 strings.Join(topics, ","),
		"connection.url":         "jdbc:postgresql://" + pg.Host + pg.Path + "?" + pg.RawQuery,
		"connection.username":    pg.User.Username(),
		"connection.password":    pass,
		"insert.mode":            "upsert",
		"delete.enabled":         "true",
		"truncate.enabled":       "true",
		"primary.key.mode":       "record_key",
		"schema.evolution":       "basic",
		"collection.name.format": k.schema + ".${source.table}",
	})
	check := func() { c.failIfFailed(t, name); src.failIfStopped(t) }
	sameItems(t, k, true, check)
	sameTable(t, k, "pairs", "SELECT a, b, w FROM "+k.db+".pairs ORDER BY a, b", `SELECT a, b, w FROM "`+k.schema+`".pairs ORDER BY a, b`, check)
	t.Logf("source to Kafka to Kafka Connect's JDBC sink: equal in %s", time.Since(t0).Round(time.Millisecond))
}

// connectDebeziumSource is TestKafkaConnect/debezium_source.
func connectDebeziumSource(t *testing.T, c *connectRun) {
	t0 := time.Now()
	k := newKit(t, pair{transport: "kafka", target: "postgres", source: mysql97}, "kcdbz")
	e := k.e
	k.createTable(t, "items", itemsColumns)
	mustExec(t, k.src, insertItems(k.db, 1, 151))

	name := k.db + "-dbz"
	c.add(t, map[string]string{
		"name":                   name,
		"connector.class":        "io.debezium.connector.mysql.MySqlConnector",
		"tasks.max":              "1",
		"database.hostname":      e["SLUICE_MYSQL_HOST"],
		"database.port":          e["SLUICE_MYSQL_PORT"],
		"database.user":          e["SLUICE_MYSQL_CDC_USER"],
		"database.password":      e["SLUICE_MYSQL_CDC_PASSWORD"],
		"database.server.id":     fmt.Sprint(serverID()),
		"topic.prefix":           k.db,
		"database.include.list":  k.db,
		"include.schema.changes": "false",
		"schema.history.internal.kafka.bootstrap.servers": e["SLUICE_KAFKA_BROKERS"],
		"schema.history.internal.kafka.topic":             k.db + ".schema-history",
		"topic.creation.default.partitions":               "4",
		"topic.creation.default.replication.factor":       "1",
		// The server is shared with the other tests: no global read lock
		// (nothing changes this database's tables during the snapshot),
		// and the history holds only this database's tables.
		"snapshot.locking.mode": "none",
		"schema.history.internal.store.only.captured.databases.ddl": "true",
		"schema.history.internal.store.only.captured.tables.ddl":    "true",
	})
	sink := startPipelineOnly(t, k.config(t), "sink")
	t.Cleanup(func() { sink.stop(t) })
	check := func() { c.failIfFailed(t, name); sink.failIfStopped(t) }
	// The snapshot's rows first: what is written after they arrived comes
	// from the binlog.
	sameItems(t, k, false, check)
	t.Logf("the snapshot's rows are in the target after %s", time.Since(t0).Round(time.Millisecond))
	mustExec(t, k.src, insertItems(k.db, 151, 301))
	mustExec(t, k.src, "UPDATE "+k.db+".items SET v = v + 1, name = CONCAT(name, ' upd'), price = price * 2, ratio = ratio / 4, "+
		"born = DATE_ADD(born, INTERVAL 1 YEAR), at = TIMESTAMPADD(SECOND, 1, at), raw = UNHEX('ff'), note = NULL WHERE id % 3 = 0")
	mustExec(t, k.src, "UPDATE "+k.db+".items SET v = NULL, name = NULL, price = NULL, qty = NULL, ratio = NULL, born = NULL, at = NULL, "+
		"small = NULL, raw = NULL WHERE id % 10 = 1")
	mustExec(t, k.src, "DELETE FROM "+k.db+".items WHERE id % 7 = 0")
	// One transaction, several statements on the same rows: every event
	// of it must keep an identity of its own.
	tx, err := k.src.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"UPDATE " + k.db + ".items SET v = 1000 WHERE id IN (1, 2, 3)",
		"UPDATE " + k.db + ".items SET v = 2000 WHERE id IN (2, 3)",
		"DELETE FROM " + k.db + ".items WHERE id = 3",
		"UPDATE " + k.db + ".items SET v = 3000 WHERE id = 2",
		"INSERT INTO " + k.db + ".items (id, v) VALUES (3, 4000)",
	} {
		if _, err := tx.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	sameItems(t, k, false, check)
	t.Logf("Debezium's MySQL connector on Kafka Connect to sluice's sink: equal in %s", time.Since(t0).Round(time.Millisecond))
}

// itemsColumns are the columns of the items tables of the Kafka Connect
// tests: one of each common type.
const itemsColumns = "id INT PRIMARY KEY, v INT, name VARCHAR(40), price DECIMAL(12,2), qty BIGINT, " +
	"ratio DOUBLE, born DATE, at DATETIME(6), small TINYINT, raw VARBINARY(16), note TEXT"

// insertItems is an INSERT of the rows from to to (exclusive) into db.items.
func insertItems(db string, from, to int) string {
	var rows []string
	for i := from; i < to; i++ {
		rows = append(rows, fmt.Sprintf("(%d, %d, 'name %d ünï', %d.%02d, %d, %d.25, DATE_ADD('2024-01-01', INTERVAL %d DAY), "+
			"TIMESTAMPADD(MICROSECOND, %d, '2024-02-29 12:34:56'), %d, UNHEX('%04x00ff'), REPEAT('n', %d))",
			i, i*7, i, i, i%100, int64(i)<<33, i, i, i*1001, i%128-64, i, i%50))
	}
	return "INSERT INTO " + db + ".items (id, v, name, price, qty, ratio, born, at, small, raw, note) VALUES " + strings.Join(rows, ", ")
}

// sameItems waits until k's target items table equals the source's
// (extra: with the column extra), calling check between looks.
func sameItems(t *testing.T, k *kit, extra bool, check func()) {
	t.Helper()
	cols := ""
	if extra {
		cols = ", extra"
	}
	sameTable(t, k, "items",
		"SELECT id, v, name, price, qty, ratio, DATE_FORMAT(born, '%Y-%m-%d'), DATE_FORMAT(at, '%Y-%m-%d %H:%i:%s.%f'), small, HEX(raw), note"+cols+" FROM "+k.db+".items ORDER BY id",
		`SELECT id, v, name, price, qty, ratio, to_char(born, 'YYYY-MM-DD'), to_char("at", 'YYYY-MM-DD HH24:MI:SS.US'), small, upper(encode(raw, 'hex')), note`+cols+` FROM "`+k.schema+`".items ORDER BY id`,
		check)
}

// sameTable waits (6 minutes at most: a bound, not a speed; a loaded
// machine took 3) until query pg on k's target answers
// what query my answers on its source, calling check between looks.
func sameTable(t *testing.T, k *kit, table, my, pg string, check func()) {
	t.Helper()
	want, err := dump(k.src, my)
	if err != nil {
		t.Fatal(err)
	}
	schematest.Eventually(t, 6*time.Minute, 300*time.Millisecond, "the target's "+table+" never equalled the source's", func() (bool, string) {
		check()
		got, err := dump(k.dst, pg)
		if err != nil {
			return false, err.Error()
		}
		if slices.Equal(got, want) {
			return true, ""
		}
		return false, rowsDiff(want, got)
	})
}

// rowsDiff describes how got differs from want (dumps of ordered rows).
func rowsDiff(want, got []string) string {
	w, g := map[string]bool{}, map[string]bool{}
	for _, r := range want {
		w[r] = true
	}
	for _, r := range got {
		g[r] = true
	}
	var missing, extra []string
	for _, r := range want {
		if !g[r] {
			missing = append(missing, r)
		}
	}
	for _, r := range got {
		if !w[r] {
			extra = append(extra, r)
		}
	}
	first := func(s []string) []string { return s[:min(len(s), 3)] }
	return fmt.Sprintf("%d rows, want %d; %d missing (first %v), %d unexpected (first %v)",
		len(got), len(want), len(missing), first(missing), len(extra), first(extra))
}

// keepConnectLog, when set, is a file the Kafka Connect worker's whole log
// is written to.
var keepConnectLog = os.Getenv("SLUICE_KAFKA_CONNECT_LOG")

// connectRun is a Kafka Connect worker in standalone mode.
type connectRun struct {
	rest string // the worker's REST address
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
	done chan error
}

func (c *connectRun) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log.Write(p)
}

func (c *connectRun) logTail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return tail(c.log.String(), 6000)
}

// startConnect starts a standalone Kafka Connect worker (JsonConverter with
// schemas for key and value, offsets in a file) on e's Kafka with the
// plugins of SLUICE_KAFKA_CONNECT_PLUGINS and no connector yet (add them
// with add).
func startConnect(t *testing.T, e env) *connectRun {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		schematest.NoServer(t, "java is not on PATH: Kafka Connect needs Java 17")
	}
	// The plugin.path servers.sh fetched: Debezium's JDBC sink and MySQL
	// connector, each in a folder of its own.
	plugins := strings.Split(e["SLUICE_KAFKA_CONNECT_PLUGINS"], ",")
	for _, p := range plugins {
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			t.Fatalf("Kafka Connect plugin folder %q (SLUICE_KAFKA_CONNECT_PLUGINS): %v: `scripts/servers.sh start kafka` fetches them", p, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rest := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	worker := write("worker.properties", strings.Join([]string{
		"bootstrap.servers=" + e["SLUICE_KAFKA_BROKERS"],
		"key.converter=org.apache.kafka.connect.json.JsonConverter",
		"value.converter=org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable=true",
		"value.converter.schemas.enable=true",
		"offset.storage.file.filename=" + filepath.Join(dir, "offsets"),
		"offset.flush.interval.ms=1000",
		"plugin.path=" + strings.Join(plugins, ","),
		"listeners=http://" + rest,
		"rest.advertised.host.name=127.0.0.1",
		// Every plugin here has ServiceLoader manifests; the default
		// (hybrid_warn) also scans every class of the plugins: 30 s.
		"plugin.discovery=service_load",
	}, "\n")+"\n")
	log4j := write("log4j2.properties", "status = warn\nappender.out.type = Console\nappender.out.name = out\n"+
		"appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = [%d] %p %m (%c)%n\n"+
		"rootLogger.level = WARN\nrootLogger.appenderRef.out.ref = out\n"+
		"logger.dbz.name = io.debezium\nlogger.dbz.level = INFO\n")
	c := &connectRun{rest: rest, done: make(chan error, 1)}
	c.cmd = exec.Command("java", "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile="+log4j, "-cp", filepath.Join(e["SLUICE_KAFKA_CONNECT_LIB"], "*"),
		"org.apache.kafka.connect.cli.ConnectStandalone", worker)
	c.cmd.Stdout, c.cmd.Stderr = c, c
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start Kafka Connect: %v", err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
		if keepConnectLog != "" {
			_ = os.WriteFile(keepConnectLog, c.log.Bytes(), 0o644)
		}
		if t.Failed() {
			t.Logf("Kafka Connect's log:\n%s", c.logTail())
		}
	})
	return c
}

// call sends a request with a JSON body (nil: none) to the worker's REST
// API and returns the status and body.
func (c *connectRun) call(method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+c.rest+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// add runs the connector of props (its "name" among them) on the worker,
// once the worker serves its REST API, and deletes it when t ends.
func (c *connectRun) add(t *testing.T, props map[string]string) {
	t.Helper()
	name := props["name"]
	schematest.Eventually(t, 5*time.Minute, 200*time.Millisecond, "Kafka Connect's REST API never answered", func() (bool, string) {
		c.failIfFailed(t, "")
		code, _, err := c.call(http.MethodGet, "/", nil)
		return err == nil && code == http.StatusOK, fmt.Sprint(code, err)
	})
	code, body, err := c.call(http.MethodPut, "/connectors/"+url.PathEscape(name)+"/config", props)
	if err != nil || code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("create connector %s: %d %s %v", name, code, body, err)
	}
	t.Cleanup(func() { _, _, _ = c.call(http.MethodDelete, "/connectors/"+url.PathEscape(name), nil) })
}

// failIfFailed fails the test when the worker ended or connector name
// ("": none) or its task is FAILED (with the trace).
func (c *connectRun) failIfFailed(t *testing.T, name string) {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		t.Fatalf("Kafka Connect ended: %v", err)
	default:
	}
	if name == "" {
		return
	}
	code, body, err := c.call(http.MethodGet, "/connectors/"+url.PathEscape(name)+"/status", nil)
	var st struct {
		Connector struct{ State, Trace string }
		Tasks     []struct{ State, Trace string }
	}
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &st) != nil {
		return
	}
	if st.Connector.State == "FAILED" {
		t.Fatalf("connector %s failed: %s", name, st.Connector.Trace)
	}
	for _, task := range st.Tasks {
		if task.State == "FAILED" {
			t.Fatalf("connector %s: task failed: %s", name, task.Trace)
		}
	}
}
