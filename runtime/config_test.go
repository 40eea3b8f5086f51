package runtime

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type testSource struct {
	Host    string        `yaml:"host" sluice:"required"`
	Port    int           `yaml:"port"`
	Tables  []string      `yaml:"tables"`
	Timeout time.Duration `yaml:"timeout"`
	TLS     struct {
		Enabled bool `yaml:"enabled"`
	} `yaml:"tls"`
}

const goodConfig = `name: demo
source:
  type: mysql
  host: ${SLUICE_TEST_HOST}
  port: ${SLUICE_TEST_PORT:-3306}
  tables: [shop.orders, "shop.items"]
  timeout: 2s
  tls:
    enabled: true
transport:
  type: embedded
sink:
  type: postgres
`

func TestParseConfigExpandsEnvAndDecodes(t *testing.T) {
	t.Setenv("SLUICE_TEST_HOST", "127.0.0.1")
	c, err := ParseConfig([]byte(goodConfig), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "demo" || c.Source.Type != "mysql" || c.Transport.Type != "embedded" || c.Sink.Type != "postgres" {
		t.Fatalf("sections: %+v", c)
	}
	var s testSource
	if err := c.Source.Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.Host != "127.0.0.1" || s.Port != 3306 || len(s.Tables) != 2 || s.Tables[1] != "shop.items" || s.Timeout != 2*time.Second || !s.TLS.Enabled {
		t.Fatalf("decoded %+v", s)
	}
}

func TestConfigErrorsNameKeyAndLine(t *testing.T) {
	t.Setenv("SLUICE_TEST_HOST", "h")
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown top key", strings.Replace(goodConfig, "sink:", "sinks:", 1), "x.yaml:12: sinks: unknown top-level key"},
		{"unknown section key", strings.Replace(goodConfig, "  port:", "  prot:", 1), "x.yaml:5: source.prot: unknown key"},
		{"missing required", strings.Replace(goodConfig, "  host: ${SLUICE_TEST_HOST}\n", "", 1), "source.host: is required"},
		{"wrong type", strings.Replace(goodConfig, "${SLUICE_TEST_PORT:-3306}", "abc", 1), "x.yaml:5: source.port: expected an integer, got \"abc\""},
		{"bad duration", strings.Replace(goodConfig, "2s", "soon", 1), "x.yaml:7: source.timeout: expected a duration"},
		{"nested unknown", strings.Replace(goodConfig, "enabled:", "enable:", 1), "x.yaml:9: source.tls.enable: unknown key"},
		{"unset env", strings.Replace(goodConfig, "SLUICE_TEST_HOST", "SLUICE_TEST_UNSET_VAR", 1), "x.yaml:4: ${SLUICE_TEST_UNSET_VAR}: environment variable is not set"},
		{"missing name", strings.Replace(goodConfig, "name: demo\n", "", 1), "name: is required"},
		{"missing type", strings.Replace(goodConfig, "  type: postgres\n", "  dsn: x\n", 1), "sink.type: is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.yaml), "x.yaml")
			if err == nil {
				var s testSource
				err = c.Source.Decode(&s)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v is not ErrConfig", err)
			}
		})
	}
}
