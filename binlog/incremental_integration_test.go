package binlog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// incrKit is a source database with a table t (id, v) whose v only grows,
// a signal table sig the CDC user may write, and a Source streaming it with
// SignalTable set.
type incrKit struct {
	env serverEnv
	db  string
	cfg Config
	// per key of t: the newest v the records gave, and whether it exists
	rows  map[int64]int64
	lastV map[int64]int64
	reads map[int64]int // op r records per key, since the last reset
	last  schema.ID
	pos   []byte // the newest position handed on
	done  bool   // a position without incremental progress followed one with it
	inSnp bool
	// rest: records of a Read of restOf that readOthers has not applied
	rest   []schema.Record
	restOf *Source
}

func newIncrKit(t *testing.T, rows, chunk int, opts ...func(*Config)) (*incrKit, *incrSource) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL, note VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci)")
	exec(t, c, "CREATE TABLE sig (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data TEXT NULL)")
	for from := 1; from <= rows; from += 500 {
		q := "INSERT INTO t VALUES "
		for id := from; id < from+500 && id <= rows; id++ {
			if id > from {
				q += ", "
			}
			q += fmt.Sprintf("(%d, %d, 'row %d ✓')", id, id, id)
		}
		exec(t, c, q)
	}
	if env.cdcUser != env.admin {
		grantee := fmt.Sprintf("'%s'@'%s'", env.cdcUser, env.host)
		exec(t, c, "GRANT INSERT, DELETE ON "+db+".sig TO "+grantee)
		t.Cleanup(func() { _, _ = c.Execute("REVOKE INSERT, DELETE ON " + db + ".sig FROM " + grantee) })
	}
	k := &incrKit{env: env, db: db, rows: map[int64]int64{}, lastV: map[int64]int64{}, reads: map[int64]int{}}
	k.cfg = testConfig(env, db)
	k.cfg.SignalTable = db + ".sig"
	k.cfg.SnapshotChunk = chunk
	for _, o := range opts {
		o(&k.cfg)
	}
	return k, &incrSource{Source: openSource(t, k.cfg, nil)}
}

type incrSource struct{ *Source }

// apply takes records in source order and checks what every record must
// hold: IDs grow; no signal row is emitted; a row's v never goes back (the
// writers only raise it, so an older version after a newer one is a chunk
// row that should have been dropped).
func (k *incrKit) apply(t *testing.T, recs []schema.Record) {
	t.Helper()
	for _, r := range recs {
		if r.Op != schema.OpHeartbeat {
			if r.ID.Compare(k.last) <= 0 {
				t.Fatalf("%s record of %s with ID %v after ID %v: IDs must grow in source order", r.Op, r.Table, r.ID, k.last)
			}
			k.last = r.ID
		}
		if r.Position != nil {
			p, err := ParsePosition(r.Position)
			if err != nil {
				t.Fatalf("bad position %s: %v", r.Position, err)
			}
			if p.Incremental != nil {
				k.inSnp = true
			} else if k.inSnp {
				k.done = true
			}
			k.pos = r.Position
		}
		if r.Table.Database != k.db || !r.Op.IsData() {
			continue
		}
		if r.Table.Table == "sig" {
			t.Fatalf("a signal table row was emitted: %s %v", r.Op, r.After)
		}
		id := r.Key[0].(int64)
		switch r.Op {
		case schema.OpDelete:
			delete(k.rows, id)
			continue
		case schema.OpRead:
			if r.Source.Snapshot != "incremental" {
				t.Fatalf("op r with source.snapshot %q, want incremental", r.Source.Snapshot)
			}
			k.reads[id]++
		}
		v := r.After[1].(int64)
		if v < k.lastV[id] {
			t.Fatalf("key %d went back from v=%d to v=%d (%s record, snapshot %q)", id, k.lastV[id], v, r.Op, r.Source.Snapshot)
		}
		k.lastV[id], k.rows[id] = v, v
	}
}

// read applies records until ok.
func (k *incrKit) read(t *testing.T, s *Source, ok func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for !ok() {
		recs, err := s.Read(ctx)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		k.apply(t, recs)
	}
}

// sameAsSource checks the applied rows equal the source table.
func (k *incrKit) sameAsSource(t *testing.T) {
	t.Helper()
	c := sideConn(t, k.env, k.db)
	r, err := c.Execute("SELECT id, v FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{}
	for i := 0; i < r.RowNumber(); i++ {
		id, _ := r.GetInt(i, 0)
		v, _ := r.GetInt(i, 1)
		want[id] = v
	}
	diffs := 0
	for id, v := range want {
		if got, ok := k.rows[id]; !ok || got != v {
			if diffs < 5 {
				t.Errorf("key %d: source v=%d, records give %d (present %v)", id, v, got, ok)
			}
			diffs++
		}
	}
	for id := range k.rows {
		if _, ok := want[id]; !ok {
			if diffs < 5 {
				t.Errorf("key %d: deleted in the source, present in the records", id)
			}
			diffs++
		}
	}
	if diffs > 0 {
		t.Fatalf("%d keys differ from the source (%d rows)", diffs, len(want))
	}
}

// writers runs n goroutines of inserts, updates (v raised to a global
// counter), deletes and key changes on keys 1..maxKey until stop is
// closed, each pausing pace between two statements (0: none). Writer w owns the keys equal to w modulo n (those it moves a
// row to as well), so that each key's writes commit in counter order.
func writers(t *testing.T, env serverEnv, db string, n int, maxKey int64, counter *atomic.Int64, stop chan struct{}, pace time.Duration) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		c := sideConn(t, env, db)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w)+1, 7))
			for {
				select {
				case <-stop:
					return
				case <-time.After(pace):
				}
				id := rnd.Int64N(maxKey/int64(n))*int64(n) + int64(w)
				if id == 0 {
					id = int64(n)
				}
				v := counter.Add(1)
				var q string
				switch r := rnd.IntN(10); {
				case r < 5:
					q = fmt.Sprintf("UPDATE t SET v = %d WHERE id = %d", v, id)
				case r < 7:
					q = fmt.Sprintf("INSERT INTO t VALUES (%d, %d, 'w') ON DUPLICATE KEY UPDATE v = %d", id, v, v)
				case r < 9:
					q = fmt.Sprintf("DELETE FROM t WHERE id = %d", id)
				default: // a key change: the row moves to a free key of the writer's, above maxKey
					q = fmt.Sprintf("UPDATE t SET id = %d, v = %d WHERE id = %d", 10_000_000+v*int64(n)+int64(w), v, id)
				}
				if _, err := c.Execute(q); err != nil {
					t.Errorf("%s: %v", q, err)
					return
				}
			}
		}(w)
	}
	return &wg
}

// startWriters starts four writers on the kit's t (keys up to 3,200,
// values from 1,000,000 up; see writers for pace); the function returned
// stops them (and runs at the test's end).
func startWriters(t *testing.T, k *incrKit, pace time.Duration) func() {
	var counter atomic.Int64
	counter.Store(1_000_000)
	stop := make(chan struct{})
	wg := writers(t, k.env, k.db, 4, 3200, &counter, stop, pace)
	var once sync.Once
	halt := func() {
		once.Do(func() { close(stop) })
		wg.Wait()
	}
	t.Cleanup(halt)
	return halt
}

// TestIncrementalSnapshotDropsRowsChangedInWindow: the chunk worker reads a
// chunk, then (before its high watermark) a row of it is updated, one
// deleted and one's key changed. The chunk's older copies of those rows must
// not follow the changes: the stream ends equal to the source, and no row
// goes back. With the window's key check removed, this fails (key 60 goes
// back, 70 and 80 come back). It runs with the signal table and in
// read-only mode (the changes are then between the request for the chunk
// and the GTID set read after its query).
func TestIncrementalSnapshotDropsRowsChangedInWindow(t *testing.T) {
	t.Run("signal_table", func(t *testing.T) { testDropsRowsChangedInWindow(t, false) })
	t.Run("read_only", func(t *testing.T) { testDropsRowsChangedInWindow(t, true) })
}

func testDropsRowsChangedInWindow(t *testing.T, readOnly bool) {
	k, s := newIncrKit(t, 300, 50, func(c *Config) {
		if readOnly {
			readOnlyMode(c)
		}
	})
	side := sideConn(t, k.env, k.db)
	hookConn := sideConn(t, k.env, k.db) // the chunk worker's goroutine uses it alone
	var hooked atomic.Bool
	hook := func(table schema.TableID, rows int) {
		if table.Table != "t" || table.Database != k.db || hooked.Swap(true) {
			return
		}
		// the first chunk (keys 1..50) is in the worker's hands, not yet emitted
		for _, q := range []string{"UPDATE t SET v = 1000000 WHERE id = 10", "DELETE FROM t WHERE id = 20", "UPDATE t SET id = 100030, v = 1000001 WHERE id = 30"} {
			if _, err := hookConn.Execute(q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	}
	incrAfterRead.Store(&hook)
	t.Cleanup(func() { incrAfterRead.Store(nil) })
	if readOnly {
		if _, err := s.Signal(context.Background(), "s1", "execute-snapshot", fmt.Sprintf(`{"data-collections": ["%s.t"]}`, k.db)); err != nil {
			t.Fatal(err)
		}
	} else {
		exec(t, side, fmt.Sprintf(`INSERT INTO sig VALUES ('s1', 'execute-snapshot', '{"data-collections": ["%s.t"], "type": "incremental"}')`, k.db))
	}
	k.read(t, s.Source, func() bool { return k.done })
	if !hooked.Load() {
		t.Fatal("the chunk hook never ran")
	}
	for _, id := range []int64{10, 20, 30} {
		if k.reads[id] != 0 {
			t.Errorf("key %d, changed between the watermarks, was emitted by the chunk too (%d op r records)", id, k.reads[id])
		}
	}
	if k.reads[11] != 1 || k.reads[300] != 1 {
		t.Errorf("keys 11 and 300 were read %d and %d times, want once", k.reads[11], k.reads[300])
	}
	k.sameAsSource(t)
}

// TestIncrementalSnapshotUnderWritersAndRestart: four writers insert,
// update, delete and move keys inside and outside the chunk being read
// while an incremental snapshot of 3,000 rows runs in chunks of 100; the
// source is closed mid-snapshot and reopened at the last saved position,
// which resumes after the last chunk delivered (keys at or below it are not
// read again), and up to the greatest key at the start only (the writers
// move rows to ever greater keys: those are the stream's). The records end equal to the source and no row goes back.
func TestIncrementalSnapshotUnderWritersAndRestart(t *testing.T) {
	k, s := newIncrKit(t, 3000, 100)
	stopWriters := startWriters(t, k, 0)
	side := sideConn(t, k.env, k.db)
	exec(t, side, fmt.Sprintf(`INSERT INTO sig VALUES ('s2', 'execute-snapshot', '{"data-collections": ["%s.t"], "type": "incremental"}')`, k.db))
	var saved Position
	k.read(t, s.Source, func() bool {
		if k.pos == nil {
			return false
		}
		p, _ := ParsePosition(k.pos)
		if p.Incremental != nil && len(p.Incremental.Key) > 0 {
			n, _ := strconv.Atoi(string(p.Incremental.Key[0]))
			if n >= 1000 {
				saved = p
				return true
			}
		}
		return false
	})
	s.Close()
	savedKey, _ := strconv.ParseInt(string(saved.Incremental.Key[0]), 10, 64)
	if len(saved.Incremental.Max) != 1 {
		t.Fatalf("the progress carries no greatest key: %s", saved.String())
	}
	maxKey, _ := strconv.ParseInt(string(saved.Incremental.Max[0]), 10, 64)
	t.Logf("restarting at %s", saved.String())
	clear(k.reads)
	s2 := openSource(t, k.cfg, k.pos)
	k.inSnp, k.done = true, false
	k.read(t, s2, func() bool { return k.done })
	stopWriters()
	exec(t, side, "INSERT INTO t VALUES (999999, 1, 'sentinel')")
	k.read(t, s2, func() bool { _, ok := k.rows[999999]; return ok })
	for id, n := range k.reads {
		if id <= savedKey {
			t.Fatalf("key %d (at or below the saved chunk key %d) was read again after the restart", id, savedKey)
		}
		if id > maxKey {
			t.Fatalf("key %d, above the greatest key %d when the snapshot began, was read: chunks must leave later inserts to the stream", id, maxKey)
		}
		if n > 1 {
			t.Fatalf("key %d was read %d times in one snapshot", id, n)
		}
	}
	if len(k.reads) == 0 {
		t.Fatal("no row was read after the restart")
	}
	k.sameAsSource(t)
}

// TestIncrementalSnapshotPauseResumeStop: pause-snapshot holds the chunks
// (positions carry paused progress whose key moves at most once more, for
// the chunk in flight) while writes stream on; resume-snapshot finishes
// the snapshot, every row read once. A second snapshot stopped by
// stop-snapshot ends (a position without progress follows) before reading
// the whole table. A signal table that exclude leaves out is refused.
func TestIncrementalSnapshotPauseResumeStop(t *testing.T) {
	k, s := newIncrKit(t, 2000, 20)
	side := sideConn(t, k.env, k.db)
	signal := func(id, typ, data string) {
		exec(t, side, fmt.Sprintf("INSERT INTO sig VALUES ('%s', '%s', '%s')", id, typ, data))
	}
	all := fmt.Sprintf(`{"data-collections": ["%s.t"]}`, k.db)
	signal("p1", "execute-snapshot", all)
	k.read(t, s.Source, func() bool { return len(k.reads) >= 100 })
	signal("p2", "pause-snapshot", "")
	var keys []string
	for i := 0; i < 5; i++ {
		exec(t, side, fmt.Sprintf("INSERT INTO t VALUES (%d, 1, 'during pause')", 100000+i))
		k.read(t, s.Source, func() bool { _, ok := k.rows[int64(100000+i)]; return ok })
		p, _ := ParsePosition(k.pos)
		if p.Incremental == nil {
			t.Fatal("the snapshot ended while paused")
		}
		if p.Incremental.Paused {
			if key := fmt.Sprint(p.Incremental.Key); len(keys) == 0 || keys[len(keys)-1] != key {
				keys = append(keys, key)
			}
		}
	}
	if len(keys) == 0 || len(keys) > 2 {
		t.Fatalf("paused progress keys %v: want one, or two (the chunk in flight at the pause)", keys)
	}
	paused := len(k.reads)
	signal("p3", "resume-snapshot", "")
	k.read(t, s.Source, func() bool { return k.done })
	if paused >= 2000 || len(k.reads) < 2000 {
		t.Fatalf("%d rows read before the pause, %d in all: want fewer than 2000, then all", paused, len(k.reads))
	}
	for id, n := range k.reads {
		if n != 1 {
			t.Fatalf("key %d read %d times", id, n)
		}
	}

	clear(k.reads)
	k.inSnp, k.done = false, false
	signal("p4", "execute-snapshot", all)
	signal("p5", "stop-snapshot", "")
	k.read(t, s.Source, func() bool { return k.done })
	exec(t, side, "INSERT INTO t VALUES (200000, 1, 'after stop')")
	k.read(t, s.Source, func() bool { _, ok := k.rows[200000]; return ok })
	if len(k.reads) >= 2000 {
		t.Fatalf("a stopped snapshot read %d rows", len(k.reads))
	}
	k.sameAsSource(t)

	cfg := k.cfg
	cfg.Exclude = []string{k.db + ".sig"}
	bad, err := NewSource(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := bad.Open(ctx, nil); err == nil || !strings.Contains(err.Error(), "exclude leaves out signal_table") {
		t.Fatalf("Open with the signal table excluded: %v, want a config error", err)
	}
}

// TestIncrementalSnapshotRereadsChunkAfterDDL: an ALTER TABLE between a
// chunk's watermarks (after the chunk was read) makes the source read the
// chunk again: its rows come with the new column.
func TestIncrementalSnapshotRereadsChunkAfterDDL(t *testing.T) {
	k, s := newIncrKit(t, 120, 50)
	side := sideConn(t, k.env, k.db)
	hookConn := sideConn(t, k.env, k.db) // the chunk worker's goroutine uses it alone
	var hooked atomic.Bool
	hook := func(table schema.TableID, rows int) {
		if table.Table == "t" && table.Database == k.db && !hooked.Swap(true) {
			if _, err := hookConn.Execute("ALTER TABLE t ADD COLUMN c INT NOT NULL DEFAULT 5"); err != nil {
				t.Errorf("ALTER: %v", err)
			}
		}
	}
	incrAfterRead.Store(&hook)
	t.Cleanup(func() { incrAfterRead.Store(nil) })
	var reads []schema.Record
	exec(t, side, fmt.Sprintf(`INSERT INTO sig VALUES ('d1', 'execute-snapshot', '{"data-collections": ["%s.t"]}')`, k.db))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for !k.done {
		recs, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		k.apply(t, recs)
		for _, r := range recs {
			if r.Op == schema.OpRead {
				reads = append(reads, r)
			}
		}
	}
	if !hooked.Load() || len(reads) != 120 {
		t.Fatalf("hook ran %v, %d rows read, want 120", hooked.Load(), len(reads))
	}
	for _, r := range reads {
		if len(r.After) != 4 || r.After[3] != int64(5) {
			t.Fatalf("key %v read with %v: want the column added after the chunk was read (c = 5)", r.Key, r.After)
		}
	}
}

// TestIncrementalSnapshotSignalTableNotSnapshotted: an initial snapshot of
// a database holding the signal table leaves the signal table out.
func TestIncrementalSnapshotSignalTableNotSnapshotted(t *testing.T) {
	k, s := newIncrKit(t, 10, 50)
	s.Close()
	side := sideConn(t, k.env, k.db)
	exec(t, side, "INSERT INTO sig VALUES ('old', 'execute-snapshot', '{}')")
	cfg := k.cfg
	cfg.Snapshot = SnapshotInitialOnly
	s2 := openSource(t, cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := 0
	for {
		recs, err := s2.Read(ctx)
		if errors.Is(err, ErrSnapshotDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Table.Table == "sig" && r.Op.IsData() {
				t.Fatalf("the signal table was snapshotted: %v", r.After)
			}
			if r.Op == schema.OpRead {
				n++
			}
		}
	}
	if n != 10 {
		t.Fatalf("%d rows snapshotted, want the 10 of t", n)
	}
}

// noNewTables turns Config.SnapshotNewTables off.
func noNewTables(c *Config) { off := false; c.SnapshotNewTables = &off }

// TestIncrementalSnapshotSignalAPIAndStats: Source.Signal (what POST
// /connectors/{name}/signals calls) refuses what the stream would ignore
// and starts a snapshot of t and of a table created after Open; while a
// chunk is read IncrementalStats names the table and counts the rows
// emitted; at the end it counts both tables, every row and chunk.
func TestIncrementalSnapshotSignalAPIAndStats(t *testing.T) {
	k, s := newIncrKit(t, 300, 100, noNewTables) // late is snapshotted by the signal only
	side := sideConn(t, k.env, k.db)
	exec(t, side, "CREATE TABLE late (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)")
	exec(t, side, "INSERT INTO late VALUES (1000001, 1), (1000002, 1), (1000003, 1)")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, bad := range []struct{ typ, data string }{
		{"execute-snapshot", `{"data-collections": ["` + k.db + `.t"], "type": "blocking"}`},
		{"execute-snapshot", `{"data-collections": ["` + k.db + `.*"]}`},
		{"execute-snapshot", `{"data-collections": ["other.t"]}`},
		{"execute-snapshot", `{"data-collections": ["` + k.db + `.t"], "additional-conditions": [{"data-collection": "` + k.db + `.t", "filter": "id > 5"}]}`},
		{"execute-snapshot", `not json`},
		{"snapshot-window-open", ``},
	} {
		if _, err := s.Signal(ctx, "", bad.typ, bad.data); !errors.Is(err, ErrConfig) {
			t.Errorf("Signal(%s, %s): %v, want ErrConfig", bad.typ, bad.data, err)
		}
	}
	var during []IncrementalStats
	hook := func(table schema.TableID, rows int) {
		if table.Table == "t" {
			during = append(during, s.IncrementalStats()) // the worker's goroutine only
		}
	}
	incrAfterRead.Store(&hook)
	t.Cleanup(func() { incrAfterRead.Store(nil) })
	id, err := s.Signal(ctx, "", "execute-snapshot", fmt.Sprintf(`{"data-collections": ["%s.t", "%s.late"]}`, k.db, k.db))
	if err != nil || !strings.HasPrefix(id, "api-") {
		t.Fatalf("Signal: %q, %v", id, err)
	}
	lateReads := 0
	for !k.done {
		recs, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Table.Table == "late" && r.Op == schema.OpRead {
				lateReads++
			}
		}
		k.apply(t, recs)
	}
	if lateReads != 3 {
		t.Fatalf("%d rows of the table created after Open read, want 3", lateReads)
	}
	for id := range k.rows {
		if id > 1000000 {
			delete(k.rows, id)
		}
	}
	k.sameAsSource(t)
	if len(during) != 3 {
		t.Fatalf("%d chunks of t read, want 3 (the last one ends at the maximum key)", len(during))
	}
	for i, st := range during {
		if !st.Running || st.Signal != id || st.Table != k.db+".t" || st.Tables != 2 || st.TablesDone != 0 ||
			st.TableRows != int64(100*i) || st.Rows != int64(100*i) || st.Chunks != int64(i) {
			t.Errorf("stats while reading chunk %d of t: %+v", i, st)
		}
	}
	end := s.IncrementalStats()
	if end.Running || end.Table != "" || end.Tables != 2 || end.TablesDone != 2 || end.Rows != 303 || end.Chunks != 4 {
		t.Fatalf("stats at the end: %+v, want 2 tables done, 303 rows in 4 chunks (t: 3; late: 1)", end)
	}
}
