package embedded

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

func oneRec(id int64) []schema.Record {
	return []schema.Record{{Op: schema.OpCreate, Table: schema.TableID{Database: "d", Table: "t"}, Key: schema.Row{id}}}
}

// consumeBatches runs sub until ctx ends and sends the size of every batch
// it hands over.
func consumeBatches(ctx context.Context, sub runtime.Subscriber) <-chan int {
	sizes := make(chan int, 64)
	go func() {
		_ = sub.Consume(ctx, func(_ context.Context, recs []schema.Record) error {
			sizes <- len(recs)
			return nil
		})
	}()
	return sizes
}

func publishAcked(t *testing.T, pub runtime.Publisher, id int64) <-chan error {
	t.Helper()
	acked := make(chan error, 1)
	if err := pub.Publish(context.Background(), oneRec(id), func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	return acked
}

// The linger tests run in synctest bubbles: synctest.Wait returns once the
// consumer is durably blocked (lingering), and their clock is the bubble's,
// so an hour's linger costs no wall time and is measured exactly.

func TestEmbeddedLingerGathersLateRecords(t *testing.T) {
	synctest.Test(t, testLingerGathersLateRecords)
}

func testLingerGathersLateRecords(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := New(1, 8)
	// A linger far longer than the test: the batch ends because it is full
	// (maxBatch 2), so the second record, published after the first was
	// taken, must be in the same batch.
	sizes := consumeBatches(ctx, e.LingerSubscriber(2, time.Hour))
	pub := e.Publisher()
	a1 := publishAcked(t, pub, 1)
	synctest.Wait() // the consumer took the first record and lingers
	a2 := publishAcked(t, pub, 2)
	if got := <-sizes; got != 2 {
		t.Fatalf("first batch has %d records, want 2 (the linger should have waited for the second)", got)
	}
	for _, a := range []<-chan error{a1, a2} {
		if err := <-a; err != nil {
			t.Fatal(err)
		}
	}
}

func TestEmbeddedWithoutLingerDoesNotWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := New(1, 8)
	sizes := consumeBatches(ctx, e.Subscriber(2))
	pub := e.Publisher()
	a1 := publishAcked(t, pub, 1)
	if got := <-sizes; got != 1 {
		t.Fatalf("first batch has %d records, want 1", got)
	}
	if err := <-a1; err != nil {
		t.Fatal(err)
	}
}

func TestEmbeddedLingerEndsWithContext(t *testing.T) { synctest.Test(t, testLingerEndsWithContext) }

func testLingerEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := New(1, 8)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = e.LingerSubscriber(100, time.Hour).Consume(ctx, func(context.Context, []schema.Record) error { return nil })
	}()
	publishAcked(t, e.Publisher(), 1)
	synctest.Wait() // the consumer lingers over the first record
	start := time.Now()
	cancel()
	wg.Wait()
	if held := time.Since(start); held >= time.Hour {
		t.Fatalf("Consume returned %v after its context ended: the linger held it", held)
	}
}

// A transaction whose commit is published in a later batch than its rows:
// each queue that got rows only earlier receives the commit marker itself,
// and a queue with rows in the commit's batch gets its last one marked.
func TestEmbeddedCommitReachesQueuesOfEarlierBatches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const queues = 4
	e := New(queues, 8)
	type got struct {
		q    int
		recs []schema.Record
	}
	out := make(chan got, 16)
	go func() {
		_ = e.Subscriber(100).Consume(ctx, func(_ context.Context, recs []schema.Record) error {
			out <- got{recs[0].Delivery.Queue, recs}
			return nil
		})
	}()
	tx := &schema.Transaction{ID: "0-1-9"}
	row := func(key int64) schema.Record {
		return schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "d", Table: "t"}, Key: schema.Row{key}, Transaction: tx, Delivery: &schema.Delivery{Topic: Topic}}
	}
	// Two keys on different queues in the first batch; the second batch
	// has one more row on the first key's queue, then the commit.
	a, b := int64(1), int64(2)
	for runtime.QueueFor(&[]schema.Record{row(a)}[0], queues) == runtime.QueueFor(&[]schema.Record{row(b)}[0], queues) {
		b++
	}
	qa, qb := runtime.QueueFor(&[]schema.Record{row(a)}[0], queues), runtime.QueueFor(&[]schema.Record{row(b)}[0], queues)
	pub := e.Publisher()
	for _, batch := range [][]schema.Record{
		{{Op: schema.OpBegin, Transaction: tx}, row(a), row(b)},
		{row(a), {Op: schema.OpCommit, Transaction: tx, Position: []byte("p"), Delivery: &schema.Delivery{Topic: Topic}}},
	} {
		acked := make(chan error, 1)
		if err := pub.Publish(ctx, batch, func(err error) { acked <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-acked; err != nil {
			t.Fatal(err)
		}
	}
	close(out)
	var sawCommitOnB, markedOnA bool
	for g := range out {
		last := g.recs[len(g.recs)-1]
		switch {
		case g.q == qb && last.Op == schema.OpCommit:
			sawCommitOnB = true
		case g.q == qa && last.Op == schema.OpCommit:
			t.Errorf("queue %d got the commit marker although its last row was in the commit's batch", qa)
		case g.q == qa && last.Headers[schema.HeaderTxEnd] == "true":
			markedOnA = true
		}
	}
	if !sawCommitOnB || !markedOnA {
		t.Fatalf("commit marker on queue %d: %v; last row of queue %d marked: %v", qb, sawCommitOnB, qa, markedOnA)
	}
}

// A TRUNCATE between rows reaches every queue once, after the rows before
// it and before the rows after it on that queue, marked with the number of
// copies and as a transaction end; rows still go to one queue each.
func TestEmbeddedBarrierReachesEveryQueueInPlace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const queues = 4
	e := New(queues, 8)
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
			if r.Op != schema.OpTruncate && runtime.QueueFor(&r, queues) != q {
				t.Errorf("row %v on queue %d, its queue is %d", r.Key, q, runtime.QueueFor(&r, queues))
			}
		}
		if seen != 1 {
			t.Errorf("queue %d got %d copies of the truncate, want 1", q, seen)
		}
	}
}
