package transporttest

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"math/rand/v2"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// The memory case's sizes: a transport that bounds batches rather than
// bytes (the embedded transport's queues) sizes its Pipeline.MaxHeld from
// them.
const (
	// MemoryBatch is how many records the memory case publishes per call.
	MemoryBatch = 64
	// PadBytes is how many bytes of its own each of its records carries: a
	// random string, which no codec compresses much.
	PadBytes = 4 << 10
	// memoryOffered is how many times MaxHeld the case offers in records'
	// bytes: a transport that held them all would be far over its bound
	// (held, a record took 1.1 to 1.6 times its PadBytes of heap on each
	// transport).
	memoryOffered = 2
)

var padSchema = &schema.Schema{Type: schema.Struct, Name: "kit.Padded", Optional: true, Fields: []schema.Field{
	{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
	{Name: "version", Schema: schema.Primitive(schema.Int64, false)},
	{Name: "pad", Schema: schema.Primitive(schema.String, false)},
}}

// padded is update(table, key, version) with PadBytes of random base64.
func padded(table schema.TableID, key, version int64, rnd *rand.ChaCha8) schema.Record {
	raw := make([]byte, base64.StdEncoding.DecodedLen(PadBytes))
	_, _ = rnd.Read(raw)
	pad := make([]byte, PadBytes)
	base64.StdEncoding.Encode(pad, raw)
	r := update(table, key, version)
	r.ValueSchema = padSchema
	r.Before = schema.Row{key, version - 1, ""}
	r.After = schema.Row{key, version, string(pad)}
	return r
}

// liveHeap is the Go heap's live bytes, after two collections: the first
// moves what sync.Pools keep (reusable buffers, no record's) to their
// victim caches, the second frees it.
func liveHeap() int64 {
	goruntime.GC()
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// memoryBounded publishes memoryOffered times p.MaxHeld in records (each
// with PadBytes of its own, MemoryBatch a call, a TRUNCATE last) without
// waiting for acknowledgements, to a subscriber whose handler holds its
// batches: the transport must push back (Publish blocks) or keep the rest
// out of the process (in the broker, unfetched), so that the Go heap grows
// by at most p.MaxHeld until nothing grows any more. Released, the handler
// gets every record once, in order per key, the TRUNCATE after them on
// every queue, and every batch is acknowledged without an error.
func memoryBounded(t *testing.T, tr Transport) {
	table := schema.TableID{Database: "kit", Table: "mem"}
	p := tr.New(t, table)
	if p.MaxHeld <= 0 {
		t.Skip("the transport declares no memory bound (Pipeline.MaxHeld)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const keys = 64
	n := int((memoryOffered*p.MaxHeld/PadBytes + MemoryBatch - 1) / MemoryBatch * MemoryBatch)
	batches := n / MemoryBatch
	want := n + p.Queues

	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock()
	var mu sync.Mutex
	var got []schema.Record
	holding := map[string]bool{} // the queues whose batch the handler holds
	sub := p.Subscriber()
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	consumed := make(chan error, 1)
	go func() {
		consumed <- sub.Consume(cctx, func(hctx context.Context, rs []schema.Record) error {
			mu.Lock()
			holding[p.QueueOf(rs[0].Delivery)] = true
			mu.Unlock()
			select {
			case <-release:
			case <-hctx.Done():
				return hctx.Err()
			}
			mu.Lock()
			got = append(got, rs...)
			mu.Unlock()
			return nil
		})
	}()

	base := liveHeap()
	var returned atomic.Int64 // unix nanoseconds of the last Publish to return
	returned.Store(time.Now().UnixNano())
	acks := make(chan error, batches)
	published := make(chan error, 1)
	go func() {
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], uint64(time.Now().UnixNano()))
		rnd := rand.NewChaCha8(seed)
		for i := 0; i < n; i += MemoryBatch {
			batch := make([]schema.Record, 0, MemoryBatch+1)
			for j := i; j < i+MemoryBatch; j++ {
				batch = append(batch, padded(table, int64(j%keys), int64(j/keys+1), rnd))
			}
			if i+MemoryBatch >= n {
				batch = append(batch, schema.Record{Op: schema.OpTruncate, Table: table, Source: source(), ID: schema.ID{Epoch: 1, Pos: ids.Add(1)}})
			}
			if err := p.Publisher.Publish(ctx, batch, func(err error) { acks <- err }); err != nil {
				published <- err
				return
			}
			returned.Store(time.Now().UnixNano())
		}
		published <- nil
	}()

	// Once the handler holds a batch of every queue and the publisher is
	// done (the broker took every record) or blocked (a second without a
	// Publish returning), sample the heap until it has not grown by a 32nd
	// of the bound for two seconds and the publisher is done or has been
	// blocked for three: a broker that only paused does not end the case
	// early. (While records are produced, the clients' requests and
	// encodings come and go: what is held with the sink stuck is what
	// counts.)
	var held, grownAt int64
	var grew time.Time
	done := false
	for held <= p.MaxHeld {
		select {
		case err := <-published:
			if err != nil {
				t.Fatalf("Publish: %v", err)
			}
			done = true
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("the heap did not settle (grew to %d KiB; the handler holds batches of %d of %d queues): %v", held>>10, len(holding), p.Queues, ctx.Err())
		}
		idle := time.Since(time.Unix(0, returned.Load()))
		mu.Lock()
		ready := len(holding) == p.Queues
		mu.Unlock()
		if !ready || !done && idle < time.Second {
			continue
		}
		h := liveHeap() - base
		held = max(held, h)
		if grew.IsZero() || h > grownAt+p.MaxHeld/32 {
			grownAt, grew = h, time.Now()
		}
		if time.Since(grew) > 2*time.Second && (done || idle > 3*time.Second) {
			break
		}
	}
	offered := int64(n) * PadBytes
	publisher := map[bool]string{true: "done", false: "blocked"}[done]
	if held > p.MaxHeld {
		t.Fatalf("with the handler held, the heap grew by %d KiB, over the transport's bound of %d KiB (%d KiB of records offered, the publisher %s)", held>>10, p.MaxHeld>>10, offered>>10, publisher)
	}
	t.Logf("with the handler held, the heap grew by at most %d KiB (bound %d KiB, %d KiB of records offered, the publisher %s)",
		held>>10, p.MaxHeld>>10, offered>>10, publisher)

	unblock()
	if !done {
		if err := <-published; err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	awaitAcks(ctx, t, acks, batches)
	if err := p.Publisher.Close(ctx); err != nil {
		t.Fatal(err)
	}
	awaitRecords(ctx, &mu, &got, want)
	stopConsume(ctx, t, stop, consumed, sub)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != want {
		t.Fatalf("consumed %d records, want %d (%d rows and a TRUNCATE per queue of %d)", len(got), want, n, p.Queues)
	}
	if err := checkOrder(got, p, int64((n-1)/keys+1)); err != nil {
		t.Fatal(err)
	}
}
