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

// A connector created through the REST API may keep its schema history in
// the coordinator (history_store: database) without a positions section:
// the cluster keeps both, so the check at POST /connectors accepts it.
func TestCheckForClusterHistoryInDatabase(t *testing.T) {
	const doc = "name: p\nsource:\n  type: mariadb\n  host: h\n  user: u\n  server_id: 7\n  history_store: database\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: postgres://u@127.0.0.1/x\n"
	cfg, err := runtime.ParseConfig([]byte(doc), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkForCluster(cfg); err != nil {
		t.Fatalf("history_store: database in a cluster, no positions section: %v", err)
	}
}
