package app

import (
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// The raw broker round trip runs after sluice's phase has set the memory
// limit: it must run without it, and the limit must be back afterwards.
func TestWithoutMemoryLimit(t *testing.T) {
	const limit = 150 << 20
	old := debug.SetMemoryLimit(limit)
	defer debug.SetMemoryLimit(old)
	restore := withoutMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit while lifted: %d, want none (%d)", got, int64(math.MaxInt64))
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Fatalf("memory limit after restore: %d, want %d", got, limit)
	}
}

// The heap profile is pprof's format (gzipped protobuf) with the in-use
// sample types that `go tool pprof -sample_index=inuse_space` reads.
func TestWriteHeapProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.prof")
	if err := writeHeapProfile(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("heap profile is not gzipped: %v", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"inuse_space", "inuse_objects", "alloc_space"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("heap profile has no %q", want)
		}
	}
}
