package sink

import (
	"math/rand/v2"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// refFilterDelivered and refOffsetsOf look every record's queue up in the
// maps, one record at a time: the behaviour filterDelivered and offsetsOf
// keep while they look a queue up once a run.
func refFilterDelivered(recs []schema.Record, last map[progressKey]schema.ID) ([]schema.Record, map[progressKey]schema.ID) {
	maxID := map[progressKey]schema.ID{}
	var out []schema.Record
	for i := range recs {
		r := &recs[i]
		if !counts(r) {
			out = append(out, *r)
			continue
		}
		k := deliveryKey(r.Delivery)
		top, ok := maxID[k]
		if !ok {
			top, ok = last[k]
		}
		if ok && r.ID.Compare(top) <= 0 {
			continue
		}
		maxID[k] = r.ID
		out = append(out, *r)
	}
	return out, maxID
}

func refOffsetsOf(recs []schema.Record) map[progressKey]schema.ID {
	out := map[progressKey]schema.ID{}
	for i := range recs {
		if r := &recs[i]; counts(r) {
			k := deliveryKey(r.Delivery)
			if m, ok := out[k]; !ok || r.ID.Compare(m) > 0 {
				out[k] = r.ID
			}
		}
	}
	return out
}

// TestQueueRunsAsPerRecord: batches of several queues, in runs and
// interleaved, with replays, markers, records without a queue and
// progress already saved, filter and count as a lookup per record would.
func TestQueueRunsAsPerRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	queues := []schema.Delivery{
		{Topic: "t", Queue: 0}, {Topic: "t", Queue: 1},
		{Topic: "t", Broker: "b", Queue: 0}, {Topic: "u", Queue: 0},
	}
	for round := range 3000 {
		var recs []schema.Record
		for len(recs) < 1+rng.IntN(40) {
			d := queues[rng.IntN(len(queues))]
			run := 1 + rng.IntN(6)
			for range run {
				r := schema.Record{Op: schema.OpCreate, ID: schema.ID{Epoch: 1, Pos: uint64(rng.IntN(20))}}
				switch rng.IntN(10) {
				case 0:
					r.Op = schema.OpCommit
				case 1:
					r.ID = schema.ID{} // ID zero: refused below, unless no queue
				}
				if rng.IntN(12) > 0 {
					dd := d
					r.Delivery = &dd
				}
				if r.ID.IsZero() && r.Delivery != nil && r.Op.IsData() {
					r.ID.Pos = 1
				}
				recs = append(recs, r)
			}
		}
		last := map[progressKey]schema.ID{}
		for _, d := range queues {
			if rng.IntN(2) == 0 {
				last[deliveryKey(&d)] = schema.ID{Epoch: 1, Pos: uint64(rng.IntN(10))}
			}
		}
		wantRecs, wantMax := refFilterDelivered(recs, last)
		gotRecs, gotMax, err := filterDelivered(recs, last)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(gotRecs) != len(wantRecs) {
			t.Fatalf("round %d: kept %d records, want %d", round, len(gotRecs), len(wantRecs))
		}
		for i := range gotRecs {
			if gotRecs[i].ID != wantRecs[i].ID || gotRecs[i].Delivery != wantRecs[i].Delivery || gotRecs[i].Op != wantRecs[i].Op {
				t.Fatalf("round %d: record %d kept is %+v, want %+v", round, i, gotRecs[i], wantRecs[i])
			}
		}
		sameIDs(t, round, "filterDelivered", gotMax, wantMax)
		sameIDs(t, round, "offsetsOf", offsetsOf(recs), refOffsetsOf(recs))
	}
}

func sameIDs(t *testing.T, round int, what string, got, want map[progressKey]schema.ID) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("round %d: %s: %d queues, want %d (%v, want %v)", round, what, len(got), len(want), got, want)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Fatalf("round %d: %s: queue %s at %v, want %v", round, what, k, g, w)
		}
	}
}
