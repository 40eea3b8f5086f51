package rocketmq

import (
	"testing"
)

// TestTranslateIsConservative: a committed offset at a sync goes to its
// copy; one after a sync goes to the copy's next offset, never further,
// with the messages in between counted as read again; one before every
// sync does not translate.
func TestTranslateIsConservative(t *testing.T) {
	syncs := []offsetSync{{Src: 10, Dst: 100}, {Src: 20, Dst: 130}, {Src: 25, Dst: 140}}
	for _, c := range []struct {
		committed, dst, dup int64
		ok                  bool
	}{
		{9, 0, 0, false},
		{10, 100, 0, true},
		{11, 101, 0, true},
		{19, 101, 8, true},
		{20, 130, 0, true},
		{24, 131, 3, true},
		{25, 140, 0, true},
		{26, 141, 0, true},
		{90, 141, 64, true}, // ahead of the copies: after the last copy known
	} {
		dst, dup, ok := translate(syncs, c.committed)
		if dst != c.dst || dup != c.dup || ok != c.ok {
			t.Errorf("translate(%d) = %d, %d, %v; want %d, %d, %v", c.committed, dst, dup, ok, c.dst, c.dup, c.ok)
		}
	}
}

// TestAddSyncThins: syncs stay sorted and bounded; the newest
// recentOffsetSyncs and the oldest stay, and the spacing grows with age.
func TestAddSyncThins(t *testing.T) {
	var syncs []offsetSync
	for i := int64(0); i < 100000; i++ {
		syncs = addSync(syncs, offsetSync{Src: i, Dst: 2 * i}, 10)
		if len(syncs) > maxOffsetSyncs {
			t.Fatalf("after %d syncs: %d kept", i+1, len(syncs))
		}
	}
	n := len(syncs)
	if syncs[0].Src != 0 || syncs[n-recentOffsetSyncs].Src != 99999-recentOffsetSyncs+1 {
		t.Fatalf("oldest %d, newest %v", syncs[0].Src, syncs[n-recentOffsetSyncs:])
	}
	for i := 1; i < n; i++ {
		if syncs[i].Src <= syncs[i-1].Src || syncs[i].Dst != 2*syncs[i].Src {
			t.Fatalf("syncs out of order or changed: %v", syncs)
		}
	}
	// An offset D behind the newest sync translates reading again at most
	// about 2×D messages.
	for _, behind := range []int64{5, 50, 500, 5000} {
		committed := int64(99999) - behind
		_, dup, ok := translate(syncs, committed)
		if !ok || dup > 2*behind+10 {
			t.Errorf("offset %d behind: dup %d, ok %v (syncs %v)", behind, dup, ok, syncs)
		}
	}
	// Syncs every 10 messages: an offset among the newest ones translates
	// reading again fewer than 10.
	syncs = nil
	for i := int64(0); i < 1000; i += 10 {
		syncs = addSync(syncs, offsetSync{Src: i, Dst: i}, 10)
	}
	for c := int64(990 - 10*(recentOffsetSyncs-1)); c <= 1000; c++ {
		if _, dup, ok := translate(syncs, c); !ok || dup >= 10 {
			t.Errorf("offset %d: dup %d, ok %v (syncs %v)", c, dup, ok, syncs)
		}
	}
	// Syncs at or after the new one's offset are stale and dropped.
	if got := addSync(syncs, offsetSync{Src: 5, Dst: 1}, 10); len(got) != 2 || got[0].Src != 0 || got[1].Src != 5 {
		t.Fatalf("after a reset: %v", got)
	}
}
