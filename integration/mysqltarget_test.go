package integration

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
)

// A source and a target server of one pipeline, for the tests of what a
// MySQL target keeps (TestKeysStayDistinct, TestAddedColumnsReadTheDefault).

// mtSource is a binlog source: MariaDB (SLUICE_MYSQL_*) or MySQL 9.7
// (SLUICE_MYSQL97_*).
type mtSource struct {
	flavor, host, port, user, password string // password: the CDC user's
	admin                              *sql.DB
}

func mtOpenSource(t *testing.T, flavor string) mtSource {
	t.Helper()
	p := "SLUICE_MYSQL_"
	if flavor == "mysql" {
		p = "SLUICE_MYSQL97_"
	}
	e := servers(t, p+"HOST", p+"PORT", p+"USER", p+"CDC_USER")
	s := mtSource{flavor: flavor, host: e[p+"HOST"], port: e[p+"PORT"], user: e[p+"CDC_USER"], password: e[p+"CDC_PASSWORD"]}
	s.admin = openDB(t, "mysql", fmt.Sprintf("%s:%s@tcp(%s:%s)/?multiStatements=true", e[p+"USER"], e[p+"PASSWORD"], s.host, s.port))
	return s
}

// mtTarget is a sink target: "postgres", or "mysql" (the MySQL 9.7 target,
// SLUICE_MYSQL97_TARGET_DSN). schema is where the pipeline's tables go.
type mtTarget struct {
	kind, dsn, schema string
	db                *sql.DB
}

func mtOpenTarget(t *testing.T, kind, name string) mtTarget {
	t.Helper()
	if kind == "postgres" {
		e := servers(t, "SLUICE_PG_DSN")
		db := openDB(t, "postgres", e["SLUICE_PG_DSN"])
		t.Cleanup(func() { db.Exec(`DROP SCHEMA IF EXISTS "` + name + `" CASCADE`) })
		return mtTarget{kind: kind, dsn: e["SLUICE_PG_DSN"], schema: name, db: db}
	}
	e := servers(t, "SLUICE_MYSQL97_TARGET_DSN")
	c, err := mysqldrv.ParseDSN(e["SLUICE_MYSQL97_TARGET_DSN"])
	if err != nil {
		t.Fatal(err)
	}
	c.DBName = ""
	admin := openDB(t, "mysql", c.FormatDSN())
	mustExec(t, admin, "CREATE DATABASE `"+name+"` DEFAULT CHARACTER SET utf8mb4")
	t.Cleanup(func() { admin.Exec("DROP DATABASE IF EXISTS `" + name + "`") })
	c.DBName = name
	return mtTarget{kind: kind, dsn: c.FormatDSN(), schema: name, db: openDB(t, "mysql", c.FormatDSN())}
}

// table is the target's name of a table of the pipeline.
func (tg mtTarget) table(name string) string {
	if tg.kind == "postgres" {
		return `"` + tg.schema + `"."` + name + `"`
	}
	return "`" + tg.schema + "`.`" + name + "`"
}

// mtConfig writes a pipeline from database db of src into tg with the sink
// settings sinkExtra (indented lines) and snapshot mode snap.
func mtConfig(t *testing.T, src mtSource, tg mtTarget, db, snap, sinkExtra string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`name: %s
source:
  type: %s
  host: %s
  port: %s
  user: %s
  password: ${SLUICE_IT_CDC_PASSWORD}
  server_id: %d
  include: ["%s.*"]
  snapshot: %s
transport:
  type: embedded
  queues: 4
sink:
  type: %s
  dsn: %s
  schema: %s
%spositions:
  type: file
  dir: %s
`, db, src.flavor, src.host, src.port, src.user, serverID(), db, snap, tg.kind, tg.dsn, tg.schema, sinkExtra, filepath.Join(dir, "positions"))
	t.Setenv("SLUICE_IT_CDC_PASSWORD", src.password)
	path := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mtWaitCanary writes rows into db.canary (made before the pipeline
// started) until the target has one: the source is streaming.
func mtWaitCanary(t *testing.T, src mtSource, tg mtTarget, db string, r *running) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for i := 1; time.Now().Before(deadline); i++ {
		mustExec(t, src.admin, fmt.Sprintf("INSERT INTO `%s`.canary VALUES (%d)", db, i))
		var n int
		if err := tg.db.QueryRow("SELECT count(*) FROM " + tg.table("canary")).Scan(&n); err == nil && n > 0 {
			return
		}
		r.failIfStopped(t)
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatal("the canary row never reached the target: is the pipeline reading the binlog?")
}

// mtRows reads query's rows as "a|b|…" lines (NULL as <NULL>), sorted by
// their bytes.
func mtRows(db *sql.DB, query string) ([]string, error) {
	rows, err := queryRows(db, query)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, vals := range rows {
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = v.String
			if !v.Valid {
				parts[i] = "<NULL>"
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	slices.Sort(out)
	return out, nil
}

// mtWaitRows waits until the target's rows of query equal want.
func mtWaitRows(t *testing.T, r *running, tg mtTarget, query string, want []string) {
	t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(60 * time.Second)
	var got []string
	var err error
	for time.Now().Before(deadline) {
		if got, err = mtRows(tg.db, query); err == nil && slices.Equal(got, want) {
			return
		}
		r.failIfStopped(t)
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("%s: target has %q (%v), want %q", query, got, err, want)
}

// TestKeysStayDistinct (d7): keys that differ only by case or accent in a
// binary collation of the source ('a', 'A', 'ä' in utf8mb4_bin; 'é', 'É'
// in latin1_bin) stay three and two rows in a MySQL target, from MySQL and
// from MariaDB, with the tables made from the schema change (apply) or
// from the records (snapshot, then stream); PostgreSQL keeps them apart as
// before. A target table whose key column is case-insensitive stops the
// pipeline before any row is written, naming the collations and the fix.
func TestKeysStayDistinct(t *testing.T) {
	for _, c := range []struct{ source, target, mode string }{
		{"mysql", "mysql", "apply"}, {"mysql", "mysql", "ignore"},
		{"mariadb", "mysql", "apply"}, {"mariadb", "mysql", "ignore"},
		{"mysql", "postgres", "apply"},
	} {
		t.Run(c.source+"_to_"+c.target+"_"+c.mode, func(t *testing.T) {
			src := mtOpenSource(t, c.source)
			db := uniqueName("it_keys")
			tg := mtOpenTarget(t, c.target, db+"_t")
			mustExec(t, src.admin, "CREATE DATABASE `"+db+"`")
			t.Cleanup(func() { src.admin.Exec("DROP DATABASE IF EXISTS `" + db + "`") })
			mustExec(t, src.admin, "CREATE TABLE `"+db+"`.canary (id INT PRIMARY KEY)")
			create := []string{
				"CREATE TABLE `" + db + "`.kb (k VARCHAR(10) COLLATE utf8mb4_bin PRIMARY KEY, v INT)",
				"CREATE TABLE `" + db + "`.kl (k VARCHAR(10) CHARACTER SET latin1 COLLATE latin1_bin PRIMARY KEY, v INT)",
			}
			snap := "never"
			if c.mode == "ignore" { // the tables and some rows exist before: snapshot, then stream
				snap = "initial"
				for _, q := range create {
					mustExec(t, src.admin, q)
				}
				mustExec(t, src.admin, "INSERT INTO `"+db+"`.kb VALUES ('a',1),('A',2)")
				mustExec(t, src.admin, "INSERT INTO `"+db+"`.kl VALUES ('é',1)")
			}
			r := startPipeline(t, mtConfig(t, src, tg, db, snap, "  schema_changes: "+c.mode+"\n"))
			defer r.stop(t)
			mtWaitCanary(t, src, tg, db, r)
			if c.mode == "apply" {
				for _, q := range create {
					mustExec(t, src.admin, q)
				}
				mustExec(t, src.admin, "INSERT INTO `"+db+"`.kb VALUES ('a',1),('A',2)")
				mustExec(t, src.admin, "INSERT INTO `"+db+"`.kl VALUES ('é',1)")
			}
			mustExec(t, src.admin, "INSERT INTO `"+db+"`.kb VALUES ('ä',3)")
			mustExec(t, src.admin, "INSERT INTO `"+db+"`.kl VALUES ('É',2)")
			key := "CAST(CONVERT(k USING utf8mb4) AS CHAR)"
			if c.target == "postgres" {
				key = "k"
			}
			mtWaitRows(t, r, tg, "SELECT "+key+", v FROM "+tg.table("kb"), []string{"a|1", "A|2", "ä|3"})
			mtWaitRows(t, r, tg, "SELECT "+key+", v FROM "+tg.table("kl"), []string{"é|1", "É|2"})
		})
	}
	t.Run("existing_case_insensitive_key", func(t *testing.T) {
		src := mtOpenSource(t, "mysql")
		db := uniqueName("it_keyci")
		tg := mtOpenTarget(t, "mysql", db+"_t")
		mustExec(t, src.admin, "CREATE DATABASE `"+db+"`")
		t.Cleanup(func() { src.admin.Exec("DROP DATABASE IF EXISTS `" + db + "`") })
		mustExec(t, src.admin, "CREATE TABLE `"+db+"`.kb (k VARCHAR(10) COLLATE utf8mb4_bin PRIMARY KEY, v INT)")
		mustExec(t, src.admin, "INSERT INTO `"+db+"`.kb VALUES ('a',1),('A',2),('ä',3)")
		mustExec(t, tg.db, "CREATE TABLE "+tg.table("kb")+" (k VARCHAR(10) NOT NULL PRIMARY KEY, v INT) COLLATE utf8mb4_0900_ai_ci")
		r := startPipeline(t, mtConfig(t, src, tg, db, "initial", ""))
		var err error
		select {
		case err = <-r.errc:
		case <-time.After(90 * time.Second):
			r.cancel()
			t.Fatal("the pipeline did not stop at a key column that merges the source's keys")
		}
		r.cancel()
		if err == nil {
			t.Fatal("the pipeline ended without an error")
		}
		for _, w := range []string{"kb", "key column k", "utf8mb4_0900_ai_ci", "utf8mb4_bin", "COLLATE utf8mb4_bin"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
		if st := r.p.Status(); !strings.Contains(strings.ToUpper(fmt.Sprint(st)), "FAILED") {
			t.Errorf("status %+v, want FAILED", st)
		}
		var n int
		if err := tg.db.QueryRow("SELECT count(*) FROM " + tg.table("kb")).Scan(&n); err != nil || n != 0 {
			t.Fatalf("target has %d rows (%v), want none", n, err)
		}
	})
}

// TestAddedColumnsReadTheDefault (d10, #28 item 7): columns added to a
// MySQL table with rows, read in the older rows of the target what MySQL
// reads there (NOT NULL without DEFAULT: 0 and an ENUM's first label; a
// DEFAULT: its value), into PostgreSQL and MySQL, under schema_changes
// apply (from the schema change) and ignore (the default: from the first
// row that has the columns). A generated column of integer arithmetic is
// computed in the older rows under both (under ignore, when the sink adds
// the column from the first row that has it).
func TestAddedColumnsReadTheDefault(t *testing.T) {
	for _, c := range []struct{ target, mode string }{
		{"postgres", "apply"}, {"postgres", "ignore"}, {"mysql", "apply"}, {"mysql", "ignore"},
	} {
		t.Run(c.target+"_"+c.mode, func(t *testing.T) {
			src := mtOpenSource(t, "mysql")
			db := uniqueName("it_adddef")
			tg := mtOpenTarget(t, c.target, db+"_t")
			mustExec(t, src.admin, "CREATE DATABASE `"+db+"`")
			t.Cleanup(func() { src.admin.Exec("DROP DATABASE IF EXISTS `" + db + "`") })
			mustExec(t, src.admin, "CREATE TABLE `"+db+"`.canary (id INT PRIMARY KEY)")
			mustExec(t, src.admin, "CREATE TABLE `"+db+"`.t_like (id INT PRIMARY KEY, a INT)")
			mustExec(t, src.admin, "INSERT INTO `"+db+"`.t_like VALUES (1, 1)")
			r := startPipeline(t, mtConfig(t, src, tg, db, "initial", "  schema_changes: "+c.mode+"\n"))
			defer r.stop(t)
			mtWaitCanary(t, src, tg, db, r)
			mtWaitRows(t, r, tg, "SELECT id, a FROM "+tg.table("t_like"), []string{"1|1"})
			for _, q := range []string{
				"ALTER TABLE `" + db + "`.t_like ADD COLUMN k2 INT NOT NULL",
				"ALTER TABLE `" + db + "`.t_like ADD COLUMN en ENUM('p','q') NOT NULL",
				"ALTER TABLE `" + db + "`.t_like ADD COLUMN d INT DEFAULT 7",
				"ALTER TABLE `" + db + "`.t_like ADD COLUMN s VARCHAR(5) NOT NULL DEFAULT 'x'",
				"ALTER TABLE `" + db + "`.t_like ADD COLUMN f INT AS (a+1) VIRTUAL",
				"INSERT INTO `" + db + "`.t_like (id, a, k2, en, d, s) VALUES (2, 2, 5, 'q', 8, 'y')",
			} {
				mustExec(t, src.admin, q)
			}
			want, err := mtRows(src.admin, "SELECT id, a, k2, en, d, s FROM `"+db+"`.t_like")
			if err != nil {
				t.Fatal(err)
			}
			if want[0] != "1|1|0|p|7|x" {
				t.Fatalf("MySQL reads row 1 as %s", want[0])
			}
			mtWaitRows(t, r, tg, "SELECT id, a, k2, en, d, s FROM "+tg.table("t_like"), want)
			// the generated column: the new row's value; in the older one the
			// value computed on the target, as MySQL reads it there
			mtWaitRows(t, r, tg, "SELECT id, f FROM "+tg.table("t_like"), []string{"1|2", "2|3"})
		})
	}
}
