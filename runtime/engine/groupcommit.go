package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/sluicecdc/sluice/schema"
)

// groupCommit joins batches that several queues hand the sink at the same
// time into one Write, one target transaction, instead of one each. A
// transport delivers each queue's batches one at a time, on as many
// goroutines as queues (8 with RocketMQ's defaults on two brokers); every
// target transaction costs round trips and commit work on both sides, which
// at a steady rate of small batches is most of the sink's cost and, on a
// busy machine, most of a row's lag.
//
// It adds no wait: a batch is written at once while fewer than lanes Writes
// run, lanes being one per two queues seen handing batches, at least
// groupLanes and at most maxGroupLanes. Otherwise it waits for a lane, and when one frees, every batch
// waiting then goes in one Write (led by the first of them, on its
// goroutine), whose outcome is each one's. Only batches of plain data rows
// join: a barrier copy (TRUNCATE, an applied schema change) waits in the
// sink for the copies of other queues, which must not be held behind it,
// so such a batch, or one with anything but data rows, is written alone at
// once as before. A Write applies what it is given in one transaction and
// filters each queue against its own progress, so a joined batch commits
// or fails as a whole and is redelivered per queue after a failure.
type groupCommit struct {
	write    func(ctx context.Context, recs []schema.Record) error
	lanes    int // Writes of joined batches at once, at least
	maxLanes int // at most: lanes grows to one per two queues seen

	mu      sync.Mutex
	running int
	waiting []*gcReq
	// queues holds the queues seen handing joinable batches, up to
	// 2*maxLanes of them (then lanes is at its most): bounded whatever the
	// number of queues.
	queues map[gcQueue]struct{}
}

type gcQueue struct {
	topic, broker string
	queue         int
}

type gcReq struct {
	recs []schema.Record
	ch   chan gcOutcome // buffered: the outcome, or the group to lead
}

type gcOutcome struct {
	lead []*gcReq // set: this request writes the group
	err  error
}

// groupLanes is how many joined Writes run at once at least: two, so that
// a second transaction fills the time the first spends in round trips and
// commit. Measured with sluice bench over RocketMQ (8 queues), against a
// Write per batch: 78-94 transactions instead of 152 for the same
// catch-up, lag p99 at 2,000 rows/s 20-34 ms against 25-65 ms; one lane
// lost at 10,000 rows/s (p99 138-247 ms).
//
// maxGroupLanes is how many at most, reached with one lane per two queues
// (RocketMQ's default of 4 queues on each of 2 brokers: 4 lanes; the
// embedded transport's 4 queues keep 2). An orderly queue hands its next
// batch only once the previous one committed, so a batch waiting for a
// lane also holds back every row behind it on its queue. Measured with
// sluice bench over RocketMQ on a loaded machine (load 12-45), 4 lanes
// against 2: see docs/performance.md (Figures).
const (
	groupLanes    = 2
	maxGroupLanes = 4
)

// newGroupCommit joins batches for write with lanes joined Writes at once,
// up to maxLanes as more queues hand batches (one lane per two queues);
// lanes 0 writes every batch alone.
func newGroupCommit(write func(ctx context.Context, recs []schema.Record) error, lanes, maxLanes int) *groupCommit {
	return &groupCommit{write: write, lanes: lanes, maxLanes: max(lanes, maxLanes), queues: map[gcQueue]struct{}{}}
}

// lanesLocked counts recs' queue and returns the lanes now open; g.mu held.
func (g *groupCommit) lanesLocked(recs []schema.Record) int {
	if len(g.queues) < 2*g.maxLanes {
		d := recs[0].Delivery // joinable: set
		g.queues[gcQueue{d.Topic, d.Broker, d.Queue}] = struct{}{}
	}
	return min(g.maxLanes, max(g.lanes, (len(g.queues)+1)/2))
}

// Write writes recs, alone or joined with other queues' batches, and
// returns the outcome of the Write that held them.
func (g *groupCommit) Write(ctx context.Context, recs []schema.Record) error {
	if g.lanes == 0 || !joinable(recs) {
		return g.write(ctx, recs)
	}
	g.mu.Lock()
	if g.running < g.lanesLocked(recs) {
		g.running++
		g.mu.Unlock()
		defer g.done()
		return g.write(ctx, recs)
	}
	r := &gcReq{recs: recs, ch: make(chan gcOutcome, 1)}
	g.waiting = append(g.waiting, r)
	g.mu.Unlock()
	// Not given up on ctx: a waiting request may be chosen to lead its
	// group, and the group's Write ends on its leader's ctx (the
	// transport's handler context, the same for every queue).
	o := <-r.ch
	if o.lead == nil {
		return o.err
	}
	defer g.done()
	// The group's outcome, also if the Write never returns (a panic): the
	// others must not wait for ever, nor take it for a commit.
	err := errors.New("runtime: the joined sink Write did not finish")
	defer func() {
		for _, q := range o.lead[1:] {
			q.ch <- gcOutcome{err: err}
		}
	}()
	if len(o.lead) == 1 {
		err = g.write(ctx, recs)
	} else {
		n := 0
		for _, q := range o.lead {
			n += len(q.recs)
		}
		all := make([]schema.Record, 0, n)
		for _, q := range o.lead {
			all = append(all, q.recs...)
		}
		err = g.write(ctx, all)
	}
	return err
}

// done frees a lane: to the batches waiting, as one group, if any.
func (g *groupCommit) done() {
	g.mu.Lock()
	if len(g.waiting) == 0 {
		g.running--
		g.mu.Unlock()
		return
	}
	group := g.waiting
	g.waiting = nil
	g.mu.Unlock()
	group[0].ch <- gcOutcome{lead: group} // the lane passes to its leader
}

// joinable: recs hold data rows only, none a barrier, each with its queue.
func joinable(recs []schema.Record) bool {
	for i := range recs {
		r := &recs[i]
		if !r.Op.IsData() || r.Delivery == nil || r.IsBarrier() {
			return false
		}
	}
	return len(recs) > 0
}
