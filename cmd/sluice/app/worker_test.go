package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
)

func TestLoadClusterFile(t *testing.T) {
	t.Setenv("SLUICE_COORDINATOR_DSN", "postgres://u@127.0.0.1/db")
	cf, err := loadClusterFile("../../../examples/cluster/worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cf.Coordinator.Driver != "postgres" || cf.Coordinator.DSN != "postgres://u@127.0.0.1/db" || cf.REST != "127.0.0.1:8083" || cf.TTL != 10*time.Second || cf.Heartbeat != 3*time.Second {
		t.Fatalf("%+v", cf)
	}
	dir := t.TempDir()
	for doc, want := range map[string]string{
		"coordinator: {driver: postgres, dsn: x}\nttl_ms: 5\n": "field ttl_ms not found",
		"id: w1\n":                          "coordinator.driver (postgres or mysql) and coordinator.dsn are required",
		"coordinator: {driver: postgres}\n": "are required",
	} {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := loadClusterFile(p)
		if !errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want ErrConfig saying %q", doc, err, want)
		}
	}
}
