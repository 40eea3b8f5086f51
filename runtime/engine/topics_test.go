package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// trackedPublisher records topic (if any) on every Publish, as a transport
// with topics does (TopicTracker).
type trackedPublisher struct {
	runtime.Publisher
	topic string
	used  runtime.TopicSet
}

func (p *trackedPublisher) Publish(ctx context.Context, recs []schema.Record, ack runtime.AckFunc) error {
	if p.topic != "" {
		p.used.Add(p.topic)
	}
	return p.Publisher.Publish(ctx, recs, ack)
}
func (p *trackedPublisher) UsedTopics() []string { return p.used.Topics() }
func (p *trackedPublisher) ResetUsedTopics()     { p.used.Reset() }

// TestWorkerTopics: Worker.Topics keeps the topics of a pipeline's earlier
// runs across a restart (each run has a new transport), and ResetTopics
// forgets those and the running one's.
func TestWorkerTopics(t *testing.T) {
	store := &memStore{pos: map[string][]byte{}}
	runs := 0
	f := func(context.Context) (*Pipeline, error) {
		runs++
		e := newEmbedded(2, 4)
		snk := &fakeSink{seen: map[int64][]int64{}}
		pub := &trackedPublisher{Publisher: e.Publisher()}
		if runs == 1 { // later runs may publish again what the first did not save: the test adds their topics itself
			pub.topic = "run1"
		}
		return &Pipeline{Name: "p", Source: &fakeSource{n: 300, k: 7}, Publisher: pub, Subscriber: e.Subscriber(16), Sink: snk, Positions: store}, nil
	}
	w := NewWorker(nil)
	w.Add("p", store, f)
	ctx := context.Background()
	wait := func(want ...string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := w.Topics("p")
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("topics %v, want %v", got, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := w.Start(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	wait("run1")
	if err := w.Restart(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	p := w.tasks["p"].p
	w.mu.Unlock()
	p.Publisher.(*trackedPublisher).used.Add("run2")
	wait("run1", "run2")
	if err := w.ResetTopics("p"); err != nil {
		t.Fatal(err)
	}
	wait()
	p.Publisher.(*trackedPublisher).used.Add("run2")
	wait("run2")
	if _, err := w.Topics("nope"); err == nil {
		t.Error("Topics of an unknown pipeline: no error")
	}
	if err := w.Stop(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	wait("run2") // a stopped pipeline's topics stay until a reset
}
