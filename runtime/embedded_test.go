package runtime

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

func oneRec(id int64) []schema.Record {
	return []schema.Record{{Op: schema.OpCreate, Table: schema.TableID{Database: "d", Table: "t"}, Key: schema.Row{id}}}
}

// consumeBatches runs sub until ctx ends and sends the size of every batch
// it hands over.
func consumeBatches(ctx context.Context, sub Subscriber) <-chan int {
	sizes := make(chan int, 64)
	go func() {
		_ = sub.Consume(ctx, func(_ context.Context, recs []schema.Record) error {
			sizes <- len(recs)
			return nil
		})
	}()
	return sizes
}

func publishAcked(t *testing.T, pub Publisher, id int64) <-chan error {
	t.Helper()
	acked := make(chan error, 1)
	if err := pub.Publish(context.Background(), oneRec(id), func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	return acked
}

func TestEmbeddedLingerGathersLateRecords(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := NewEmbedded(1, 8)
	// A linger far longer than the test: the batch ends because it is full
	// (maxBatch 2), so the second record, published after the first was
	// taken, must be in the same batch.
	sizes := consumeBatches(ctx, e.LingerSubscriber(2, time.Hour))
	pub := e.Publisher()
	a1 := publishAcked(t, pub, 1)
	time.Sleep(20 * time.Millisecond) // let the consumer take the first record and start lingering
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
	e := NewEmbedded(1, 8)
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

func TestEmbeddedLingerEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := NewEmbedded(1, 8)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = e.LingerSubscriber(100, time.Hour).Consume(ctx, func(context.Context, []schema.Record) error { return nil })
	}()
	publishAcked(t, e.Publisher(), 1)
	time.Sleep(10 * time.Millisecond)
	cancel()
	wg.Wait() // a linger of an hour must not hold Consume past its context
}

// A transaction whose commit is published in a later batch than its rows:
// each queue that got rows only earlier receives the commit marker itself,
// and a queue with rows in the commit's batch gets its last one marked.
func TestEmbeddedCommitReachesQueuesOfEarlierBatches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const queues = 4
	e := NewEmbedded(queues, 8)
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
		return schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "d", Table: "t"}, Key: schema.Row{key}, Transaction: tx, Delivery: &schema.Delivery{Topic: EmbeddedTopic}}
	}
	// Two keys on different queues in the first batch; the second batch
	// has one more row on the first key's queue, then the commit.
	a, b := int64(1), int64(2)
	for QueueFor(&[]schema.Record{row(a)}[0], queues) == QueueFor(&[]schema.Record{row(b)}[0], queues) {
		b++
	}
	qa, qb := QueueFor(&[]schema.Record{row(a)}[0], queues), QueueFor(&[]schema.Record{row(b)}[0], queues)
	pub := e.Publisher()
	for _, batch := range [][]schema.Record{
		{{Op: schema.OpBegin, Transaction: tx}, row(a), row(b)},
		{row(a), {Op: schema.OpCommit, Transaction: tx, Position: []byte("p"), Delivery: &schema.Delivery{Topic: EmbeddedTopic}}},
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
