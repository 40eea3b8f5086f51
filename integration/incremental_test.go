package integration

import (
	"fmt"
	"math/rand"
	"testing"
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
