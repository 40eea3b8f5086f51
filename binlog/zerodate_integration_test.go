package binlog

import (
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// TestKeepZeroDates checks zero dates map to NULL while their original text
// stays available in headers, on the streaming and snapshot paths.
func TestKeepZeroDates(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "SET sql_mode = ''")
	exec(t, c, "CREATE TABLE z (id INT PRIMARY KEY, d DATE NULL, dt DATETIME NULL, ok DATE NULL)")
	cfg := testConfig(env, db)
	cfg.KeepZeroDates = true
	stream := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO z VALUES (1, '0000-00-00', '2020-00-10 01:02:03', '2020-01-02')")
	exec(t, c, "UPDATE z SET d = '2021-03-04' WHERE id = 1")
	recs := ownData(readUntil(t, stream, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpUpdate) >= 1 }), db)
	var ins, upd schema.Record
	for _, r := range recs {
		switch r.Op {
		case schema.OpCreate:
			ins = r
		case schema.OpUpdate:
			upd = r
		}
	}
	if ins.After[1] != nil || ins.After[2] != nil || ins.After[3] == nil {
		t.Fatalf("insert row %#v: zero dates must be NULL, the valid date kept", ins.After)
	}
	if got, want := ins.Headers[ZeroDatesAfterHeader], "d=0000-00-00;dt=2020-00-10 01:02:03"; got != want {
		t.Errorf("insert header %q, want %q", got, want)
	}
	if got, want := upd.Headers[ZeroDatesBeforeHeader], "d=0000-00-00;dt=2020-00-10 01:02:03"; got != want {
		t.Errorf("update before header %q, want %q", got, want)
	}
	if got, want := upd.Headers[ZeroDatesAfterHeader], "dt=2020-00-10 01:02:03"; got != want {
		t.Errorf("update after header %q, want %q", got, want)
	}

	exec(t, c, "INSERT INTO z VALUES (2, '0000-00-00', NULL, NULL)")
	snapCfg := cfg
	snapCfg.Snapshot = SnapshotInitialOnly
	read, _ := readSnapshot(t, openSource(t, snapCfg, nil))
	for _, r := range read {
		if r.Table.Database == db && r.After[0].(int64) == 2 {
			if got := r.Headers[ZeroDatesAfterHeader]; got != "d=0000-00-00" {
				t.Fatalf("snapshot header %q, want d=0000-00-00", got)
			}
			return
		}
	}
	t.Fatal("snapshot did not read row 2")
}
