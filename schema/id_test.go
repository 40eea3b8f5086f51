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
