package integration

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFaultServerKills kills, with SIGKILL, a server a pipeline depends on
// while it streams a workload, and starts it again (each on the fault
// servers of its own: see faultServer): the MariaDB source, the MySQL 9.7
// source and the MySQL 9.7 target (each on both transports) and the
// RocketMQ name server. The pipeline
// runs under the worker, as `sluice run` does, which restarts it after the
// lost connection; the target must end equal to the source, with no row
// ever moved back (a trigger on the target records any update that lowers
// an order's amount, which the workload only raises).
func TestFaultServerKills(t *testing.T) {
	for _, c := range []struct {
		name, kind, pidFile string
		pair                pair
		sourceDown          bool // the workload cannot write while it is down
	}{
		{name: "mariadb-source", kind: "mariadb", pidFile: "mariadb/mariadb.pid", pair: pair{transport: "embedded", target: "postgres"}, sourceDown: true},
		{name: "mysql-source", kind: "mysql", pidFile: "mysql/mysqld.pid", pair: pair{transport: "embedded", target: "postgres", source: mysql97}, sourceDown: true},
		{name: "mysql-target", kind: "mysql", pidFile: "mysql-tgt/mysqld.pid", pair: pair{transport: "embedded", target: "mysql"}},
		{name: "name-server", kind: "rocketmq", pidFile: "rocketmq/namesrv.pid", pair: pair{transport: "rocketmq", target: "postgres"}},
		// Over RocketMQ the sink's progress is the consumer's offset, not
		// the source position: the MySQL target's kill once more there.
		{name: "mysql-target-rocketmq", kind: "mysql", pidFile: "mysql-tgt/mysqld.pid", pair: pair{transport: "rocketmq", target: "mysql"}},
		// The sources' kills over RocketMQ: the source task restarts from
		// its position while the sink goes on reading the broker.
		{name: "mariadb-source-rocketmq", kind: "mariadb", pidFile: "mariadb/mariadb.pid", pair: pair{transport: "rocketmq", target: "postgres"}, sourceDown: true},
		{name: "mysql-source-rocketmq", kind: "mysql", pidFile: "mysql/mysqld.pid", pair: pair{transport: "rocketmq", target: "postgres", source: mysql97}, sourceDown: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := maps.Clone(servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN"))
			if c.pair.transport == "rocketmq" {
				e["SLUICE_ROCKETMQ_NAMESRV"] = faultBroker(t)["SLUICE_ROCKETMQ_NAMESRV"]
			}
			switch strings.TrimSuffix(c.name, "-rocketmq") {
			case "mariadb-source":
				fe := faultServer(t, c.kind, "SLUICE_MYSQL_PORT")
				for _, k := range []string{"HOST", "PORT", "USER", "PASSWORD", "CDC_USER", "CDC_PASSWORD"} {
					e["SLUICE_MYSQL_"+k] = fe["SLUICE_MYSQL_"+k]
				}
			case "mysql-source":
				fe := faultServer(t, c.kind, "SLUICE_MYSQL97_PORT")
				for k, v := range fe {
					if strings.HasPrefix(k, "SLUICE_MYSQL97_") {
						e[k] = v
					}
				}
				e = e.withMySQL97()
				delete(e, "SLUICE_TARGET_MYSQL_PORT")
			case "mysql-target":
				fe := faultServer(t, c.kind, "SLUICE_MYSQL97_TARGET_PORT")
				e["SLUICE_TARGET_MYSQL_PORT"] = fe["SLUICE_MYSQL97_TARGET_PORT"]
			}
			k := makeKitOn(t, c.pair, e, "it_kill", true)
			r := startWorker(t, k.config(t))
			k.waitStreaming(t, r)
			assertNoRegressions := k.watchRegressions(t)
			w := newWorkload(k.src, k.db)
			w.run(t, 1500)

			began := time.Now()
			killPidFile(t, filepath.Join(faultRoot, c.pidFile), c.name)
			if !c.sourceDown {
				w.run(t, 1500) // written while the server is dead
			}
			faultServers(t, "start", c.kind)
			t.Logf("%s killed and back after %s", c.name, time.Since(began).Round(time.Millisecond))
			up := time.Now()
			w.run(t, 1500)
			k.waitEqual(t, r)
			t.Logf("target equal to the source %s after %s was back", time.Since(up).Round(time.Millisecond), c.name)
			r.stop(t)
			assertNoRegressions(t)
		})
	}
}
