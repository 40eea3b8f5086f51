package app

import "testing"

func TestProgressLine(t *testing.T) {
	cases := []struct {
		p    snapshotProgress
		rate float64
		want string
	}{
		{snapshotProgress{tables: 5, tablesDone: 2, rows: 250, estRows: 1000}, 50, "snapshot: tables 2/5, rows 250 of ~1000 (25%), 50 rows/s, ETA 15s"},
		{snapshotProgress{tables: 1, rows: 10}, 0, "snapshot: tables 0/1, rows 10, 0 rows/s"},
		{snapshotProgress{tables: 1, rows: 1200, estRows: 1000}, 10, "snapshot: tables 0/1, rows 1200 of ~1000 (100%), 10 rows/s"},
	}
	for _, c := range cases {
		if got := progressLine(c.p, c.rate); got != c.want {
			t.Errorf("progressLine(%+v, %v) = %q, want %q", c.p, c.rate, got, c.want)
		}
	}
	p, running := progressOf(map[string]float64{"snapshot_running": 1, "snapshot_rows": 3, "snapshot_estimated_rows": 9})
	if !running || p.rows != 3 || p.estRows != 9 {
		t.Fatalf("progressOf: %+v %v", p, running)
	}
}
