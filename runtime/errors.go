package runtime

import "errors"

// Sentinel errors callers may test with errors.Is.
var (
	// ErrClosed is returned by components used after Close.
	ErrClosed = errors.New("runtime: closed")
	// ErrConfig marks a configuration error: fix the config file and start again.
	ErrConfig = errors.New("invalid configuration")
)
