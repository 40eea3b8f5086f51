package binlog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	drv "github.com/go-sql-driver/mysql"

	"github.com/sluicecdc/sluice/schema"
)

// TestSnapshotParallelConsistentWithConcurrentWrites: four readers snapshot
// one table while a writer changes it (slowly while the readers begin,
// then as fast as it can while they read). The snapshot must hold every
// row once, in key order, with the record IDs growing; the snapshot plus
// the stream after it, applied per key, must equal the final table.
func TestSnapshotParallelConsistentWithConcurrentWrites(t *testing.T) {
	const n = 12000
	env, c, db := itemsTable(t, n)
	cfg := testConfig(env, db)
	cfg.Snapshot, cfg.SnapshotChunk, cfg.SnapshotThreads = SnapshotInitial, 250, 4

	// a slow writer while the readers begin: on MySQL its commits wait
	// for the global read lock, on MariaDB one between the readers'
	// snapshots makes them begin again
	trickle := sideConn(t, env, db)
	stop := make(chan struct{})
	var tErr error
	var twg sync.WaitGroup
	twg.Add(1)
	go func() {
		defer twg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, tErr = trickle.Execute(fmt.Sprintf("UPDATE items SET v = v + 1, s = 't%d' WHERE id = %d", i, 1+(i*997)%n)); tErr != nil {
				return
			}
		}
	}()
	s := openSource(t, cfg, nil)
	w := sideConn(t, env, db)
	var werr error
	done := make(chan struct{})
	go func() { // while the readers read (they are ahead of Read by a full queue)
		defer close(done)
		werr = writer(w, "items", 400, n+200, 3)
	}()
	m := newMirror("items")
	var lastKey int64 = -1 << 62
	reads := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	check := func(recs []schema.Record) {
		for _, r := range recs {
			m.apply(t, r, "-1")
			if r.Op != schema.OpRead || r.Table.Table != "items" {
				continue
			}
			reads[r.KeyString()]++
			if k := r.After[0].(int64); k <= lastKey {
				t.Fatalf("snapshot row %d (%s) after row %d: a table's rows must come in key order", k, r.Source.Snapshot, lastKey)
			} else {
				lastKey = k
			}
		}
	}
	readWhile(t, s, done, check)
	close(stop)
	twg.Wait()
	if werr != nil || tErr != nil {
		t.Fatalf("writers: %v, %v", werr, tErr)
	}
	exec(t, c, "INSERT INTO items VALUES (-1, 0, 'end')")
	for !m.sawSentinel {
		recs, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check(recs)
	}
	diffContent(t, m.content(), tableContent(t, c, "items"))
	for k, c := range reads {
		if c != 1 {
			t.Fatalf("row %s read %d times by the snapshot", k, c)
		}
	}
	if m.first != 1 || m.last != 1 || !m.plainAfterSnapshot {
		t.Errorf("snapshot markers: first %d, last %d (want 1 and 1), last has a streaming position: %v", m.first, m.last, m.plainAfterSnapshot)
	}
	if m.reads < n/2 || m.changes == 0 {
		t.Errorf("read %d snapshot rows, %d changes: the test did not exercise both phases", m.reads, m.changes)
	}
	if r := s.snap.readers.Load(); r != 4 {
		t.Errorf("the snapshot read with %d connections, want 4", r)
	}
	t.Logf("%d snapshot rows, %d change records", m.reads, m.changes)
}

// TestSnapshotChunkBytes: rows of 48 KiB with a 200 KiB byte bound, read by
// one and by four readers. Each run of rows between two positions (one
// piece a reader held) must stay within the bound plus one row, the rows
// read and not yet handed on within (readers + 1) pieces, and every row
// must arrive intact.
func TestSnapshotChunkBytes(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE wide (id INT PRIMARY KEY, b LONGBLOB NOT NULL)")
	const rows, width, bound = 90, 48 << 10, 200 << 10
	want := map[int64][32]byte{}
	for id := int64(1); id <= rows; id++ {
		blob := strings.Repeat(fmt.Sprintf("%08d", id), width/8)
		want[id] = sha256.Sum256([]byte(blob))
		exec(t, c, fmt.Sprintf("INSERT INTO wide VALUES (%d, '%s')", id, blob))
	}
	for _, threads := range []int{1, 4} {
		t.Run(fmt.Sprint("threads=", threads), func(t *testing.T) {
			cfg := testConfig(env, db)
			cfg.Snapshot, cfg.SnapshotChunk, cfg.SnapshotChunkBytes, cfg.SnapshotThreads = SnapshotInitialOnly, 20, bound, threads
			s := openSource(t, cfg, nil)
			recs, _ := readSnapshot(t, s)
			if len(recs) != rows {
				t.Fatalf("read %d rows, want %d", len(recs), rows)
			}
			perPiece := bound/width + 1 // the bound, then one row more
			run := 0
			for i, r := range recs {
				id := r.After[0].(int64)
				if got := sha256.Sum256(r.After[1].([]byte)); got != want[id] || id != int64(i+1) {
					t.Fatalf("record %d: row %d, content differs: %v", i, id, got != want[id])
				}
				run++
				if run > perPiece {
					t.Fatalf("%d rows of %d bytes without a position: a reader held more than %d bytes", run, width, bound)
				}
				if r.Position != nil {
					run = 0
				}
			}
			rowSize := int64((&schema.Record{After: recs[0].After}).Size())
			if peak, limit := s.snap.peakInFlight.Load(), int64(threads+1)*(bound+rowSize); peak > limit || peak < bound {
				t.Errorf("rows read and not handed on peaked at %d bytes, want %d to %d", peak, bound, limit)
			}
		})
	}
}

// BenchmarkSnapshotParallel reads a 100,000-row table through the snapshot
// (initial_only) with 1, 2 and 4 readers and, interleaved in the same run,
// with raw keyset queries at the same parallelism (each connection a range
// of ids, scanned into sql.RawBytes without conversion); it reports both
// rates and their ratio.
func BenchmarkSnapshotParallel(b *testing.B) {
	env := needServer(b)
	c, db := adminConn(b, env)
	const n = 100_000
	fillBig(b, c, n)
	for _, readers := range []int{1, 2, 4} {
		b.Run(fmt.Sprint("readers=", readers), func(b *testing.B) {
			cfg := testConfig(env, db)
			cfg.Snapshot, cfg.SnapshotThreads = SnapshotInitialOnly, readers
			var snapT, rawT, openT time.Duration
			for b.Loop() {
				t0 := time.Now()
				rawKeyset(b, env, db, n, readers)
				t1 := time.Now()
				if got := snapshotRows(b, cfg, &openT); got != n {
					b.Fatalf("snapshot read %d rows, want %d", got, n)
				}
				rawT, snapT = rawT+t1.Sub(t0), snapT+time.Since(t1)
			}
			// the rate of reading: Open's checks and catalogue reads are
			// a fixed cost, reported apart
			snapT -= openT
			snap, raw := float64(n*b.N)/snapT.Seconds(), float64(n*b.N)/rawT.Seconds()
			b.ReportMetric(snap, "rows/s")
			b.ReportMetric(raw, "raw-rows/s")
			b.ReportMetric(snap/raw, "of-raw")
			b.ReportMetric(float64(openT.Milliseconds())/float64(b.N), "open-ms")
		})
	}
}

// snapshotRows runs an initial_only snapshot to its end and counts its
// rows; it adds the time Open took to *open.
func snapshotRows(b *testing.B, cfg Config, open *time.Duration) int {
	s, err := NewSource(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t0 := time.Now()
	if err := s.Open(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	*open += time.Since(t0)
	rows := 0
	for {
		recs, err := s.Read(context.Background())
		rows += countOps(recs, schema.OpRead)
		if err == ErrSnapshotDone {
			return rows
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// rawKeyset reads ids 1..n of big on readers connections, each its own
// range, in keyset queries of 2048 rows scanned into sql.RawBytes.
func rawKeyset(b *testing.B, env serverEnv, db string, n, readers int) {
	dc := drv.NewConfig()
	dc.User, dc.Passwd, dc.Net, dc.Addr, dc.DBName = env.cdcUser, env.cdcPass, "tcp", net.JoinHostPort(env.host, strconv.Itoa(env.port)), db
	conn, err := drv.NewConnector(dc)
	if err != nil {
		b.Fatal(err)
	}
	pool := sql.OpenDB(conn)
	defer pool.Close()
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, readers)
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				c, err := pool.Conn(context.Background())
				if err != nil {
					return err
				}
				defer c.Close()
				if _, err := c.ExecContext(context.Background(), "SET NAMES binary"); err != nil {
					return err
				}
				last, hi := r*n/readers, (r+1)*n/readers
				raw := make([]sql.RawBytes, 5)
				ptrs := make([]any, len(raw))
				for i := range raw {
					ptrs[i] = &raw[i]
				}
				for {
					// literals, the text protocol the snapshot reads with
					rows, err := c.QueryContext(context.Background(), fmt.Sprintf("SELECT id, v, s, d, ts FROM big WHERE id > %d AND id <= %d ORDER BY id LIMIT 2048", last, hi))
					if err != nil {
						return err
					}
					got := 0
					for rows.Next() {
						if err := rows.Scan(ptrs...); err != nil {
							rows.Close()
							return err
						}
						got++
						if last, err = strconv.Atoi(string(raw[0])); err != nil {
							rows.Close()
							return err
						}
					}
					rows.Close()
					if err := rows.Err(); err != nil {
						return err
					}
					total.Add(int64(got))
					if got < 2048 {
						return nil
					}
				}
			}()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	if total.Load() != int64(n) {
		b.Fatalf("raw keyset read %d rows, want %d", total.Load(), n)
	}
}

// TestSnapshotReadersShareOneSnapshot: a transaction commits after the
// snapshot connection's transaction began and before the readers' began.
// Every reader must still see exactly what the snapshot connection sees:
// on MySQL the commit waits for the global read lock (all see the rows
// before it), on MariaDB the readers' positions differ and all begin again
// (all see the rows after it).
func TestSnapshotReadersShareOneSnapshot(t *testing.T) {
	env, _, db := itemsTable(t, 100)
	cfg := testConfig(env, db)
	cfg.Snapshot, cfg.SnapshotThreads = SnapshotInitial, 3
	s, err := NewSource(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	w := sideConn(t, env, db)
	committed := make(chan error, 1)
	var once sync.Once
	hook := func() {
		once.Do(func() {
			go func() {
				_, err := w.Execute("UPDATE items SET v = v + 1000000 WHERE id = 50")
				committed <- err
			}()
			select {
			case err := <-committed: // MariaDB: no lock, it commits at once
				committed <- err
			case <-time.After(300 * time.Millisecond): // MySQL: it waits for the lock
			}
		})
	}
	snapshotBegunHook.Store(&hook)
	defer snapshotBegunHook.Store(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sn, err := s.prepareSnapshot(ctx, Position{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sn.close()
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	if len(sn.readers) != 3 {
		t.Fatalf("%d readers, want 3", len(sn.readers))
	}
	want := int64(50500) // SUM(v) of fillTable's rows 1..100
	if env.flavor == FlavorMariaDB {
		want += 1000000
	}
	for i, c := range sn.conns() {
		var sum int64
		if err := c.QueryRowContext(ctx, "SELECT SUM(v) FROM "+quoteIdent(db)+".items").Scan(&sum); err != nil {
			t.Fatal(err)
		}
		if sum != want {
			t.Errorf("connection %d (0: the snapshot's) sees SUM(v) = %d, want %d", i, sum, want)
		}
	}
}

// TestIncrementalSnapshotChunkBytes: a byte bound below one row makes every
// chunk of an incremental snapshot one row; the table still arrives whole,
// each row read once.
func TestIncrementalSnapshotChunkBytes(t *testing.T) {
	const rows = 25
	k, s := newIncrKit(t, rows, 100, noNewTables, func(c *Config) { c.SnapshotChunkBytes = 1 })
	var mu sync.Mutex
	var chunks []int
	hook := func(table schema.TableID, n int) {
		if table.Table == "t" {
			mu.Lock()
			chunks = append(chunks, n)
			mu.Unlock()
		}
	}
	incrAfterRead.Store(&hook)
	t.Cleanup(func() { incrAfterRead.Store(nil) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.Signal(ctx, "", "execute-snapshot", fmt.Sprintf(`{"data-collections": ["%s.t"]}`, k.db)); err != nil {
		t.Fatal(err)
	}
	k.read(t, s.Source, func() bool { return k.done })
	k.sameAsSource(t)
	mu.Lock()
	defer mu.Unlock()
	for i, n := range chunks {
		if n > 1 {
			t.Fatalf("chunk %d read %d rows: the byte bound is below one row", i, n)
		}
	}
	if len(chunks) < rows || len(k.reads) != rows {
		t.Fatalf("%d chunks, %d rows read, want at least %d and %d", len(chunks), len(k.reads), rows, rows)
	}
	for id, n := range k.reads {
		if n != 1 {
			t.Fatalf("row %d read %d times", id, n)
		}
	}
}
