package runtime

import "context"

// Test doubles for the external tests (package runtime_test, which may
// import runtime/admin: the REST API over a Worker).

func fakeFactory(store *memStore, snk *fakeSink) Factory {
	return func(context.Context) (*Pipeline, error) {
		e := NewEmbedded(2, 4)
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
