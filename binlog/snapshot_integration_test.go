package binlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/sluicecdc/sluice/schema"
)

// sideConn opens another admin connection on db, for a writer goroutine.
func sideConn(t *testing.T, env serverEnv, db string) *client.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.ConnectWithContext(ctx, fmt.Sprintf("%s:%d", env.host, env.port), env.admin, env.adminPass, db, 10*time.Second)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// mirror applies records to an in-memory copy of a table keyed by KeyString.
type mirror struct {
	rows                map[string]schema.Row
	reads, changes      int
	first, last         int
	lastReadPos         []byte
	lastPositioned      int // index in the record stream of the newest record with a Position
	sawSentinel         bool
	table               string
	plainAfterSnapshot  bool
	snapshotPositionsV2 int
	lastID              schema.ID // of the newest record but heartbeats
}

func newMirror(table string) *mirror {
	return &mirror{rows: map[string]schema.Row{}, table: table, lastPositioned: -1}
}

func (m *mirror) apply(t *testing.T, r schema.Record, sentinel string) {
	t.Helper()
	if r.Op != schema.OpHeartbeat { // a heartbeat has the ID of the commit it stands at
		if r.ID.Compare(m.lastID) <= 0 {
			t.Fatalf("%s record of %s with ID %v after ID %v: record IDs must grow in source order", r.Op, r.Table, r.ID, m.lastID)
		}
		m.lastID = r.ID
	}
	if r.Position != nil {
		p, err := ParsePosition(r.Position)
		if err != nil {
			t.Fatalf("record %s carries a bad position %s: %v", r.Op, r.Position, err)
		}
		if p.Snapshot != nil {
			m.snapshotPositionsV2++
		}
	}
	if r.Table.Table != m.table || !r.Op.IsData() {
		return
	}
	switch r.Op {
	case schema.OpRead:
		m.reads++
		switch r.Source.Snapshot {
		case "first":
			m.first++
		case "last":
			m.last++
			p, err := ParsePosition(r.Position)
			m.plainAfterSnapshot = err == nil && p.Snapshot == nil
		case "true":
		default:
			t.Fatalf("snapshot record with source.snapshot %q", r.Source.Snapshot)
		}
		m.rows[r.KeyString()] = r.After
	case schema.OpCreate, schema.OpUpdate:
		m.changes++
		m.rows[r.KeyString()] = r.After
		if r.KeyString() == sentinel {
			m.sawSentinel = true
		}
	case schema.OpDelete:
		m.changes++
		delete(m.rows, r.KeyString())
	default:
		t.Fatalf("unexpected %s record", r.Op)
	}
}

// tableContent reads id, v, s of every row as the mirror renders them.
func tableContent(t *testing.T, c *client.Conn, table string) map[string]string {
	t.Helper()
	r, err := c.Execute("SELECT id, v, s FROM " + table)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i := 0; i < r.RowNumber(); i++ {
		id, _ := r.GetInt(i, 0)
		v, _ := r.GetInt(i, 1)
		s, _ := r.GetString(i, 2)
		out[fmt.Sprint(id)] = fmt.Sprintf("%d|%d|%s", id, v, s)
	}
	return out
}

func (m *mirror) content() map[string]string {
	out := map[string]string{}
	for k, r := range m.rows {
		out[k] = fmt.Sprintf("%v|%v|%v", r[0], r[1], r[2])
	}
	return out
}

func diffContent(t *testing.T, got, want map[string]string) {
	t.Helper()
	var bad []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			bad = append(bad, "missing "+w)
		} else if g != w {
			bad = append(bad, fmt.Sprintf("key %s: got %s want %s", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, "extra "+g)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		if len(bad) > 20 {
			bad = append(bad[:20], fmt.Sprintf("... %d more", len(bad)-20))
		}
		t.Fatalf("mirror differs from the table (%d rows vs %d):\n%s", len(got), len(want), strings.Join(bad, "\n"))
	}
}

// writer runs random inserts, updates and deletes on ids 1..maxID.
func writer(c *client.Conn, table string, ops, maxID int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := 0; i < ops; i++ {
		id := 1 + rng.IntN(maxID)
		var q string
		switch rng.IntN(3) {
		case 0:
			q = fmt.Sprintf("INSERT INTO %s VALUES (%d, %d, 'w%d') ON DUPLICATE KEY UPDATE v = v + 1", table, id, i, i)
		case 1:
			q = fmt.Sprintf("UPDATE %s SET v = v + 1000, s = 'u%d' WHERE id = %d", table, i, id)
		default:
			q = fmt.Sprintf("DELETE FROM %s WHERE id = %d", table, id)
		}
		if rng.IntN(10) == 0 { // a multi-statement transaction now and then
			if _, err := c.Execute("BEGIN"); err != nil {
				return err
			}
			if _, err := c.Execute(q); err != nil {
				return err
			}
			if _, err := c.Execute(fmt.Sprintf("UPDATE %s SET v = v - 1 WHERE id = %d", table, 1+rng.IntN(maxID))); err != nil {
				return err
			}
			if _, err := c.Execute("COMMIT"); err != nil {
				return err
			}
			continue
		}
		if _, err := c.Execute(q); err != nil {
			return err
		}
	}
	return nil
}

func fillTable(t *testing.T, c *client.Conn, table string, n int) {
	t.Helper()
	for lo := 1; lo <= n; lo += 1000 {
		var vals []string
		for id := lo; id < lo+1000 && id <= n; id++ {
			vals = append(vals, fmt.Sprintf("(%d, %d, 's%d')", id, id*10, id))
		}
		exec(t, c, "INSERT INTO "+table+" VALUES "+strings.Join(vals, ","))
	}
}

// itemsTable creates the table items (id, v, s) with rows 1..n in a
// database of its own.
func itemsTable(t *testing.T, n int) (serverEnv, *client.Conn, string) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))")
	fillTable(t, c, "items", n)
	return env, c, db
}

// readInto reads records into m until the sentinel row's insert arrived.
func readInto(t *testing.T, s *Source, m *mirror, sentinel string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for !m.sawSentinel {
		recs, err := s.Read(ctx)
		if err != nil {
			t.Fatalf("Read after %d snapshot and %d change records: %v", m.reads, m.changes, err)
		}
		for _, r := range recs {
			m.apply(t, r, sentinel)
		}
	}
}

// TestSnapshotConsistentWithConcurrentWrites: rows inserted before Open, a
// writer changing them while the snapshot runs; the snapshot plus the
// stream, applied per key, must equal the final table exactly.
func TestSnapshotConsistentWithConcurrentWrites(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))")
	exec(t, c, "CREATE TABLE other (id INT PRIMARY KEY)") // excluded below
	exec(t, c, "INSERT INTO other VALUES (1), (2)")
	const n = 5000
	fillTable(t, c, "items", n)
	cfg := testConfig(env, db)
	cfg.Exclude = []string{db + ".other"}
	cfg.Snapshot, cfg.SnapshotChunk = SnapshotInitial, 100
	s := openSource(t, cfg, nil)

	w := sideConn(t, env, db)
	half := make(chan struct{})
	var werr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the first half runs while the snapshot is blocked on its full queue
		defer wg.Done()
		if werr = writer(w, "items", 300, n+200, 1); werr != nil {
			close(half)
			return
		}
		close(half)
		werr = writer(w, "items", 300, n+200, 2)
	}()
	<-half
	m := newMirror("items")
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// read concurrently with the second half of the writes
	readWhile(t, s, done, func(recs []schema.Record) {
		for _, r := range recs {
			m.apply(t, r, "")
		}
	})
	if werr != nil {
		t.Fatalf("writer: %v", werr)
	}
	exec(t, c, "INSERT INTO items VALUES (-1, 0, 'end')")
	readInto(t, s, m, "-1")
	diffContent(t, m.content(), tableContent(t, c, "items"))
	if m.first != 1 || m.last != 1 || !m.plainAfterSnapshot {
		t.Errorf("snapshot markers: first %d, last %d (want 1 and 1), last has a streaming position: %v", m.first, m.last, m.plainAfterSnapshot)
	}
	if m.reads < n/2 || m.changes == 0 || m.snapshotPositionsV2 == 0 {
		t.Errorf("read %d snapshot rows, %d changes, %d snapshot positions: the test did not exercise both phases", m.reads, m.changes, m.snapshotPositionsV2)
	}
	if st := s.SnapshotStats(); st.Rows != int64(m.reads) || st.TablesDone != 1 || st.Running {
		t.Errorf("SnapshotStats = %+v, want %d rows of 1 table, not running", st, m.reads)
	}
	t.Logf("%d snapshot rows, %d change records", m.reads, m.changes)
}

// readWhile hands what s reads to use until done is closed.
func readWhile(t *testing.T, s *Source, done <-chan struct{}, use func([]schema.Record)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		select {
		case <-done:
			return
		default:
			recs, err := s.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			use(recs)
		}
	}
}

// TestSnapshotResumesAfterCrash stops the source mid-snapshot, changes rows
// read and not yet read (or nothing: the resumed snapshot's point is then
// the interrupted one's), and resumes from the last position it had handed
// out: the result must still be exact, and record IDs grow across both runs
// (the mirror checks). With four readers (threads=4) the positions handed
// out, and so the resume, are the same.
func TestSnapshotResumesAfterCrash(t *testing.T) {
	for _, changes := range []bool{true, false} {
		t.Run(fmt.Sprint("changes=", changes), func(t *testing.T) { testSnapshotResumesAfterCrash(t, changes, 1) })
	}
	t.Run("threads=4", func(t *testing.T) { testSnapshotResumesAfterCrash(t, true, 4) })
}

func testSnapshotResumesAfterCrash(t *testing.T, changes bool, threads int) {
	const n = 3000
	env, c, db := itemsTable(t, n)
	cfg := testConfig(env, db)
	cfg.Snapshot, cfg.SnapshotChunk, cfg.SnapshotThreads = SnapshotInitial, 100, threads
	s := openSource(t, cfg, nil)
	if changes {
		exec(t, c, "UPDATE items SET v = -5 WHERE id IN (1, 2999)") // during the snapshot: streamed later
	}

	m := newMirror("items")
	var pos []byte
	var kept []schema.Record // records up to and including the last positioned one
	var pending []schema.Record
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for m.reads+len(pending) < 1000 {
		recs, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			pending = append(pending, r)
			if r.Op == schema.OpRead {
				m.reads++
			}
			if r.Position != nil {
				kept, pending, pos = append(kept, pending...), nil, r.Position
			}
		}
	}
	s.Close() // the crash: what came after pos is lost
	p, err := ParsePosition(pos)
	if err != nil || p.Snapshot == nil || p.Snapshot.Key == nil {
		t.Fatalf("last position %s is not a snapshot-in-progress position (err %v)", pos, err)
	}
	m = newMirror("items")
	for _, r := range kept {
		m.apply(t, r, "")
	}
	if changes { // changes while the source is down, to rows read and not yet read
		w := sideConn(t, env, db)
		if err := writer(w, "items", 200, n+100, 3); err != nil {
			t.Fatal(err)
		}
	}
	s2 := openSource(t, cfg, pos)
	exec(t, c, "INSERT INTO items VALUES (-1, 0, 'end')")
	readInto(t, s2, m, "-1")
	diffContent(t, m.content(), tableContent(t, c, "items"))
	if m.first != 1 || m.last != 1 {
		t.Errorf("snapshot markers over both runs: first %d, last %d, want 1 and 1", m.first, m.last)
	}
}

// TestSnapshotCompositeStringKey pages a latin1 string + int key in chunks
// of 2 and reads a table without a primary key in one pass.
func TestSnapshotCompositeStringKey(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE ck (a VARCHAR(10) CHARACTER SET latin1 NOT NULL, b INT NOT NULL, v INT, PRIMARY KEY (a, b))")
	exec(t, c, "CREATE TABLE nopk (x INT, y VARCHAR(5))")
	var want []string
	for _, a := range []string{"a", "B", "é", "z", "ä", "it's", "o`k", ""} {
		for b := 1; b <= 3; b++ {
			exec(t, c, fmt.Sprintf("INSERT INTO ck VALUES ('%s', %d, %d)", strings.ReplaceAll(a, "'", "''"), b, b))
			want = append(want, fmt.Sprintf("%s|%d", a, b))
		}
	}
	exec(t, c, "INSERT INTO nopk VALUES (1, 'a'), (1, 'a'), (2, NULL)")
	exec(t, c, "CREATE TABLE mk (f DOUBLE, d DECIMAL(6,2), t DATETIME(3), b VARBINARY(4), x BIT(3), PRIMARY KEY (f, d, t, b, x))")
	mk := 0
	for _, f := range []string{"-1e-5", "0.1e0", "3"} {
		for _, d := range []string{"-1.5", "2"} {
			for _, b := range []string{"x''", "x'00ff'"} {
				exec(t, c, fmt.Sprintf("INSERT INTO mk VALUES (%s, %s, '2020-01-01 00:00:00.5', %s, b'101'), (%s, %s, '1969-12-31 23:59:59', %s, b'0')", f, d, b, f, d, b))
				mk += 2
			}
		}
	}
	cfg := testConfig(env, db)
	cfg.Snapshot, cfg.SnapshotChunk = SnapshotInitialOnly, 2
	s := openSource(t, cfg, nil)
	recs, last := readSnapshot(t, s)
	var got []string
	nopk := 0
	for _, r := range recs {
		switch r.Table.Table {
		case "ck":
			got = append(got, fmt.Sprintf("%s|%d", r.After[0], r.After[1]))
		case "mk":
			got = append(got, fmt.Sprintf("mk|%v|%v|%v|%x|%v", r.After[0], r.After[1], r.After[2], r.After[3], r.After[4]))
			mk--
		case "nopk":
			nopk++
			if r.KeySchema != nil || r.Key != nil {
				t.Errorf("nopk record has a key %v", r.Key)
			}
		}
	}
	var dup []string
	seen := map[string]bool{}
	for _, g := range got {
		if seen[g] {
			dup = append(dup, g)
		}
		seen[g] = true
	}
	if mk != 0 || len(dup) > 0 {
		t.Fatalf("mk: %d rows unaccounted for, duplicates %v", mk, dup)
	}
	got = slices.DeleteFunc(got, func(s string) bool { return strings.HasPrefix(s, "mk|") })
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ck rows:\n%v\nwant:\n%v", got, want)
	}
	if nopk != 3 {
		t.Errorf("nopk gave %d records, want 3", nopk)
	}
	// initial_only: reopening at the final position reads nothing more
	s2 := openSource(t, cfg, last)
	if _, err := s2.Read(context.Background()); !errors.Is(err, ErrSnapshotDone) {
		t.Fatalf("Read after a finished initial_only snapshot: %v, want ErrSnapshotDone", err)
	}
}

// readSnapshot reads an initial_only source to its end and returns the data
// records and the last position.
func readSnapshot(t *testing.T, s *Source) ([]schema.Record, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []schema.Record
	var last []byte
	for {
		recs, err := s.Read(ctx)
		for _, r := range recs {
			if r.Position != nil {
				last = r.Position
			}
			if r.Op == schema.OpRead {
				out = append(out, r)
			}
		}
		if errors.Is(err, ErrSnapshotDone) {
			if p, perr := ParsePosition(last); perr != nil || p.Snapshot != nil {
				t.Fatalf("final position %s is not a streaming position (%v)", last, perr)
			}
			return out, last
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
	}
}

// TestSnapshotWhenNeededOnPurgedPosition: a saved position naming a binlog
// file the server does not have makes a when_needed source snapshot.
func TestSnapshotWhenNeededOnPurgedPosition(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))")
	fillTable(t, c, "items", 10)
	cfg := testConfig(env, db)
	cfg.Snapshot = SnapshotWhenNeeded
	gone := EncodePosition(Position{Flavor: cfg.Flavor, File: "mariadb-bin.999999", Pos: 4})
	s := openSource(t, cfg, gone)
	m := newMirror("items")
	exec(t, c, "INSERT INTO items VALUES (-1, 0, 'end')")
	readInto(t, s, m, "-1")
	if m.reads != 10 {
		t.Fatalf("when_needed read %d snapshot rows, want 10", m.reads)
	}
	diffContent(t, m.content(), tableContent(t, c, "items"))
}

// TestSnapshotTypeParity: for every type of the type matrix, the snapshot
// gives the same schemas and Go values as the stream for the same row.
func TestSnapshotTypeParity(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, `CREATE TABLE types (
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
  bi BIGINT, biu BIGINT UNSIGNED,
  d DECIMAL(65,30), d2 DECIMAL(10,2), du DECIMAL(5,0) UNSIGNED, f FLOAT, db DOUBLE,
  b1 BIT(1), b10 BIT(10), b64 BIT(64),
  dt DATE, tm TIME(6), tm0 TIME, dtm DATETIME(6), dtm0 DATETIME, ts TIMESTAMP(3) NULL, ts0 TIMESTAMP NULL, y YEAR,
  c CHAR(4), c300 CHAR(100), vc VARCHAR(100), vc3 VARCHAR(30) CHARACTER SET utf8mb3, tx TEXT, tt TINYTEXT, mt MEDIUMTEXT, lt LONGTEXT,
  lat VARCHAR(20) CHARACTER SET latin1, latc CHAR(3) CHARACTER SET latin1,
  bn BINARY(3), vb VARBINARY(10), bl BLOB, tb TINYBLOB, mb MEDIUMBLOB, lb LONGBLOB,
  e ENUM('small','medium','large'), el ENUM('ä','it''s') CHARACTER SET latin1, st SET('a','b','c','d'),
  js JSON, g GEOMETRY, pt POINT,
  zd DATE NOT NULL DEFAULT '2000-01-01', zdt DATETIME NOT NULL DEFAULT '2000-01-01 00:00:00', g4 GEOMETRY)`)
	exec(t, c, "SET sql_mode = ''")
	stream := openSource(t, testConfig(env, db), nil)
	exec(t, c, `INSERT INTO types VALUES (1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
  -9223372036854775808, 18446744073709551615,
  '-12345678901234567890123456789012345.123456789012345678901234567890', '-0.50', 99999, 1.2345678, 0.1e0 + 0.2e0,
  b'1', b'1010101010', b'1111111111111111111111111111111111111111111111111111111111111111',
  '1969-07-20', '-838:59:59.000000', '-00:00:01', '1960-01-02 03:04:05.123456', '1000-01-01 00:00:00', '2038-01-19 03:14:07.999', '1970-01-01 00:00:01', 2155,
  'ab', REPEAT('ü', 100), 'héllo wörld ✓ 🚀', 'ütf8', 'long text', 't', 'm', 'l', _latin1 x'636166E920809F', _latin1 x'E9E9',
  x'000102', x'', x'DEADBEEF', x'00', x'01', x'02',
  'medium', 'it''s', 'a,c', '{"k": [1, 2, null]}', ST_GeomFromText('POINT(1 2)'), ST_GeomFromText('POINT(-1.5 3)'),
  '0000-00-00', '0000-00-00 00:00:00', ST_GeomFromText('POINT(1 2)', 4326))`)
	exec(t, c, `INSERT INTO types (id, ti, tiu, bi, biu, d, d2, f, db, tm, dtm, ts, y, c, vc, tx, vb, e, el, st, dt, b10)
  VALUES (2, 127, 0, 9223372036854775807, 0, '0', '99999999.99', 3.4e38, 1.7976931348623157e308, '838:59:59.999999', '9999-12-31 23:59:59.999999',
  '1970-01-01 00:00:01.000', 1901, '', '', '', x'', '', 'ä', '', '0000-00-00', b'0')`)
	exec(t, c, "INSERT INTO types (id) VALUES (3)")
	exec(t, c, "INSERT INTO types (id, f, db, y) VALUES (4, -0.1, 5e-324, 0)")
	streamed := readUntil(t, stream, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCreate) >= 4 })

	cfg := testConfig(env, db)
	cfg.Snapshot = SnapshotInitialOnly
	snap := openSource(t, cfg, nil)
	read, _ := readSnapshot(t, snap)
	byID := func(recs []schema.Record) map[int64]schema.Record {
		m := map[int64]schema.Record{}
		for _, r := range recs {
			if r.Table.Database == db && r.After != nil {
				m[r.After[0].(int64)] = r
			}
		}
		return m
	}
	sm, rm := byID(ownData(streamed, db)), byID(read)
	if len(sm) != 4 || len(rm) != 4 {
		t.Fatalf("streamed %d rows, snapshot read %d, want 4 each", len(sm), len(rm))
	}
	for id, want := range sm {
		got := rm[id]
		if !got.ValueSchema.Equal(want.ValueSchema) {
			for i, f := range want.ValueSchema.Fields {
				if i < len(got.ValueSchema.Fields) && !got.ValueSchema.Fields[i].Schema.Equal(f.Schema) {
					t.Errorf("column %s: snapshot schema %v %v, stream %v %v", f.Name, got.ValueSchema.Fields[i].Schema, got.ValueSchema.Fields[i].Schema.Params, f.Schema, f.Schema.Params)
				}
			}
			t.Fatalf("value schemas differ:\nsnapshot %v\nstream   %v", got.ValueSchema, want.ValueSchema)
		}
		if !got.KeySchema.Equal(want.KeySchema) || got.ValueSchema.Name != want.ValueSchema.Name {
			t.Fatalf("key schemas differ: %v vs %v", got.KeySchema, want.KeySchema)
		}
		for i, f := range want.ValueSchema.Fields {
			g, w := got.After[i], want.After[i]
			if wd, ok := w.(schema.Dec); ok {
				if gd, ok := g.(schema.Dec); !ok || !gd.Equal(wd) {
					t.Errorf("row %d %s: snapshot %#v, stream Dec %s", id, f.Name, g, wd)
				}
				continue
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("row %d %s: snapshot %T(%v), stream %T(%v)", id, f.Name, g, g, w, w)
			}
		}
	}
}

// BenchmarkSnapshot100k reads a 100,000-row table through the snapshot
// (Snapshot initial_only) and, as the baseline in the same run, with plain
// keyset queries scanned into sql.RawBytes without conversion.
func BenchmarkSnapshot100k(b *testing.B) {
	env := needServer(b)
	c, db := adminConn(b, env)
	const n = 100_000
	fillBig(b, c, n)
	cfg := testConfig(env, db)
	cfg.Snapshot = SnapshotInitialOnly
	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			s, err := NewSource(cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Open(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
			rows := 0
			for {
				recs, err := s.Read(context.Background())
				rows += len(recs)
				if errors.Is(err, ErrSnapshotDone) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			s.Close()
			if rows != n {
				b.Fatalf("read %d rows, want %d", rows, n)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("raw-keyset-baseline", func(b *testing.B) {
		for b.Loop() {
			rows := 0
			last := 0
			for {
				r, err := c.Execute(fmt.Sprintf("SELECT id, v, s, d, ts FROM big WHERE id > %d ORDER BY id LIMIT 2048", last))
				if err != nil {
					b.Fatal(err)
				}
				if r.RowNumber() == 0 {
					break
				}
				rows += r.RowNumber()
				id, _ := r.GetInt(r.RowNumber()-1, 0)
				last = int(id)
			}
			if rows != n {
				b.Fatalf("read %d rows", rows)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}

// fillBig creates the table big of the snapshot benchmarks with n rows.
func fillBig(b *testing.B, c *client.Conn, n int) {
	if _, err := c.Execute("CREATE TABLE big (id INT PRIMARY KEY, v BIGINT NOT NULL, s VARCHAR(40), d DECIMAL(12,2), ts DATETIME(6))"); err != nil {
		b.Fatal(err)
	}
	for lo := 1; lo <= n; lo += 2000 {
		var vals []string
		for id := lo; id < lo+2000 && id <= n; id++ {
			vals = append(vals, fmt.Sprintf("(%d, %d, 'row number %d', %d.25, '2024-01-02 03:04:05.%06d')", id, id*7, id, id, id))
		}
		if _, err := c.Execute("INSERT INTO big VALUES " + strings.Join(vals, ",")); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSnapshotResumeWithStaleKey: a saved key that no longer fits the
// table's primary key restarts that table instead of failing.
func TestSnapshotResumeWithStaleKey(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))")
	fillTable(t, c, "items", 10)
	cur, err := currentPosition(c, env.flavor)
	if err != nil {
		t.Fatal(err)
	}
	cur.Snapshot = &SnapshotProgress{Database: db, Table: "items", Key: [][]byte{[]byte("3"), []byte("x")}}
	cfg := testConfig(env, db)
	s := openSource(t, cfg, EncodePosition(cur))
	m := newMirror("items")
	exec(t, c, "INSERT INTO items VALUES (-1, 0, 'end')")
	readInto(t, s, m, "-1")
	if m.reads != 10 {
		t.Fatalf("read %d snapshot rows, want 10", m.reads)
	}
	diffContent(t, m.content(), tableContent(t, c, "items"))
}

// TestSnapshotEnumSetLabelsOutsideBMP (issue 26, d6): MySQL's
// information_schema gives '?' for ENUM and SET labels outside the BMP;
// the snapshot reads them from the rows instead and gives the values and
// the labels the stream gives.
func TestSnapshotEnumSetLabelsOutsideBMP(t *testing.T) {
	env := needServer(t)
	if env.flavor != FlavorMySQL {
		t.Skip("MariaDB stores a label outside the BMP as '?' itself")
	}
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE e (id INT PRIMARY KEY, e ENUM('a','😀','🚀','?'), s SET('x','😀','y','🦀'), u ENUM('ü','ç') CHARACTER SET latin1)")
	exec(t, c, "INSERT INTO e VALUES (1, '😀', 'x,😀,🦀', 'ü'), (2, '?', '😀', 'ç'), (3, 'a', '', NULL), (4, NULL, 'y,🦀', NULL)")
	cfg := testConfig(env, db)
	cfg.Snapshot = SnapshotInitial
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO e VALUES (5, '😀', 'x,😀,🦀', 'ü')")
	var read, streamed []schema.Record
	readUntil(t, s, func(rs []schema.Record) bool {
		read, streamed = nil, nil
		for _, r := range rs {
			switch {
			case r.Table.Database != db:
			case r.Op == schema.OpRead:
				read = append(read, r)
			case r.Op == schema.OpCreate:
				streamed = append(streamed, r)
			}
		}
		return len(streamed) > 0
	})
	want := map[int64][3]any{1: {"😀", "x,😀,🦀", "ü"}, 2: {"?", "😀", "ç"}, 3: {"a", "", nil}, 4: {nil, "y,🦀", nil}, 5: {"😀", "x,😀,🦀", "ü"}}
	var snapLabels string
	for _, r := range append(read, streamed...) {
		id := r.After[0].(int64)
		for j, name := range []string{"e", "s", "u"} {
			if got := colValue(t, r, name); got != want[id][j] {
				t.Errorf("row %d %s: %v, want %v", id, name, got, want[id][j])
			}
		}
		labels := r.ValueSchema.Fields[r.ValueSchema.FieldIndex("s")].Schema.Param(schema.ParamAllowed)
		if r.Op == schema.OpRead {
			snapLabels = labels
		} else if labels != snapLabels {
			t.Errorf("SET labels: stream %q, snapshot %q", labels, snapLabels)
		}
	}
	if len(read) != 4 {
		t.Errorf("snapshot read %d rows, want 4", len(read))
	}
}
