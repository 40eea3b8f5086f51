package integration

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

// testReplayNeverRegresses models a crash after the sink applied changes
// but before the source position covering them was saved: the pipeline is
// restarted from an older saved position, so it reads those changes again.
// A trigger in PostgreSQL records every write that would move an order's
// amount backwards (the workload only ever increases it); there must be none,
// and the target must still end equal to the source.
func testReplayNeverRegresses(t *testing.T, k *kit) {
	db, my := k.db, k.src
	cfg := k.config(t)
	posFile := filepath.Join(filepath.Dir(cfg), "positions", db+".position")
	w := newWorkload(my, db)

	r := startPipeline(t, cfg)
	k.waitStreaming(t, r)
	assertNoRegressions := k.watchRegressions(t)
	w.run(t, 1000)
	k.waitEqual(t, r)
	old, err := os.ReadFile(posFile)
	if err != nil {
		t.Fatalf("no saved position after 1000 changes: %v", err)
	}
	w.run(t, 3000)
	k.waitEqual(t, r)
	r.stop(t)

	// The "crash": the saves after the first 1000 changes never happened.
	if err := os.WriteFile(posFile, old, 0o600); err != nil {
		t.Fatal(err)
	}
	r = startPipeline(t, cfg)
	w.run(t, 500)
	k.waitEqual(t, r)
	r.stop(t)

	assertNoRegressions(t)
}

// watchRegressions installs a trigger on the target's orders table that
// records every update moving an order's amount backwards (the workload
// only ever increases amounts); the returned check fails the test if any
// was recorded.
func watchRegressions(t *testing.T, pg *sql.DB, db string) func(*testing.T) {
	return watchRegressionsOf(t, pg, db, "orders")
}

// watchRegressionsOf is watchRegressions on table (with an amount column
// that only grows); orders' records go to the table regressions, another
// table's to <table>_regressions.
func watchRegressionsOf(t *testing.T, pg *sql.DB, db, table string) func(*testing.T) {
	t.Helper()
	reg, fn := `"`+db+`".regressions`, `"`+db+`".no_regress`
	if table != "orders" {
		reg, fn = `"`+db+`".`+table+`_regressions`, `"`+db+`".no_regress_`+table
	}
	mustExec(t, pg, `CREATE TABLE `+reg+` (id BIGINT, old_amount NUMERIC, new_amount NUMERIC)`)
	mustExec(t, pg, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.amount < OLD.amount THEN
				INSERT INTO `+reg+` VALUES (OLD.id, OLD.amount, NEW.amount);
			END IF;
			RETURN NEW;
		END $$`)
	mustExec(t, pg, `CREATE TRIGGER no_regress BEFORE UPDATE ON "`+db+`"."`+table+`" FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)
	return func(t *testing.T) {
		t.Helper()
		var n int
		if err := pg.QueryRow(`SELECT count(*) FROM ` + reg).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			rows, _ := dump(pg, `SELECT * FROM `+reg+` LIMIT 5`)
			t.Fatalf("%s: %d writes moved a row back to an older version, e.g. %v", table, n, rows)
		}
	}
}
