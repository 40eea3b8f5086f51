package integration

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/cmd/sluice/app"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
)

// workload applies a deterministic mix of inserts, updates and deletes over
// two tables (one with a composite key), in transactions of 1–8 statements.
type workload struct {
	db     *sql.DB
	name   string
	rnd    *rand.Rand
	orders []int64
	items  [][2]any
	nextID int64
	ops    int
}

func newWorkload(db *sql.DB, name string) *workload {
	return &workload{db: db, name: name, rnd: rand.New(rand.NewSource(42)), nextID: 1}
}

func createSourceTables(t *testing.T, db *sql.DB, name string) {
	mustExec(t, db, "CREATE DATABASE "+name)
	t.Cleanup(func() { db.Exec("DROP DATABASE IF EXISTS " + name) })
	mustExec(t, db, `CREATE TABLE `+name+`.orders (
		id BIGINT PRIMARY KEY, customer VARCHAR(64) NOT NULL, amount DECIMAL(12,2) NOT NULL,
		status VARCHAR(16) NOT NULL, updated_at DATETIME(6) NOT NULL, note TEXT NULL) CHARACTER SET utf8mb4`)
	mustExec(t, db, `CREATE TABLE `+name+`.items (
		order_id BIGINT NOT NULL, sku VARCHAR(32) NOT NULL, qty INT NOT NULL, price DECIMAL(10,3) NOT NULL,
		PRIMARY KEY (order_id, sku)) CHARACTER SET utf8mb4`)
}

func (w *workload) run(t *testing.T, n int) {
	t.Helper()
	if err := w.runErr(n); err != nil {
		t.Fatal(err)
	}
}

// runErr is run for a goroutine other than the test's.
func (w *workload) runErr(n int) error {
	for done := 0; done < n; {
		tx, err := w.db.Begin()
		if err != nil {
			return err
		}
		size := 1 + w.rnd.Intn(8)
		for i := 0; i < size && done < n; i++ {
			if err := w.step(tx); err != nil {
				tx.Rollback()
				return fmt.Errorf("workload op %d: %w", w.ops, err)
			}
			done++
			w.ops++
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

func (w *workload) step(tx *sql.Tx) error {
	r := w.rnd.Intn(100)
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(w.rnd.Int63n(1e15)) * time.Microsecond / 1000)
	note := sql.NullString{String: fmt.Sprintf("note %d – ünïcödé ✓", w.ops), Valid: w.rnd.Intn(3) > 0}
	switch {
	case r < 30 || len(w.orders) < 10:
		id := w.nextID
		w.nextID++
		w.orders = append(w.orders, id)
		_, err := tx.Exec("INSERT INTO "+w.name+".orders (id, customer, amount, status, updated_at, note) VALUES (?,?,?,?,?,?)", id, fmt.Sprintf("customer-%d", w.rnd.Intn(500)),
			fmt.Sprintf("%d.%02d", w.rnd.Intn(100000), w.rnd.Intn(100)), "new", ts.Format("2006-01-02 15:04:05.000000"), note)
		return err
	case r < 45:
		id := w.orders[w.rnd.Intn(len(w.orders))]
		sku := fmt.Sprintf("sku-%d", w.rnd.Intn(50))
		_, err := tx.Exec("INSERT INTO "+w.name+".items VALUES (?,?,?,?) ON DUPLICATE KEY UPDATE qty = qty + VALUES(qty)", id, sku,
			1+w.rnd.Intn(9), fmt.Sprintf("%d.%03d", w.rnd.Intn(1000), w.rnd.Intn(1000)))
		if err == nil {
			w.items = append(w.items, [2]any{id, sku})
		}
		return err
	case r < 75:
		id := w.orders[w.rnd.Intn(len(w.orders))]
		_, err := tx.Exec("UPDATE "+w.name+".orders SET status = ?, amount = amount + 1.25, updated_at = ?, note = ? WHERE id = ?",
			[]string{"paid", "shipped", "returned"}[w.rnd.Intn(3)], ts.Format("2006-01-02 15:04:05.000000"), note, id)
		return err
	case r < 85 && len(w.items) > 0:
		it := w.items[w.rnd.Intn(len(w.items))]
		_, err := tx.Exec("UPDATE "+w.name+".items SET qty = qty * 2 + 1 WHERE order_id = ? AND sku = ?", it[0], it[1])
		return err
	case r < 92 && len(w.items) > 0:
		i := w.rnd.Intn(len(w.items))
		it := w.items[i]
		w.items = slices.Delete(w.items, i, i+1)
		_, err := tx.Exec("DELETE FROM "+w.name+".items WHERE order_id = ? AND sku = ?", it[0], it[1])
		return err
	default:
		i := w.rnd.Intn(len(w.orders))
		id := w.orders[i]
		w.orders = slices.Delete(w.orders, i, i+1)
		_, err := tx.Exec("DELETE FROM "+w.name+".orders WHERE id = ?", id)
		return err
	}
}

func dump(db *sql.DB, q string) ([]string, error) {
	rows, err := queryRows(db, q)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, vals := range rows {
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = "NULL"
			if v.Valid {
				parts[i] = "'" + v.String + "'"
			}
		}
		out = append(out, strings.Join(parts, ","))
	}
	return out, nil
}

// queryRows runs q and returns every row's columns, NULL kept apart.
func queryRows(db *sql.DB, q string) ([][]sql.NullString, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]sql.NullString
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

// workloadQueries dumps the workload's tables in one canonical text form:
// for each table, the query on MySQL/MariaDB database name and the one on
// PostgreSQL schema name.
func workloadQueries(name string) [][2]string {
	return [][2]string{
		{"SELECT id, customer, CAST(amount AS CHAR), status, DATE_FORMAT(updated_at, '%Y-%m-%d %H:%i:%s.%f'), note FROM " + name + ".orders ORDER BY id",
			`SELECT id, customer, amount::text, status, to_char(updated_at, 'YYYY-MM-DD HH24:MI:SS.US'), note FROM "` + name + `"."orders" ORDER BY id`},
		{"SELECT order_id, sku, qty, CAST(price AS CHAR) FROM " + name + ".items ORDER BY order_id, sku",
			`SELECT order_id, sku, qty, price::text FROM "` + name + `"."items" ORDER BY order_id, sku COLLATE "C"`},
	}
}

// compare dumps both tables from both sides in one canonical text form.
func compare(my, pg *sql.DB, name string) (same bool, detail string, err error) {
	return compareQueries(my, pg, workloadQueries(name))
}

// compareQueries runs each pair's first query on my and second on dst and
// compares the dumps.
func compareQueries(my, dst *sql.DB, queries [][2]string) (same bool, detail string, err error) {
	for _, q := range queries {
		a, err := dump(my, q[0])
		if err != nil {
			return false, "", fmt.Errorf("source dump: %w", err)
		}
		b, err := dump(dst, q[1])
		if err != nil {
			return false, "target not ready: " + err.Error(), nil
		}
		if !slices.Equal(a, b) {
			d := fmt.Sprintf("source has %d rows, target %d", len(a), len(b))
			first, differ := -1, 0
			for i := 0; i < len(a) && i < len(b); i++ {
				if a[i] != b[i] {
					differ++
					if first < 0 {
						first = i
					}
				}
			}
			if first >= 0 {
				// how many differ tells a target behind (many) from lost changes (a few)
				d += fmt.Sprintf("; %d rows differ at the same place, the first at row %d: source %s target %s", differ, first, a[first], b[first])
			}
			return false, d, nil
		}
	}
	return true, "", nil
}

// waitFor polls cond until it holds, failing with msg after 2 minutes or when
// the pipeline stops by itself.
func waitFor(t *testing.T, r *running, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		r.failIfStopped(t)
		time.Sleep(200 * time.Millisecond)
	}
}

func waitEqual(t *testing.T, my, pg *sql.DB, name string, p *running) {
	t.Helper()
	waitSame(t, p, func() (bool, string, error) { return compare(my, pg, name) })
}

// waitSame waits until cmp reports both sides the same, failing with its
// last detail after 3 minutes or when p stops by itself.
func waitSame(t *testing.T, p *running, cmp func() (bool, string, error)) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var detail string
	for time.Now().Before(deadline) {
		same, d, err := cmp()
		if err != nil {
			t.Fatal(err)
		}
		if same {
			return
		}
		detail = d
		if p != nil {
			p.failIfStopped(t)
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("target never matched the source: %s", detail)
}

type running struct {
	p      *engine.Pipeline
	cancel context.CancelFunc
	errc   chan error
}

func (r *running) failIfStopped(t *testing.T) {
	t.Helper()
	select {
	case err := <-r.errc:
		r.errc <- err
		t.Fatalf("pipeline stopped by itself: %v (status %+v)", err, r.p.Status())
	default:
	}
}

// stop stops the pipeline gracefully and checks it ended cleanly.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.errc:
		if err != nil {
			t.Fatalf("pipeline ended with %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("pipeline did not stop within 90s of the stop request")
	}
}

func startPipeline(t *testing.T, configPath string) *running {
	t.Helper()
	return startPipelineOnly(t, configPath, "")
}

// startPipelineOnly is startPipeline for one side of the config ("source"
// or "sink"; "" for both).
func startPipelineOnly(t *testing.T, configPath, only string) *running {
	t.Helper()
	cfg, err := plugin.LoadConfig(configPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	level := slog.LevelWarn
	_ = level.UnmarshalText([]byte(os.Getenv("SLUICE_TEST_LOG"))) // e.g. SLUICE_TEST_LOG=debug
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	p, err := app.Build(ctx, cfg, only, log)
	if err != nil {
		cancel()
		t.Fatalf("build pipeline (only %q): %v", only, err)
	}
	r := &running{p: p, cancel: cancel, errc: make(chan error, 1)}
	go func() { r.errc <- p.Run(ctx) }()
	return r
}

// waitStreaming writes a canary row until the target shows it, so the
// workload starts only once the source is reading.
func waitStreaming(t *testing.T, my, pg *sql.DB, name string, r *running) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		mustExec(t, my, "INSERT INTO "+name+".orders VALUES (0, 'canary', 0, ?, '2024-01-01 00:00:00', NULL) ON DUPLICATE KEY UPDATE status = VALUES(status)", fmt.Sprint("c", i))
		var n int
		if err := pg.QueryRow(`SELECT count(*) FROM "` + name + `"."orders" WHERE id = 0`).Scan(&n); err == nil && n == 1 {
			return
		}
		r.failIfStopped(t)
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatal("the canary row never reached the target: is the pipeline reading the binlog?")
}

// editConfig replaces the first old with new in a config file.
func editConfig(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), old, new, 1)
	if edited == string(b) {
		t.Fatalf("config %s has no %q to replace", path, old)
	}
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeConfig writes a pipeline config over the workload's tables that
// streams only (snapshot: never); a test that wants a snapshot replaces the
// line "  snapshot: never\n".
func writeConfig(t *testing.T, e env, name, transport string) string {
	t.Helper()
	dir := t.TempDir()
	var tr string
	switch transport {
	case "embedded":
		tr = "  type: embedded\n  queues: 4\n"
	case "rocketmq":
		topics := []string{rocketmq.TopicName(name, name, "orders", "table"), rocketmq.TopicName(name, name, "items", "table")}
		tr = fmt.Sprintf("  type: rocketmq\n  name_servers: [%q]\n  queues: 4\n  topic_prefix: %s\n  group: %s\n  topics: [%s]\n",
			e["SLUICE_ROCKETMQ_NAMESRV"], name, name+"_sink", strings.Join(topics, ", "))
	case "kafka":
		topics := []string{kafka.TopicName(name, name, "orders"), kafka.TopicName(name, name, "items")}
		tr = fmt.Sprintf("  type: kafka\n  brokers: [%q]\n  partitions: 4\n  topic_prefix: %s\n  group: %s\n  topics: [%s]\n",
			e["SLUICE_KAFKA_BROKERS"], name, name+"_sink", strings.Join(topics, ", "))
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
  type: postgres
  dsn: %s
positions:
  type: file
  dir: %s
`, name, e["SLUICE_MYSQL_FLAVOR"], e["SLUICE_MYSQL_HOST"], e["SLUICE_MYSQL_PORT"], e["SLUICE_MYSQL_CDC_USER"],
		serverID(), name, tr, e["SLUICE_PG_DSN"], filepath.Join(dir, "positions"))
	t.Setenv("SLUICE_IT_CDC_PASSWORD", e["SLUICE_MYSQL_CDC_PASSWORD"])
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEndToEnd moves inserts, updates and deletes over two tables from the
// source into PostgreSQL, through each transport, once continuously (4,000)
// and once with a graceful stop and restart in the middle (10,000, 2,000 of
// them written while stopped), and checks every row of the target equals
// the source.
func TestEndToEnd(t *testing.T) {
	for _, transport := range []string{"embedded", "rocketmq"} {
		for _, restart := range []bool{false, true} {
			name := fmt.Sprintf("%s/restart=%v", transport, restart)
			t.Run(name, func(t *testing.T) {
				need := []string{"SLUICE_MYSQL_PORT", "SLUICE_PG_DSN"}
				if transport == "rocketmq" {
					need = append(need, "SLUICE_ROCKETMQ_NAMESRV")
				}
				e := servers(t, need...)
				db, my, pg := sourceAndTarget(t, e, "it_"+transport[:3])
				cfg := writeConfig(t, e, db, transport)
				w := newWorkload(my, db)

				r := startPipeline(t, cfg)
				waitStreaming(t, my, pg, db, r)
				if !restart {
					w.run(t, 4000)
					waitEqual(t, my, pg, db, r)
					r.stop(t)
					return
				}
				w.run(t, 4000)
				r.stop(t)
				w.run(t, 2000) // written while sluice is down
				r = startPipeline(t, cfg)
				w.run(t, 4000)
				waitEqual(t, my, pg, db, r)
				r.stop(t)
			})
		}
	}
}
