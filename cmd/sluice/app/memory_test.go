package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/embedded"
	"github.com/sluicecdc/sluice/runtime/plugin"
)

// The in-flight limits reach the pipeline and, on RocketMQ, the consumer's
// pull cache; bad values are config errors that name the setting.
func TestTransportMemoryConfig(t *testing.T) {
	const src = "source:\n  type: mariadb\n  host: 127.0.0.1\n  user: u\n  server_id: 7\n"
	const snk = "sink:\n  type: postgres\n  dsn: postgres://x@127.0.0.1/x\n"
	decode := func(transport string) (*decoded, error) {
		cfg, err := plugin.ParseConfig([]byte("name: p\n"+src+transport+snk), "p.yaml")
		if err != nil {
			return nil, err
		}
		return decodeAll(cfg, "")
	}
	d, err := decode("transport:\n  type: embedded\n  max_in_flight: 100\n  max_in_flight_bytes: 2MiB\n")
	if err != nil || d.maxFlight != 100 || d.maxFlightBytes != 2<<20 {
		t.Fatalf("embedded: %+v, %v", d, err)
	}
	d, err = decode("transport:\n  type: rocketmq\n  name_servers: [\"127.0.0.1:9876\"]\n  topics: [a]\n  max_in_flight_bytes: 4194304\n")
	if err != nil || d.maxFlightBytes != 4<<20 || d.rocketmq.MaxCachedBytes != 4<<20 || d.rocketmq.MaxCachedRecords != 0 {
		t.Fatalf("rocketmq: %+v, %v", d.rocketmq, err)
	}
	// Unset, the window's records: the embedded transport's own default,
	// the pipeline's (0 here) on RocketMQ.
	if d.maxFlight != 0 {
		t.Fatalf("rocketmq without max_in_flight: window of %d records, want the pipeline's default (0 here)", d.maxFlight)
	}
	d, err = decode("transport:\n  type: embedded\n")
	if err != nil || d.maxFlight != embedded.DefaultMaxInFlight || d.maxFlightBytes != 0 {
		t.Fatalf("embedded without max_in_flight: %d records, %d bytes, %v; want %d and 0 (the pipeline's default)", d.maxFlight, d.maxFlightBytes, err, embedded.DefaultMaxInFlight)
	}
	for _, bad := range []struct{ transport, want string }{
		{"transport:\n  type: embedded\n  max_in_flight: -1\n", "transport.max_in_flight: -1 is negative"},
		{"transport:\n  type: embedded\n  max_in_flight_bytes: lots\n", "transport.max_in_flight_bytes: expected a size"},
		{"transport:\n  type: embedded\n  max_in_flight_bytes: off\n", "transport.max_in_flight_bytes: off: use a size"},
	} {
		_, err := decode(bad.transport)
		if err == nil || !strings.Contains(err.Error(), bad.want) || !errors.Is(err, runtime.ErrConfig) {
			t.Errorf("%q: got %v, want a config error containing %q", bad.transport, err, bad.want)
		}
	}
}
