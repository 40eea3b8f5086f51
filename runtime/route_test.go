package runtime

import (
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

func TestQueuesFor(t *testing.T) {
	tbl := schema.TableID{Database: "d", Table: "t"}
	for _, c := range []struct {
		r    schema.Record
		want int
	}{
		{schema.Record{Op: schema.OpCreate, Table: tbl, Key: schema.Row{int64(1)}}, 1},
		{schema.Record{Op: schema.OpTruncate, Table: tbl}, 4},
		{schema.Record{Op: schema.OpSchemaChange, Table: tbl}, 4},
		{schema.Record{Op: schema.OpSchemaChange, Table: schema.TableID{Database: "d"}}, 1}, // CREATE DATABASE: no table
	} {
		if got := QueuesFor(&c.r, 4); len(got) != c.want {
			t.Errorf("%s of %q: queues %v, want %d", c.r.Op, c.r.Table, got, c.want)
		}
	}
}
