package schema

import (
	"sort"
	"strings"
	"testing"
)

func TestIDOrderAndText(t *testing.T) {
	ids := []ID{
		{},
		{Epoch: 1, File: 1, Pos: 4},
		{Epoch: 1, File: 1, Pos: 900, Index: 0},
		{Epoch: 1, File: 1, Pos: 900, Index: 1},
		{Epoch: 1, File: 1, Pos: 900, Phase: PhaseSnapshot, Index: 0},
		{Epoch: 1, File: 1, Pos: 901},
		{Epoch: 1, File: 2, Pos: 4},
		{Epoch: 2, File: 0, Pos: 0},
		{Epoch: ^uint64(0), File: ^uint32(0), Pos: ^uint64(0), Phase: 0xff, Index: ^uint64(0)},
	}
	for i := range ids {
		for j := range ids {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := ids[i].Compare(ids[j]); got != want {
				t.Errorf("Compare(%v, %v) = %d, want %d", ids[i], ids[j], got, want)
			}
			if got := strings.Compare(ids[i].String(), ids[j].String()); got != want {
				t.Errorf("text order of %v, %v = %d, want %d", ids[i], ids[j], got, want)
			}
		}
		back, err := ParseID(ids[i].String())
		if err != nil || back != ids[i] {
			t.Errorf("ParseID(%q) = %v, %v", ids[i].String(), back, err)
		}
	}
	if !sort.SliceIsSorted(ids, func(a, b int) bool { return ids[a].Compare(ids[b]) < 0 }) {
		t.Error("table not sorted")
	}
	if !(ID{}).IsZero() || (ID{Index: 1}).IsZero() {
		t.Error("IsZero")
	}
	for _, bad := range []string{"", "x", strings.ToUpper(ids[8].String()), strings.Replace(ids[1].String(), "-", "+", 1)} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}

func FuzzParseID(f *testing.F) {
	f.Add(ID{Epoch: 7, File: 3, Pos: 99, Phase: 1, Index: 5}.String())
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err == nil && id.String() != s {
			t.Fatalf("ParseID(%q) = %v, which renders as %q", s, id, id.String())
		}
	})
}

// TestIDFromSource: an identity derived from a Debezium source block is
// (file, pos, row) when streamed, (file, pos, queue offset) in the snapshot
// phase for snapshot rows; IDs of one queue grow with the binlog; a block
// without a binlog file or position is refused, naming what is missing.
func TestIDFromSource(t *testing.T) {
	stream := func(file string, pos uint64, row int) Source {
		return Source{Connector: "mysql", Snapshot: "false", File: file, Pos: pos, Row: row}
	}
	snap := Source{Connector: "mysql", Snapshot: "true", File: "binlog.000002", Pos: 100}
	var prev ID
	for i, c := range []struct {
		src Source
		seq int64
	}{
		{snap, 7}, {snap, 8},
		{stream("binlog.000002", 150, 0), 9}, {stream("binlog.000002", 150, 1), 10},
		{stream("binlog.000002", 400, 0), 11}, {stream("binlog.000003", 4, 0), 12},
	} {
		id, err := IDFromSource(c.src, c.seq)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if i > 0 && id.Compare(prev) <= 0 {
			t.Errorf("%d: %s does not order after %s", i, id, prev)
		}
		prev = id
	}
	if id, _ := IDFromSource(snap, 7); id != (ID{File: 2, Pos: 100, Phase: PhaseSnapshot, Index: 7}) {
		t.Errorf("snapshot row: %+v", id)
	}
	if id, _ := IDFromSource(stream("mysql-bin.000042", 150, 3), 99); id != (ID{File: 42, Pos: 150, Phase: PhaseStream, Index: 3}) {
		t.Errorf("streamed row: %+v", id)
	}
	for _, c := range []struct {
		src  Source
		want []string
	}{
		{Source{Connector: "postgresql", Snapshot: "false"}, []string{"source.file", "source.pos"}},
		{Source{Connector: "mysql", File: "binlog", Pos: 5}, []string{`source.file "binlog"`}},
		{Source{Connector: "mysql", File: "binlog.000001"}, []string{"source.pos"}},
	} {
		_, err := IDFromSource(c.src, 1)
		if err == nil {
			t.Errorf("%+v: no error", c.src)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v does not name %s", c.src, err, w)
			}
		}
	}
}
