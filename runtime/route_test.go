package runtime

import (
	"hash/fnv"
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

// QueueForKey's inlined FNV-1a is hash/fnv's New32a over the same bytes:
// the queue of every key stays where earlier versions put it.
func FuzzQueueForKeyIsFNV32a(f *testing.F) {
	f.Add("db", "t", "1", 8)
	f.Add("", "", "", 2)
	f.Add("ünï", "tbl", "a|b\\c", 7)
	f.Fuzz(func(t *testing.T, db, table, key string, queues int) {
		queues = 2 + abs(queues%64)
		h := fnv.New32a()
		h.Write([]byte(db + "." + table + "\x00" + key))
		want := int(h.Sum32() % uint32(queues))
		if got := QueueForKey(schema.TableID{Database: db, Table: table}, key, queues); got != want {
			t.Fatalf("QueueForKey(%q.%q, %q, %d) = %d, want %d", db, table, key, queues, got, want)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
