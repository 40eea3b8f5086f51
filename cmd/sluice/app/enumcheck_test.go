package app

import (
	"testing"

	"github.com/sluicecdc/sluice/runtime/plugin"
)

// enum_check reaches sink.Config.EnumCheck and is off by default.
func TestSinkEnumCheckConfig(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{{"", false}, {"  enum_check: true\n", true}, {"  enum_check: false\n", false}} {
		text := "name: p\ntransport:\n  type: rocketmq\n  name_servers: [\"127.0.0.1:9876\"]\n  topics: [a]\nsink:\n  type: postgres\n  dsn: postgres://x@127.0.0.1/x\n" + tc.line
		cfg, err := plugin.ParseConfig([]byte(text), "p.yaml")
		if err != nil {
			t.Fatal(err)
		}
		d, err := decodeAll(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		if d.sink.EnumCheck != tc.want {
			t.Errorf("%q: EnumCheck = %v, want %v", tc.line, d.sink.EnumCheck, tc.want)
		}
	}
}
