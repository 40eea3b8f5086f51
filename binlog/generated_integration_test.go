package binlog

import (
	"reflect"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// TestGeneratedColumns checks stored and virtual generated columns arrive
// with their computed values, the same on the streaming and snapshot paths.
func TestGeneratedColumns(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, `CREATE TABLE gen (id INT PRIMARY KEY, a INT,
  g INT AS (a * 2) STORED, v INT AS (a + 1) VIRTUAL, s VARCHAR(20) AS (CONCAT('x', a)) VIRTUAL)`)
	stream := openSource(t, testConfig(env, db), nil)
	exec(t, c, "INSERT INTO gen (id, a) VALUES (1, 5), (2, NULL)")
	exec(t, c, "UPDATE gen SET a = 7 WHERE id = 1")
	recs := ownData(readUntil(t, stream, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpUpdate) >= 1 }), db)
	var upd schema.Record
	for _, r := range recs {
		if r.Op == schema.OpUpdate {
			upd = r
		}
	}
	col := func(r schema.Record, row schema.Row, name string) any {
		i := r.ValueSchema.FieldIndex(name)
		if i < 0 {
			t.Fatalf("no column %s in %v", name, r.ValueSchema)
		}
		return row[i]
	}
	for name, want := range map[string][2]any{"g": {int64(10), int64(14)}, "v": {int64(6), int64(8)}, "s": {"x5", "x7"}} {
		if got := col(upd, upd.Before, name); !reflect.DeepEqual(got, want[0]) {
			t.Errorf("before %s = %#v, want %#v", name, got, want[0])
		}
		if got := col(upd, upd.After, name); !reflect.DeepEqual(got, want[1]) {
			t.Errorf("after %s = %#v, want %#v", name, got, want[1])
		}
	}

	cfg := testConfig(env, db)
	cfg.Snapshot = SnapshotInitialOnly
	read, _ := readSnapshot(t, openSource(t, cfg, nil))
	for _, r := range read {
		if r.Table.Database != db || r.After[0].(int64) != 1 {
			continue
		}
		if !r.ValueSchema.Equal(upd.ValueSchema) {
			t.Fatalf("snapshot schema %v, stream %v", r.ValueSchema, upd.ValueSchema)
		}
		if !reflect.DeepEqual(r.After, upd.After) {
			t.Fatalf("snapshot row %#v, stream %#v", r.After, upd.After)
		}
		return
	}
	t.Fatal("snapshot did not read row 1")
}
