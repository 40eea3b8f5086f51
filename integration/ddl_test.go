package integration

import (
	"fmt"
	"testing"
)

// TestAddColumnWhileStreaming changes a source table's shape mid-stream: the
// sink must add the column and keep the target equal to the source, and the
// schema-change record must not stop the pipeline.
func TestAddColumnWhileStreaming(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	db, my, pg := sourceAndTarget(t, e, "it_ddl")
	r := startPipeline(t, writeConfig(t, e, db, "embedded"))
	defer r.stop(t)
	waitStreaming(t, my, pg, db, r)
	w := newWorkload(my, db)
	w.run(t, 500)
	mustExec(t, my, "ALTER TABLE "+db+".orders ADD COLUMN channel VARCHAR(16) NULL")
	w.run(t, 500)
	for i := 1; i <= 20; i++ {
		mustExec(t, my, fmt.Sprintf("UPDATE %s.orders SET channel = 'web-%d' WHERE id = %d", db, i, i))
	}
	waitEqual(t, my, pg, db, r)
	want, err := dump(my, "SELECT id, channel FROM "+db+".orders ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, func() bool {
		got, err := dump(pg, `SELECT id, channel FROM "`+db+`"."orders" ORDER BY id`)
		return err == nil && fmt.Sprint(got) == fmt.Sprint(want)
	}, "the added column channel never matched the source")
}
