package app

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/plugin"
)

// Batch size and linger reach the transports, and bad values are config
// errors that name the setting.
func TestTransportBatchingConfig(t *testing.T) {
	const src = "source:\n  type: mariadb\n  host: 127.0.0.1\n  user: u\n  server_id: 7\n"
	const snk = "sink:\n  type: postgres\n  dsn: postgres://x@127.0.0.1/x\n"
	decode := func(transport string) (*decoded, error) {
		cfg, err := plugin.ParseConfig([]byte("name: p\n"+src+transport+snk), "p.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return decodeAll(cfg, "")
	}
	d, err := decode("transport:\n  type: embedded\n  max_batch: 100\n  linger: 5ms\n")
	if err != nil || d.embedded.MaxBatch != 100 || d.embedded.Linger != 5*time.Millisecond {
		t.Fatalf("embedded: %+v, %v", d.embedded, err)
	}
	d, err = decode("transport:\n  type: rocketmq\n  name_servers: [\"127.0.0.1:9876\"]\n  topics: [a]\n  batch_size: 512\n  linger: 20ms\n")
	if err != nil || d.rocketmq.BatchSize != 512 || d.rocketmq.Linger != 20*time.Millisecond {
		t.Fatalf("rocketmq: %+v, %v", d.rocketmq, err)
	}
	for _, bad := range []struct{ transport, want string }{
		{"transport:\n  type: embedded\n  linger: -1s\n", "p.yaml:9: transport.linger: -1s is negative"},
		{"transport:\n  type: rocketmq\n  name_servers: [\"127.0.0.1:9876\"]\n  topics: [a]\n  linger: 2m\n", "p.yaml:11: transport.linger: rocketmq: invalid config: linger 2m0s: use 0 to 65.535s"},
	} {
		_, err := decode(bad.transport)
		if err == nil || !strings.Contains(err.Error(), bad.want) || !errors.Is(err, runtime.ErrConfig) {
			t.Errorf("%q: got %v, want a config error containing %q", bad.transport, err, bad.want)
		}
	}
}
