package embedded

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// Topic is the Delivery.Topic of records on the embedded transport.
const Topic = "embedded"

// Transport is the in-process transport: bounded queues between a source and
// a sink in one process. A batch is acknowledged to the source only after the
// sink applied every record of it, so the source position never runs ahead
// of the target.
type Transport struct {
	queues []chan part
	closed atomic.Bool

	txMu sync.Mutex
	// txQueues holds, per transaction whose commit has not been published
	// yet, the queues that received its records.
	txQueues map[string]map[int]bool
	// offsets counts the records put on each queue (under txMu): the
	// Delivery.Offset of the next, for logs; ordering uses Record.ID.
	offsets []int64
}

// maxOpenTx bounds txQueues: transactions whose commit never came (a source
// restarted inside one) are forgotten past it.
const maxOpenTx = 1024

type part struct {
	recs []schema.Record
	done func(error)
}

// New makes n queues, each holding at most depth batches.
func New(n, depth int) *Transport {
	if n <= 0 {
		n = 4
	}
	if depth <= 0 {
		depth = 16
	}
	e := &Transport{queues: make([]chan part, n), offsets: make([]int64, n)}
	for i := range e.queues {
		e.queues[i] = make(chan part, depth)
	}
	return e
}

// Publisher returns the source side.
func (e *Transport) Publisher() runtime.Publisher { return embeddedPub{e} }

// Subscriber returns the sink side: each Handler call gets what is queued,
// up to maxBatch records (default 2048), without waiting for more.
func (e *Transport) Subscriber(maxBatch int) runtime.Subscriber {
	return e.LingerSubscriber(maxBatch, 0)
}

// LingerSubscriber is Subscriber that, when fewer than maxBatch records are
// queued, waits up to linger for more before calling the Handler: fewer,
// larger target transactions for at most linger of extra latency.
func (e *Transport) LingerSubscriber(maxBatch int, linger time.Duration) runtime.Subscriber {
	if maxBatch <= 0 {
		maxBatch = 2048
	}
	return &embeddedSub{e: e, maxBatch: maxBatch, linger: max(linger, 0)}
}

type embeddedPub struct{ e *Transport }

func (p embeddedPub) Publish(ctx context.Context, recs []schema.Record, ack runtime.AckFunc) error {
	if p.e.closed.Load() {
		return runtime.ErrClosed
	}
	n := len(p.e.queues)
	queueOf := make([]int, len(recs))
	sizes := make([]int, n) // an upper bound of each queue's records
	shared := 0             // barriers and commits: on any queue
	for i := range recs {
		if recs[i].Op.IsMarker() || recs[i].IsBarrier() {
			shared++
			continue
		}
		queueOf[i] = runtime.QueueFor(&recs[i], n)
		sizes[queueOf[i]]++
	}
	split := make([][]schema.Record, n)
	// Each queue's Delivery blocks, one allocation a queue, not a record.
	dels := make([][]schema.Delivery, n)
	for q := range split {
		split[q] = make([]schema.Record, 0, sizes[q]+shared)
		dels[q] = make([]schema.Delivery, 0, sizes[q]+shared)
	}
	// Barriers go to every queue, their copies marked as transaction ends.
	ends := runtime.TransactionEnds(recs, func(i int) (int, bool) { return queueOf[i], !recs[i].IsBarrier() })
	p.e.txMu.Lock()
	if p.e.txQueues == nil || len(p.e.txQueues) > maxOpenTx {
		p.e.txQueues = map[string]map[int]bool{}
	}
	inBatch := map[string]map[int]bool{}
	for i := range recs {
		r := recs[i]
		id := ""
		if r.Transaction != nil {
			id = r.Transaction.ID
		}
		if r.Op == schema.OpCommit && id != "" {
			// Queues that got this transaction's records only in earlier
			// batches get the commit itself: no record of theirs here can
			// carry the end mark, and a transactional sink waits for it.
			for q := range p.e.txQueues[id] {
				if !inBatch[id][q] {
					split[q] = append(split[q], p.e.deliver(r, q, &dels[q]))
				}
			}
			delete(p.e.txQueues, id)
			continue
		}
		if r.Op.IsMarker() {
			continue
		}
		qs := []int{queueOf[i]}
		if r.IsBarrier() {
			qs = runtime.QueuesFor(&r, n)
			r = runtime.BarrierCopy(r, len(qs))
		}
		for _, q := range qs {
			if id != "" {
				for _, m := range []map[string]map[int]bool{p.e.txQueues, inBatch} {
					if m[id] == nil {
						m[id] = map[int]bool{}
					}
					m[id][q] = true
				}
			}
			if ends[i] {
				r = runtime.WithTxEnd(r)
			}
			split[q] = append(split[q], p.e.deliver(r, q, &dels[q]))
		}
	}
	p.e.txMu.Unlock()
	var parts int32
	for _, s := range split {
		if len(s) > 0 {
			parts++
		}
	}
	if parts == 0 {
		ack(nil)
		return nil
	}
	var once sync.Once
	remaining := parts
	done := func(err error) {
		if err != nil {
			once.Do(func() { ack(err) })
			return
		}
		if atomic.AddInt32(&remaining, -1) == 0 {
			once.Do(func() { ack(nil) })
		}
	}
	for q, s := range split {
		if len(s) == 0 {
			continue
		}
		select {
		case p.e.queues[q] <- part{recs: s, done: done}:
		case <-ctx.Done():
			done(ctx.Err())
			return ctx.Err()
		}
	}
	return nil
}

// deliver returns r as queue q hands it to the sink: with its Delivery
// there, appended to dels (the record's ID, set by the source, travels
// unchanged). Called under txMu.
func (e *Transport) deliver(r schema.Record, q int, dels *[]schema.Delivery) schema.Record {
	e.offsets[q]++
	*dels = append(*dels, schema.Delivery{Topic: Topic, Queue: q, Offset: e.offsets[q]})
	r.Delivery = &(*dels)[len(*dels)-1]
	return r
}

func (p embeddedPub) Close(context.Context) error { return nil }

type embeddedSub struct {
	e        *Transport
	maxBatch int
	linger   time.Duration
}

// Consume runs one goroutine per queue; each applies batches in order and
// retries a failing batch with exponential backoff until ctx is done.
func (s *embeddedSub) Consume(ctx context.Context, h runtime.Handler) error {
	// A batch that fails for good (applyWithRetry gives up only on a fatal
	// error) ends every queue and is Consume's result, so the pipeline fails
	// at once: a source blocked publishing to the stopped queue would
	// otherwise wait for it forever.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var failed error
	for q := range s.e.queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.consumeQueue(ctx, q, h); err != nil {
				once.Do(func() { failed = err; cancel() })
			}
		}()
	}
	wg.Wait()
	return failed
}

// consumeQueue applies the batches of queue q until ctx ends (nil) or a
// batch fails for good (its error).
func (s *embeddedSub) consumeQueue(ctx context.Context, q int, h runtime.Handler) error {
	ch := s.e.queues[q]
	for {
		var batch []part
		select {
		case <-ctx.Done():
			return nil
		case p := <-ch:
			batch = append(batch, p)
		}
		n := len(batch[0].recs)
	more:
		for n < s.maxBatch {
			select {
			case p := <-ch:
				batch = append(batch, p)
				n += len(p.recs)
			default:
				break more
			}
		}
		if n < s.maxBatch && s.linger > 0 {
			batch, n = s.lingerFor(ctx, ch, batch, n)
		}
		recs := batch[0].recs
		if len(batch) > 1 {
			recs = make([]schema.Record, 0, n)
			for _, p := range batch {
				recs = append(recs, p.recs...)
			}
		}
		err := applyWithRetry(ctx, recs, h)
		for _, p := range batch {
			p.done(err)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// lingerFor adds parts to batch as they arrive, until it holds maxBatch
// records, linger has passed, or ctx ends (what is gathered is still
// applied: its sources wait for the acknowledgement).
func (s *embeddedSub) lingerFor(ctx context.Context, ch <-chan part, batch []part, n int) ([]part, int) {
	t := time.NewTimer(s.linger)
	defer t.Stop()
	for n < s.maxBatch {
		select {
		case p := <-ch:
			batch = append(batch, p)
			n += len(p.recs)
		case <-t.C:
			return batch, n
		case <-ctx.Done():
			return batch, n
		}
	}
	return batch, n
}

// applyWithRetry calls h until it succeeds or ctx ends, backing off
// exponentially from 100ms to 10s between attempts.
func applyWithRetry(ctx context.Context, recs []schema.Record, h runtime.Handler) error {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := h(ctx, recs)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("apply stopped after %d attempts: %w", attempt, err)
		}
		if runtime.IsFatal(err) {
			return err
		}
		runtime.Logger(ctx).Warn("apply failed; retrying", "attempt", attempt, "backoff", backoff, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("apply stopped after %d attempts: %w", attempt, err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (s *embeddedSub) Close(context.Context) error {
	s.e.closed.Store(true)
	return nil
}
