package app

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/cluster"
	"github.com/sluicecdc/sluice/runtime/plugin"
)

// A connector whose servers fail `sluice check` is refused when it is
// created, put or validated over a cluster's REST (400 with the reasons, as
// Kafka Connect refuses a connector that fails its validation); before, a
// wrong source password answered 201 and the task failed later. The same
// connector with the right password passes the probe (issue 28, item 6).
func TestClusterProbesConnectorServers(t *testing.T) {
	env := serverEnv(t, "scripts/servers.sh start mariadb postgres", "SLUICE_MYSQL_HOST", "SLUICE_MYSQL_PORT", "SLUICE_MYSQL_CDC_USER", "SLUICE_MYSQL_CDC_PASSWORD", "SLUICE_PG_DSN")
	host, port, user, pass, pg := env[0], env[1], env[2], env[3], env[4]
	doc := func(password string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"name":"k","source":{"type":"mariadb","host":%q,"port":%s,"user":%q,"password":%q,"server_id":4711,"include":["probe_db.*"]},
			"transport":{"type":"embedded"},"sink":{"type":"postgres","dsn":%q}}`, host, port, user, password, pg))
	}
	c := &cluster.Control{Check: checkForCluster, Validator: validateForCluster, Probe: probeForCluster} // no store: a refusal comes first
	wrong := doc("not-" + pass)
	for name, call := range map[string]func() error{
		"create": func() error { _, err := c.Create(context.Background(), "k", wrong); return err },
		"put":    func() error { _, _, err := c.PutConfig(context.Background(), "k", wrong); return err },
	} {
		err := call()
		if !errors.Is(err, admin.ErrInvalid) || !strings.Contains(err.Error(), "FAIL") || !strings.Contains(err.Error(), user) {
			t.Errorf("%s with a wrong source password: %v, want ErrInvalid naming the failed check and the account", name, err)
		}
		if strings.Contains(err.Error(), "not-"+pass) {
			t.Errorf("%s: the error shows the password: %v", name, err)
		}
	}
	v, err := c.Validate(context.Background(), "mariadb", wrong)
	if err != nil || v.ErrorCount == 0 || len(v.Configs) == 0 || v.Configs[len(v.Configs)-1].Value.Name != "servers" {
		t.Errorf("validate with a wrong source password: %+v, %v: want the servers' errors", v, err)
	}
	if reasons := probeForCluster(context.Background(), mustParse(t, doc(pass))); len(reasons) > 0 {
		t.Errorf("the right password: the probe refuses: %v", reasons)
	}
	if v, err := c.Validate(context.Background(), "mariadb", doc(pass)); err != nil || v.ErrorCount != 0 {
		t.Errorf("validate with the right password: %+v, %v", v, err)
	}
}

func mustParse(t *testing.T, doc json.RawMessage) *plugin.Config {
	t.Helper()
	cfg, _, err := cluster.ParseConnector("k", doc)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The cluster's probe compares the existing target tables too: a
// connector whose mapped PostgreSQL table has no key on the source's
// primary key is refused with 400 naming the table (it was created, and
// its task stopped at the table's first upsert).
func TestClusterRefusesATargetTableWithoutTheKey(t *testing.T) {
	c, db := checkServer(t)
	pg := serverEnv(t, "scripts/servers.sh start postgres", "SLUICE_PG_DSN")[0]
	if _, err := c.Execute("CREATE TABLE " + db + ".items (id INT PRIMARY KEY, v INT)"); err != nil {
		t.Fatal(err)
	}
	tdb, err := sql.Open("postgres", pg)
	if err != nil {
		t.Fatal(err)
	}
	defer tdb.Close()
	t.Cleanup(func() { _, _ = tdb.Exec("DROP SCHEMA " + db + " CASCADE") })
	for _, q := range []string{"CREATE SCHEMA " + db, "CREATE TABLE " + db + ".items (id INT, v INT)"} {
		if _, err := tdb.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	doc := json.RawMessage(fmt.Sprintf(`{"name":"k","source":{"type":"mariadb","host":%q,"port":%s,"user":%q,"password":%q,"server_id":4712,"include":["%s.*"]},
		"transport":{"type":"embedded"},"sink":{"type":"postgres","dsn":%q}}`,
		os.Getenv("SLUICE_MYSQL_HOST"), os.Getenv("SLUICE_MYSQL_PORT"), os.Getenv("SLUICE_MYSQL_CDC_USER"), os.Getenv("SLUICE_MYSQL_CDC_PASSWORD"), db, pg))
	ctl := &cluster.Control{Check: checkForCluster, Validator: validateForCluster, Probe: probeForCluster}
	reasons := strings.Join(probeForCluster(context.Background(), mustParse(t, doc)), "\n")
	if !strings.Contains(reasons, "FAIL target_table: "+db+".items: no primary key or unique index") {
		t.Fatalf("the probe of a target table without the key: %q, want a FAIL naming the table", reasons)
	}
	if _, err := ctl.Create(context.Background(), "k", doc); !errors.Is(err, admin.ErrInvalid) || !strings.Contains(err.Error(), "FAIL target_table: "+db+".items") {
		t.Errorf("create with a target table without the key: %v, want ErrInvalid naming the table", err)
	}
	if _, err := tdb.Exec("ALTER TABLE " + db + ".items ADD PRIMARY KEY (id)"); err != nil {
		t.Fatal(err)
	}
	if reasons := probeForCluster(context.Background(), mustParse(t, doc)); len(reasons) > 0 {
		t.Errorf("the table with its key: the probe refuses: %v", reasons)
	}
}
