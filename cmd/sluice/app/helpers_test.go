package app

import (
	"os"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/schema/schematest"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

type runtimeConfig = plugin.Config

func loadFile(path string) (*plugin.Config, error) { return plugin.LoadConfig(path) }

// serverEnv returns the values of the servers' env vars names, or skips
// the test (fails it with CI=true) when one is unset; start says how to
// start what sets them.
func serverEnv(t *testing.T, start string, names ...string) []string {
	t.Helper()
	vals := make([]string, len(names))
	for i, n := range names {
		if vals[i] = os.Getenv(n); vals[i] == "" {
			schematest.NoServer(t, "%s are not set: %s and source /tmp/sluice-servers/servers.env", strings.Join(names, " and "), start)
		}
	}
	return vals
}
