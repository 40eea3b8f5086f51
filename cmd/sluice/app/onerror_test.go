package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/plugin"
)

func TestSinkOnErrorConfig(t *testing.T) {
	const rmq = "transport:\n  type: rocketmq\n  name_servers: [\"127.0.0.1:9876\"]\n  topics: [a]\n"
	const kfk = "transport:\n  type: kafka\n  brokers: [\"127.0.0.1:9092\"]\n  topics: [a]\n"
	const emb = "transport:\n  type: embedded\nsource:\n  type: mariadb\n  host: 127.0.0.1\n  user: u\n  server_id: 7\n"
	for _, tc := range []struct {
		name, transport, onError, wantErr string
	}{
		{"default", rmq, "", ""},
		{"skip", rmq, "skip", ""},
		{"dlq on rocketmq", rmq, "dlq", ""},
		{"dlq on kafka", kfk, "dlq", ""},
		{"dlq on embedded", emb, "dlq", "needs the rocketmq or kafka transport"},
		{"unknown", rmq, "ignore", "sink.on_error: must be fail, skip or dlq"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "name: p\n" + tc.transport + "sink:\n  type: postgres\n  dsn: postgres://x@127.0.0.1/x\n"
			if tc.onError != "" {
				text += "  on_error: " + tc.onError + "\n"
			}
			cfg, err := plugin.ParseConfig([]byte(text), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			d, err := decodeAll(cfg, "")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, runtime.ErrConfig) {
					t.Fatalf("got %v, want a config error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.onError
			if d.sink.OnError != want {
				t.Errorf("sink OnError = %q, want %q", d.sink.OnError, want)
			}
		})
	}
}
