package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/cluster"
	"github.com/sluicecdc/sluice/schema"
)

// A task built the way a worker builds it (BuildTask with the coordinator)
// whose sink writes into the coordinator's database: every control table of
// the cluster and the schema history table are the sink's protected tables,
// so a source table mapping onto one is refused at start with a fatal error
// naming both, while another table passes; and the task opens no position
// store of its own (the worker gives it the coordinator's fenced one), so
// no positions folder appears in the working directory.
func TestBuildTaskInClusterProtectsCoordinator(t *testing.T) {
	pg := os.Getenv("SLUICE_PG_DSN")
	if pg == "" {
		msg := "SLUICE_PG_DSN is not set: start the servers and source /tmp/sluice-servers/servers.env"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Chdir(t.TempDir())
	ctx := context.Background()
	n := rand.Uint32()
	prefix, hist := fmt.Sprintf("sluice_ct%d_", n), fmt.Sprintf("sluice_hist_ct_%d", n)
	store, err := cluster.Open(ctx, "postgres", pg, prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	t.Cleanup(func() {
		for _, tb := range append(store.Tables(), hist) {
			_, _ = store.DB().Exec("DROP TABLE IF EXISTS " + tb)
		}
	})
	doc := fmt.Sprintf("name: ct%d\nsource:\n  type: mariadb\n  host: 127.0.0.1\n  port: 1\n  user: u\n  server_id: 7\n  history_store: database\n  history_table: %s\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: %s\n", n, hist, pg)
	cfg, err := runtime.ParseConfig([]byte(doc), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lease := runtime.Lease{Table: store.Table("leases"), Task: "p/source", Holder: "w1", Epoch: 1}
	p, err := BuildTask(ctx, cfg, TaskOptions{Lease: lease, Log: slog.New(slog.DiscardHandler), HistoryDB: store.DB(), HistoryDialect: store.Dialect(),
		CoordinatorTables: store.Tables()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Sink.Close()
	if p.Positions != nil {
		t.Errorf("BuildTask in a cluster opened a position store %T: the worker gives the task the coordinator's", p.Positions)
	}
	if _, err := os.Stat("positions"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("BuildTask in a cluster made a positions folder in the working directory (stat: %v)", err)
	}
	check := p.Sink.(runtime.TableChecker)
	if err := check.CheckTables([]schema.TableID{{Database: "public", Table: "orders"}, {Database: "app", Table: store.Table("leases")}}); err != nil {
		t.Fatalf("public.orders and app.%s (schema app) touch no control table: %v", store.Table("leases"), err)
	}
	for _, tb := range append(store.Tables(), hist) {
		// source database public maps to schema public (schema: ${db})
		err := check.CheckTables([]schema.TableID{{Database: "public", Table: tb}})
		if err == nil {
			t.Errorf("source table public.%s maps onto the coordinator's control table public.%s: not refused", tb, tb)
			continue
		}
		if schema.ClassOf(err) != schema.ClassFatal || !strings.Contains(err.Error(), "source table public."+tb) || !strings.Contains(err.Error(), "maps to public."+tb) {
			t.Errorf("public.%s: want a fatal error naming both tables, got %v (class %v)", tb, err, schema.ClassOf(err))
		}
	}
}
