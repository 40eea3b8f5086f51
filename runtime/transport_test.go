package runtime_test

import (
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/embedded"
)

// The engine's tests (package runtime) run over the real embedded
// transport, which they cannot import (export_test.go, UseEmbedded).
func init() {
	runtime.UseEmbedded(func(queues, depth int) runtime.EmbeddedTransport { return embedded.New(queues, depth) }, embedded.Topic)
}
