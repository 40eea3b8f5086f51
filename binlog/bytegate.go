package binlog

import (
	"context"
	"sync"

	"github.com/sluicecdc/sluice/schema"
)

// snapshotQueueBytes caps the snapshot records (schema.Record.Size) handed
// on by the snapshot reader and not yet taken by Read: the channel between
// them holds queueBatches batches, which for a snapshot were chunks of
// SnapshotChunk rows whatever the rows' size (18 chunks of 2,048 rows of
// 4 KiB, between the channel, the chunk held back and the one being read,
// are 150 MiB per source).
const snapshotQueueBytes = 8 << 20

// byteGate counts the bytes of the batches in the queue between a reader
// and Read: acquire blocks while they would pass the cap, except that a
// batch larger than the cap is let in alone. A nil gate lets everything in.
type byteGate struct {
	mu    sync.Mutex
	used  int
	cap   int
	freed chan struct{} // closed and replaced whenever bytes are released
}

func newByteGate(cap int) *byteGate { return &byteGate{cap: cap, freed: make(chan struct{})} }

// acquire takes n bytes (at most the cap), waiting for room; false when ctx
// ended first.
func (g *byteGate) acquire(ctx context.Context, n int) bool {
	if g == nil || n <= 0 {
		return true
	}
	n = min(n, g.cap)
	for {
		g.mu.Lock()
		if g.used == 0 || g.used+n <= g.cap {
			g.used += n
			g.mu.Unlock()
			return true
		}
		freed := g.freed
		g.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
	}
}

// release returns what acquire took for a batch of n bytes.
func (g *byteGate) release(n int) {
	if g == nil || n <= 0 {
		return
	}
	g.mu.Lock()
	g.used -= min(n, g.cap)
	close(g.freed)
	g.freed = make(chan struct{})
	g.mu.Unlock()
}

// recordsSize is the estimated size in memory of recs.
func recordsSize(recs []schema.Record) int {
	n := 0
	for i := range recs {
		n += recs[i].Size()
	}
	return n
}
