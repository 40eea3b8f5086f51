package binlog

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// TestStatementDMLStopsTheSource: a session with binlog_format=STATEMENT
// writes its rows as QUERY events the source cannot capture. A write to an
// excluded table is passed over; one to a captured table stops the source
// with a fatal error naming the statement and the table, instead of the
// change vanishing (it did before: the event was taken for a SAVEPOINT).
func TestStatementDMLStopsTheSource(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE kept (id INT PRIMARY KEY, v INT)")
	exec(t, c, "CREATE TABLE skipped (id INT PRIMARY KEY)")
	cfg := testConfig(env, db)
	cfg.Exclude = []string{db + ".skipped"}
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO kept VALUES (1, 1)") // row format: captured
	exec(t, c, "SET SESSION binlog_format=STATEMENT")
	exec(t, c, "INSERT INTO skipped VALUES (1)")
	exec(t, c, "UPDATE kept SET v = 2 WHERE id = 1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sawInsert := false
	for {
		recs, err := s.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatal("the statement-logged UPDATE did not stop the source")
			}
			if !sawInsert {
				t.Fatalf("stopped before the row-logged insert: %v", err)
			}
			if !errors.Is(err, ErrUnsupported) || schema.ClassOf(err) != schema.ClassFatal ||
				!strings.Contains(err.Error(), "UPDATE kept SET v = 2") || !strings.Contains(err.Error(), db+".kept") ||
				!strings.Contains(err.Error(), "binlog_format=ROW") {
				t.Fatalf("error %v (class %v), want a fatal one naming the statement, the table and the fix", err, schema.ClassOf(err))
			}
			return
		}
		for _, r := range recs {
			switch {
			case r.Op == schema.OpCreate && r.Table.Table == "kept":
				sawInsert = true
			case r.Op.IsData() && r.Table.Database == db && r.Op != schema.OpCreate:
				t.Fatalf("unexpected record %v %v", r.Op, r.Table)
			case r.Op == schema.OpSchemaChange:
				t.Fatalf("a statement-logged row change became a schema change: %q", r.Source.Query)
			}
		}
	}
}
