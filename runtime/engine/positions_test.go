package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
)

func TestFileStoreSaveLoadReset(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := storage.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.Load(ctx, "p1"); err != nil || p != nil {
		t.Fatalf("empty store: %q %v", p, err)
	}
	for _, v := range []string{"one", "two-longer-value", "3"} {
		if err := s.Save(ctx, "p1", []byte(v)); err != nil {
			t.Fatal(err)
		}
		p, err := s.Load(ctx, "p1")
		if err != nil || string(p) != v {
			t.Fatalf("load %q %v, want %q", p, err, v)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "p1.position" {
		t.Fatalf("stray files after saves: %v", entries)
	}
	if err := s.Reset(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "p1.position")); !os.IsNotExist(err) {
		t.Fatalf("reset left the file: %v", err)
	}
	if err := s.Save(ctx, "../escape", []byte("x")); err == nil {
		t.Fatal("a pipeline name with a path separator was accepted")
	}
}

// A positions folder that cannot be written (here: replaced by a file,
// which stops root too) is tried again for SaveRetry while the pipeline
// runs on, then the pipeline is FAILED, saying so: it does not loop in
// RESTARTING. A save that works again within the bound goes on quietly.
func TestUnwritablePositionsFail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "positions")
	store, err := storage.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := &idleSource{batches: make(chan []schema.Record)}
	e := newEmbedded(2, 16)
	w := NewWorker(nil)
	w.RestartBackoff, w.MaxRestartBackoff = 10*time.Millisecond, 20*time.Millisecond
	w.Add("pos", nil, func(context.Context) (*Pipeline, error) {
		return &Pipeline{Name: "pos", Source: src, Publisher: e.Publisher(), Subscriber: e.Subscriber(64),
			Sink: &anySink{}, Positions: store, SaveInterval: 10 * time.Millisecond, SaveRetry: time.Second}, nil
	})
	if err := w.Start(context.Background(), "pos"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.StopAll(context.Background()) })
	stop := make(chan struct{})
	fed := make(chan struct{})
	go func() { // a change every 10 ms: a new position to save
		defer close(fed)
		for i := int64(0); ; i++ {
			select {
			case src.batches <- change(i, time.Now().UnixMilli()):
			case <-stop:
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	defer func() { close(stop); <-fed }()
	saved := func() bool { b, _ := store.Load(context.Background(), "pos"); return b != nil }
	waitStatus(t, w, "pos", "a position saved", func(TaskStatus) bool { return saved() })
	// Unwritable for less than SaveRetry: the pipeline goes on.
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if st, _ := w.Status("pos"); st.State != StateRunning {
		t.Fatalf("after 300 ms of an unwritable folder: %s (%s), want RUNNING", st.State, st.LastError)
	}
	// Unwritable for good: FAILED after SaveRetry. The folder is moved
	// away in one step: a RemoveAll would race the saves still writing
	// into it ("directory not empty").
	if err := os.Rename(dir, dir+".gone"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var seen []State
	st := waitStatus(t, w, "pos", "FAILED", func(st TaskStatus) bool {
		if len(seen) == 0 || seen[len(seen)-1] != st.State {
			seen = append(seen, st.State)
		}
		return st.State == StateFailed
	})
	if !strings.Contains(st.LastError, "position") || !strings.Contains(st.LastError, "writable") {
		t.Errorf("last error %q does not say the position store must be made writable", st.LastError)
	}
	if d := time.Since(began); d < 900*time.Millisecond {
		t.Errorf("FAILED after %s, before SaveRetry", d)
	}
	if slices.Contains(seen, StateRestarting) {
		t.Errorf("states %v: restarted for a store that refuses writes", seen)
	}
}
