package integration

import "testing"

// initialSnapshotThenStream starts a pipeline with snapshot: initial on
// tables that already hold rows, keeps writing while the snapshot runs, and
// checks the target ends equal to the source: the hand-off from snapshot to
// binlog loses and repeats nothing that matters.
func initialSnapshotThenStream(t *testing.T, k *kit) {
	db, my := k.db, k.src
	w := newWorkload(my, db)
	w.run(t, 5000) // before sluice ever ran
	path := k.config(t)
	editConfig(t, path, "  snapshot: never\n", "  snapshot: initial\n  snapshot_chunk: 500\n")
	r := startPipeline(t, path)
	w.run(t, 2000) // while the snapshot runs
	k.waitEqual(t, r)
	w.run(t, 1000)
	k.waitEqual(t, r)
	r.stop(t)
}
