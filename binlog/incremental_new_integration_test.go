package binlog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// readOnlyMode turns the kit's source to read-only mode: no signal table,
// watermarks from the server's GTID state.
func readOnlyMode(c *Config) { c.SignalTable = "" }

// kitDB is the database of a kit's config (its include is "db.*").
func kitDB(c *Config) string { return strings.TrimSuffix(c.Include[0], ".*") }

// readOthers applies to k the records of t and counts, per other table,
// the op r records per key; ok is asked after each record that carries a
// position, and the records after it are dropped once it holds, as a
// process killed there would never have handed them on.
func readOthers(t *testing.T, k *incrKit, s *Source, reads map[string]map[any]int, ok func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for {
		recs := k.rest
		if len(recs) == 0 || k.restOf != s {
			var err error
			if recs, err = s.Read(ctx); err != nil {
				t.Fatalf("Read: %v", err)
			}
		}
		k.rest = nil
		for i := range recs {
			r := &recs[i]
			if r.Op.IsData() && r.Table.Database == k.db && r.Table.Table != "t" {
				if r.Op == schema.OpRead {
					if reads[r.Table.Table] == nil {
						reads[r.Table.Table] = map[any]int{}
					}
					reads[r.Table.Table][r.Key[0]]++
				}
				if r.ID.Compare(k.last) <= 0 {
					t.Fatalf("%s record of %s with ID %v after ID %v", r.Op, r.Table, r.ID, k.last)
				}
				k.last = r.ID
				continue
			}
			k.apply(t, recs[i:i+1])
			if r.Position != nil && ok() {
				k.rest, k.restOf = recs[i+1:], s // for the next call on s
				return
			}
		}
	}
}

// TestIncrementalSnapshotNewlyCapturedTables (Config.SnapshotNewTables, on
// by default), with four writers changing t throughout:
//   - the source starts capturing old only; t (1,500 rows) is not
//     captured; it is reopened at its saved position with t added to
//     include: t is snapshotted incrementally by itself (signal
//     sluice-new-tables), old is not read again;
//   - the source is dropped mid-snapshot (as by kill -9) and reopened at
//     the last position handed on: the snapshot of t resumes after the
//     saved chunk;
//   - then a table renamed into include (stash, 400 rows, to n1) is
//     snapshotted by itself too; one created (n2) is not (its rows all
//     follow its CREATE in the binlog).
//
// The records of t end equal to the table (its rows from before it was
// captured included) and no row of t ever goes back. It runs with the
// signal table and in read-only mode.
func TestIncrementalSnapshotNewlyCapturedTables(t *testing.T) {
	for _, mode := range []struct {
		name string
		opt  func(*Config)
	}{{"signal_table", func(*Config) {}}, {"read_only", readOnlyMode}} {
		t.Run(mode.name, func(t *testing.T) { testNewlyCaptured(t, mode.opt) })
	}
}

func testNewlyCaptured(t *testing.T, mode func(*Config)) {
	k, s := newIncrKit(t, 1500, 300, mode, func(c *Config) {
		db := kitDB(c)
		side := sideConn(t, needServer(t), db)
		exec(t, side, "CREATE TABLE old (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)")
		exec(t, side, "INSERT INTO old VALUES (1, 1), (2, 1), (3, 1)")
		exec(t, side, "CREATE TABLE stash (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)")
		// MariaDB before 11.4 finds a GTID by reading its binlog file from
		// the start: the restarts read a new, small one
		exec(t, side, "FLUSH BINARY LOGS")
		c.Include = []string{db + ".old"}
	})
	side := sideConn(t, k.env, k.db)
	// paced: a stream slower than unpaced writers (a loaded machine) would
	// make the test as long as its catching up
	stopWriters := startWriters(t, k, 2*time.Millisecond)
	reads := map[string]map[any]int{}
	exec(t, side, "UPDATE old SET v = 2 WHERE id = 1")
	readOthers(t, k, s.Source, reads, func() bool { return k.pos != nil })
	if len(k.rows) != 0 {
		t.Fatalf("%d rows of t, not captured, were emitted", len(k.rows))
	}
	s.Close()

	// include changed, applied by a restart at the saved position
	k.cfg.Include = []string{k.db + ".old", k.db + ".t", k.db + ".n*"}
	s2 := openSource(t, k.cfg, k.pos)
	var saved Position
	readOthers(t, k, s2, reads, func() bool {
		p, _ := ParsePosition(k.pos)
		if p.Incremental == nil || len(p.Incremental.Key) == 0 {
			return false
		}
		if p.Incremental.ID != newTablesSignal || len(p.Incremental.Tables) != 1 || p.Incremental.Tables[0] != k.db+".t" {
			t.Fatalf("the snapshot's progress is %+v, want t alone, by %s", p.Incremental, newTablesSignal)
		}
		n, _ := strconv.Atoi(string(p.Incremental.Key[0]))
		saved = p
		return n >= 600
	})
	// dropped mid-snapshot as by kill -9: reopened at the last position handed on
	s2.Close()
	savedKey, _ := strconv.ParseInt(string(saved.Incremental.Key[0]), 10, 64)
	clear(k.reads)
	s3 := openSource(t, k.cfg, k.pos)
	k.inSnp, k.done = true, false
	readOthers(t, k, s3, reads, func() bool { return k.done })
	for id := range k.reads {
		if id <= savedKey {
			t.Fatalf("key %d (at or below the saved chunk key %d) was read again after the restart", id, savedKey)
		}
	}

	// a table renamed into include, and one created
	vals := make([]string, 400)
	for i := range vals {
		vals[i] = fmt.Sprintf("(%d, %d)", i+1, i+1)
	}
	exec(t, side, "INSERT INTO stash VALUES "+strings.Join(vals, ", "))
	exec(t, side, "RENAME TABLE stash TO n1")
	exec(t, side, "CREATE TABLE n2 (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)")
	exec(t, side, "INSERT INTO n2 VALUES (7, 7)")
	readOthers(t, k, s3, reads, func() bool { return len(reads["n1"]) == 400 && !s3.IncrementalStats().Running })
	stopWriters()
	exec(t, side, "INSERT INTO t VALUES (999999, 1, 'sentinel')")
	readOthers(t, k, s3, reads, func() bool { _, ok := k.rows[999999]; return ok })
	if len(reads["n2"]) != 0 {
		t.Fatalf("n2, created while running, was snapshotted: %d rows read", len(reads["n2"]))
	}
	if len(reads["old"]) != 0 {
		t.Fatalf("old, captured all along, was read again: %d rows", len(reads["old"]))
	}
	for id, n := range reads["n1"] {
		if n != 1 {
			t.Fatalf("n1's key %v was read %d times", id, n)
		}
	}
	st := s3.IncrementalStats()
	if st.Running || st.Signal != newTablesSignal {
		t.Fatalf("stats at the end: %+v, want the snapshot of %s done", st, newTablesSignal)
	}
	k.sameAsSource(t)
}

// TestIncrementalSnapshotReadOnlyIdle: in read-only mode (no signal table)
// on an idle server, with heartbeats off, signals sent with Source.Signal
// (what POST /connectors/{name}/signals calls) run, pause and resume a
// snapshot of t to its end: each chunk's window closes although no event
// follows its query. Every row is read once, nothing is written into the
// server (sig stays empty), and the records equal the table.
func TestIncrementalSnapshotReadOnlyIdle(t *testing.T) {
	k, s := newIncrKit(t, 1000, 100, readOnlyMode, func(c *Config) { c.Heartbeat = -1 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	send := func(typ, data string) {
		t.Helper()
		if _, err := s.Signal(ctx, "", typ, data); err != nil {
			t.Fatalf("Signal(%s): %v", typ, err)
		}
	}
	if _, err := s.Signal(ctx, "", "execute-snapshot", `{"data-collections": ["`+k.db+`.*"]}`); err == nil {
		t.Fatal("a pattern was taken")
	}
	send("execute-snapshot", fmt.Sprintf(`{"data-collections": ["%s.t"], "type": "incremental"}`, k.db))
	send("pause-snapshot", "")
	k.read(t, s.Source, func() bool {
		st := s.IncrementalStats()
		return st.Running && st.Paused
	})
	// at most the chunk asked for before the pause was taken
	if st := s.IncrementalStats(); st.Chunks > 1 {
		t.Fatalf("paused, yet %d chunks were read", st.Chunks)
	}
	send("resume-snapshot", "")
	k.read(t, s.Source, func() bool { return k.done })
	if len(k.reads) != 1000 {
		t.Fatalf("%d keys read, want 1000", len(k.reads))
	}
	for id, n := range k.reads {
		if n != 1 {
			t.Fatalf("key %d read %d times", id, n)
		}
	}
	k.sameAsSource(t)
	r, err := sideConn(t, k.env, k.db).Execute("SELECT COUNT(*) FROM sig")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := r.GetInt(0, 0); n != 0 {
		t.Fatalf("%d rows were written into sig in read-only mode", n)
	}
}
