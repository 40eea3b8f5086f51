package integration

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/cmd/sluice/app"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/storage"
)

// BenchmarkBarrierThroughput measures what barriers cost end to end: the
// binlog holds 100,000 inserts (transactions of 100 rows) with, every
// 10,000 rows, nothing, a TRUNCATE, or a DDL of the table (ALTER TABLE …
// COMMENT, under schema_changes: apply); sluice (embedded, queues: 4,
// PostgreSQL) then catches up on it from the position before the load.
// It reports rows/s per case; compare them within one run:
//
//	set -a; . /tmp/sluice-servers/servers.env; set +a
//	go test ./integration -run '^$' -bench BarrierThroughput -benchtime 1x
func BenchmarkBarrierThroughput(b *testing.B) {
	path := os.Getenv("SLUICE_SERVERS_ENV")
	if path == "" {
		path = "/tmp/sluice-servers/servers.env"
	}
	e, err := readEnvFile(path)
	if err != nil || e["SLUICE_MYSQL_PORT"] == "" || e["SLUICE_PG_DSN"] == "" {
		b.Skipf("no servers (%v): run scripts/servers.sh start all", err)
	}
	const rows, every, txn = 100_000, 10_000, 100
	for _, mode := range []string{"none", "truncate", "ddl"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				rate := barrierRun(b, e, mode, rows, every, txn)
				b.ReportMetric(rate, "rows/s")
			}
		})
	}
}

// barrierRun loads the source, runs the pipeline over it and returns the
// rows per second of the catch-up.
func barrierRun(b *testing.B, e env, mode string, rows, every, txn int) float64 {
	ctx := context.Background()
	db := uniqueName("bench_bar")
	my, err := sql.Open("mysql", e.mysqlDSN(""))
	if err != nil {
		b.Fatal(err)
	}
	defer my.Close()
	pg, err := sql.Open("postgres", e["SLUICE_PG_DSN"])
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()
	exec := func(q string) {
		if _, err := my.ExecContext(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE DATABASE " + db)
	defer my.Exec("DROP DATABASE IF EXISTS " + db)
	defer pg.Exec(`DROP SCHEMA IF EXISTS "` + db + `" CASCADE`)
	exec("CREATE TABLE " + db + ".t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL, note VARCHAR(40) NOT NULL)")
	bcfg := binlog.Config{Host: e["SLUICE_MYSQL_HOST"], User: e["SLUICE_MYSQL_CDC_USER"], Password: e["SLUICE_MYSQL_CDC_PASSWORD"], Flavor: e["SLUICE_MYSQL_FLAVOR"],
		ServerID: serverID(), ServerName: db}
	fmt.Sscan(e["SLUICE_MYSQL_PORT"], &bcfg.Port)
	start, err := binlog.CurrentPosition(ctx, bcfg)
	if err != nil {
		b.Fatal(err)
	}
	for from := 1; from <= rows; from += txn {
		var vals []string
		for id := from; id < from+txn; id++ {
			vals = append(vals, fmt.Sprintf("(%d, %d, 'row %d')", id, id*3, id))
		}
		exec("INSERT INTO " + db + ".t VALUES " + strings.Join(vals, ","))
		if n := from + txn - 1; n%every == 0 && n < rows {
			switch mode {
			case "truncate":
				exec("TRUNCATE TABLE " + db + ".t")
			case "ddl":
				exec(fmt.Sprintf("ALTER TABLE %s.t COMMENT = 'after %d rows'", db, n))
			}
		}
	}
	exec("INSERT INTO " + db + ".t VALUES (0, 0, 'last')")
	var want string
	if err := my.QueryRowContext(ctx, "SELECT CONCAT(count(*), '/', sum(v)) FROM "+db+".t").Scan(&want); err != nil {
		b.Fatal(err)
	}

	dir := b.TempDir()
	store, err := storage.NewFileStore(filepath.Join(dir, "positions"))
	if err != nil {
		b.Fatal(err)
	}
	if err := store.Save(ctx, db, start); err != nil {
		b.Fatal(err)
	}
	cfgText := fmt.Sprintf("name: %s\nsource:\n  type: %s\n  host: %s\n  port: %d\n  user: %s\n  password: %s\n  server_id: %d\n  include: [\"%s.*\"]\n"+
		"transport:\n  type: embedded\n  queues: 4\nsink:\n  type: postgres\n  dsn: %q\n  schema_changes: apply\npositions:\n  type: file\n  dir: %s\n",
		db, bcfg.Flavor, bcfg.Host, bcfg.Port, bcfg.User, bcfg.Password, bcfg.ServerID, db, e["SLUICE_PG_DSN"], filepath.Join(dir, "positions"))
	cfg, err := plugin.ParseConfig([]byte(cfgText), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.ResetTimer()
	t0 := time.Now()
	p, err := app.Build(pctx, cfg, "", slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		b.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- p.Run(pctx) }()
	for {
		var got string
		err := pg.QueryRowContext(ctx, `SELECT concat(count(*), '/', sum(v)) FROM "`+db+`".t`).Scan(&got)
		if err == nil && got == want {
			break
		}
		select {
		case err := <-errc:
			b.Fatalf("pipeline stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Since(t0) > 5*time.Minute {
			b.Fatalf("target never caught up: %s, want %s", got, want)
		}
	}
	elapsed := time.Since(t0)
	b.StopTimer()
	cancel()
	<-errc
	return float64(rows) / elapsed.Seconds()
}
