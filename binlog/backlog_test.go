package binlog

import "testing"

func TestBacklog(t *testing.T) {
	pos := func(file string, off uint32, gtid string) Position {
		return Position{Version: PositionVersion, Flavor: FlavorMariaDB, File: file, Pos: off, GTIDSet: gtid}
	}
	cases := []struct {
		name      string
		p, server Position
		bytes, tx int64
	}{
		{"caught up", pos("b.000001", 400, "0-1-10"), pos("b.000001", 400, "0-1-10"), 0, 0},
		{"behind", pos("b.000001", 400, "0-1-10"), pos("b.000001", 1400, "0-1-13"), 1000, 3},
		{"other file", pos("b.000001", 400, "0-1-10"), pos("b.000002", 300, "0-1-10"), -1, 0},
		{"domains", pos("b.000001", 1, "0-1-10,1-2-5"), pos("b.000001", 1, "0-1-12,1-2-5,2-3-4"), 0, 6},
		{"several servers in a domain", pos("b.000001", 1, "0-1-10,0-2-12"), pos("b.000001", 1, "0-2-13"), 0, 1},
		{"no gtid", pos("b.000001", 1, ""), pos("b.000001", 1, "0-1-3"), 0, -1},
		{"mysql", Position{Version: PositionVersion, Flavor: FlavorMySQL, File: "m.000003", Pos: 10, GTIDSet: "u:1-5"},
			Position{Version: PositionVersion, Flavor: FlavorMySQL, File: "m.000003", Pos: 50, GTIDSet: "u:1-9"}, 40, -1},
	}
	for _, tc := range cases {
		if got := backlog(tc.p, tc.server); got.Bytes != tc.bytes || got.Transactions != tc.tx {
			t.Errorf("%s: %+v, want bytes %d transactions %d", tc.name, got, tc.bytes, tc.tx)
		}
	}
}
