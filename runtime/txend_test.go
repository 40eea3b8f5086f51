package runtime

import (
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

func TestTransactionEnds(t *testing.T) {
	tx := func(op schema.Op, id string, key int64) schema.Record {
		return schema.Record{Op: op, Table: schema.TableID{Database: "d", Table: "t"}, Key: schema.Row{key}, Transaction: &schema.Transaction{ID: id}}
	}
	recs := []schema.Record{
		tx(schema.OpBegin, "a", 0),
		tx(schema.OpCreate, "a", 1), // queue 1
		tx(schema.OpCreate, "a", 2), // queue 0
		tx(schema.OpUpdate, "a", 3), // queue 1: last of a there
		tx(schema.OpCommit, "a", 0),
		tx(schema.OpCreate, "b", 4),                      // queue 0, but b's commit is in a later batch
		{Op: schema.OpCreate, Key: schema.Row{int64(6)}}, // no transaction
	}
	ends := TransactionEnds(recs, func(i int) (int, bool) { return int(recs[i].Key[0].(int64) % 2), true })
	if len(ends) != 2 || !ends[2] || !ends[3] {
		t.Fatalf("ends %v, want records 2 and 3 (the last of transaction a on each queue)", ends)
	}
}

func TestWithTxEndCopiesHeaders(t *testing.T) {
	shared := map[string]string{"keep": "1"}
	r := WithTxEnd(schema.Record{Headers: shared})
	if r.Headers["keep"] != "1" || r.Headers[schema.HeaderTxEnd] != "true" || len(shared) != 1 {
		t.Errorf("headers: record %v, shared map %v (must be copied, not changed)", r.Headers, shared)
	}
}
