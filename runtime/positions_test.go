package runtime

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestFileStoreSaveLoadReset(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := NewFileStore(dir)
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
