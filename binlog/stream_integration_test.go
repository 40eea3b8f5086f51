package binlog

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// TestHeartbeatsWhileIdle: an idle source emits heartbeats carrying the
// position of the last commit it read.
func TestHeartbeatsWhileIdle(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE items (id INT PRIMARY KEY)")
	cfg := testConfig(env, db)
	cfg.Heartbeat = 300 * time.Millisecond
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO items VALUES (1)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lastCommit []byte
	sawInsert := false
	for {
		recs, err := s.Read(ctx)
		if err != nil {
			t.Fatalf("no heartbeat after the insert: %v", err)
		}
		for _, r := range recs {
			switch {
			case r.Op == schema.OpCreate && r.Table.Database == db:
				sawInsert = true
			case r.Op == schema.OpCommit:
				lastCommit = r.Position
			case r.Op == schema.OpHeartbeat && sawInsert && lastCommit != nil:
				if !bytes.Equal(r.Position, lastCommit) {
					t.Fatalf("heartbeat position %s, last commit's %s", r.Position, lastCommit)
				}
				if time.Since(time.UnixMilli(r.TsMs)) > time.Minute || r.Source.Name != "it" {
					t.Fatalf("heartbeat source %+v ts %d", r.Source, r.TsMs)
				}
				return
			}
		}
	}
}

// TestTruncateAndFilteredDDL: TRUNCATE gives an OpTruncate record plus the
// commit; DDL and TRUNCATE of excluded tables (also when qualified with
// another database) give nothing.
func TestTruncateAndFilteredDDL(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	other := db + "_other"
	exec(t, c, "CREATE DATABASE "+other)
	t.Cleanup(func() { _, _ = c.Execute("DROP DATABASE IF EXISTS " + other) })
	exec(t, c, "CREATE TABLE kept (id INT PRIMARY KEY, v INT)")
	exec(t, c, "CREATE TABLE skipped (id INT PRIMARY KEY)")
	cfg := testConfig(env, db)
	cfg.Exclude = []string{db + ".skipped"}
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO kept VALUES (1, 1)")
	exec(t, c, "TRUNCATE TABLE kept")
	exec(t, c, "TRUNCATE skipped")
	exec(t, c, "ALTER TABLE skipped ADD c INT")
	exec(t, c, "CREATE TABLE "+other+".elsewhere (id INT PRIMARY KEY)") // default database is db
	exec(t, c, "ALTER TABLE kept ADD c INT")
	exec(t, c, "INSERT INTO kept VALUES (2, 2, 2)")
	all := readUntil(t, s, func(rs []schema.Record) bool {
		for _, r := range rs {
			if r.Op == schema.OpCreate && r.Table.Database == db && r.After[0] == int64(2) {
				return true
			}
		}
		return false
	})
	var got []string
	var truncTx string
	commitAfterTruncate := false
	for _, r := range all {
		if r.Op == schema.OpCommit && truncTx != "" && r.Transaction.ID == truncTx {
			commitAfterTruncate = r.Position != nil
		}
		if r.Op.IsMarker() || (r.Table.Database != db && r.Table.Database != other) {
			continue
		}
		line := r.Op.String() + " " + r.Table.Table
		if r.Change != nil {
			line += " " + r.Change.DDL
		}
		got = append(got, line)
		if r.Op == schema.OpTruncate {
			truncTx = r.Transaction.ID
			if r.ValueSchema == nil || r.KeySchema == nil || r.Table.Table != "kept" {
				t.Errorf("truncate record lacks the table's schemas: %+v", r)
			}
		}
	}
	want := "c kept|t kept|ddl kept ALTER TABLE kept ADD c INT|c kept" // a DDL names its first captured table (barrier routing)
	if g := strings.Join(got, "|"); g != want {
		t.Fatalf("records:\n%s\nwant:\n%s", g, want)
	}
	if !commitAfterTruncate {
		t.Errorf("no commit marker with a position after the truncate")
	}
}
