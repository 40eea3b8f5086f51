package storage

import (
	"context"
	"errors"
	"fmt"
	"github.com/sluicecdc/sluice/runtime"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// FileStore keeps one position file per pipeline in a folder. Save writes a
// temporary file, syncs it and renames it over the old one, so a crash leaves
// either the old or the new position, never a torn one.
type FileStore struct {
	dir string
}

var _ runtime.PositionStore = (*FileStore)(nil)

// SafeName matches the names a pipeline may have: they name position
// files, rows of position tables, topics and consumer groups.
var SafeName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// NewFileStore creates dir if needed. A relative dir is made absolute
// against the working directory (the config loader has already resolved
// it against the config file's folder), so logs name the real folder.
func NewFileStore(dir string) (*FileStore, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("position store: create folder %s: %w (check the positions.dir setting and its permissions)", dir, err)
	}
	return &FileStore{dir: dir}, nil
}

// Where names the folder the positions are kept in.
func (s *FileStore) Where() string { return "folder " + s.dir }

func (s *FileStore) path(pipeline string) (string, error) {
	if !SafeName.MatchString(pipeline) {
		return "", fmt.Errorf("position store: pipeline name %q must match %s: %w", pipeline, SafeName, runtime.ErrConfig)
	}
	return filepath.Join(s.dir, pipeline+".position"), nil
}

// Load returns the saved position, or nil when there is none.
func (s *FileStore) Load(_ context.Context, pipeline string) ([]byte, error) {
	p, err := s.path(pipeline)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("position store: read %s: %w", p, err)
	}
	return b, nil
}

// Save replaces the position atomically and durably.
func (s *FileStore) Save(_ context.Context, pipeline string, pos []byte) error {
	p, err := s.path(pipeline)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, pipeline+".*.tmp")
	if err != nil {
		return fmt.Errorf("position store: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(pos); err != nil {
		tmp.Close()
		return fmt.Errorf("position store: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("position store: sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("position store: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("position store: rename into %s: %w", p, err)
	}
	if d, err := os.Open(s.dir); err == nil {
		_ = d.Sync() // make the rename durable; not all filesystems support it
		d.Close()
	}
	return nil
}

// Reset removes the saved position, so the next start begins from the
// configured start.
func (s *FileStore) Reset(_ context.Context, pipeline string) error {
	p, err := s.path(pipeline)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("position store: %w", err)
	}
	return nil
}
