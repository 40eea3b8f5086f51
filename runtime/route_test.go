package runtime

import (
	"context"
	"sync"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// A TRUNCATE between rows reaches every queue once, after the rows before
// it and before the rows after it on that queue, marked with the number of
// copies and as a transaction end; rows still go to one queue each.
func TestEmbeddedBarrierReachesEveryQueueInPlace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const queues = 4
	e := NewEmbedded(queues, 8)
	var mu sync.Mutex
	perQueue := map[int][]schema.Record{}
	go func() {
		_ = e.Subscriber(100).Consume(ctx, func(_ context.Context, recs []schema.Record) error {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range recs {
				perQueue[r.Delivery.Queue] = append(perQueue[r.Delivery.Queue], r)
			}
			return nil
		})
	}()
	tbl := schema.TableID{Database: "d", Table: "t"}
	row := func(key int64) schema.Record {
		return schema.Record{Op: schema.OpCreate, Table: tbl, Key: schema.Row{key}, Delivery: &schema.Delivery{}}
	}
	var batch []schema.Record
	for k := range int64(40) {
		batch = append(batch, row(k))
	}
	batch = append(batch, schema.Record{Op: schema.OpTruncate, Table: tbl, Delivery: &schema.Delivery{}})
	for k := range int64(40) {
		batch = append(batch, row(100+k))
	}
	acked := make(chan error, 1)
	if err := e.Publisher().Publish(ctx, batch, func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for q := range queues {
		seen, after := 0, false
		for _, r := range perQueue[q] {
			switch {
			case r.Op == schema.OpTruncate:
				seen++
				after = true
				if r.Headers[schema.HeaderBarrierCopies] != "4" || r.Headers[schema.HeaderTxEnd] != "true" {
					t.Errorf("queue %d: truncate copy headers %v", q, r.Headers)
				}
			case after && r.Key[0].(int64) < 100, !after && r.Key[0].(int64) >= 100:
				t.Errorf("queue %d: row %v on the wrong side of the truncate", q, r.Key)
			}
			if r.Op != schema.OpTruncate && QueueFor(&r, queues) != q {
				t.Errorf("row %v on queue %d, its queue is %d", r.Key, q, QueueFor(&r, queues))
			}
		}
		if seen != 1 {
			t.Errorf("queue %d got %d copies of the truncate, want 1", q, seen)
		}
	}
}

func TestQueuesFor(t *testing.T) {
	tbl := schema.TableID{Database: "d", Table: "t"}
	for _, c := range []struct {
		r    schema.Record
		want int
	}{
		{schema.Record{Op: schema.OpCreate, Table: tbl, Key: schema.Row{int64(1)}}, 1},
		{schema.Record{Op: schema.OpTruncate, Table: tbl}, 4},
		{schema.Record{Op: schema.OpSchemaChange, Table: tbl}, 4},
		{schema.Record{Op: schema.OpSchemaChange, Table: schema.TableID{Database: "d"}}, 1}, // CREATE DATABASE: no table
	} {
		if got := QueuesFor(&c.r, 4); len(got) != c.want {
			t.Errorf("%s of %q: queues %v, want %d", c.r.Op, c.r.Table, got, c.want)
		}
	}
}
