package binlog

// Incremental snapshots, DBLog's algorithm as Debezium runs it: a table is
// read while the binlog streams on, in primary-key-ordered chunks, each read
// between a low and a high watermark the source writes into the signal
// table (Config.SignalTable), so that both appear in the binlog:
//
//  1. the chunk worker inserts the low watermark row, reads the chunk
//     (keyset pagination after the last key delivered), inserts the high
//     watermark row and hands the chunk to the streamer;
//  2. the streamer, passing the changes between the two watermarks on as
//     usual, notes the key of every change of the table (old and new key of
//     a key change: the mapper makes those a delete and a create);
//  3. at the high watermark's commit it drops every chunk row whose key it
//     noted (the change is newer than the row, or as new) and emits the
//     others as OpRead records (source.snapshot "incremental"), with IDs
//     of the PhaseSnapshot at that commit's position: after every change
//     before it, before every change after it. The last one carries the
//     position with the snapshot's progress, so a restart resumes after
//     the chunk.
//
// The streamer never waits for a chunk's query: it waits only, at the high
// watermark, for the worker to hand over the rows it has already read.
//
// Without a signal table (read-only mode, as Debezium's for replicas) the
// watermarks are the server's own state: the streamer notes the keys
// changed from the moment it asks for a chunk (before the worker's query,
// so before any low watermark), and the worker reads, after the chunk's
// query, the server's executed GTID set (MySQL gtid_executed, MariaDB
// gtid_binlog_pos; the binlog file and offset on a MySQL server without
// GTIDs) as the high watermark. The streamer emits the chunk at the first
// transaction boundary where it has streamed all of that set: every change
// the query could have seen, and any later one, has then been noted. The
// worker wakes the streamer when it hands a chunk over (Source.wake), so an
// idle server's window closes at once; heartbeats close it too.
// Everything the streamer owns (incremental's fields but reqs and res) is
// touched by the streaming goroutine only.

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/sluicecdc/sluice/schema"
)

// Signal and watermark types, Debezium's.
const (
	signalExecuteSnapshot = "execute-snapshot"
	signalStopSnapshot    = "stop-snapshot"
	signalPauseSnapshot   = "pause-snapshot"
	signalResumeSnapshot  = "resume-snapshot"
	signalWindowOpen      = "snapshot-window-open"
	signalWindowClose     = "snapshot-window-close"
	// newTablesSignal is the id of the snapshots the source starts by
	// itself for newly captured tables (Config.SnapshotNewTables).
	newTablesSignal = "sluice-new-tables"
)

// incrAfterRead, when set (by tests), runs in the chunk worker after a
// chunk's query and before its high watermark is written.
var incrAfterRead atomic.Pointer[func(table schema.TableID, rows int)]

// tableName parses a "db.table" name.
func tableName(s string) (schema.TableID, error) {
	db, t, ok := strings.Cut(s, ".")
	if !ok || db == "" || t == "" || strings.Contains(t, ".") {
		return schema.TableID{}, fmt.Errorf("%q is not a db.table name", s)
	}
	return schema.TableID{Database: db, Table: t}, nil
}

// incrRequest asks the chunk worker for the chunk of table after key.
type incrRequest struct {
	chunk  string // the chunk's id: its watermarks' ids are chunk+"-open" and chunk+"-close"
	table  schema.TableID
	key    [][]byte
	max    [][]byte // the table's greatest key at its first chunk; nil: read it now
	reload bool     // read the table's columns again (a DDL passed)
}

// incrResult is a chunk as the worker read it.
type incrResult struct {
	chunk string
	table schema.TableID
	ti    *tableInfo
	rows  []schema.Row
	zeros [][]string // per row, the zero-date notes (Config.KeepZeroDates)
	key   [][]byte   // the last row's primary key; nil: no row
	max   [][]byte   // the bound the chunk was read with
	done  bool       // fewer rows than asked, or max read: the table's last
	est   int64      // the table's estimated rows, read at its first chunk; -1: not read
	err   error
	// read-only mode: the server's state after the chunk's query, the
	// high watermark (highSet: its GTID set parsed; nil: none, compare
	// high's file and offset)
	high    Position
	highSet mysql.GTIDSet
}

// signalMsg is a signal sent with Source.Signal in read-only mode.
type signalMsg struct{ id, typ, data string }

// incremental runs the incremental snapshots of a Source.
type incremental struct {
	s        *Source
	signal   schema.TableID // zero in read-only mode
	from     string         // the signal table, quoted
	readOnly bool           // no signal table: watermarks from the server's GTID state
	limit    int
	filter   filter

	prog    *IncrementalProgress // nil: none running
	chunk   string               // the chunk in flight; "": none
	open    bool                 // its low watermark passed
	closing bool                 // its high watermark passed: emit at that transaction's end
	reread  bool                 // its table's shape changed or it was truncated in the window
	dirty   map[string]bool      // keys changed since the low watermark
	got     *incrResult          // the worker's answer, once taken
	reload  map[schema.TableID]bool
	// lastIndex: in read-only mode, past the greatest ID index given to a
	// chunk row (see finish)
	lastIndex uint64

	started bool
	reqs    chan incrRequest
	res     chan incrResult
	signals chan signalMsg // read-only mode: from Source.Signal
}

// maxQueuedSignals bounds the signals Source.Signal queues in read-only
// mode before the stream takes them.
const maxQueuedSignals = 64

func newIncremental(s *Source, prog *IncrementalProgress) (*incremental, error) {
	in := &incremental{s: s, limit: s.cfg.SnapshotChunk,
		filter: newFilter(s.cfg.Include, s.cfg.Exclude), prog: prog, reload: map[schema.TableID]bool{},
		reqs: make(chan incrRequest, 1), res: make(chan incrResult, 1), signals: make(chan signalMsg, maxQueuedSignals)}
	if s.cfg.SignalTable == "" {
		in.readOnly = true
		return in, nil
	}
	id, err := tableName(s.cfg.SignalTable)
	if err != nil {
		return nil, fmt.Errorf("%w: signal_table: %v", ErrConfig, err)
	}
	in.signal, in.from = id, quoteIdent(id.Database)+"."+quoteIdent(id.Table)
	return in, nil
}

// capture queues the tables ids, which start being captured (why says
// how), for an incremental snapshot of their own: behind the tables of a
// snapshot running, or as a new one. m, when set, carries the queue in the
// positions it makes from now on.
func (in *incremental) capture(m *mapper, ids []schema.TableID, why string) {
	var add []string
	for _, id := range ids {
		t := id.String()
		if id == in.signal || in.prog != nil && slices.Contains(in.prog.Tables, t) || slices.Contains(add, t) {
			continue
		}
		add = append(add, t)
	}
	if len(add) == 0 {
		return
	}
	if in.prog == nil {
		in.prog = &IncrementalProgress{ID: newTablesSignal}
		in.s.incrStats.begin(newTablesSignal)
	}
	in.prog.Tables = append(in.prog.Tables, add...)
	in.s.log.Info("binlog: newly captured tables: incremental snapshot queued", "tables", add, "why", why, "queue", in.prog.Tables)
	if m != nil {
		m.incremental = in.prog.clone()
	}
	in.s.incrStats.publish(in.prog, 0, 0, -1, 0)
}

// resumed publishes the progress of a snapshot a saved position was in
// the middle of (its counts restart from zero).
func (in *incremental) resumed() {
	if in.prog != nil {
		in.s.incrStats.begin(in.prog.ID)
		in.s.incrStats.publish(in.prog, 0, 0, -1, 0)
	}
}

// observe takes the records the mapper made before they are handed on: it
// acts on the signal table's inserts and drops its rows, and notes the keys
// changed inside an open window.
func (in *incremental) observe(m *mapper, recs []schema.Record) []schema.Record {
	if in.readOnly && !in.open {
		return recs
	}
	out := recs // copied only when a signal row leaves it
	dropped := false
	var cur schema.TableID
	if in.chunk != "" && in.prog != nil {
		cur, _ = tableName(in.prog.Tables[0])
	}
	for i := range recs {
		r := &recs[i]
		if !in.readOnly && r.Table == in.signal {
			if r.Op == schema.OpCreate || r.Op == schema.OpRead {
				in.signalRow(m, r)
			}
			if r.Op.IsData() { // signals are not data
				if !dropped {
					out, dropped = slices.Clone(recs[:i]), true
				}
				continue
			}
		}
		if in.open && !in.closing && r.Table == cur {
			switch r.Op {
			case schema.OpCreate, schema.OpUpdate, schema.OpDelete:
				in.dirty[r.KeyString()] = true
			case schema.OpTruncate, schema.OpSchemaChange:
				in.reread = true
			}
		}
		if dropped {
			out = append(out, *r)
		}
	}
	return out
}

// field returns the text of r's column name ("" when absent or NULL).
func field(r *schema.Record, name string) string {
	if r.ValueSchema == nil {
		return ""
	}
	for i, f := range r.ValueSchema.Fields {
		if strings.EqualFold(f.Name, name) && i < len(r.After) {
			switch v := r.After[i].(type) {
			case string:
				return v
			case []byte:
				return string(v)
			case nil:
				return ""
			default:
				return fmt.Sprint(v)
			}
		}
	}
	return ""
}

// signalData is the data of a snapshot signal (Debezium's JSON).
type signalData struct {
	DataCollections      []string          `json:"data-collections"`
	Type                 string            `json:"type"`
	AdditionalConditions []json.RawMessage `json:"additional-conditions"`
	SurrogateKey         string            `json:"surrogate-key"`
}

// errUnknownSignal: a signal type this source does not act on (a signal
// row of another type is ignored, as Debezium ignores it).
var errUnknownSignal = errors.New("unknown signal type")

// checkSignal parses and checks a snapshot signal: for execute-snapshot,
// the tables it adds, as "db.table" names the filter captures.
func checkSignal(f filter, signal schema.TableID, typ, data string) (signalData, []string, error) {
	var d signalData
	switch typ {
	case signalExecuteSnapshot, signalStopSnapshot, signalPauseSnapshot, signalResumeSnapshot:
	default:
		return d, nil, fmt.Errorf("%w %q: say %s, %s, %s or %s", errUnknownSignal, typ,
			signalExecuteSnapshot, signalStopSnapshot, signalPauseSnapshot, signalResumeSnapshot)
	}
	if strings.TrimSpace(data) != "" {
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			return d, nil, fmt.Errorf("data is not JSON: %w", err)
		}
	}
	if typ != signalExecuteSnapshot {
		return d, nil, nil
	}
	switch {
	case d.Type != "" && !strings.EqualFold(d.Type, "incremental"):
		return d, nil, fmt.Errorf("only incremental snapshots are supported, not %q", d.Type)
	case len(d.AdditionalConditions) > 0 || d.SurrogateKey != "":
		return d, nil, errors.New("additional-conditions and surrogate-key are not supported")
	case len(d.DataCollections) == 0:
		return d, nil, errors.New("execute-snapshot names no data-collections")
	}
	var add []string
	for _, c := range d.DataCollections {
		t, err := tableName(c)
		if err != nil || strings.ContainsAny(c, "*?[]^") {
			return d, nil, fmt.Errorf("data-collections must be db.table names (patterns are not supported): %q", c)
		}
		if !f.match(t.Database, t.Table) || t == signal {
			return d, nil, fmt.Errorf("the table %s is not captured (include/exclude)", c)
		}
		add = append(add, t.String())
	}
	return d, add, nil
}

// signalRow acts on one row inserted into the signal table.
func (in *incremental) signalRow(m *mapper, r *schema.Record) {
	id, typ, data := field(r, "id"), field(r, "type"), field(r, "data")
	switch typ {
	case signalWindowOpen:
		if in.chunk != "" && id == in.chunk+"-open" {
			in.open, in.dirty = true, map[string]bool{}
		}
		return
	case signalWindowClose:
		if in.open && id == in.chunk+"-close" {
			in.closing = true
		}
		return
	}
	in.act(m, id, typ, data)
}

// act acts on a snapshot signal; it reports whether the snapshot's
// progress changed.
func (in *incremental) act(m *mapper, id, typ, data string) bool {
	log := in.s.log.With("signal", id, "type", typ)
	d, add, err := checkSignal(in.filter, in.signal, typ, data)
	if errors.Is(err, errUnknownSignal) {
		return false
	}
	if err != nil {
		log.Error("binlog: signal ignored", "err", err)
		return false
	}
	switch typ {
	case signalExecuteSnapshot:
		if in.prog == nil {
			in.prog = &IncrementalProgress{ID: id}
			in.s.incrStats.begin(id)
		}
		for _, t := range add {
			if !slices.Contains(in.prog.Tables, t) {
				in.prog.Tables = append(in.prog.Tables, t)
			}
		}
		log.Info("binlog: incremental snapshot requested", "tables", add, "queue", in.prog.Tables)
	case signalStopSnapshot:
		if in.prog == nil {
			return false
		}
		if len(d.DataCollections) == 0 {
			in.prog = nil
		} else {
			first := in.prog.Tables[0]
			in.prog.Tables = slices.DeleteFunc(in.prog.Tables, func(t string) bool { return slices.Contains(d.DataCollections, t) })
			if len(in.prog.Tables) == 0 {
				in.prog = nil
			} else if in.prog.Tables[0] != first {
				in.prog.Key = nil
			}
		}
		log.Info("binlog: incremental snapshot stopped", "tables", d.DataCollections)
	case signalPauseSnapshot, signalResumeSnapshot:
		if in.prog != nil {
			in.prog.Paused = typ == signalPauseSnapshot
			log.Info("binlog: incremental snapshot " + strings.TrimSuffix(typ, "-snapshot") + "d")
		}
	default:
		return false
	}
	m.incremental = in.prog.clone()
	in.s.incrStats.publish(in.prog, 0, 0, -1, 0)
	return true
}

func (p *IncrementalProgress) clone() *IncrementalProgress {
	if p == nil {
		return nil
	}
	c := *p
	c.Tables = slices.Clone(p.Tables)
	return &c
}

// step runs after records were handed on: at the end of the transaction
// of a chunk's high watermark it emits the chunk, and it asks the worker
// for the next chunk when none is in flight.
func (in *incremental) step(ctx context.Context, m *mapper) error {
	if !m.inTx && len(in.signals) > 0 {
		changed := false
	signals:
		for {
			select {
			case sg := <-in.signals:
				changed = in.act(m, sg.id, sg.typ, sg.data) || changed
			default:
				break signals
			}
		}
		if changed { // saved at once: no change may follow to carry it
			if err := in.savePosition(ctx, m, nil); err != nil {
				return err
			}
		}
	}
	if in.chunk != "" && in.got == nil {
		select {
		case r := <-in.res:
			in.got = &r
		default:
		}
	}
	if in.chunk != "" && in.got != nil && in.got.err != nil {
		in.finish(ctx, m) // the watermarks may never come
	}
	if in.readOnly && in.chunk != "" && in.got != nil && !m.inTx && in.reached(m, in.got) {
		in.closing = true
	}
	if in.closing && !m.inTx {
		if in.got == nil {
			select { // the worker hands the rows over right after the high watermark's commit
			case r := <-in.res:
				in.got = &r
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := in.finish(ctx, m); err != nil {
			return err
		}
	}
	in.next(ctx)
	return nil
}

// next asks the worker for the next chunk, when a snapshot runs, is not
// paused and has no chunk in flight.
func (in *incremental) next(ctx context.Context) {
	if in.prog == nil || in.prog.Paused || in.chunk != "" {
		return
	}
	t, err := tableName(in.prog.Tables[0])
	if err != nil { // checked when the table was added
		in.prog = nil
		return
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	in.chunk, in.open, in.closing, in.reread, in.got, in.dirty = hex.EncodeToString(b[:]), false, false, false, nil, nil
	if in.readOnly { // the window opens before the worker's query
		in.open, in.dirty = true, map[string]bool{}
	}
	if !in.started {
		in.started = true
		go in.work(ctx)
	}
	in.reqs <- incrRequest{chunk: in.chunk, table: t, key: in.prog.Key, max: in.prog.Max, reload: in.reload[t]}
	delete(in.reload, t)
}

// finish ends the chunk in flight with the worker's answer: it emits the
// rows no change in the window touched and moves the progress on.
func (in *incremental) finish(ctx context.Context, m *mapper) error {
	r := in.got
	reread, dirty := in.reread, in.dirty
	in.chunk, in.open, in.closing, in.reread, in.got, in.dirty = "", false, false, false, nil, nil
	if in.prog == nil || in.prog.Tables[0] != r.table.String() {
		return nil // stopped meanwhile
	}
	log := in.s.log.With("table", r.table.String())
	if r.err != nil {
		log.Error("binlog: incremental snapshot: the table cannot be read: left out", "err", r.err)
		in.advance(m, true, nil, -1, -1)
		return in.savePosition(ctx, m, nil)
	}
	if reread {
		// the table's shape changed (or it was truncated) in the window:
		// the rows may be of either shape; read the chunk again
		in.reload[r.table] = true
		return nil
	}
	if r.est >= 0 { // the table's first chunk
		log.Info("binlog: incremental snapshot of table started", "estimated_rows", r.est, "chunk_rows", in.limit)
	}
	var recs []schema.Record
	now := time.Now().UnixMilli()
	c := m.committed
	var base uint64
	if in.readOnly {
		// No watermark transaction gives each chunk a position of its own:
		// chunks emitted at one position (an idle server), in this run or
		// after a restart there, are numbered on from the clock, so that
		// IDs grow as from one chunk to the next.
		base = max(in.lastIndex, uint64(time.Now().UnixNano()))
		in.lastIndex = base + uint64(len(r.rows))
	}
	for i, row := range r.rows {
		rec := schema.Record{Op: schema.OpRead, Table: r.ti.id, KeySchema: r.ti.keySchema, Key: keyOf(r.ti, row), ValueSchema: r.ti.valueSchema, After: row}
		if dirty[rec.KeyString()] {
			continue // a change in the window is as new or newer
		}
		rec.Source = schema.Source{Version: Version, Connector: in.s.cfg.Flavor, Name: in.s.cfg.ServerName, TsMs: now, Snapshot: "incremental",
			File: c.File, Pos: uint64(c.Pos)}
		rec.TsMs = now
		rec.ID = schema.ID{Epoch: m.epoch, File: fileSeq(c.File), Pos: uint64(c.Pos), Phase: schema.PhaseSnapshot, Index: base + uint64(len(recs))}
		if len(r.zeros[i]) > 0 {
			rec.Headers = map[string]string{ZeroDatesAfterHeader: strings.Join(r.zeros[i], ";")}
		}
		recs = append(recs, rec)
	}
	in.s.snap.rows.Add(int64(len(recs)))
	in.prog.Max = r.max
	in.advance(m, r.done, r.key, int64(len(recs)), r.est)
	return in.savePosition(ctx, m, recs)
}

// advance moves the progress past a chunk that ended at key (done: the
// table's last), of which rows were emitted (-1: the table could not be
// read); est is the table's estimated rows when the chunk read it (else -1).
func (in *incremental) advance(m *mapper, done bool, key [][]byte, rows, est int64) {
	if rows >= 0 {
		in.s.incrStats.publish(in.prog, 1, rows, est, 0)
	}
	if done {
		st := in.s.incrStats.get()
		in.s.log.Info("binlog: incremental snapshot of table done", "table", in.prog.Tables[0], "rows", st.TableRows)
		in.prog.Tables, in.prog.Key, in.prog.Max = in.prog.Tables[1:], nil, nil
		if len(in.prog.Tables) == 0 {
			in.s.log.Info("binlog: incremental snapshot done", "signal", in.prog.ID)
			in.prog = nil
		}
	} else if key != nil {
		in.prog.Key = key
	}
	m.incremental = in.prog.clone()
	if done {
		in.s.incrStats.publish(in.prog, 0, 0, -1, 1)
	}
}

// savePosition hands recs on, the last carrying the committed position
// with the new progress; with no record, a heartbeat carries it.
func (in *incremental) savePosition(ctx context.Context, m *mapper, recs []schema.Record) error {
	if len(recs) > 0 {
		recs[len(recs)-1].Position = m.encodeCommitted()
	} else {
		recs = []schema.Record{m.heartbeat()}
	}
	if !in.s.send(ctx, batch{recs: recs, size: recordsSize(recs)}) { // a chunk: sized as the snapshot's
		return ctx.Err()
	}
	return nil
}

// work is the chunk worker: it reads the chunks the streamer asks for, on
// its own connection.
func (in *incremental) work(ctx context.Context) {
	var sn *snapshotter
	defer func() {
		if sn != nil {
			sn.close()
		}
	}()
	tables := map[schema.TableID]*snapTable{}
	for {
		var req incrRequest
		select {
		case req = <-in.reqs:
		case <-ctx.Done():
			return
		}
		res := in.readChunk(ctx, &sn, tables, req)
		if res.err != nil && sn != nil {
			sn.close() // a new connection for the next chunk
			sn = nil
		}
		select {
		case in.res <- res:
			in.s.wake.wake()
		case <-ctx.Done():
			return
		}
		if sn != nil && res.err == nil && !in.readOnly {
			if _, err := sn.conn.ExecContext(ctx, "DELETE FROM "+in.from+" WHERE id IN (?, ?)", req.chunk+"-open", req.chunk+"-close"); err != nil {
				in.s.log.Warn("binlog: incremental snapshot: cannot delete the watermark rows", "err", err)
			}
		}
	}
}

// readChunk writes the low watermark, reads the chunk, writes the high
// watermark.
func (in *incremental) readChunk(ctx context.Context, snp **snapshotter, tables map[schema.TableID]*snapTable, req incrRequest) incrResult {
	res := incrResult{chunk: req.chunk, table: req.table, est: -1}
	fail := func(err error) incrResult {
		res.err = err
		return res
	}
	s := in.s
	if *snp == nil {
		sn, err := s.openSnapshotter(ctx)
		if err != nil {
			return fail(err)
		}
		*snp = sn
	}
	sn := *snp
	st := tables[req.table]
	if st == nil || req.reload {
		var err error
		if st, err = sn.loadTable(ctx, req.table); err != nil {
			return fail(err)
		}
		if st == nil {
			return fail(fmt.Errorf("binlog: incremental snapshot: table %s does not exist", req.table))
		}
		if len(st.ti.keyIdx) == 0 || !st.keyable {
			return fail(fmt.Errorf("%w: incremental snapshot: table %s has no primary key that can be paged", ErrUnsupported, req.table))
		}
		tables[req.table] = st
	}
	mark := func(typ, suffix string) error {
		if in.readOnly {
			if typ == signalWindowClose {
				return in.highWatermark(ctx, sn.conn, &res)
			}
			return nil
		}
		data := fmt.Sprintf(`{"chunk":%q,"table":%q}`, req.chunk, req.table.String())
		if _, err := sn.conn.ExecContext(ctx, "INSERT INTO "+in.from+" (id, type, data) VALUES (?, ?, ?)", req.chunk+suffix, typ, data); err != nil {
			return fmt.Errorf("binlog: incremental snapshot: write the %s watermark into %s (grant INSERT, DELETE on it): %w", typ, in.signal, err)
		}
		return nil
	}
	res.max = req.max
	if res.max == nil {
		res.est = st.estRows
		// Debezium's maximum key at the start: rows inserted above it
		// later are the stream's, so the snapshot does not chase inserts
		max, empty, err := in.maxKey(ctx, sn, st)
		if err != nil {
			return fail(err)
		}
		if empty { // no chunk; the window closes all the same
			res.ti, res.done = st.ti, true
			if err := mark(signalWindowOpen, "-open"); err != nil {
				return fail(err)
			}
			if err := mark(signalWindowClose, "-close"); err != nil {
				return fail(err)
			}
			return res
		}
		res.max = max
	}
	if err := mark(signalWindowOpen, "-open"); err != nil {
		return fail(err)
	}
	// one query: its first piece, cut at Config.SnapshotChunkBytes
	res.done = true
	err := sn.readRange(ctx, sn.conn, st, req.key, res.max, func(pc *snapPiece) error {
		s.snap.inFlight.Add(-pc.bytes)
		for _, r := range pc.rows {
			res.rows, res.zeros = append(res.rows, r.row), append(res.zeros, r.zeros)
		}
		res.key, res.done = pc.key, pc.end
		return errChunkRead
	})
	if err != nil && !errors.Is(err, errChunkRead) {
		return fail(err)
	}
	res.ti = st.ti
	if hook := incrAfterRead.Load(); hook != nil {
		(*hook)(req.table, len(res.rows))
	}
	if err := mark(signalWindowClose, "-close"); err != nil {
		return fail(err)
	}
	return res
}

// errChunkRead stops readRange after the one query of an incremental chunk.
var errChunkRead = errors.New("binlog: incremental snapshot: chunk read")

// highWatermark reads, in read-only mode, the server's state after a
// chunk's query into res: its binlog file and offset and its executed GTID
// set (MySQL's Executed_Gtid_Set, MariaDB's gtid_binlog_pos).
func (in *incremental) highWatermark(ctx context.Context, conn *sql.Conn, res *incrResult) error {
	flavor := in.s.cfg.Flavor
	q := "SHOW MASTER STATUS"
	if flavor == FlavorMySQL {
		q = "SHOW BINARY LOG STATUS"
	}
	rows, err := conn.QueryContext(ctx, q)
	if err != nil && flavor == FlavorMySQL {
		q = "SHOW MASTER STATUS" // before MySQL 8.2
		rows, err = conn.QueryContext(ctx, q)
	}
	if err != nil {
		return fmt.Errorf("binlog: incremental snapshot: read the high watermark (%s; grant REPLICATION CLIENT / BINLOG MONITOR): %w", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("binlog: incremental snapshot: read the high watermark: %w", err)
	}
	raw := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(raw))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return fmt.Errorf("binlog: incremental snapshot: read the high watermark: %w", err)
		}
		return fmt.Errorf("%w: the server has no binary log; start it with log-bin, binlog-format=ROW", ErrUnsupported)
	}
	if err := rows.Scan(ptrs...); err != nil {
		return fmt.Errorf("binlog: incremental snapshot: read the high watermark: %w", err)
	}
	h := Position{Version: PositionVersion, Flavor: flavor}
	for i, c := range cols {
		switch strings.ToLower(c) {
		case "file":
			h.File = string(raw[i])
		case "position":
			n, _ := strconv.ParseUint(string(raw[i]), 10, 32)
			h.Pos = uint32(n)
		case "executed_gtid_set":
			h.GTIDSet = strings.ReplaceAll(strings.TrimSpace(string(raw[i])), "\n", "")
		}
	}
	rows.Close()
	if flavor == FlavorMariaDB {
		if err := conn.QueryRowContext(ctx, "SELECT @@global.gtid_binlog_pos").Scan(&h.GTIDSet); err != nil {
			return fmt.Errorf("binlog: incremental snapshot: read @@gtid_binlog_pos: %w", err)
		}
	}
	if h.GTIDSet != "" {
		set, err := mysql.ParseGTIDSet(flavor, h.GTIDSet)
		if err != nil {
			return fmt.Errorf("binlog: incremental snapshot: the server's GTID set %q: %w", h.GTIDSet, err)
		}
		res.highSet = set
	}
	res.high = h
	return nil
}

// reached reports, in read-only mode, whether the stream has passed the
// high watermark of chunk r: every transaction of its GTID set (or, with
// none, its file and offset) is committed in the stream.
func (in *incremental) reached(m *mapper, r *incrResult) bool {
	if r.err != nil {
		return false
	}
	if r.highSet != nil && m.gsetKnown && m.gset != nil {
		return m.gset.Contain(r.highSet)
	}
	return r.high.File != "" && atOrAfter(m.committed.File, m.committed.Pos, r.high)
}

// waker lets the chunk worker and Source.Signal wake the streamer while it
// waits for the next event (pump): an idle server sends none.
type waker struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
}

// get returns the context the streamer waits for an event with: done when
// ctx is, or when woken.
func (w *waker) get(ctx context.Context) context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx == nil {
		w.ctx, w.cancel = context.WithCancel(ctx)
	}
	return w.ctx
}

// woken reports a wake the streamer has not taken yet, and takes it: the
// next get returns a new context, which a wake from now on ends.
func (w *waker) woken() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx == nil || w.ctx.Err() == nil {
		return false
	}
	w.cancel()
	w.ctx, w.cancel = nil, nil
	return true
}

func (w *waker) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		w.cancel()
	}
}

// maxKey reads the greatest primary key of st (empty: the table has no row).
func (in *incremental) maxKey(ctx context.Context, sn *snapshotter, st *snapTable) ([][]byte, bool, error) {
	desc := make([]string, len(st.ti.keyIdx))
	for i, k := range st.ti.keyIdx {
		desc[i] = quoteIdent(st.ti.cols[k].name) + " DESC"
	}
	rows, err := sn.conn.QueryContext(ctx, "SELECT "+st.selectList+" FROM "+st.from+" ORDER BY "+strings.Join(desc, ", ")+" LIMIT 1")
	if err != nil {
		return nil, false, fmt.Errorf("binlog: incremental snapshot: greatest key of %s: %w", st.ti.id, err)
	}
	defer rows.Close()
	raw := make([]sql.RawBytes, len(st.ti.cols))
	ptrs := make([]any, len(raw))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	if !rows.Next() {
		return nil, true, rows.Err()
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, false, err
	}
	key := make([][]byte, len(st.ti.keyIdx))
	for i, k := range st.ti.keyIdx {
		key[i] = bytes.Clone(raw[k])
	}
	return key, false, nil
}

// IncrementalStats is the progress of the newest incremental snapshot of a
// Source (zero when none ran since Open).
type IncrementalStats struct {
	Running bool   // a snapshot is queued or being read
	Paused  bool   // by pause-snapshot
	Signal  string // the id of the execute-snapshot signal that began it
	Table   string // the table being read ("": none)
	// Tables: the tables of the snapshot (done and queued; a table
	// stop-snapshot takes out is no longer counted); TablesDone: those
	// read whole (or left out with an error).
	Tables, TablesDone int64
	Chunks, Rows       int64 // chunks and rows emitted by the snapshot
	// TableRows: rows emitted of Table; TableEstimatedRows: the server's
	// estimate of its rows (information_schema.TABLES.TABLE_ROWS,
	// approximate for InnoDB; 0: unknown).
	TableRows, TableEstimatedRows int64
	StartedMs                     int64 // when the snapshot began (Unix ms)
}

// incrCounters holds a Source's IncrementalStats; the streamer writes them.
type incrCounters struct {
	mu sync.Mutex
	st IncrementalStats
}

func (c *incrCounters) get() IncrementalStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

func (c *incrCounters) begin(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st = IncrementalStats{Signal: id, StartedMs: time.Now().UnixMilli()}
}

// publish sets the stats from the progress p (nil: none running); a chunk
// of table with rows emitted (chunks: 1) and the table's estimate (-1: not
// read) are added.
func (c *incrCounters) publish(p *IncrementalProgress, chunks, rows, est int64, doneTables int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.st
	st.Chunks += chunks
	st.Rows += rows
	st.TableRows += rows
	if est >= 0 {
		st.TableEstimatedRows = est
	}
	st.TablesDone += int64(doneTables)
	st.Running = p != nil
	st.Paused = p != nil && p.Paused
	table := ""
	if p != nil && len(p.Tables) > 0 {
		table = p.Tables[0]
		st.Tables = st.TablesDone + int64(len(p.Tables))
	}
	if table != st.Table {
		st.Table, st.TableRows, st.TableEstimatedRows = table, 0, 0
	}
}

// IncrementalStats returns the progress of the newest incremental
// snapshot.
func (s *Source) IncrementalStats() IncrementalStats { return s.incrStats.get() }

// Signal sends a snapshot signal as if inserted into the signal table: it
// inserts it there, so that the stream acts on it in order with the
// changes around it, as on any other signal. id may be empty (a random one
// is made); it returns the id. A signal the source would ignore (an
// unknown type, data it refuses, a table it does not capture) is refused
// with ErrConfig and not written.
func (s *Source) Signal(ctx context.Context, id, typ, data string) (string, error) {
	var sig schema.TableID
	if s.cfg.SignalTable != "" {
		var err error
		if sig, err = tableName(s.cfg.SignalTable); err != nil {
			return "", fmt.Errorf("%w: signal_table: %v", ErrConfig, err)
		}
	}
	if _, _, err := checkSignal(newFilter(s.cfg.Include, s.cfg.Exclude), sig, typ, data); err != nil {
		return "", fmt.Errorf("%w: signal: %w", ErrConfig, err)
	}
	if id == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		id = "api-" + hex.EncodeToString(b[:])
	}
	if len(id) > 42 {
		return "", fmt.Errorf("%w: signal id %q is longer than the signal table's 42 characters", ErrConfig, id)
	}
	if s.cfg.SignalTable == "" { // read-only mode: straight to the stream
		s.mu.Lock()
		in := s.incr
		s.mu.Unlock()
		if in == nil {
			return "", fmt.Errorf("%w: signal: the source is not open", ErrConfig)
		}
		select {
		case in.signals <- signalMsg{id: id, typ: typ, data: data}:
		default:
			return "", fmt.Errorf("%w: signal: %d signals wait for the stream already", ErrConfig, maxQueuedSignals)
		}
		s.wake.wake()
		return id, nil
	}
	conn, err := s.dial(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	var arg any = data
	if data == "" {
		arg = nil
	}
	if _, err := conn.Execute("INSERT INTO "+quoteIdent(sig.Database)+"."+quoteIdent(sig.Table)+" (id, type, data) VALUES (?, ?, ?)", id, typ, arg); err != nil {
		return "", fmt.Errorf("binlog: signal: insert into %s (grant INSERT on it): %w", sig, err)
	}
	return id, nil
}
