package integration

import "testing"

// initialSnapshotThenStream starts a pipeline with snapshot: initial on
// tables that already hold rows, keeps writing while the snapshot runs, and
// checks the target ends equal to the source: the hand-off from snapshot to
// binlog loses and repeats nothing that matters.
func initialSnapshotThenStream(t *testing.T, transport string, e env) {
	db, my, pg := sourceAndTarget(t, e, "it_snap")
	w := newWorkload(my, db)
	w.run(t, 5000) // before sluice ever ran
	path := writeConfig(t, e, db, transport)
	editConfig(t, path, "  include:", "  snapshot: initial\n  snapshot_chunk: 500\n  include:")
	r := startPipeline(t, path)
	w.run(t, 2000) // while the snapshot runs
	waitEqual(t, my, pg, db, r)
	w.run(t, 1000)
	waitEqual(t, my, pg, db, r)
	r.stop(t)
}
