package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// ErrPipelineLocked is returned by FileStore.Claim when another process
// (or another run in this one) holds the pipeline's lock file: two runs of
// one pipeline would take the source stream from each other and save
// positions over each other. It is fatal.
var ErrPipelineLocked = schema.Fatal(errors.New("runtime: another sluice process runs this pipeline"))

var _ runtime.Claimer = (*FileStore)(nil)

// Claim makes this run the pipeline's only one on this host: it takes an
// exclusive lock (flock) on <dir>/<pipeline>.lock, held until the run ends
// (Release). A second run, in this process or another, fails with
// ErrPipelineLocked instead of fighting the first for the source.
func (s *FileStore) Claim(_ context.Context, pipeline string) (runtime.PositionStore, error) {
	p, err := s.path(pipeline)
	if err != nil {
		return nil, err
	}
	lock := filepath.Join(s.dir, pipeline+".lock")
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("position store: open lock file %s: %w", lock, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errLockHeld) {
			return nil, fmt.Errorf("%w: pipeline %s: lock file %s is held (positions %s): stop the other process, or give this one its own pipeline name or positions.dir", ErrPipelineLocked, pipeline, lock, p)
		}
		return nil, fmt.Errorf("position store: lock %s: %w", lock, err)
	}
	return &lockedFileStore{FileStore: s, f: f}, nil
}

// lockedFileStore is a FileStore claimed by one run; Release drops the lock.
type lockedFileStore struct {
	*FileStore
	once sync.Once
	f    *os.File
}

// Release unlocks the pipeline (closing the lock file releases the flock).
func (l *lockedFileStore) Release() {
	l.once.Do(func() { _ = l.f.Close() })
}
