package runtime

import (
	"errors"

	"github.com/sluicecdc/sluice/schema"
)

// Sentinel errors callers may test with errors.Is.
var (
	// ErrClosed is returned by components used after Close.
	ErrClosed = errors.New("runtime: closed")
	// ErrConfig marks a configuration error: fix the config file and start
	// again. It is schema.ErrConfig, so it also matches every connector's
	// ErrConfig, and it is fatal.
	ErrConfig = schema.ErrConfig
)
