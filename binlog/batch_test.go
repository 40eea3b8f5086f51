package binlog

import (
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

func TestBatchEndsAtTransactionBoundaries(t *testing.T) {
	row := func() schema.Record {
		return schema.Record{Op: schema.OpCreate, Transaction: &schema.Transaction{ID: "0-1-5"}}
	}
	commit := schema.Record{Op: schema.OpCommit, Transaction: &schema.Transaction{ID: "0-1-5"}, Position: []byte("p")}
	if insideTx(nil) || !insideTx([]schema.Record{row()}) || insideTx([]schema.Record{row(), commit}) ||
		insideTx([]schema.Record{{Op: schema.OpRead}}) {
		t.Fatal("insideTx")
	}
	mk := func(n int, commitsAt ...int) []schema.Record {
		out := make([]schema.Record, n)
		for i := range out {
			out[i] = row()
		}
		for _, c := range commitsAt {
			out[c] = commit
		}
		return out
	}
	for _, c := range []struct {
		name string
		recs []schema.Record
		want int
	}{
		{"small batch whole", mk(10, 9), 10},
		{"cut at maxBatch when a commit is there", mk(maxBatch+10, maxBatch-1), maxBatch},
		{"past maxBatch to the commit", mk(maxBatch+10, 100, maxBatch+4), maxBatch + 5},
		{"a transaction larger than maxTxBatch is cut", mk(maxTxBatch + 5), maxTxBatch},
	} {
		if got := batchEnd(c.recs); got != c.want {
			t.Errorf("%s: batchEnd = %d, want %d", c.name, got, c.want)
		}
	}
}
