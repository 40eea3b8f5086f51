package engine

import (
	"context"
	"errors"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/embedded"
)

// Test doubles for the external tests (package engine_test, which may
// import runtime/admin: the REST API over a Worker). The engine's own
// tests run their pipelines over the real embedded transport.

// newEmbedded is embedded.New: queues queues of depth batches each.
func newEmbedded(queues, depth int) *embedded.Transport { return embedded.New(queues, depth) }

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
func NewFakePipeline() (Factory, runtime.PositionStore, func() int) {
	store := &memStore{pos: map[string][]byte{}}
	snk := &fakeSink{seen: map[int64][]int64{}}
	return fakeFactory(store, snk), store, snk.count
}

// NewLostSourcePipeline returns a factory of pipelines named p whose
// source opens, then fails every read with a retriable "connection
// refused" (a server lost after the start), and their position store.
func NewLostSourcePipeline() (Factory, runtime.PositionStore) {
	store := &memStore{pos: map[string][]byte{}}
	return func(context.Context) (*Pipeline, error) {
		e := newEmbedded(2, 4)
		return &Pipeline{Name: "p", Source: &failingSource{errors.New("connection refused")}, Publisher: e.Publisher(),
			Subscriber: e.Subscriber(16), Sink: &fakeSink{seen: map[int64][]int64{}}, Positions: store}, nil
	}, store
}
