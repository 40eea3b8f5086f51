package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// keepConformance, when set, is a directory the test writes both sides' events to.
var keepConformance = os.Getenv("SLUICE_DEBEZIUM_KEEP")

// conformanceSentinel is the table the test writes last: both sides stop
// after its event.
const conformanceSentinel = "zz_end"

// TestDebeziumConformance runs Debezium 3.4.0's embedded MariaDB connector
// (scripts/debezium-fixture, default options) and sluice's binlog source with
// the converter's defaults on the same database and binlog: the snapshot
// and the streaming part of testdata/matrix/matrix.sql. Every event pairs
// up (per topic, in order); every differing field (schema or payload, key or
// value) is reported as path, Debezium's value and sluice's, and the test
// fails on any not in testdata/debezium/differences.yaml. A second run of
// sluice with Debezium's option values (where a switch exists) must leave
// only the differences that have no switch.
//
// The subtest mysql97 does the same with Debezium's MySQL connector on the
// MySQL 9.7 source and testdata/matrix/matrix-mysql.sql; the differences
// marked flavors: [mysql] (or none) apply there.
//
// Needs Java 17 and Maven (the fixture is built by
// scripts/debezium-fixture/build.sh, offline when ~/.m2 has it). In CI a
// missing java or mvn fails the test.
func TestDebeziumConformance(t *testing.T) {
	t.Run("mariadb", func(t *testing.T) {
		conformance(t, servers(t, "SLUICE_MYSQL_PORT", "SLUICE_MYSQL_CDC_USER"), "matrix.sql")
	})
	t.Run(mysql97, func(t *testing.T) {
		conformance(t, servers(t, "SLUICE_MYSQL97_PORT", "SLUICE_MYSQL97_CDC_USER").withMySQL97(), "matrix-mysql.sql")
	})
}

// conformance compares Debezium's connector of e's flavor and sluice on the
// matrix file.
func conformance(t *testing.T, e env, file string) {
	flavor := e["SLUICE_MYSQL_FLAVOR"]
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			schematest.NoServer(t, "%s is not on PATH: the Debezium conformance test needs Java 17 and Maven", tool)
		}
	}
	t0 := time.Now()
	cp := buildDebeziumFixture(t)
	t.Logf("fixture built in %s", time.Since(t0).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	db := uniqueName("dbzm")
	my := openDB(t, "mysql", e.mysqlDSN(""))
	mustExec(t, my, "CREATE DATABASE "+quoteMy(db)+" CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
	t.Cleanup(func() { my.Exec("DROP DATABASE IF EXISTS " + quoteMy(db)) })
	snap, stream := matrixFileStatements(t, file)
	execMatrix(t, my, db, snap)

	work := t.TempDir()
	dbz := startDebezium(ctx, t, e, cp, db, work)
	// sluice's defaults; and Debezium's values for every option sluice
	// defaults differently (the "switch" of each documented difference),
	// which must leave only the differences that have no switch.
	dbzOpts := converter.DefaultOptions()
	dbzOpts.BigintUnsignedMode, dbzOpts.OmitTransaction = converter.BigintLong, true
	variants := []*conformanceRun{
		startConformanceSluice(ctx, t, e, db, "defaults", converter.DefaultOptions(), nil),
		startConformanceSluice(ctx, t, e, db, "debezium-options", dbzOpts, []string{"t"}),
	}
	dbz.waitSnapshot(t)
	for _, v := range variants {
		v.waitSnapshot(t)
	}
	execMatrix(t, my, db, append(stream,
		"CREATE TABLE "+conformanceSentinel+" (id INT PRIMARY KEY)",
		"INSERT INTO "+conformanceSentinel+" VALUES (1)"))
	dbzEvents := dbz.wait(t)
	for _, v := range variants {
		got := v.wait(t)
		if keepConformance != "" {
			writeEvents(t, filepath.Join(keepConformance, "debezium.jsonl"), dbzEvents)
			writeEvents(t, filepath.Join(keepConformance, "sluice-"+v.name+".jsonl"), got)
		}
		diffs := compareEventStreams(dbzEvents, got, db)
		allowed := loadDifferences(t).of(flavor)
		if v.name != "defaults" {
			allowed = allowed.withoutSwitch()
		}
		if keepConformance != "" {
			var b strings.Builder
			for _, d := range diffs {
				id := "UNDOCUMENTED"
				if e := allowed.explains(d); e != nil {
					id = e.ID
				}
				fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\t%d\n", id, d.Stream, d.Op, d.Path, d.Debezium+"\t"+d.Sluice, d.Count)
			}
			if err := os.WriteFile(filepath.Join(keepConformance, "diffs-"+v.name+".tsv"), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var unexplained []fieldDiff
		for _, d := range diffs {
			if allowed.explains(d) == nil {
				unexplained = append(unexplained, d)
			}
		}
		t.Logf("%s: %d Debezium events, %d sluice events, %d differing fields (%d documented)",
			v.name, len(dbzEvents), len(got), len(diffs), len(diffs)-len(unexplained))
		for i, d := range unexplained {
			if i == 200 {
				t.Errorf("... and %d more", len(unexplained)-i)
				break
			}
			t.Errorf("%s", d)
		}
	}
	t.Logf("conformance run took %s", time.Since(t0).Round(time.Millisecond))
}

// buildDebeziumFixture builds the fixture and returns its class path.
func buildDebeziumFixture(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join("..", "scripts", "debezium-fixture", "build.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/debezium-fixture/build.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// wireEvent is one change event as key and value JSON (key "null" when none).
type wireEvent struct {
	Key   json.RawMessage `json:"key"`
	Value json.RawMessage `json:"value"`
}

type debeziumRun struct {
	out  string
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan error
}

func startDebezium(ctx context.Context, t *testing.T, e env, cp, db, work string) *debeziumRun {
	t.Helper()
	r := &debeziumRun{out: filepath.Join(work, "debezium.jsonl"), log: &bytes.Buffer{}, done: make(chan error, 1)}
	serverID := strconv.Itoa(1_000_000 + rand.IntN(1_000_000))
	args := []string{"-cp", cp, "sluice.fixture.Capture",
		e["SLUICE_MYSQL_HOST"], e["SLUICE_MYSQL_PORT"], e["SLUICE_MYSQL_CDC_USER"], e["SLUICE_MYSQL_CDC_PASSWORD"], db,
		r.out, filepath.Join(work, "dbz-state"), "until:" + conformanceSentinel, "180",
		"database.server.id=" + serverID, "include.schema.changes=true",
		// Its snapshot takes FLUSH TABLES WITH READ LOCK, waiting at most
		// this long (default 10 s) for the statements running then; on a
		// busy shared server it then falls back to table locks, which the
		// CDC account lacks (CI run of December 7).
		"snapshot.lock.timeout.ms=300000"}
	if e["SLUICE_MYSQL_FLAVOR"] == "mysql" {
		args = append(args, "connector.class=io.debezium.connector.mysql.MySqlConnector")
	} else {
		// Debezium 3.4's DDL parser stops the connector at INET4 and INET6: leave that
		// table out of it (the history then keeps only captured tables' DDL).
		args = append(args, "table.exclude.list="+db+".inets", "schema.history.internal.store.only.captured.tables.ddl=true")
	}
	r.cmd = exec.CommandContext(ctx, "java", args...)
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start Debezium: %v", err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// waitSnapshot waits for the snapshot's last row: from then on Debezium
// streams from the snapshot's binlog position.
func (r *debeziumRun) waitSnapshot(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(r.out)
		if bytes.Contains(b, []byte(`"snapshot":"last"`)) {
			return
		}
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("Debezium ended before its snapshot: %v\n%s", err, tail(r.log.String(), 4000))
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("Debezium's snapshot did not end in 3 minutes\n%s", tail(r.log.String(), 4000))
}

func (r *debeziumRun) wait(t *testing.T) []wireEvent {
	t.Helper()
	if err := <-r.done; err != nil {
		t.Fatalf("Debezium: %v\n%s", err, tail(r.log.String(), 4000))
	}
	r.done <- nil
	b, err := os.ReadFile(r.out)
	if err != nil {
		t.Fatal(err)
	}
	var evs []wireEvent
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev wireEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("Debezium output: %v", err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// conformanceRun is sluice's binlog source on the matrix database, its records
// encoded by a converter as the RocketMQ transport writes them.
type conformanceRun struct {
	name     string
	mu       sync.Mutex
	events   []wireEvent
	snapDone chan struct{}
	done     chan error
}

func startConformanceSluice(ctx context.Context, t *testing.T, e env, db, name string, opts converter.Options, skipped []string) *conformanceRun {
	t.Helper()
	port, _ := strconv.Atoi(e["SLUICE_MYSQL_PORT"])
	src, err := binlog.NewSource(binlog.Config{Host: e["SLUICE_MYSQL_HOST"], Port: port,
		User: e["SLUICE_MYSQL_CDC_USER"], Password: e["SLUICE_MYSQL_CDC_PASSWORD"],
		ServerID: uint32(2_000_000 + rand.IntN(1_000_000)), Flavor: e["SLUICE_MYSQL_FLAVOR"], ServerName: "fixture",
		Include: []string{db + ".*"}, Snapshot: binlog.SnapshotInitial, Heartbeat: -1, SkippedOperations: skipped,
	}, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	r := &conformanceRun{name: name, snapDone: make(chan struct{}), done: make(chan error, 1)}
	t.Cleanup(func() { src.Close() })
	conv := converter.NewJSON(opts)
	go func() {
		snapped := false
		for {
			recs, err := src.Read(ctx)
			if err != nil {
				r.done <- err
				return
			}
			for i := range recs {
				rec := &recs[i]
				if !snapped && rec.Op != schema.OpRead && rec.Source.Snapshot == "" && !rec.Op.IsMarker() || rec.Source.Snapshot == "last" {
					snapped = true
					close(r.snapDone)
				}
				key, value, err := conv.Encode(rec)
				if errors.Is(err, converter.ErrNotData) {
					continue
				}
				if err != nil {
					r.done <- fmt.Errorf("encode %s %s: %w", rec.Op, rec.Table, err)
					return
				}
				if key == nil {
					key = []byte("null")
				}
				r.mu.Lock()
				r.events = append(r.events, wireEvent{Key: key, Value: value})
				r.mu.Unlock()
				if rec.Table.Table == conformanceSentinel && rec.Op.IsData() {
					r.done <- nil
					return
				}
			}
		}
	}()
	return r
}

func (r *conformanceRun) waitSnapshot(t *testing.T) {
	t.Helper()
	select {
	case <-r.snapDone:
	case err := <-r.done:
		t.Fatalf("sluice (%s) ended before its snapshot: %v", r.name, err)
	case <-time.After(3 * time.Minute):
		t.Fatalf("sluice (%s): snapshot did not end in 3 minutes", r.name)
	}
}

func (r *conformanceRun) wait(t *testing.T) []wireEvent {
	t.Helper()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("sluice (%s): %v", r.name, err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("sluice (%s): no sentinel event in 3 minutes", r.name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events
}

func writeEvents(t *testing.T, path string, evs []wireEvent) {
	t.Helper()
	var b bytes.Buffer
	for _, ev := range evs {
		line, _ := json.Marshal(ev)
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
