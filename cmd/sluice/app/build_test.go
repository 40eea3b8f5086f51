package app

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/embedded"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/schema"
)

type genConfig struct {
	Rows int `yaml:"rows" sluice:"required"`
}

// genSource emits rows creates and a commit at position "done", then
// waits for the end.
type genSource struct {
	rows int
	sent bool
}

func (s *genSource) Open(context.Context, []byte) error { return nil }
func (s *genSource) Close() error                       { return nil }
func (s *genSource) Read(ctx context.Context) ([]schema.Record, error) {
	if s.sent {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	s.sent = true
	var recs []schema.Record
	for i := range s.rows {
		recs = append(recs, schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "d", Table: "t"},
			Key: schema.Row{int64(i)}, After: schema.Row{int64(i)}, ID: schema.ID{Epoch: 1, Pos: uint64(i + 1)}})
	}
	return append(recs, schema.Record{Op: schema.OpCommit, Position: []byte("done")}), nil
}

type labelConfig struct {
	Label string `yaml:"label"`
}

// countSink counts the rows it applied.
type countSink struct {
	mu   sync.Mutex
	rows int
}

func (s *countSink) Write(_ context.Context, recs []schema.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows += len(recs)
	return nil
}
func (s *countSink) Close() error { return nil }
func (s *countSink) count() int   { s.mu.Lock(); defer s.mu.Unlock(); return s.rows }

// Registering a connector with its constructor is all BuildTask needs: a
// source and a sink type the command knows nothing of are built from their
// own decoded configs, get the task (its document, logger, sections and
// sides), and run a pipeline over the embedded transport that moves every
// row into the sink and saves the source's position. A registered type
// without a constructor is refused as having no runner. What a constructor
// opened beside its connector (Task.OnClose) closes when the pipeline stops.
func TestBuildTaskRunsARegisteredConnector(t *testing.T) {
	saved := connectors
	t.Cleanup(func() { connectors = saved })
	connectors = plugin.NewRegistry()
	connectors.Register(embedded.Plugin())
	var srcTask, sinkTask *plugin.Task
	snk := &countSink{}
	connectors.Register(plugin.Plugin{Kind: plugin.KindSource, Name: "gen", Types: []string{"gen"}, New: func() any { return &genConfig{} },
		NewSource: func(_ context.Context, v any, task *plugin.Task) (runtime.Source, error) {
			srcTask = task
			return &genSource{rows: v.(*genConfig).Rows}, nil
		}})
	closed := 0
	connectors.Register(plugin.Spec[labelConfig]{Kind: plugin.KindSink, Name: "count", Types: []string{"count"},
		NewSink: func(_ context.Context, c *labelConfig, task *plugin.Task) (runtime.Sink, error) {
			if c.Label != "x" {
				t.Errorf("sink built from label %q, the section says x", c.Label)
			}
			sinkTask = task
			// a resource opened beside the sink closes with it, unwrapped
			task.OnClose(func() error { closed++; return nil })
			return snk, nil
		}}.Plugin())
	connectors.Register(plugin.Plugin{Kind: plugin.KindSink, Name: "norun", Types: []string{"norun"}, New: func() any { return &labelConfig{} }})
	t.Chdir(t.TempDir()) // file positions
	parse := func(sinkType string) *plugin.Config {
		t.Helper()
		cfg, err := plugin.ParseConfig([]byte("name: reg\nsource:\n  type: gen\n  rows: 50\ntransport:\n  type: embedded\n  queues: 3\nsink:\n  type: "+sinkType+"\n  label: x\n"), "p.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	ctx := context.Background()
	if _, err := BuildTask(ctx, parse("norun"), TaskOptions{}); err == nil || !strings.Contains(err.Error(), `sink type "norun" has no runner in this build`) {
		t.Fatalf("a sink without a constructor: %v", err)
	}
	p, err := BuildTask(ctx, parse("count"), TaskOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if srcTask == nil || srcTask != sinkTask {
		t.Fatalf("source and sink got tasks %p and %p, want one", srcTask, sinkTask)
	}
	if ec, ok := srcTask.Sections[plugin.KindTransport].(*embedded.Config); srcTask.Config.Name != "reg" || srcTask.Log == nil || !srcTask.Source || !srcTask.Sink ||
		!ok || ec.Queues != 3 || srcTask.Sections[plugin.KindSource].(*genConfig).Rows != 50 {
		t.Fatalf("task %+v", srcTask)
	}
	if p.Positions == nil {
		t.Fatal("no position store for the source task")
	}
	runCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- p.Run(runCtx) }()
	for deadline := time.Now().Add(20 * time.Second); snk.count() < 50 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil || snk.count() != 50 {
		t.Fatalf("run: %v, %d of 50 rows applied", err, snk.count())
	}
	if closed != 1 || p.Sink != runtime.Sink(snk) {
		t.Fatalf("OnClose ran %d times (want 1 at stop); sink %T, want the connector's own", closed, p.Sink)
	}
	if pos, err := p.Positions.Load(ctx, "reg"); err != nil || string(engine.SourcePosition(pos)) != "done" {
		t.Fatalf("saved position %q, %v; want done", pos, err)
	}
}
