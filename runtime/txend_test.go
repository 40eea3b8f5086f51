package runtime

import (
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

func TestMarkTransactionEnds(t *testing.T) {
	tx := func(op schema.Op, id string, key int64) schema.Record {
		return schema.Record{Op: op, Table: schema.TableID{Database: "d", Table: "t"}, Key: schema.Row{key}, Transaction: &schema.Transaction{ID: id}}
	}
	shared := map[string]string{"keep": "1"}
	recs := []schema.Record{
		tx(schema.OpBegin, "a", 0),
		tx(schema.OpCreate, "a", 1), // queue 1
		tx(schema.OpCreate, "a", 2), // queue 0
		tx(schema.OpUpdate, "a", 3), // queue 1: last of a there
		tx(schema.OpCommit, "a", 0),
		tx(schema.OpCreate, "b", 4),                      // queue 0, but b's commit is in a later batch
		{Op: schema.OpCreate, Key: schema.Row{int64(6)}}, // no transaction
	}
	recs[2].Headers = shared
	MarkTransactionEnds(recs, func(i int) (int, bool) { return int(recs[i].Key[0].(int64) % 2), true })
	marked := map[int]bool{}
	for i := range recs {
		if recs[i].Headers[schema.HeaderTxEnd] == "true" {
			marked[i] = true
		}
	}
	if len(marked) != 2 || !marked[2] || !marked[3] {
		t.Fatalf("marked %v, want records 2 and 3 (the last of transaction a on each queue)", marked)
	}
	if recs[2].Headers["keep"] != "1" || len(shared) != 1 {
		t.Errorf("headers: record %v, shared map %v (must be copied, not changed)", recs[2].Headers, shared)
	}
}
