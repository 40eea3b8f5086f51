package binlog

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// streamThenSnapshot creates a table (first column: INT id), streams the
// rows the inserts write, then reads the same rows with an initial_only
// snapshot. It returns the records of both paths by id, checking the two
// paths give the same schemas.
func streamThenSnapshot(t *testing.T, create string, inserts ...string) (streamed, read map[int64]schema.Record) {
	t.Helper()
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, create)
	stream := openSource(t, testConfig(env, db), nil)
	for _, q := range inserts {
		exec(t, c, q)
	}
	var n int
	if r, err := c.Execute("SELECT COUNT(*) FROM t"); err != nil {
		t.Fatal(err)
	} else {
		v, _ := r.GetInt(0, 0)
		n = int(v)
	}
	recs := readUntil(t, stream, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCreate) >= n })
	cfg := testConfig(env, db)
	cfg.Snapshot = SnapshotInitialOnly
	snapRecs, _ := readSnapshot(t, openSource(t, cfg, nil))
	byID := func(recs []schema.Record) map[int64]schema.Record {
		m := map[int64]schema.Record{}
		for _, r := range recs {
			if r.Table.Database == db && r.Op.IsData() && r.After != nil {
				m[r.After[0].(int64)] = r
			}
		}
		return m
	}
	streamed, read = byID(ownData(recs, db)), byID(snapRecs)
	if len(streamed) != n || len(read) != n {
		t.Fatalf("streamed %d rows, snapshot read %d, want %d each", len(streamed), len(read), n)
	}
	for id, s := range streamed {
		r := read[id]
		if !r.ValueSchema.Equal(s.ValueSchema) || !r.KeySchema.Equal(s.KeySchema) {
			for i, f := range s.ValueSchema.Fields {
				if i < len(r.ValueSchema.Fields) && !r.ValueSchema.Fields[i].Schema.Equal(f.Schema) {
					t.Errorf("column %s: snapshot schema %v %v, stream %v %v", f.Name, r.ValueSchema.Fields[i].Schema, r.ValueSchema.Fields[i].Schema.Params, f.Schema, f.Schema.Params)
				}
			}
			t.Fatalf("schemas differ between snapshot and stream")
		}
		break
	}
	return streamed, read
}

// column returns the value of the named column of r's after image.
func colValue(t *testing.T, r schema.Record, name string) any {
	t.Helper()
	i := r.ValueSchema.FieldIndex(name)
	if i < 0 {
		t.Fatalf("no column %s in %v", name, r.ValueSchema)
	}
	return r.After[i]
}

// TestBinaryPaddingStreamEqualsSnapshot: the server writes BINARY(n) to the
// binlog without its trailing 0x00 bytes; the stream must restore them, so
// that a BINARY(16) key ending in 0x00 (one random UUID in 256) is the same
// key on both paths and in the updates and deletes that follow.
func TestBinaryPaddingStreamEqualsSnapshot(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE t (k BINARY(16) NOT NULL PRIMARY KEY, id INT NOT NULL, b4 BINARY(4), vb VARBINARY(4))")
	s := openSource(t, testConfig(env, db), nil)
	exec(t, c, `INSERT INTO t VALUES
  (x'01000000000000000000000000000000', 1, x'01000000', x'0100'),
  (x'00000000000000000000000000000000', 2, x'00000000', x'00'),
  (x'0102030405060708090a0b0c0d0e0f10', 3, x'', x''),
  (x'ffffffffffffffffffffffffffffff00', 4, NULL, NULL)`)
	exec(t, c, "UPDATE t SET id = id + 10 WHERE k = x'01000000000000000000000000000000'")
	exec(t, c, "DELETE FROM t WHERE k = x'00000000000000000000000000000000'")
	recs := ownData(readUntil(t, s, func(r []schema.Record) bool {
		return countOps(ownData(r, db), schema.OpDelete) >= 1
	}), db)
	want := map[int64][3][]byte{
		1: {{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {1, 0, 0, 0}, {1, 0}},
		2: {make([]byte, 16), {0, 0, 0, 0}, {0}},
		3: {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {0, 0, 0, 0}, {}},
		4: {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0}, nil, nil},
	}
	keys := map[int64]string{}
	for _, r := range recs {
		switch r.Op {
		case schema.OpCreate:
			id := r.After[1].(int64)
			w := want[id]
			for j, name := range []string{"k", "b4", "vb"} {
				g, _ := colValue(t, r, name).([]byte)
				if !bytes.Equal(g, w[j]) || (g == nil) != (w[j] == nil) {
					t.Errorf("row %d %s: streamed %x, want %x", id, name, g, w[j])
				}
			}
			keys[id] = r.KeyString()
		case schema.OpUpdate:
			if r.KeyString() != keys[1] || !bytes.Equal(r.Before[0].([]byte), want[1][0]) {
				t.Errorf("update key %s (before %x), want the insert's key %s", r.KeyString(), r.Before[0], keys[1])
			}
		case schema.OpDelete:
			if r.KeyString() != keys[2] {
				t.Errorf("delete key %s, want the insert's key %s", r.KeyString(), keys[2])
			}
		}
	}

	cfg := testConfig(env, db)
	cfg.Snapshot = SnapshotInitialOnly
	read, _ := readSnapshot(t, openSource(t, cfg, nil))
	for _, r := range read {
		id := r.After[1].(int64)
		if id == 11 {
			id = 1
		}
		if got := r.KeyString(); got != keys[id] {
			t.Errorf("row %d: snapshot key %s, stream key %s", id, got, keys[id])
		}
		for j, name := range []string{"k", "b4", "vb"} {
			g, _ := colValue(t, r, name).([]byte)
			if !reflect.DeepEqual(g, want[id][j]) && !(len(g) == 0 && len(want[id][j]) == 0 && (g == nil) == (want[id][j] == nil)) {
				t.Errorf("row %d %s: snapshot %x, want %x", id, name, g, want[id][j])
			}
		}
	}
	if len(read) != 3 {
		t.Errorf("snapshot read %d rows, want 3", len(read))
	}
}
