package integration

import (
	"fmt"
	"strings"
	"testing"
)

// TestRoutingEndToEnd: a MariaDB/MySQL source table routed by a pattern
// with captures into another PostgreSQL schema and name, with a column
// renamed and one dropped, lands exactly through a running pipeline: rows,
// an update, a delete, and an ALTER TABLE … ADD COLUMN on the source after
// start (schema_changes: apply) adding the renamed column under its new
// name while the dropped one is never created. The default schema gets no
// table of that name.
func TestRoutingEndToEnd(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	db, my, pg := sourceAndTarget(t, e, "it_route")
	routed := db + "_r"
	t.Cleanup(func() { pg.Exec(`DROP SCHEMA IF EXISTS "` + routed + `" CASCADE`) })
	mustExec(t, my, "CREATE TABLE "+db+".shard_3_orders (id INT PRIMARY KEY, v VARCHAR(20), secret VARCHAR(20))")
	cfg := writeConfig(t, e, db, "embedded")
	editConfig(t, cfg, "sink:\n", fmt.Sprintf(`sink:
  schema_changes: apply
  routes:
    - match: '%[1]s\.shard_(\d+)_(\w+)'
      schema: %[2]s
      table: $2_s$1
  columns:
    - match: '%[1]s\.shard_.*'
      rename: {v: val, c: cc}
      drop: [secret, secret2]
`, db, routed))
	r := startPipeline(t, cfg)
	defer r.stop(t)
	waitStreaming(t, my, pg, db, r)

	columns := func() string {
		got, err := dump(pg, "SELECT column_name FROM information_schema.columns WHERE table_schema = "+quoteLit(routed)+" AND table_name = 'orders_s3' ORDER BY column_name")
		if err != nil {
			return "error: " + err.Error()
		}
		return strings.Join(got, " ")
	}
	rows := func(cols string) string {
		got, err := dump(pg, "SELECT id, "+cols+` FROM "`+routed+`".orders_s3 ORDER BY id`)
		if err != nil {
			return "error: " + err.Error()
		}
		return strings.Join(got, " ")
	}
	mustExec(t, my, "INSERT INTO "+db+".shard_3_orders VALUES (1, 'a', 's1'), (2, 'b', 's2'), (3, 'c', 's3')")
	want := "'1','a' '2','b' '3','c'"
	waitForOr(t, r, func() bool { return rows("val") == want }, func() string { return "routed rows " + rows("val") + ", want " + want })
	if got := columns(); got != "'id' 'val'" {
		t.Fatalf("routed table's columns %s", got)
	}

	mustExec(t, my, "ALTER TABLE "+db+".shard_3_orders ADD COLUMN c VARCHAR(10), ADD COLUMN secret2 VARCHAR(10) AFTER secret")
	mustExec(t, my, "INSERT INTO "+db+".shard_3_orders VALUES (4, 'd', 's4', 'x4', 'c4')")
	mustExec(t, my, "UPDATE "+db+".shard_3_orders SET v = 'a1', c = 'c1', secret2 = 'x1' WHERE id = 1")
	mustExec(t, my, "DELETE FROM "+db+".shard_3_orders WHERE id = 2")
	want = "'1','a1','c1' '3','c',NULL '4','d','c4'"
	waitForOr(t, r, func() bool { return rows("val, cc") == want }, func() string { return "routed rows " + rows("val, cc") + ", want " + want })
	if got := columns(); got != "'cc' 'id' 'val'" {
		t.Fatalf("routed table's columns after ADD COLUMN: %s", got)
	}
	if got, err := dump(pg, "SELECT table_name FROM information_schema.tables WHERE table_schema = "+quoteLit(db)+" AND table_name LIKE 'shard%'"); err != nil || len(got) != 0 {
		t.Fatalf("the template's schema got %v (%v)", got, err)
	}
}
