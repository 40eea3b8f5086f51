package runtime

import (
	"context"
	"errors"
)

// Test doubles for the external tests (package runtime_test, which may
// import runtime/admin: the REST API over a Worker), and the transport of
// the engine's tests.

// EmbeddedTransport is what the engine's tests use of the embedded
// transport (runtime/embedded).
type EmbeddedTransport interface {
	Publisher() Publisher
	Subscriber(maxBatch int) Subscriber
}

var (
	embeddedNew   func(queues, depth int) EmbeddedTransport
	embeddedTopic string // the Delivery.Topic of its records
)

// UseEmbedded plugs the embedded transport into the engine's tests, which
// run their pipelines over it: runtime/embedded imports runtime for its
// contracts, so runtime's own tests cannot import it, and the external
// test package (transport_test.go) calls this at init, before any test.
func UseEmbedded(newTransport func(queues, depth int) EmbeddedTransport, topic string) {
	embeddedNew, embeddedTopic = newTransport, topic
}

// newEmbedded is embedded.New: queues queues of depth batches each.
func newEmbedded(queues, depth int) EmbeddedTransport { return embeddedNew(queues, depth) }

func fakeFactory(store *memStore, snk *fakeSink) Factory {
	return func(context.Context) (*Pipeline, error) {
		e := newEmbedded(2, 4)
		return &Pipeline{Name: "p", Source: &fakeSource{n: 300, k: 7}, Publisher: e.Publisher(), Subscriber: e.Subscriber(16), Sink: snk, Positions: store}, nil
	}
}

// NewFakePipeline returns a factory of pipelines named p that read 300
// changes of a fake source (positions "tx-N") over the embedded transport
// into a fake sink, their position store, and a func counting the records
// the sink applied.
func NewFakePipeline() (Factory, PositionStore, func() int) {
	store := &memStore{pos: map[string][]byte{}}
	snk := &fakeSink{seen: map[int64][]int64{}}
	return fakeFactory(store, snk), store, snk.count
}

// NewLostSourcePipeline returns a factory of pipelines named p whose
// source opens, then fails every read with a retriable "connection
// refused" (a server lost after the start), and their position store.
func NewLostSourcePipeline() (Factory, PositionStore) {
	store := &memStore{pos: map[string][]byte{}}
	return func(context.Context) (*Pipeline, error) {
		e := newEmbedded(2, 4)
		return &Pipeline{Name: "p", Source: &failingSource{errors.New("connection refused")}, Publisher: e.Publisher(),
			Subscriber: e.Subscriber(16), Sink: &fakeSink{seen: map[int64][]int64{}}, Positions: store}, nil
	}, store
}
