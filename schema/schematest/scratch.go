// Package schematest holds helpers for the tests of every package: the
// servers a test needs (NeedServers, NoServer), polling (Eventually) and the
// scratch server's lock. It imports nothing of sluice's, so any package's
// tests may use it; production code never does (the layout test).
package schematest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// LockScratch holds, for the rest of the test, the lock of the scratch
// MariaDB on port (the server whose global settings tests may change):
// shared for a test that needs its globals as configured, exclusive for one
// that changes them. go test runs the tests of several packages at once,
// so without it a test in one package sets binlog_row_metadata=MINIMAL
// while another package's test reads the binlog of the same server.
func LockScratch(t testing.TB, port string, exclusive bool) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "sluice-scratch-"+port+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err == nil {
		err = syscall.Flock(int(f.Fd()), how)
	}
	if err != nil {
		t.Fatalf("lock the scratch server's globals: %v", err)
	}
	t.Cleanup(func() { f.Close() }) // closing the file releases the lock
}
