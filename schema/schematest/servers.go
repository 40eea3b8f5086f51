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

// GlobalsLock is the MySQL/MariaDB named lock (GET_LOCK) that tests take
// before they change a server's global settings (SET GLOBAL ...) and hold
// until they have put them back: go test runs packages at once, and such
// tests of several packages share the servers of scripts/servers.sh.
const GlobalsLock = "sluice_test_globals"

// HoldGlobals takes GlobalsLock through query, which runs a statement on
// one connection the test keeps open until it ends and returns the first
// column of its one row; the lock is released when the test ends (after
// the cleanups registered later, which put the settings back). Take it
// before reading the settings to restore.
func HoldGlobals(t testing.TB, query func(q string) (int64, error)) {
	t.Helper()
	got, err := query("SELECT GET_LOCK('" + GlobalsLock + "', 600)")
	if err != nil || got != 1 {
		t.Fatalf("take the server's lock %s for changing its global settings: %d, %v", GlobalsLock, got, err)
	}
	t.Cleanup(func() { _, _ = query("SELECT RELEASE_LOCK('" + GlobalsLock + "')") })
}
