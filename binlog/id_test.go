package binlog

import (
	"errors"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/sluicecdc/sluice/schema"
)

// Record IDs are a pure function of the binlog: every record of the fixture
// gets one, they only grow, and mapping again from any commit's position
// (a restart from a saved position), or from the last commit after a
// connection lost inside a transaction, gives each record the ID it had.
func TestRecordIDsAreAFunctionOfTheBinlog(t *testing.T) {
	evs := fixtureEvents(t)
	m := fixtureMapper(t)
	m.epoch = 7
	var all []schema.Record
	var ends []int // per record, the index of the event after the one that made it
	for i, ev := range evs {
		n := len(all)
		var err error
		if all, err = m.Map(ev, all); err != nil {
			t.Fatal(err)
		}
		for range all[n:] {
			ends = append(ends, i+1)
		}
	}
	if len(all) < 20 {
		t.Fatalf("only %d records from the fixture", len(all))
	}
	for i := range all {
		if all[i].ID.IsZero() || all[i].ID.Epoch != 7 {
			t.Fatalf("record %d (%s) has ID %v", i, all[i].Op, all[i].ID)
		}
		if i > 0 && all[i].ID.Compare(all[i-1].ID) <= 0 {
			t.Fatalf("record %d (%s %v) does not order after record %d (%s %v)", i, all[i].Op, all[i].ID, i-1, all[i-1].Op, all[i-1].ID)
		}
	}
	replays := 0
	for i := range all {
		if all[i].Position == nil {
			continue
		}
		// restart from this commit's saved position
		p, err := ParsePosition(all[i].Position)
		if err != nil {
			t.Fatal(err)
		}
		if p.Epoch != 7 {
			t.Fatalf("saved position %s lost the epoch", p)
		}
		r, err := newMapper(mapperConfig{Flavor: FlavorMariaDB, ServerName: "fxsrv", Include: []string{"fx.*"}, ZeroAsNull: true, Now: fixedNow}, p)
		if err != nil {
			t.Fatal(err)
		}
		again := mapAll(t, r, evs[ends[i]:])
		if len(again) != len(all)-i-1 {
			t.Fatalf("replay from record %d made %d records, want %d", i, len(again), len(all)-i-1)
		}
		for j := range again {
			if again[j].ID != all[i+1+j].ID {
				t.Fatalf("replay from record %d: record %d has ID %v, had %v", i, i+1+j, again[j].ID, all[i+1+j].ID)
			}
		}
		replays++
	}
	if replays < 5 {
		t.Fatalf("only %d commit positions in the fixture", replays)
	}
}

// A reconnect inside an open transaction re-reads its rows from the last
// commit: they get the IDs of the first read, so a sink recognises them.
func TestReconnectInsideTransactionKeepsIDs(t *testing.T) {
	evs := fixtureEvents(t)
	m := fixtureMapper(t)
	var first []schema.Record
	lastCommit, cut := -1, -1
	for i, ev := range evs {
		n := len(first)
		var err error
		if first, err = m.Map(ev, first); err != nil {
			t.Fatal(err)
		}
		for _, r := range first[n:] {
			if r.Position != nil {
				lastCommit = i
			}
		}
		if _, rows := ev.Event.(*replication.RowsEvent); rows && m.inTx && lastCommit >= 0 && len(first) > n {
			cut = i
			break
		}
	}
	if cut < 0 {
		t.Fatal("no transaction with rows in the fixture")
	}
	// the connection drops here: the source forgets the open transaction
	// and reads again from the last commit
	m.resetTx()
	var again []schema.Record
	for _, ev := range evs[lastCommit+1 : cut+1] {
		var err error
		if again, err = m.Map(ev, again); err != nil {
			t.Fatal(err)
		}
	}
	tail := first[len(first)-len(again):]
	for i := range again {
		if again[i].ID != tail[i].ID {
			t.Fatalf("re-read record %d has ID %v, first read %v", i, again[i].ID, tail[i].ID)
		}
	}
	if len(again) == 0 {
		t.Fatal("nothing re-read")
	}
}

func TestMariaDBAtLeast(t *testing.T) {
	for v, want := range map[string]bool{"11.4.2-MariaDB-log": true, "5.5.5-10.11.6-MariaDB": false, "11.3.9-MariaDB": false,
		"12.0.1-MariaDB": true, "5.5.5-11.4.0-MariaDB-1": true, "8.4.0": false, "garbage": false} {
		if got := mariaDBAtLeast(v, 11, 4); got != want {
			t.Errorf("mariaDBAtLeast(%q) = %v", v, got)
		}
	}
}

// An event that makes records without a log position would give wrong IDs:
// the mapper refuses it.
func TestEventWithoutLogPositionRefused(t *testing.T) {
	evs := fixtureEvents(t)
	m := fixtureMapper(t)
	for _, ev := range evs {
		if _, ok := ev.Event.(*replication.XIDEvent); ok {
			bad := *ev
			h := *ev.Header
			h.LogPos = 0
			bad.Header = &h
			if _, err := m.Map(&bad, nil); !errors.Is(err, ErrUnsupported) {
				t.Fatalf("XID event with log pos 0: %v", err)
			}
			return
		}
		if _, err := m.Map(ev, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("no XID event in the fixture")
}
