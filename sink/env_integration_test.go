package sink

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
	"github.com/sluicecdc/sluice/sink/mysql"
	"github.com/sluicecdc/sluice/sink/postgres"
)

// requireEnv skips (or, with CI=true, fails) when a server's env var is unset.
func requireEnv(t testing.TB, names ...string) {
	t.Helper()
	schematest.NeedServers(t, names...)
}

// tenv is one target server with a fresh schema (PostgreSQL) or database
// (MySQL) for one test.
type tenv struct {
	dialect string
	flavor  string // the server: "postgres", "mariadb" or "mysql"
	cfg     Config
	db      *sql.DB // verification connection (UTC session for MySQL)
	admin   *sql.DB // for killing connections
	schema  string
}

func suffix() string {
	return fmt.Sprintf("%d_%d", time.Now().UnixNano()%1_000_000_000, rand.IntN(1_000_000))
}

func pgEnv(t testing.TB) *tenv {
	requireEnv(t, "SLUICE_PG_DSN")
	dsn := os.Getenv("SLUICE_PG_DSN")
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(4)
	name := "sink_test_" + suffix()
	if _, err := db.Exec(`CREATE SCHEMA "` + name + `"`); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	cfg := DefaultConfig()
	cfg.Dialect, cfg.DSN, cfg.Pipeline, cfg.SchemaTemplate = DialectPostgres, dsn, "pipe_"+name, name
	t.Cleanup(func() {
		db.Exec(`DROP SCHEMA "` + name + `" CASCADE`)
		db.Exec(`DELETE FROM sluice_progress WHERE pipeline = $1`, cfg.Pipeline)
		db.Close()
	})
	return &tenv{dialect: DialectPostgres, flavor: "postgres", cfg: cfg, db: db, admin: db, schema: name}
}

// mysqlEnv is the MariaDB target (SLUICE_MYSQL_*, the servers' MariaDB).
func mysqlEnv(t testing.TB) *tenv {
	requireEnv(t, "SLUICE_MYSQL_HOST", "SLUICE_MYSQL_PORT", "SLUICE_MYSQL_USER")
	base := mysqldrv.NewConfig()
	base.User, base.Passwd = os.Getenv("SLUICE_MYSQL_USER"), os.Getenv("SLUICE_MYSQL_PASSWORD")
	base.Net, base.Addr = "tcp", net.JoinHostPort(os.Getenv("SLUICE_MYSQL_HOST"), os.Getenv("SLUICE_MYSQL_PORT"))
	return mysqlEnvAt(t, base)
}

// mysql97Env is the MySQL 9.7 target of scripts/servers.sh (SLUICE_MYSQL97_TARGET_DSN).
func mysql97Env(t testing.TB) *tenv {
	requireEnv(t, "SLUICE_MYSQL97_TARGET_DSN")
	base, err := mysqldrv.ParseDSN(os.Getenv("SLUICE_MYSQL97_TARGET_DSN"))
	if err != nil {
		t.Fatalf("SLUICE_MYSQL97_TARGET_DSN: %v", err)
	}
	base.DBName = ""
	return mysqlEnvAt(t, base)
}

// mysqlEnvAt makes a fresh database on the MySQL-dialect server base names.
func mysqlEnvAt(t testing.TB, base *mysqldrv.Config) *tenv {
	admin, err := sql.Open("mysql", base.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	var version string
	if err := admin.QueryRow("SELECT VERSION()").Scan(&version); err != nil {
		t.Fatalf("server version: %v", err)
	}
	flavor := "mysql"
	if strings.Contains(strings.ToLower(version), "mariadb") {
		flavor = "mariadb"
	}
	name := "sink_test_" + suffix()
	if _, err := admin.Exec("CREATE DATABASE `" + name + "` DEFAULT CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	c := base.Clone()
	c.DBName = name
	cfg := DefaultConfig()
	cfg.Dialect, cfg.DSN, cfg.Pipeline, cfg.SchemaTemplate = DialectMySQL, c.FormatDSN(), "pipe_"+name, name
	v := c.Clone()
	v.Params = map[string]string{"time_zone": "'+00:00'"}
	db, err := sql.Open("mysql", v.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		admin.Exec("DROP DATABASE `" + name + "`")
		admin.Close()
	})
	return &tenv{dialect: DialectMySQL, flavor: flavor, cfg: cfg, db: db, admin: admin, schema: name}
}

// forEachTarget runs f against PostgreSQL, MariaDB and MySQL 9.7 (the
// MySQL dialect's two servers).
func forEachTarget(t *testing.T, f func(t *testing.T, e *tenv)) {
	t.Run("postgres", func(t *testing.T) { f(t, pgEnv(t)) })
	t.Run("mariadb", func(t *testing.T) { f(t, mysqlEnv(t)) })
	t.Run("mysql", func(t *testing.T) { f(t, mysql97Env(t)) })
}

func (e *tenv) open(t testing.TB, mod func(*Config)) *Sink {
	t.Helper()
	return e.openLog(t, mod, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// openLog is open with the sink logging to log.
func (e *tenv) openLog(t testing.TB, mod func(*Config), log *slog.Logger) *Sink {
	t.Helper()
	cfg := e.cfg
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (e *tenv) quote(id string) string {
	if e.dialect == DialectPostgres {
		return postgres.Dialect{}.Quote(id)
	}
	return mysql.Dialect{}.Quote(id)
}

func (e *tenv) table(name string) string { return e.quote(e.schema) + "." + e.quote(name) }

// truncate empties a test table between runs of a test and accepts it in
// the table registry (ident NULL), as docs/guarantees.md tells an operator to: a
// TRUNCATE behind the sink is otherwise refused at its next write.
func (e *tenv) truncate(t testing.TB, name string) {
	t.Helper()
	if _, err := e.db.Exec("TRUNCATE TABLE " + e.table(name)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Exec(e.rebind("UPDATE "+e.quote(cmp.Or(e.cfg.ProgressTable, "sluice_progress")+"_tables")+" SET ident = NULL WHERE tbl_name = $1"), name); err != nil {
		t.Fatal(err)
	}
}

// rows reads "id -> v" of a test table with columns id, v.
func (e *tenv) rows(t testing.TB, table string) map[int64]string {
	t.Helper()
	rs, err := e.db.Query("SELECT id, v FROM " + e.table(table))
	if err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	defer rs.Close()
	out := map[int64]string{}
	for rs.Next() {
		var id int64
		var v sql.NullString
		if err := rs.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		out[id] = v.String
		if !v.Valid {
			out[id] = "<NULL>"
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// progress returns the offset whose testID a queue's progress row holds
// (false: no row, or nothing applied).
func (e *tenv) progress(t testing.TB, topic string, queue int) (int64, bool) {
	t.Helper()
	q := "SELECT last_id FROM sluice_progress WHERE pipeline = $1 AND topic = $2 AND queue = $3"
	if e.dialect == DialectMySQL {
		q = strings.NewReplacer("$1", "?", "$2", "?", "$3", "?").Replace(q)
	}
	var text string
	err := e.db.QueryRow(q, e.cfg.Pipeline, topic, queue).Scan(&text)
	if err == sql.ErrNoRows || err == nil && text == "" {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	id, err := schema.ParseID(text)
	if err != nil {
		t.Fatal(err)
	}
	return int64(id.Pos) - 1, true
}
