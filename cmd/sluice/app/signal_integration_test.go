package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// A cluster's POST /connectors/{name}/signals runs signalForCluster on
// whichever worker answers: from the connector's config alone it writes
// the signal into the source's signal table (where the source task, on any
// worker, reads it from the binlog); one the source would ignore, or a
// source without signal_table, is refused with a config error and nothing
// is written.
func TestSignalForClusterWritesTheSignalTable(t *testing.T) {
	c, db := checkServer(t)
	if _, err := c.Execute("CREATE TABLE " + db + ".sig (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT NULL)"); err != nil {
		t.Fatal(err)
	}
	doc := func(signal string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"name":"k","source":{"type":"mariadb","host":%q,"port":%s,"user":%q,"password":%q,"server_id":4711,"include":["%s.*"]%s},
			"transport":{"type":"embedded"},"sink":{"type":"postgres","dsn":"postgres://u@127.0.0.1:1/x"}}`,
			os.Getenv("SLUICE_MYSQL_HOST"), os.Getenv("SLUICE_MYSQL_PORT"), os.Getenv("SLUICE_MYSQL_USER"), os.Getenv("SLUICE_MYSQL_PASSWORD"), db, signal))
	}
	ctx := context.Background()
	with := mustParse(t, doc(`,"signal_table":"`+db+`.sig"`))
	data := fmt.Sprintf(`{"data-collections": ["%s.t"]}`, db)
	id, err := signalForCluster(ctx, with, "c-1", "execute-snapshot", data)
	if err != nil || id != "c-1" {
		t.Fatalf("signalForCluster: %q, %v", id, err)
	}
	if _, err := signalForCluster(ctx, with, "c-2", "execute-snapshot", `{"data-collections": ["`+db+`.t"], "type": "blocking"}`); !errors.Is(err, schema.ErrConfig) {
		t.Errorf("a blocking snapshot: %v, want a config error", err)
	}
	if _, err := signalForCluster(ctx, mustParse(t, doc("")), "c-3", "pause-snapshot", ""); !errors.Is(err, schema.ErrConfig) {
		t.Errorf("a source without signal_table: %v, want a config error", err)
	}
	r, err := c.Execute("SELECT id, type, data FROM " + db + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	if r.RowNumber() != 1 {
		t.Fatalf("%d rows in the signal table, want the one signal taken", r.RowNumber())
	}
	gotID, _ := r.GetString(0, 0)
	typ, _ := r.GetString(0, 1)
	got, _ := r.GetString(0, 2)
	if gotID != "c-1" || typ != "execute-snapshot" || got != data {
		t.Fatalf("signal row %q %q %q", gotID, typ, got)
	}
}
