package app

import (
	"database/sql"
	"os"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/lib/pq"
)

// `sluice check` compares the target tables that already exist with what
// the sink writes into them (issue 28, problem 6): a key the target
// cannot upsert on, a unique index on part of the key, a NOT NULL column
// the source does not fill fail; a column the sink adds or widens is a
// warning, and without auto_evolve a failure. Before, each of these
// printed "all checks passed" and the pipeline stopped (or merged or
// duplicated rows) at the table's first row.
func TestCheckComparesExistingTargetTables(t *testing.T) {
	c, db := checkServer(t)
	for _, q := range []string{
		"CREATE TABLE " + db + ".good (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE " + db + ".nokey (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE " + db + ".subkey (a INT, b INT, v INT, PRIMARY KEY (a, b))",
		"CREATE TABLE " + db + ".narrow (id INT PRIMARY KEY, v BIGINT)",
		"CREATE TABLE " + db + ".extra (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE " + db + ".missing (id INT PRIMARY KEY, v INT, w INT)",
	} {
		if _, err := c.Execute(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	user, pw := os.Getenv("SLUICE_MYSQL_CDC_USER"), os.Getenv("SLUICE_MYSQL_CDC_PASSWORD")
	target := func(t *testing.T, driver, dsn, schemaDDL, q string) {
		tdb, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tdb.Close() })
		stmts := []string{schemaDDL,
			"CREATE TABLE " + q + ".good (id INT PRIMARY KEY, v INT)",
			"CREATE TABLE " + q + ".nokey (id INT, v INT)",
			"CREATE TABLE " + q + ".subkey (a INT PRIMARY KEY, b INT NOT NULL, v INT)",
			"CREATE TABLE " + q + ".narrow (id INT PRIMARY KEY, v SMALLINT)",
			"CREATE TABLE " + q + ".extra (id INT PRIMARY KEY, v INT, must INT NOT NULL)",
			"CREATE TABLE " + q + ".missing (id INT PRIMARY KEY, v INT)",
		}
		for _, s := range stmts {
			if _, err := tdb.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	if _, err := c.Execute("CREATE TABLE " + db + ".loose (a INT, j JSON)"); err != nil {
		t.Fatal(err)
	}
	expect := func(t *testing.T, path string, evolve bool) {
		t.Helper()
		code, out, errOut := runCheck(t, path)
		has := func(level, table, text string) bool {
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, level+" target_table: ") && strings.Contains(l, "."+table+": ") && strings.Contains(l, text) && strings.Contains(l, "; fix: ") {
					return true
				}
			}
			return false
		}
		for _, w := range []struct {
			level, table, text string
		}{
			{"FAIL", "nokey", "no primary key or unique index on exactly the source's primary key (id)"},
			{"FAIL", "subkey", "covers only part of the source's primary key (a, b)"},
			{"FAIL", "extra", `column "must" is NOT NULL without a default`},
			{map[bool]string{true: "WARN", false: "FAIL"}[evolve], "narrow", `column "v" is smallint, narrower than`},
			{map[bool]string{true: "WARN", false: "FAIL"}[evolve], "missing", `no column "w"`},
		} {
			if !has(w.level, w.table, w.text) {
				t.Errorf("no %s line for table %s saying %q", w.level, w.table, w.text)
			}
		}
		if strings.Contains(out, ".good: ") {
			t.Errorf("a line for the table that matches")
		}
		if code != 1 || !strings.Contains(out, "checks failed") {
			t.Errorf("exit %d, want 1", code)
		}
		t.Logf("output:\n%s%s", out, errOut)
	}
	t.Run("postgres", func(t *testing.T) {
		dsn := serverEnv(t, "scripts/servers.sh start postgres", "SLUICE_PG_DSN")[0]
		target(t, "postgres", dsn, "CREATE SCHEMA "+db, db)
		t.Cleanup(func() {
			if pg, err := sql.Open("postgres", dsn); err == nil {
				_, _ = pg.Exec("DROP SCHEMA " + db + " CASCADE")
				pg.Close()
			}
		})
		path := checkConfigTo(t, db, user, pw, "postgres", dsn)
		expect(t, path, true)
		appendFile(t, path, "  auto_evolve: false\n")
		expect(t, path, false)
	})
	t.Run("mysql97", func(t *testing.T) {
		env := serverEnv(t, "scripts/servers.sh start mysql", "SLUICE_MYSQL97_TARGET_DSN")
		root := strings.TrimSuffix(env[0], "/") + "/"
		target(t, "mysql", root, "CREATE DATABASE "+db, db)
		// a table without key whose rows the sink finds by comparing
		// every column, with a JSON column MySQL cannot compare exactly
		my, err := sql.Open("mysql", root)
		if err != nil {
			t.Fatal(err)
		}
		defer my.Close()
		if _, err := my.Exec("CREATE TABLE " + db + ".loose (a INT, j JSON)"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if my, err := sql.Open("mysql", root); err == nil {
				_, _ = my.Exec("DROP DATABASE " + db)
				my.Close()
			}
		})
		path := checkConfigTo(t, db, user, pw, "mysql", root+db)
		expect(t, path, true)
		if _, out, _ := runCheck(t, path); !strings.Contains(out, "FAIL target_table: "+db+".loose: ") || !strings.Contains(out, "cannot compare column j (json) exactly") {
			t.Errorf("no FAIL for the keyless table with a JSON column:\n%s", out)
		}
		appendFile(t, path, "  auto_evolve: false\n")
		expect(t, path, false)
	})
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(b)+text)
}
