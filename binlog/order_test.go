package binlog

import (
	"errors"
	"testing"
)

// withEpoch is the position b with epoch e.
func withEpoch(b []byte, e uint64) []byte {
	p, err := ParsePosition(b)
	if err != nil {
		panic(err)
	}
	p.Epoch = e
	return EncodePosition(p)
}

func TestOrderPositions(t *testing.T) {
	pos := func(p Position) []byte { p.Epoch = 7; return EncodePosition(p) }
	m := func(gtid, file string, off uint32) []byte {
		return pos(Position{Flavor: "mariadb", GTIDSet: gtid, File: file, Pos: off})
	}
	my := func(gtid string) []byte { return pos(Position{Flavor: "mysql", GTIDSet: gtid}) }
	for _, c := range []struct {
		name string
		a, b []byte
		want int // 2: ErrUnordered
	}{
		{"same gtid", m("0-1-10", "b.000001", 100), m("0-1-10", "b.000001", 100), 0},
		{"gtid before", m("0-1-10", "b.000001", 900), m("0-1-12", "b.000001", 100), -1}, // the GTID decides
		{"gtid after", m("0-1-12,1-1-3", "", 0), m("0-1-10", "", 0), 1},
		{"mysql gtid", my("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"), my("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9"), -1},
		{"mysql disjoint", my("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"), my("4e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"), 2},
		{"file before", m("", "b.000001", 900), m("", "b.000002", 4), -1},
		{"offset after", m("", "b.000002", 900), m("", "b.000002", 4), 1},
		{"other series", m("", "a.000001", 4), m("", "b.000001", 4), 2},
		{"gtid and file", m("0-1-10", "", 0), m("", "b.000001", 4), 2},
		{"flavors", m("0-1-10", "", 0), my("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"), 2},
		{"earlier epoch", withEpoch(m("0-1-10", "", 0), 6), m("0-1-12", "", 0), 2},
		{"later epoch", withEpoch(m("0-1-10", "", 0), 8), m("0-1-12", "", 0), -1},
		{"snapshot", pos(Position{Flavor: "mariadb", GTIDSet: "0-1-10", Snapshot: &SnapshotProgress{Database: "d", Table: "t"}}), m("0-1-12", "", 0), 2},
	} {
		got, err := OrderPositions(c.a, c.b)
		switch {
		case c.want == 2 && !errors.Is(err, ErrUnordered):
			t.Errorf("%s: %d, %v; want ErrUnordered", c.name, got, err)
		case c.want != 2 && (err != nil || got != c.want):
			t.Errorf("%s: %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	if _, err := OrderPositions(m("0-1-12", "", 0), withEpoch(m("0-1-10", "", 0), 8)); !errors.Is(err, ErrUnordered) {
		t.Errorf("the saved position at a later epoch: %v, want ErrUnordered", err)
	}
	if _, err := OrderPositions([]byte(`{"v":1}`), m("0-1-10", "", 0)); !errors.Is(err, ErrBadPosition) {
		t.Errorf("a bad position: %v, want ErrBadPosition", err)
	}
}
