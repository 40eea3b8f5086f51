package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/plugin"
)

// Config is the transport section of type embedded: the in-process
// transport (New) and the memory limits every transport has.
type Config struct {
	Queues   int           `yaml:"queues"`
	Depth    int           `yaml:"depth"`
	MaxBatch int           `yaml:"max_batch"` // records per sink transaction, default 2048
	Linger   time.Duration `yaml:"linger"`    // wait this long for a fuller batch, default 0
	// MaxInFlight and MaxInFlightBytes: the memory limits of every
	// transport, records read from the source and not yet acknowledged
	// (engine.Pipeline.MaxInFlight, MaxInFlightBytes); on RocketMQ also the
	// messages the consumer holds pulled but not yet applied
	// (rocketmq.Config.MaxCachedRecords, MaxCachedBytes, the same keys).
	MaxInFlight      int              `yaml:"max_in_flight"`
	MaxInFlightBytes runtime.ByteSize `yaml:"max_in_flight_bytes"`
}

// DefaultMaxInFlight is the embedded transport's max_in_flight when it is
// not set, above the pipeline's default (runtime.DefaultMaxInFlight): on
// this transport a record is in flight until the sink applied it, and with
// 8,192 records each queue had about a thousand to hand the sink at a
// time. 32,768 halved the sink's transactions of a catch-up (sluice bench
// --rows 1000000: 645 against 1,383-1,428), PostgreSQL's CPU per event by
// 5-13 %, and ran at 0.80-0.86 of the raw target against 0.77-0.80 in
// three alternating pairs. max_in_flight_bytes (default 16 MiB) still
// bounds the memory.
const DefaultMaxInFlight = 32768

// Plugin is the embedded transport's plugin, for the command to register.
func Plugin() plugin.Plugin {
	return plugin.Spec[Config]{Kind: plugin.KindTransport, Name: "embedded", Types: []string{"embedded"},
		Validate: func(c *Config, sec *plugin.Section, _ *plugin.Config) error {
			if c.Linger < 0 {
				return sec.Err("linger", fmt.Sprintf("%s is negative: use 0 (no wait) or a duration such as 5ms", c.Linger))
			}
			return plugin.CheckInFlight(sec, c.MaxInFlight, int64(c.MaxInFlightBytes))
		},
		// one Transport for the task's source and sink, in one process
		NewTransport: func(_ context.Context, c *Config, _ *plugin.Task) (runtime.Publisher, runtime.Subscriber, error) {
			e := New(c.Queues, c.Depth)
			return e.Publisher(), e.LingerSubscriber(c.MaxBatch, c.Linger), nil
		},
		Keys: keys}.Plugin()
}

// keys documents the embedded transport's keys (plugin.KeyDocs).
var keys = plugin.KeyDocs{
	"queues":              {Doc: "Number of in-process queues; the changes of one row stay in order on one queue.", Default: "4"},
	"depth":               {Doc: "Batches each queue holds before the source waits for the sink.", Default: "16"},
	"max_batch":           {Doc: "Records per sink transaction at most.", Default: "2048"},
	"linger":              {Doc: "How long the sink waits for a fuller batch before it applies a smaller one.", Default: "0s"},
	"max_in_flight":       {Doc: "Records read from the source and not yet applied, at most.", Default: fmt.Sprint(DefaultMaxInFlight)},
	"max_in_flight_bytes": {Doc: "Estimated bytes of records read from the source and not yet applied, at most.", Default: runtime.ByteSize(runtime.DefaultMaxInFlightBytes).String()},
}
