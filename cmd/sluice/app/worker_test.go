package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/cluster"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/schema/schematest"
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
	cfg, err := plugin.ParseConfig([]byte(doc), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkForCluster(cfg); err != nil {
		t.Fatalf("history_store: database in a cluster, no positions section: %v", err)
	}
}

// A connector created or put through a cluster with several mistakes is
// refused with all of them in one 400 message, as Kafka Connect lists
// every error of a config (before, only the first one the decoder met, so
// fixing a config took one round trip per mistake); one mistake keeps its
// message as it was; neither shows the secret.
func TestClusterCreateListsEveryError(t *testing.T) {
	c := &cluster.Control{Check: checkForCluster, Validator: validateForCluster}
	bad := json.RawMessage(`{"source":{"type":"mariadb","host":"127.0.0.1","port":13306,"user":"u","password":{"x":"Sec-Ret-1"},"server_id":"abc","bogus":1},
		"transport":{"type":"embedded"},"sink":{"type":"postgres","dsn":"postgres://u:Sec-Ret-2@127.0.0.1/x"}}`)
	for _, call := range []func() error{
		func() error { _, err := c.Create(context.Background(), "k", bad); return err },
		func() error { _, _, err := c.PutConfig(context.Background(), "k", bad); return err },
	} {
		err := call()
		if !errors.Is(err, admin.ErrInvalid) {
			t.Fatalf("err %v, want ErrInvalid", err)
		}
		for _, want := range []string{"3 errors", "source.password", "source.server_id", "source.bogus: unknown key"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v\nlacks %q", err, want)
			}
		}
		if strings.Contains(err.Error(), "Sec-Ret") {
			t.Errorf("the error shows a secret: %v", err)
		}
	}
	one := json.RawMessage(`{"source":{"type":"mariadb","host":"127.0.0.1","port":13306,"user":"u","password":"p","server_id":5,"bogus":1},
		"transport":{"type":"embedded"},"sink":{"type":"postgres","dsn":"postgres://u:p@127.0.0.1/x"}}`)
	_, err := c.Create(context.Background(), "k", one)
	if !errors.Is(err, admin.ErrInvalid) || !strings.Contains(err.Error(), "source.bogus: unknown key") || strings.Contains(err.Error(), "errors:") {
		t.Errorf("one mistake: %v", err)
	}
}

// PATCH /connectors/{name}/offsets with a position the source cannot read
// is refused (400) before anything is stored; before, it was stored and the
// task FAILED when resumed ("garbage is not a binlog position").
func TestClusterSetOffsetChecksPosition(t *testing.T) {
	c := &cluster.Control{CheckPosition: checkPosition} // no store: a refusal must come first
	for _, pos := range []string{"garbage", `{"v":1,"flavor":"mariadb"}`, `{"v":1,"flavor":"mariadb","file":"b.000001","pos":4,"extra":1}`} {
		err := c.SetOffset(context.Background(), "k", pos)
		if !errors.Is(err, admin.ErrInvalid) || !strings.Contains(err.Error(), "/offsets shows the form") {
			t.Errorf("position %s: %v, want ErrInvalid", pos, err)
		}
	}
	good := `{"v":1,"flavor":"mariadb","gtid":"0-1-42","file":"mariadb-bin.000001","pos":1234,"epoch":1796195540407670307}` // as GET .../offsets answered a real worker
	if err := checkPosition(good); err != nil {
		t.Errorf("a position GET .../offsets answers is refused: %v", err)
	}
}

// A coordinator.dsn of an unset ${VAR} says which variable to set (before:
// "coordinator.dsn is required", with the key right there in the file).
func TestClusterFileUnsetDSNVariable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, []byte("coordinator:\n  driver: postgres\n  dsn: ${SLUICE_TEST_UNSET_COORDINATOR_DSN}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Unsetenv("SLUICE_TEST_UNSET_COORDINATOR_DSN")
	_, err := loadClusterFile(path)
	if !errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), "${SLUICE_TEST_UNSET_COORDINATOR_DSN} expands to nothing") {
		t.Fatalf("%v", err)
	}
}

// A worker whose start fails says why, and not that it is draining tasks
// (the end of its function cancels the signal context too, which is no
// signal).
func TestWorkerFailingAtStartSaysNoDraining(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // nothing listens there now: the coordinator refuses at once
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, []byte("coordinator:\n  driver: postgres\n  dsn: postgres://u@"+ln.Addr().String()+"/db?sslmode=disable\nrest: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &schematest.LogBuffer{}
	err = cmdWorker([]string{"--config", path}, slog.New(slog.NewTextHandler(logs, nil)))
	if err == nil || !strings.Contains(err.Error(), "coordinator") {
		t.Fatalf("start against a closed port: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // the signal watcher had its chance to log
	if strings.Contains(logs.String(), "draining") {
		t.Errorf("a worker that failed at start logged draining:\n%s", logs.String())
	}
}

// `sluice worker` applies the Go memory limit as `sluice run` does, from
// its cluster file's memory_limit (default DefaultMemoryLimit, off for
// none), before it connects to the coordinator; bad values are config errors.
func TestWorkerAppliesMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // the coordinator refuses at once: the worker returns after applying the limit
	base := "coordinator:\n  driver: postgres\n  dsn: postgres://u@" + ln.Addr().String() + "/db?sslmode=disable\nrest: 127.0.0.1:0\n"
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	for _, c := range []struct {
		line string
		want int64
	}{
		{"memory_limit: 123MiB\n", 123 << 20},
		{"", int64(runtime.DefaultMemoryLimit)},
		{"memory_limit: off\n", math.MaxInt64},
		{"memory_limit: 104857600\n", 100 << 20},
	} {
		debug.SetMemoryLimit(1 << 40)
		if err := os.WriteFile(path, []byte(base+c.line), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := cmdWorker([]string{"--config", path}, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "coordinator") {
			t.Fatalf("%q: start against a closed port: %v", c.line, err)
		}
		if got := debug.SetMemoryLimit(-1); got != c.want {
			t.Errorf("%q: the worker's memory limit is %d, want %d", c.line, got, c.want)
		}
	}
	for _, bad := range []string{"memory_limit: lots\n", "memory_limit: 0\n"} {
		if err := os.WriteFile(path, []byte(base+bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadClusterFile(path); !errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), "memory_limit") {
			t.Errorf("%q: %v; want a config error naming memory_limit", bad, err)
		}
	}
}
