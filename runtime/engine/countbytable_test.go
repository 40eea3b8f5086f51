package engine

import (
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// TestCountByTable: data records are counted per table and op, in runs or
// interleaved, markers not at all.
func TestCountByTable(t *testing.T) {
	a := schema.TableID{Database: "db", Table: "a"}
	b := schema.TableID{Database: "db", Table: "b"}
	c := schema.TableID{Database: "other", Table: "a"}
	var recs []schema.Record
	add := func(id schema.TableID, op schema.Op, n int) {
		for range n {
			recs = append(recs, schema.Record{Table: id, Op: op})
		}
	}
	add(a, schema.OpCreate, 3)
	add(b, schema.OpUpdate, 2)
	add(a, schema.OpDelete, 1)
	add(a, schema.OpCommit, 1)
	add(c, schema.OpCreate, 4)
	add(b, schema.OpCommit, 1)
	m := newMetrics()
	countByTable(m, m.recordsIn, recs)
	countByTable(m, m.recordsIn, recs[:3])
	want := map[tableOp]int64{{"db.a", schema.OpCreate}: 6, {"db.b", schema.OpUpdate}: 2, {"db.a", schema.OpDelete}: 1, {"other.a", schema.OpCreate}: 4}
	if len(m.recordsIn) != len(want) {
		t.Fatalf("%d table/op pairs counted, want %d", len(m.recordsIn), len(want))
	}
	for k, n := range want {
		if got := m.recordsIn[k]; got == nil || got.Load() != n {
			t.Errorf("%s %s: counted %v, want %d", k.table, k.op, got, n)
		}
	}
}
