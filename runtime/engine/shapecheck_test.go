package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// shapeLister lists one keyless table and its shape.
type shapeLister struct{ shapesErr error }

var keylessShape = schema.Table{ID: schema.TableID{Database: "d", Table: "k"}, Columns: []schema.Column{{Name: "m"}}}

func (shapeLister) CapturedTables(context.Context) ([]schema.TableID, error) {
	return []schema.TableID{keylessShape.ID}, nil
}
func (l shapeLister) CapturedShapes(context.Context) ([]schema.Table, error) {
	return []schema.Table{keylessShape}, l.shapesErr
}

// shapeSink is a fakeSink that checks shapes with err.
type shapeSink struct {
	*fakeSink
	err    error
	shapes []schema.Table
}

func (s *shapeSink) CheckShapes(_ context.Context, tables []schema.Table) error {
	s.shapes = tables
	return s.err
}

// closedSub is a Subscriber that counts its Close calls.
type closedSub struct {
	runtime.Subscriber
	closed int
}

func (s *closedSub) Close(ctx context.Context) error { s.closed++; return s.Subscriber.Close(ctx) }

// closedSink is a shapeSink that counts its Close calls.
type closedSink struct {
	*shapeSink
	closed int
}

func (s *closedSink) Close() error { s.closed++; return s.shapeSink.Close() }

// A fatal refusal of the sink's shape check stops the start, state FAILED,
// before the sink writes, and closes the subscriber and the sink (a run
// refused at start must not leave a consumer in its group); any other
// error of it, or a lister that cannot read the shapes, lets the pipeline
// start.
func TestShapeCheckAtStart(t *testing.T) {
	refusal := schema.Fatal(errors.New("table d.k cannot be compared: keyless_mode"))
	for _, c := range []struct {
		name              string
		checkErr, listErr error
		refused           bool
	}{
		{name: "fatal", checkErr: refusal, refused: true},
		{name: "unreachable target", checkErr: schema.Retriable(errors.New("connection refused"))},
		{name: "unreadable source", checkErr: refusal, listErr: errors.New("access denied")},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &fakeSource{n: 30, k: 3}
			snk := &shapeSink{fakeSink: &fakeSink{seen: map[int64][]int64{}}, err: c.checkErr}
			e := newEmbedded(4, 4)
			sub := &closedSub{Subscriber: e.Subscriber(64)}
			cs := &closedSink{shapeSink: snk}
			// the sink side alone, with the source's tables from a lister
			p := &Pipeline{Name: "p", Subscriber: sub, Sink: cs, Tables: shapeLister{c.listErr}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for src.next < src.n {
					recs, _ := src.Read(ctx)
					_ = e.Publisher().Publish(ctx, recs[:len(recs)-1], func(error) {}) // without the commit marker
				}
			}()
			err := runUntil(t, p, func() bool { return snk.count() == 30 })
			if !c.refused {
				if err != nil || snk.count() != 30 {
					t.Fatalf("run: %v, %d records applied; want the pipeline to run", err, snk.count())
				}
				return
			}
			if !errors.Is(err, refusal) || !strings.Contains(err.Error(), "pipeline p") {
				t.Fatalf("run: %v, want the sink's refusal", err)
			}
			if st := p.Status(); st.State != StateFailed {
				t.Fatalf("state %s, want FAILED", st.State)
			}
			if len(snk.shapes) != 1 || snk.shapes[0].ID != keylessShape.ID {
				t.Fatalf("the sink checked %v, want the lister's shape", snk.shapes)
			}
			if snk.count() != 0 {
				t.Fatalf("%d records applied before the refusal", snk.count())
			}
			if sub.closed != 1 || cs.closed != 1 {
				t.Fatalf("the refused pipeline closed its subscriber %d times and its sink %d times, want once each", sub.closed, cs.closed)
			}
		})
	}
}
