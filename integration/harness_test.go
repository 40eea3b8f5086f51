package integration

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/lib/pq"
	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	tcmysql "github.com/testcontainers/testcontainers-go/modules/mysql"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/sluicecdc/sluice/schema/schematest"
)

// env holds the servers' settings, keyed like the env file.
type env map[string]string

var (
	envOnce   sync.Once
	loadedEnv env
	envErr    error
)

func readEnvFile(path string) (env, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	e := env{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if ok {
			e[k] = strings.Trim(v, `"'`)
		}
	}
	return e, sc.Err()
}

// servers returns the settings of the test servers, starting containers when
// no env is given and Docker is reachable.
func servers(t *testing.T, need ...string) env {
	t.Helper()
	envOnce.Do(func() {
		path := os.Getenv("SLUICE_SERVERS_ENV")
		if path == "" {
			path = "/tmp/sluice-servers/servers.env"
		}
		loadedEnv, _ = readEnvFile(path)
		if loadedEnv == nil {
			loadedEnv = env{}
		}
		for _, kv := range os.Environ() {
			if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SLUICE_") {
				loadedEnv[k] = v
			}
		}
		if loadedEnv["SLUICE_MYSQL_PORT"] == "" || loadedEnv["SLUICE_PG_DSN"] == "" {
			envErr = startContainers(loadedEnv)
		}
	})
	for _, k := range need {
		if loadedEnv[k] == "" {
			msg := fmt.Sprintf("server setting %s is not set: run `scripts/servers.sh start all` (it writes /tmp/sluice-servers/servers.env) or point SLUICE_SERVERS_ENV at an env file", k)
			if envErr != nil {
				msg += fmt.Sprintf("; testcontainers: %v", envErr)
			}
			schematest.NoServer(t, "%s", msg)
		}
	}
	return loadedEnv
}

// startContainers starts MySQL 8.4, PostgreSQL and RocketMQ where a Docker
// daemon is reachable.
func startContainers(e env) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return fmt.Errorf("no Docker provider: %w", err)
	}
	defer provider.Close()
	if err := provider.Health(ctx); err != nil {
		return fmt.Errorf("no Docker daemon reachable: %w", err)
	}
	my, err := tcmysql.Run(ctx, "mysql:8.4", tcmysql.WithPassword("root"), tcmysql.WithUsername("root"),
		testcontainers.WithCmdArgs("--server-id=1", "--log-bin=mysql-bin", "--binlog-format=ROW", "--binlog-row-image=FULL",
			"--binlog-row-metadata=FULL", "--gtid-mode=ON", "--enforce-gtid-consistency=ON"))
	if err != nil {
		return fmt.Errorf("start mysql container: %w", err)
	}
	host, _ := my.Host(ctx)
	port, _ := my.MappedPort(ctx, "3306/tcp")
	pg, err := tcpostgres.Run(ctx, "postgres:16", tcpostgres.WithUsername("sluice"), tcpostgres.WithPassword("sluice"), tcpostgres.WithDatabase("sluice"),
		tcpostgres.BasicWaitStrategies())
	if err != nil {
		return fmt.Errorf("start postgres container: %w", err)
	}
	dsn, err := pg.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		return err
	}
	e["SLUICE_MYSQL_HOST"], e["SLUICE_MYSQL_PORT"] = host, port.Port()
	e["SLUICE_MYSQL_USER"], e["SLUICE_MYSQL_PASSWORD"] = "root", "root"
	e["SLUICE_MYSQL_CDC_USER"], e["SLUICE_MYSQL_CDC_PASSWORD"] = "root", "root"
	e["SLUICE_MYSQL_FLAVOR"] = "mysql"
	e["SLUICE_PG_DSN"] = dsn
	if err := startRocketMQContainers(ctx, e); err != nil {
		return fmt.Errorf("start rocketmq containers: %w", err)
	}
	return nil
}

// startRocketMQContainers runs a name server and a broker from the official
// image as generic containers on the host network, bound to and advertising
// 127.0.0.1 only (the same loopback rule as scripts/servers.sh). Written for
// machines with Docker; the project's own machines have none, so there the
// tests use scripts/servers.sh instead.
func startRocketMQContainers(ctx context.Context, e env) error {
	const image, nsPort, brokerPort = "apache/rocketmq:5.3.1", "49876", "50911"
	host := func(hc *container.HostConfig) { hc.NetworkMode = "host" }
	conf := func(path, text string) testcontainers.ContainerFile {
		return testcontainers.ContainerFile{Reader: strings.NewReader(text), ContainerFilePath: path, FileMode: 0o644}
	}
	_, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{Started: true, ContainerRequest: testcontainers.ContainerRequest{
		Image: image, HostConfigModifier: host, Cmd: []string{"sh", "mqnamesrv", "-c", "/tmp/namesrv.conf"},
		Files:      []testcontainers.ContainerFile{conf("/tmp/namesrv.conf", "listenPort="+nsPort+"\nbindAddress=127.0.0.1\n")},
		WaitingFor: wait.ForLog("The Name Server boot success").WithStartupTimeout(2 * time.Minute),
	}})
	if err != nil {
		return err
	}
	_, err = testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{Started: true, ContainerRequest: testcontainers.ContainerRequest{
		Image: image, HostConfigModifier: host, Cmd: []string{"sh", "mqbroker", "-c", "/tmp/broker.conf"},
		Env: map[string]string{"JAVA_OPT_EXT": "-Xms512m -Xmx512m"},
		Files: []testcontainers.ContainerFile{conf("/tmp/broker.conf", "brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=0\n"+
			"namesrvAddr=127.0.0.1:"+nsPort+"\nbrokerIP1=127.0.0.1\nbrokerIP2=127.0.0.1\nbindAddress=127.0.0.1\nlistenPort="+brokerPort+
			"\nautoCreateTopicEnable=true\n")},
		WaitingFor: wait.ForLog("boot success").WithStartupTimeout(2 * time.Minute),
	}})
	if err != nil {
		return err
	}
	e["SLUICE_ROCKETMQ_NAMESRV"] = "127.0.0.1:" + nsPort
	return nil
}

func (e env) mysqlDSN(db string) string {
	return fmt.Sprintf("%s:%s@tcp(%s:%s)/%s?multiStatements=true", e["SLUICE_MYSQL_USER"], e["SLUICE_MYSQL_PASSWORD"], e["SLUICE_MYSQL_HOST"], e["SLUICE_MYSQL_PORT"], db)
}

// withMySQL97 returns a copy of e whose source (SLUICE_MYSQL_*) is the
// MySQL 9.7 source of scripts/servers.sh and whose MySQL target is its
// MySQL 9.7 target server.
func (e env) withMySQL97() env {
	out := env{}
	for k, v := range e {
		out[k] = v
	}
	for _, k := range []string{"HOST", "PORT", "USER", "PASSWORD", "CDC_USER", "CDC_PASSWORD", "SOCKET"} {
		out["SLUICE_MYSQL_"+k] = e["SLUICE_MYSQL97_"+k]
	}
	out["SLUICE_MYSQL_FLAVOR"] = "mysql"
	out["SLUICE_TARGET_MYSQL_PORT"] = e["SLUICE_MYSQL97_TARGET_PORT"]
	return out
}

// targetMySQLDSN is the DSN of db on the MySQL target: the source's server,
// or the separate target server when SLUICE_TARGET_MYSQL_PORT names one.
func (e env) targetMySQLDSN(db string) string {
	if port := e["SLUICE_TARGET_MYSQL_PORT"]; port != "" {
		return fmt.Sprintf("%s:%s@tcp(%s:%s)/%s?multiStatements=true", e["SLUICE_MYSQL_USER"], e["SLUICE_MYSQL_PASSWORD"], e["SLUICE_MYSQL_HOST"], port, db)
	}
	return e.mysqlDSN(db)
}

// serverID is the binlog server_id of a pipeline a test starts: unique in
// this process (a counter over a random base) and, the base being drawn
// from 400,000, apart from the ids of the other go test processes that
// scripts/test.sh runs at once against the same servers. Two readers with
// one server_id evict each other, which is fatal
// (binlog.TestSourceSameServerIDIsEvicted); ids drawn at random for each
// pipeline met now and then once several processes ran side by side.
func serverID() uint32 { return serverIDBase + serverIDNext.Add(1)%10_000 }

var (
	serverIDBase = uint32(1000 + mrand.IntN(400_000)*10_000) // below 2^32 with the counter added
	serverIDNext atomic.Uint32
)

func uniqueName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

func openDB(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("connect %s: %v", driver, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// sourceAndTarget makes a fresh database with the workload's tables in
// MariaDB and returns its name and connections to both servers; the
// database and its PostgreSQL schema are dropped when the test ends.
func sourceAndTarget(t *testing.T, e env, prefix string) (db string, my, pg *sql.DB) {
	t.Helper()
	db = uniqueName(prefix)
	my = openDB(t, "mysql", e.mysqlDSN(""))
	pg = openDB(t, "postgres", e["SLUICE_PG_DSN"])
	t.Cleanup(func() { pg.Exec(`DROP SCHEMA IF EXISTS "` + db + `" CASCADE`) })
	createSourceTables(t, my, db)
	return db, my, pg
}

// onEachTransport runs f as a subtest per transport, with the servers each
// needs (failing in CI, skipping elsewhere, when one is missing).
func onEachTransport(t *testing.T, f func(t *testing.T, transport string, e env)) {
	for _, transport := range []string{"embedded", "rocketmq"} {
		t.Run(transport, func(t *testing.T) {
			need := []string{"SLUICE_MYSQL_PORT", "SLUICE_PG_DSN"}
			if transport == "rocketmq" {
				need = append(need, "SLUICE_ROCKETMQ_NAMESRV")
			}
			f(t, transport, servers(t, need...))
		})
	}
}
