package binlog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicecdc/sluice/schema"
)

// Parallel snapshot reads (Config.SnapshotThreads) and byte-bounded chunks
// (Config.SnapshotChunkBytes).
//
// A table with a pageable primary key is cut into key ranges of
// SnapshotChunk rows: the snapshot connection probes each range's upper
// key on the server (LIMIT 1 OFFSET SnapshotChunk-1 after the previous
// one), so skewed and string keys give ranges of equal row counts. The
// readers, each a connection in a transaction that sees the same snapshot
// (snapshotter.begin), take the ranges in key order and read each with
// keyset queries bounded by its upper key. The rows go back to the
// snapshot's goroutine, which turns them into records range after range:
// records, their IDs and the positions they carry come out exactly as one
// reader gives them (key order, the same resume keys), so the sink, the
// identity and resuming see no difference. A reader hands its rows on
// whenever they reach SnapshotChunkBytes, and waits while the ranges before
// its own are being emitted, so the rows read and not yet emitted are at
// most (readers + 1) × (SnapshotChunkBytes + one row).

const (
	// defaultSnapshotChunkBytes: a default chunk (2048 rows) of rows of
	// 512 bytes; with the source's queue of 16 batches and a few readers
	// the snapshot holds some tens of MiB at most.
	defaultSnapshotChunkBytes = 1 << 20
	maxSnapshotThreads        = 64
	// mariaDBSnapshotAttempts is how often MariaDB's readers begin again
	// when a commit fell between their snapshots (begin).
	mariaDBSnapshotAttempts = 10
)

// snapPiece is rows a reader read, in key order, handed on as a unit.
type snapPiece struct {
	rows  []snapRow
	key   [][]byte // the last row's key (pageable tables)
	bytes int64    // the rows' estimated size (schema.Record.Size)
	end   bool     // the last piece of the table
}

type snapRow struct {
	row   schema.Row
	zeros []string // notes of the row's zero dates (Config.KeepZeroDates)
}

// openReaders opens the parallel readers' connections (no transaction yet).
func (sn *snapshotter) openReaders(ctx context.Context) error {
	for range sn.s.cfg.SnapshotThreads {
		if sn.s.cfg.SnapshotThreads < 2 {
			break
		}
		r, err := sn.s.openSnapshotter(ctx)
		if err != nil {
			return err
		}
		sn.readers = append(sn.readers, r)
	}
	return nil
}

// conns are the snapshot's connection and its readers'.
func (sn *snapshotter) conns() []*sql.Conn {
	out := []*sql.Conn{sn.conn}
	for _, r := range sn.readers {
		out = append(out, r.conn)
	}
	return out
}

const startTx = "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"

func startSnapshotTx(ctx context.Context, c *sql.Conn) error {
	if _, err := c.ExecContext(ctx, startTx); err != nil {
		return fmt.Errorf("binlog: snapshot: %s: %w", startTx, err)
	}
	return nil
}

// beginMariaDB begins the consistent snapshot on every connection at once
// and returns its binlog file and offset, once all report the same (see
// begin); with no readers left it takes the snapshot connection's alone.
// The snapshot connection begins first, then the readers all at once.
func (sn *snapshotter) beginMariaDB(ctx context.Context) (string, uint32, error) {
	for attempt := 1; ; attempt++ {
		conns := sn.conns()
		files, offsets, errs := make([]string, len(conns)), make([]uint32, len(conns)), make([]error, len(conns))
		if err := startSnapshotTx(ctx, sn.conn); err != nil {
			return "", 0, err
		}
		snapshotBegun()
		var wg sync.WaitGroup
		for i, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i > 0 {
					errs[i] = startSnapshotTx(ctx, c)
				}
				if errs[i] == nil {
					files[i], offsets[i], errs[i] = mariaDBSnapshotPoint(ctx, c)
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return "", 0, err
		}
		same := true
		for i := range conns {
			same = same && files[i] == files[0] && offsets[i] == offsets[0]
		}
		if same {
			return files[0], offsets[0], nil
		}
		for _, c := range conns {
			if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
				return "", 0, fmt.Errorf("binlog: snapshot: end a snapshot to begin again: %w", err)
			}
		}
		if attempt >= mariaDBSnapshotAttempts {
			sn.s.log.Warn("binlog: snapshot: the readers' snapshots kept differing (commits between them): reading with one connection",
				"readers", len(sn.readers), "attempts", attempt)
			for _, r := range sn.readers {
				r.close()
			}
			sn.readers = nil
		}
	}
}

// snapshotBegunHook, when set (by tests), runs after the snapshot
// connection's transaction began and before the readers' begin.
var snapshotBegunHook atomic.Pointer[func()]

func snapshotBegun() {
	if h := snapshotBegunHook.Load(); h != nil {
		(*h)()
	}
}

// mariaDBSnapshotPoint reads the binlog file and offset the transaction's
// consistent snapshot stands at.
func mariaDBSnapshotPoint(ctx context.Context, c *sql.Conn) (file string, pos uint32, err error) {
	rows, err := c.QueryContext(ctx, "SHOW STATUS LIKE 'binlog_snapshot_%'")
	if err != nil {
		return "", 0, fmt.Errorf("binlog: snapshot: read binlog_snapshot_file/position: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return "", 0, fmt.Errorf("binlog: snapshot: read binlog_snapshot_file/position: %w", err)
		}
		switch strings.ToLower(k) {
		case "binlog_snapshot_file":
			file = v
		case "binlog_snapshot_position":
			n, _ := strconv.ParseUint(v, 10, 32)
			pos = uint32(n)
		}
	}
	if err := rows.Err(); err != nil {
		return "", 0, fmt.Errorf("binlog: snapshot: read binlog_snapshot_file/position: %w", err)
	}
	if file == "" || pos < 4 {
		return "", 0, errors.New("binlog: snapshot: the server reports no binlog snapshot position; start it with log-bin and binlog-format=ROW")
	}
	return file, pos, nil
}

// readRange reads the rows of st after lo up to hi (nil: from the start,
// to the end) on c, in queries of at most Config.SnapshotChunk rows, and
// hands them to emit in pieces of at most that many rows and about
// Config.SnapshotChunkBytes bytes: a query whose rows reach the bound ends
// there (its rest is drained unread) and the next goes on from its last
// key, with fewer rows. A table without a pageable key is read in one
// query, handed on in pieces as it comes. The last piece has end set.
func (sn *snapshotter) readRange(ctx context.Context, c *sql.Conn, st *snapTable, lo, hi [][]byte, emit func(*snapPiece) error) error {
	s := sn.s
	limit, maxBytes := s.cfg.SnapshotChunk, int64(s.cfg.SnapshotChunkBytes)
	zeroAsNull := s.cfg.zeroDateAsNull()
	id := st.ti.id
	raw := make([]sql.RawBytes, len(st.ti.cols))
	ptrs := make([]any, len(raw))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	key := lo
	for {
		qlimit := limit // about the rows that fill a piece
		if avg := st.avgRow.Load(); avg > 0 {
			qlimit = int(min(max((maxBytes+avg-1)/avg, 1), int64(limit)))
		}
		q, err := st.boundedChunkQuery(key, hi, qlimit)
		if err != nil {
			return err
		}
		rows, err := c.QueryContext(ctx, q)
		if err != nil {
			return fmt.Errorf("binlog: snapshot of %s: %w", id, err)
		}
		pc := &snapPiece{}
		n, cut := 0, false
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return fmt.Errorf("binlog: snapshot of %s: %w", id, err)
			}
			row, zeros, err := st.row(raw, zeroAsNull, s.cfg.KeepZeroDates)
			if err != nil {
				rows.Close()
				return fmt.Errorf("binlog: snapshot of %s: %w", id, err)
			}
			size := int64((&schema.Record{After: row}).Size())
			pc.rows, pc.bytes = append(pc.rows, snapRow{row: row, zeros: zeros}), pc.bytes+size
			s.snap.addInFlight(size)
			n++
			if !st.keyable {
				if len(pc.rows) >= limit || pc.bytes >= maxBytes { // one pass: hand rows on as they come
					if err := emit(pc); err != nil {
						rows.Close()
						return err
					}
					pc = &snapPiece{}
				}
				continue
			}
			pc.key = make([][]byte, len(st.ti.keyIdx))
			for i, k := range st.ti.keyIdx {
				pc.key[i] = bytes.Clone(raw[k])
			}
			if pc.bytes >= maxBytes {
				cut = true
				break
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("binlog: snapshot of %s: %w", id, err)
		}
		end := !st.keyable || !cut && (n < qlimit || hi != nil && keysEqual(pc.key, hi))
		if n > 0 && st.keyable {
			st.avgRow.Store(max(pc.bytes/int64(len(pc.rows)), 1))
		}
		pc.end, key = end, pc.key // (emit owns pc from here)
		if err := emit(pc); err != nil {
			return err
		}
		if end {
			return nil
		}
	}
}

func keysEqual(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func (c *snapCounters) addInFlight(n int64) {
	v := c.inFlight.Add(n)
	for {
		peak := c.peakInFlight.Load()
		if v <= peak || c.peakInFlight.CompareAndSwap(peak, v) {
			return
		}
	}
}

// readParallel reads st after lo with the readers, range by range (see the
// top of this file), and calls emit on the snapshot's goroutine with every
// piece in key order.
func (sn *snapshotter) readParallel(ctx context.Context, st *snapTable, lo [][]byte, emit func(*snapPiece) error) error {
	type job struct {
		lo, hi [][]byte
		out    chan *snapPiece // closed when the range is read
		err    error           // set before out is closed
	}
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel(nil)
		wg.Wait()
	}()
	order := make(chan *job, len(sn.readers)) // the ranges in key order, for emit
	work := make(chan *job, len(sn.readers))  // the same, for the readers
	for _, r := range sn.readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				j.err = sn.readRange(ctx, r.conn, st, j.lo, j.hi, func(pc *snapPiece) error {
					select {
					case j.out <- pc:
						return nil
					case <-ctx.Done():
						return context.Cause(ctx)
					}
				})
				if j.err != nil {
					cancel(j.err)
				}
				close(j.out)
			}
		}()
	}
	wg.Add(1)
	go func() { // cuts the table into ranges
		defer wg.Done()
		defer close(work)
		defer close(order)
		for key := lo; ; {
			hi, err := sn.boundary(ctx, st, key)
			if err != nil {
				cancel(err)
				return
			}
			j := &job{lo: key, hi: hi, out: make(chan *snapPiece)}
			for _, ch := range []chan *job{order, work} {
				select {
				case ch <- j:
				case <-ctx.Done():
					return
				}
			}
			if hi == nil {
				return
			}
			key = hi
		}
	}()
	for j := range order {
		for {
			var pc *snapPiece
			var ok bool
			select {
			case pc, ok = <-j.out:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			if !ok {
				break
			}
			pc.end = pc.end && j.hi == nil // only the last range ends the table
			if err := emit(pc); err != nil {
				return err
			}
		}
		if j.err != nil {
			return j.err
		}
	}
	return context.Cause(ctx) // nil unless the prober failed
}

// boundary is the key of the Config.SnapshotChunk-th row after key (nil:
// from the start), the upper end of the next range; nil when fewer rows
// are left (the last range goes to the end of the table).
func (sn *snapshotter) boundary(ctx context.Context, st *snapTable, key [][]byte) ([][]byte, error) {
	q, err := st.keysetQuery(st.keyList, key, nil, " LIMIT 1 OFFSET "+strconv.Itoa(sn.s.cfg.SnapshotChunk-1))
	if err != nil {
		return nil, err
	}
	raw := make([]sql.RawBytes, len(st.ti.keyIdx))
	ptrs := make([]any, len(raw))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	rows, err := sn.conn.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("binlog: snapshot of %s: split into ranges: %w", st.ti.id, err)
	}
	defer rows.Close()
	var hi [][]byte
	if rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("binlog: snapshot of %s: split into ranges: %w", st.ti.id, err)
		}
		hi = make([][]byte, len(raw))
		for i := range raw {
			hi[i] = bytes.Clone(raw[i])
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("binlog: snapshot of %s: split into ranges: %w", st.ti.id, err)
	}
	return hi, nil
}
