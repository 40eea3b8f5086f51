package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/cluster"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
)

// A task built the way a worker builds it (BuildTask with the coordinator)
// whose sink writes into the coordinator's database, named by another DSN:
// every control table of the cluster and the schema history table are the
// sink's protected tables, so a source table mapping onto one is refused at
// start with a fatal error naming both, while other tables pass; a sink on
// another database of the same PostgreSQL server protects none. And the task
// opens no position store of its own (the worker gives it the coordinator's
// fenced one), so no positions folder appears in the working directory.
func TestBuildTaskInClusterProtectsCoordinator(t *testing.T) {
	env := serverEnv(t, "start the servers", "SLUICE_PG_DSN", "SLUICE_MYSQL_PORT")
	pg, my := env[0], env[1]
	t.Chdir(t.TempDir())
	ctx := context.Background()
	n := rand.Uint32()
	pgKV := fmt.Sprintf("host=127.0.0.1 port=%s user=%s password=%s dbname=%s sslmode=disable",
		os.Getenv("SLUICE_PG_PORT"), os.Getenv("SLUICE_PG_USER"), os.Getenv("SLUICE_PG_PASSWORD"), os.Getenv("SLUICE_PG_DATABASE"))
	pgOther := fmt.Sprintf("host=127.0.0.1 port=%s user=%s password=%s dbname=postgres sslmode=disable",
		os.Getenv("SLUICE_PG_PORT"), os.Getenv("SLUICE_PG_USER"), os.Getenv("SLUICE_PG_PASSWORD"))
	mdb := fmt.Sprintf("coord_ct_%d", n)
	myRoot := fmt.Sprintf("%s:%s@tcp(127.0.0.1:%s)/", os.Getenv("SLUICE_MYSQL_USER"), os.Getenv("SLUICE_MYSQL_PASSWORD"), my)
	admin, err := sql.Open("mysql", myRoot)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + mdb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE IF EXISTS " + mdb) })

	for _, tc := range []struct {
		name, driver, coord, sinkType, sinkDSN, schema string
		protected                                      bool
	}{
		{"postgres, same database", "postgres", pg, "postgres", pgKV, "public", true},
		{"postgres, other database", "postgres", pg, "postgres", pgOther, "public", false},
		{"mysql, same server", "mysql", myRoot + mdb, "mysql", myRoot + mdb + "?timeout=5s", mdb, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix, hist, progress := fmt.Sprintf("sluice_ct%d_", n), fmt.Sprintf("sluice_hist_ct_%d", n), fmt.Sprintf("sluice_progress_ct_%d", n)
			store, err := cluster.Open(ctx, tc.driver, tc.coord, prefix)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			sinkDB, err := sql.Open(tc.driver, tc.sinkDSN)
			if err != nil {
				t.Fatal(err)
			}
			defer sinkDB.Close()
			t.Cleanup(func() {
				for _, tb := range append(store.Tables(), hist) {
					_, _ = store.DB().Exec("DROP TABLE IF EXISTS " + tb)
				}
				_, _ = sinkDB.Exec("DROP TABLE IF EXISTS " + progress)
			})
			doc := fmt.Sprintf("name: ct%d\nsource:\n  type: mariadb\n  host: 127.0.0.1\n  port: 1\n  user: u\n  server_id: 7\n  history_store: database\n  history_table: %s\ntransport:\n  type: embedded\nsink:\n  type: %s\n  dsn: %q\n  progress_table: %s\n",
				n, hist, tc.sinkType, tc.sinkDSN, progress)
			cfg, err := plugin.ParseConfig([]byte(doc), "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			lease := storage.Lease{Table: store.Table("leases"), Task: "p/source", Holder: "w1", Epoch: 1}
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
			// source database D maps to schema (database) D (schema: ${db})
			if err := check.CheckTables([]schema.TableID{{Database: tc.schema, Table: "orders"}, {Database: "app", Table: store.Table("leases")}}); err != nil {
				t.Fatalf("%s.orders and app.%s touch no control table: %v", tc.schema, store.Table("leases"), err)
			}
			for _, tb := range append(store.Tables(), hist) {
				err := check.CheckTables([]schema.TableID{{Database: tc.schema, Table: tb}})
				switch {
				case !tc.protected:
					if err != nil {
						t.Errorf("%s.%s: the sink writes into another database than the coordinator's, yet refused: %v", tc.schema, tb, err)
					}
				case err == nil:
					t.Errorf("source table %s.%s maps onto the coordinator's control table %s.%s: not refused", tc.schema, tb, tc.schema, tb)
				case schema.ClassOf(err) != schema.ClassFatal || !strings.Contains(err.Error(), "source table "+tc.schema+"."+tb) || !strings.Contains(err.Error(), "maps to "+tc.schema+"."+tb):
					t.Errorf("%s.%s: want a fatal error naming both tables, got %v (class %v)", tc.schema, tb, err, schema.ClassOf(err))
				}
			}
		})
	}
}
