package schematest

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// NoServer ends a test that lacks a server: it skips, or under CI
// (CI=true, as scripts/test.sh and .ci/run set it) fails, since CI must
// never pass by skipping what it was meant to test.
func NoServer(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// NeedServers returns the values of the environment variables names (the
// test servers' settings, which scripts/servers.sh writes to servers.env),
// in order; when one is unset the test skips, or fails under CI (NoServer).
func NeedServers(t testing.TB, names ...string) []string {
	t.Helper()
	vals := make([]string, len(names))
	var missing []string
	for i, n := range names {
		if vals[i] = os.Getenv(n); vals[i] == "" {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		NoServer(t, "%s not set: start the servers with scripts/servers.sh start and source $SLUICE_SERVERS_ROOT/servers.env (default /tmp/sluice-servers/servers.env)",
			strings.Join(missing, ", "))
	}
	return vals
}

// Eventually calls cond every interval until it returns true, and fails
// the test, saying what cond last reported, once limit has passed without
// it. cond runs on the test's goroutine, so it may itself fail the test
// (e.g. when a process it waits on has stopped).
func Eventually(t testing.TB, limit, interval time.Duration, what string, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (last: %s)", what, limit, state)
		}
		time.Sleep(interval)
	}
}
