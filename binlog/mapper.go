package binlog

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/sluicecdc/sluice/binlog/charset"
	"github.com/sluicecdc/sluice/binlog/ddl"
	"github.com/sluicecdc/sluice/schema"
)

// mapper turns decoded binlog events into records. It is pure: it does no
// I/O and its output depends only on the events it was given, its start
// position and its clock. It tracks the binlog file, the GTID set of
// committed transactions and the table maps.
type mapper struct {
	flavor     string
	serverName string
	filter     filter
	zeroAsNull bool
	keepZero   bool              // note zero dates' original text in headers
	collations map[uint64]string // collation id -> charset
	collNames  map[uint64]string // collation id -> collation name; nil: unknown
	now        func() time.Time
	heartbeats bool
	columns    *columnRules
	hist       *schemaHistory
	histFile   string
	skipDDL    map[string]bool
	log        *slog.Logger
	hints      func(schema.TableID) (map[string]colHint, error)
	showCreate func(schema.TableID) (string, error)
	skipOps    map[schema.Op]bool // skipped.operations
	noDDL      bool               // include.schema.changes=false

	file string        // current binlog file
	gset mysql.GTIDSet // committed transactions
	// gsetKnown: gset is the server's whole executed GTID set at the
	// committed position, so positions may carry it. A MySQL mapper started
	// from a file and offset without a GTID set does not know the GTIDs
	// before it until the next binlog file's Previous_gtids event; until
	// then its positions carry file and offset only, never a partial set.
	gsetKnown bool
	committed Position // position after the last committed transaction
	epoch     uint64   // of every ID and position the mapper makes

	// The event being mapped: records made from it get IDs (epoch, file,
	// evPos, stream, evIdx++). Events inside a transaction payload share
	// the position of their payload event (depth > 0).
	evPos uint32
	evIdx uint64
	depth int
	// snapshot, while a resumed snapshot catches the stream up to its new
	// consistent point, is added to every position handed on, so that a
	// restart from one resumes the snapshot again.
	snapshot *SnapshotProgress
	// incremental is the progress of a running incremental snapshot
	// (incremental.go), added to every position handed on.
	incremental *IncrementalProgress
	// capture is added to every position handed on (Position.Capture).
	capture string
	// newTable, when set, is told of every table a DDL statement makes
	// captured (created, or renamed from an uncaptured name), before the
	// statement's position is made.
	newTable func(schema.TableID)

	tables map[uint64]*tableInfo // by table id; nil value: table not captured

	// emit, when set, takes the records made so far from inside a
	// transaction payload, before the payload's last record is made.
	emit func([]schema.Record) error
	// raw decodes the events of a raw-mode stream (MySQL: payload.go).
	raw *eventParser

	// the open transaction
	inTx       bool
	txGTID     string // GTID of the open transaction, "" without GTIDs
	txPending  func() error
	txID       string
	txOrder    int64
	tableOrder map[schema.TableID]int64
	thread     uint64

	// XA (xa.go): the branch being read up to its prepare, the prepared
	// branches by xid in binlog order, and the bytes of records they hold.
	xaRead     *xaBranch
	xaPrepared map[string]*xaBranch
	xaOrder    []string
	xaHeld     int
}

type mapperConfig struct {
	Flavor     string
	ServerName string
	Include    []string
	Exclude    []string
	ZeroAsNull bool
	KeepZero   bool              // note zero dates' original text in record headers
	Collations map[uint64]string // nil: built-in table
	// CollationNames names the collation ids (nil: records carry no
	// collation from the table map).
	CollationNames map[uint64]string
	Now            func() time.Time // nil: time.Now
	Heartbeats     bool             // map the server's heartbeat events to OpHeartbeat records
	Columns        *columnRules     // excluded and masked columns; nil: none
	History        *schemaHistory   // table shapes by position; nil: table maps only
	HistoryFile    string           // for messages
	// GTIDKnown: the start position's GTID set, even an empty one, is the
	// server's whole executed set there (read from the server, not a
	// stored file/pos position).
	GTIDKnown bool
	SkipDDL   []string     // statements or GTIDs the history leaves out
	Log       *slog.Logger // warnings (history/table map mismatches); nil: discarded
	// Hints reads the MariaDB types (UUID, INET6, INET4, JSON) the table
	// maps of a table show only as storage; nil: none (typeHints.get).
	Hints func(schema.TableID) (map[string]colHint, error)
	// ShowCreate reads a table's SHOW CREATE TABLE text; without a
	// History it gives an ALTER's tableChanges their shape; nil: none
	// (typeHints.showCreate).
	ShowCreate func(schema.TableID) (string, error)
	// SkipOps are the ops whose records are not emitted (skipped.operations);
	// SkipSchemaChanges drops OpSchemaChange records (include.schema.changes).
	SkipOps           map[schema.Op]bool
	SkipSchemaChanges bool
}

// newMapper starts a mapper at a committed position.
func newMapper(cfg mapperConfig, start Position) (*mapper, error) {
	gset, err := mysql.ParseGTIDSet(cfg.Flavor, start.GTIDSet)
	if err != nil {
		return nil, fmt.Errorf("%w: gtid set %q: %v", ErrBadPosition, start.GTIDSet, err)
	}
	m := &mapper{
		flavor: cfg.Flavor, serverName: cfg.ServerName, filter: newFilter(cfg.Include, cfg.Exclude),
		zeroAsNull: cfg.ZeroAsNull, keepZero: cfg.KeepZero, collations: cfg.Collations, collNames: cfg.CollationNames, now: cfg.Now, heartbeats: cfg.Heartbeats,
		columns: cfg.Columns, hist: cfg.History, histFile: cfg.HistoryFile, log: cfg.Log, hints: cfg.Hints, showCreate: cfg.ShowCreate,
		skipOps: cfg.SkipOps, noDDL: cfg.SkipSchemaChanges,
		skipDDL: map[string]bool{},
		file:    start.File, gset: gset, committed: start, epoch: start.Epoch,
		gsetKnown: cfg.Flavor == FlavorMariaDB || cfg.GTIDKnown || start.GTIDSet != "",
		tables:    map[uint64]*tableInfo{}, tableOrder: map[schema.TableID]int64{}, xaPrepared: map[string]*xaBranch{},
	}
	m.committed.Version, m.committed.Flavor, m.committed.Snapshot = PositionVersion, cfg.Flavor, nil
	m.incremental, m.committed.Incremental = start.Incremental, nil
	if m.collations == nil {
		m.collations = charset.BuiltinCollations()
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	for _, q := range cfg.SkipDDL {
		m.skipDDL[strings.TrimSpace(q)] = true
	}
	return m, nil
}

// Committed returns the position after the last committed transaction.
func (m *mapper) Committed() Position { return m.committed }

// resetTx forgets a transaction cut short (by a reconnect).
func (m *mapper) resetTx() {
	m.inTx, m.txGTID, m.txPending, m.txID, m.txOrder, m.thread = false, "", nil, "", 0, 0
	clear(m.tableOrder)
	if m.xaRead != nil {
		m.xaHeld -= m.xaRead.bytes
		m.xaRead = nil
	}
}

// moveTo puts the mapper at a committed position p (of its epoch), as after
// a transaction that ended there: a resumed snapshot's catch-up ends at its
// consistent point and the stream goes on from there.
func (m *mapper) moveTo(p Position) error {
	gset, err := mysql.ParseGTIDSet(m.flavor, p.GTIDSet)
	if err != nil {
		return fmt.Errorf("%w: gtid set %q: %v", ErrBadPosition, p.GTIDSet, err)
	}
	m.resetTx()
	m.gset, m.gsetKnown, m.file, m.committed = gset, true, p.File, p
	m.committed.Version, m.committed.Flavor, m.committed.Snapshot, m.committed.Epoch = PositionVersion, m.flavor, nil, m.epoch
	m.snapshot = nil
	return nil
}

// encodeCommitted is the committed position as records carry it.
func (m *mapper) encodeCommitted() []byte {
	p := m.committed
	if len(m.xaOrder) > 0 {
		p = m.heldPosition()
	}
	p.Snapshot, p.Incremental, p.Capture = m.snapshot, m.incremental, m.capture
	return EncodePosition(p)
}

// nextID is the identity of the next record made from the current event:
// a pure function of where the event is in the binlog, so a replay from
// any saved position (after a reconnect or a restart) makes the same IDs.
func (m *mapper) nextID() schema.ID {
	id := streamID(m.epoch, m.file, m.evPos, m.evIdx)
	m.evIdx++
	return id
}

// Map appends the records of ev to out.
func (m *mapper) Map(ev *replication.BinlogEvent, out []schema.Record) ([]schema.Record, error) {
	h := ev.Header
	if m.depth == 0 {
		m.evPos, m.evIdx = h.LogPos, 0
		if h.LogPos == 0 && makesRecords(ev) {
			return out, fmt.Errorf("%w: %s event without a log position in %s: record IDs need each event's end position (MariaDB 11.4 and later: the client fills it in)", ErrUnsupported, h.EventType, m.file)
		}
	}
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		m.file = string(e.NextLogName)
		if !m.inTx && m.committed.GTIDSet == "" && m.committed.File != m.file && e.Position >= 4 {
			// at a boundary: a file/pos position may move to the new file
			m.committed.File, m.committed.Pos = m.file, uint32(e.Position)
		}
	case *replication.MariadbGTIDEvent:
		gtid := e.GTID
		m.startTx(gtid.String(), func() error {
			return m.gset.(*mysql.MariadbGTIDSet).AddSet(&gtid)
		})
		if e.Flags&mariadbFlPreparedXA != 0 {
			m.xaOpen() // held until its XA COMMIT
		} else if !e.IsStandalone() {
			m.inTx = true
			out = append(out, m.marker(schema.OpBegin, h, nil))
		}
	case *replication.GTIDEvent:
		if h.EventType == replication.ANONYMOUS_GTID_EVENT {
			// gtid_mode OFF or *_PERMISSIVE: a transaction without a GTID
			// (its event names 00000000-...:0), in no GTID set
			m.startTx("", nil)
			break
		}
		if err := m.startGTID(e); err != nil {
			return out, err
		}
	case *replication.GtidTaggedLogEvent: // uuid:tag:N, MySQL 8.3 and later
		if err := m.startGTID(&e.GTIDEvent); err != nil {
			return out, err
		}
	case *replication.PreviousGTIDsEvent:
		// At the start of a binlog file: every GTID logged before it. A
		// mapper that did not know its GTID set learns it here, if it
		// read this file from its start (not from a later offset).
		if !m.gsetKnown && m.depth == 0 && m.committed.File == m.file && h.LogPos >= h.EventSize && h.LogPos-h.EventSize >= m.committed.Pos {
			gset, err := previousGTIDs(ev)
			if err != nil { // positions keep to file and offset
				m.log.Warn("binlog: cannot read a Previous_gtids event", "file", m.file, "gtids", e.GTIDSets, "err", err)
				break
			}
			m.gset, m.gsetKnown = gset, true
		}
	case *replication.QueryEvent:
		q := strings.TrimSpace(string(e.Query))
		switch {
		case !m.inTx && isXAStart(q):
			m.thread = uint64(e.SlaveProxyID)
			m.xaOpen() // held until its XA COMMIT
		case !m.inTx && strings.HasPrefix(strings.ToUpper(q), "XA COMMIT "):
			m.thread = uint64(e.SlaveProxyID)
			return m.xaOutcome(h, q, true, out)
		case !m.inTx && strings.HasPrefix(strings.ToUpper(q), "XA ROLLBACK "):
			m.thread = uint64(e.SlaveProxyID)
			return m.xaOutcome(h, q, false, out)
		case strings.EqualFold(q, "BEGIN"):
			if m.txGTID == "" && m.txPending == nil {
				m.startTx("", nil)
			}
			m.inTx = true
			m.thread = uint64(e.SlaveProxyID)
			out = append(out, m.marker(schema.OpBegin, h, nil))
		case m.inTx && (strings.EqualFold(q, "COMMIT") || strings.EqualFold(q, "ROLLBACK")):
			return m.commit(h, out)
		case m.inTx:
			// SAVEPOINT and the like inside a transaction; a row change
			// logged as a statement stops the source (stmtdml.go)
			if err := m.stmtDMLError(q, string(e.Schema)); err != nil {
				return out, err
			}
		default:
			// DDL and other statements logged as their own transaction.
			m.thread = uint64(e.SlaveProxyID)
			if err := m.stmtDMLError(q, string(e.Schema)); err != nil {
				return out, err
			}
			if isNoise(q) {
				return m.commit(h, out)
			}
			out, err := m.statement(h, q, string(e.Schema), out)
			if err != nil {
				return out, err
			}
			gtid := m.txGTID
			out, err = m.commit(h, out)
			if err != nil || m.hist == nil {
				return out, err
			}
			changed, err := m.hist.ddl(q, string(e.Schema), m.committed, gtid, m.skipDDL,
				func(id schema.TableID) bool {
					if id.Table == "" {
						return m.filter.matchDatabase(id.Database)
					}
					return m.filter.match(id.Database, id.Table)
				}, m.histFile)
			if err != nil {
				return out, err
			}
			if changed {
				clear(m.tables) // shapes changed: rebuild from the next table maps
			}
			return out, nil
		}
	case *replication.XIDEvent:
		return m.commit(h, out)
	case *replication.HeartbeatEvent:
		if m.heartbeats && !m.inTx {
			out = append(out, m.heartbeat())
		}
	case *replication.TableMapEvent:
		return out, m.tableMap(e)
	case *replication.RowsEvent:
		if m.xaRead != nil {
			return m.xaRows(h, e, out)
		}
		return m.rows(h, e, out)
	case *replication.GenericEvent:
		if h.EventType == replication.XA_PREPARE_LOG_EVENT {
			return m.xaPrepare(h, e.Data, out)
		}
	case *replication.TransactionPayloadEvent:
		i := 0
		return m.payload(out, func() (*replication.BinlogEvent, error) {
			if i == len(e.Events) {
				return nil, nil
			}
			inner := e.Events[i]
			e.Events[i] = nil // let go once mapped
			i++
			return inner, nil
		})
	case *payloadStream:
		return m.payload(out, e.next)
	}
	return out, nil
}

// payload maps the events of a compressed transaction (all of its events
// in one), which next gives in order (nil after the last). Their records
// are handed on (emit) as they are made, so that memory stays bounded
// however big the transaction.
func (m *mapper) payload(out []schema.Record, next func() (*replication.BinlogEvent, error)) ([]schema.Record, error) {
	m.depth++
	defer func() { m.depth-- }()
	for {
		inner, err := next()
		if err != nil || inner == nil {
			return out, err
		}
		if out, err = m.Map(inner, out); err != nil {
			return out, err
		}
		if m.emit != nil && len(out) >= maxBatch {
			if err := m.emit(out); err != nil {
				return nil, err
			}
			out = nil
		}
	}
}

// makesRecords reports events whose records take their ID from the event's
// position.
func makesRecords(ev *replication.BinlogEvent) bool {
	switch ev.Event.(type) {
	case *replication.RowsEvent, *replication.QueryEvent, *replication.XIDEvent, *replication.MariadbGTIDEvent, *replication.TransactionPayloadEvent, *payloadStream:
		return true
	}
	return false
}

// previousGTIDs decodes a Previous_gtids event's set from its bytes: the
// text go-mysql renders of it puts a tag whose UUID has no untagged GTIDs
// under the UUID before it. The body is followed by a CRC32 checksum
// unless the server runs with binlog_checksum=NONE.
func previousGTIDs(ev *replication.BinlogEvent) (mysql.GTIDSet, error) {
	raw := ev.RawData
	if len(raw) < replication.EventHeaderSize {
		return nil, fmt.Errorf("event of %d bytes", len(raw))
	}
	body := raw[replication.EventHeaderSize:]
	if len(body) >= replication.BinlogChecksumLength {
		if g, err := mysql.DecodeMysqlGTIDSet(body[:len(body)-replication.BinlogChecksumLength]); err == nil {
			return g, nil
		}
	}
	return mysql.DecodeMysqlGTIDSet(body)
}

// startGTID starts the transaction of a GTID event.
func (m *mapper) startGTID(e *replication.GTIDEvent) error {
	next, err := e.GTIDNext()
	if err != nil {
		return fmt.Errorf("%w: gtid event: %v", ErrUnsupported, err)
	}
	s := next.String()
	m.startTx(s, func() error { return m.gset.Update(s) })
	return nil
}

func (m *mapper) startTx(gtid string, pending func() error) {
	m.resetTx()
	m.txGTID, m.txPending = gtid, pending
}

func (m *mapper) txIDFor(h *replication.EventHeader) string {
	if m.txID == "" {
		if m.txGTID != "" {
			m.txID = m.txGTID
		} else {
			m.txID = fmt.Sprintf("%s:%d", m.file, h.LogPos-h.EventSize)
		}
	}
	return m.txID
}

func (m *mapper) source(h *replication.EventHeader) schema.Source {
	return schema.Source{
		Version:   Version,
		Connector: m.flavor,
		Name:      m.serverName,
		TsMs:      int64(h.Timestamp) * 1000,
		ServerID:  h.ServerID,
		GTID:      m.txGTID,
		File:      m.file,
		Pos:       uint64(h.LogPos - h.EventSize),
		Thread:    m.thread,
	}
}

func (m *mapper) marker(op schema.Op, h *replication.EventHeader, pos []byte) schema.Record {
	return schema.Record{
		Op:          op,
		Source:      m.source(h),
		Transaction: &schema.Transaction{ID: m.txIDFor(h), TotalOrder: m.txOrder},
		TsMs:        m.now().UnixMilli(),
		Position:    pos,
		ID:          m.nextID(),
	}
}

// advance moves the committed position past the transaction that ends
// with the event of h.
func (m *mapper) advance(h *replication.EventHeader) error {
	if m.txPending != nil {
		if err := m.txPending(); err != nil {
			return fmt.Errorf("%w: gtid %s: %v", ErrUnsupported, m.txGTID, err)
		}
	}
	m.committed = Position{Version: PositionVersion, Flavor: m.flavor, File: m.file, Pos: h.LogPos, Epoch: m.epoch}
	if m.gsetKnown && m.gset != nil && !m.gset.IsEmpty() {
		m.committed.GTIDSet = m.gset.String()
	}
	return nil
}

func (m *mapper) commit(h *replication.EventHeader, out []schema.Record) ([]schema.Record, error) {
	if err := m.advance(h); err != nil {
		return out, err
	}
	out = append(out, m.marker(schema.OpCommit, h, m.encodeCommitted()))
	m.resetTx()
	return out, nil
}

func (m *mapper) tableMap(e *replication.TableMapEvent) error {
	if old, ok := m.tables[e.TableID]; ok {
		if old == nil {
			if !m.filter.match(string(e.Schema), string(e.Table)) {
				return nil
			}
		} else if old.tm == e || sameShape(old.tm, e) {
			return nil
		}
	}
	if !m.filter.match(string(e.Schema), string(e.Table)) {
		m.tables[e.TableID] = nil
		return nil
	}
	var ht *ddl.Table
	if m.hist != nil {
		ht = m.hist.tables[schema.TableID{Database: string(e.Schema), Table: string(e.Table)}]
	}
	var hints map[string]colHint
	if m.hints != nil {
		var err error
		if hints, err = m.hints(schema.TableID{Database: string(e.Schema), Table: string(e.Table)}); err != nil {
			return err
		}
	}
	ti, warn, err := buildTable(e, m.serverName, m.collations, m.collNames, ht, m.hist != nil, hints, m.flavor)
	if warn != "" {
		m.log.Warn("binlog: "+warn, "table", string(e.Schema)+"."+string(e.Table), "history", m.histFile)
	}
	if err != nil {
		return err
	}
	if err := m.columns.apply(ti, m.serverName); err != nil {
		return err
	}
	m.tables[e.TableID] = ti
	return nil
}

func (m *mapper) rows(h *replication.EventHeader, e *replication.RowsEvent, out []schema.Record) ([]schema.Record, error) {
	start := len(out)
	out, err := m.rowRecords(h, e, out)
	return m.dropSkipped(out, start), err
}

func (m *mapper) rowRecords(h *replication.EventHeader, e *replication.RowsEvent, out []schema.Record) ([]schema.Record, error) {
	ti, ok := m.tables[e.TableID]
	if !ok {
		return out, fmt.Errorf("%w: rows event for table id %d without its table map (a position must be a transaction boundary)", ErrUnsupported, e.TableID)
	}
	if ti == nil {
		return out, nil
	}
	if err := decodeRows(e); err != nil {
		return out, fmt.Errorf("%w: rows of %s: %v", ErrUnsupported, ti.id, err)
	}
	for _, sk := range e.SkippedColumns {
		if len(sk) > 0 {
			return out, fmt.Errorf("%w: rows of %s lack columns (logged with binlog_row_image MINIMAL or NOBLOB, which a session may set); set binlog_row_image=FULL in the server's config and SET GLOBAL binlog_row_image=FULL, keep sessions from changing it, then snapshot the table again: these changes cannot be read from the binlog", ErrUnsupported, ti.id)
		}
	}
	var op schema.Op
	step := 1
	switch typ := e.Type(); {
	case typ == replication.EnumRowsEventTypeInsert:
		op = schema.OpCreate
	case typ == replication.EnumRowsEventTypeUpdate, h.EventType == replication.PARTIAL_UPDATE_ROWS_EVENT:
		op, step = schema.OpUpdate, 2
	case typ == replication.EnumRowsEventTypeDelete:
		op = schema.OpDelete
	default:
		return out, fmt.Errorf("%w: rows event type %s", ErrUnsupported, h.EventType)
	}
	if len(e.Rows)%step != 0 {
		return out, fmt.Errorf("%w: update event of %s with an odd number of row images", ErrUnsupported, ti.id)
	}
	// A record per row (two for a changed key): grown once, not doubled
	// and copied as it fills (a record is 384 bytes).
	out = slices.Grow(out, len(e.Rows)/step)
	ev := m.rowsEvent(h, ti, len(e.Rows))
	defer func() { m.tableOrder[ti.id] = ev.order }()
	for i := 0; i+step <= len(e.Rows); i += step {
		img, err := m.row(ti, e.Rows[i], ev)
		if err != nil {
			return out, err
		}
		switch op {
		case schema.OpCreate:
			out = append(out, m.record(ev, op, i, nil, img, nil, m.zeroHeaders(ti, nil, e.Rows[i])))
		case schema.OpDelete:
			out = append(out, m.record(ev, op, i, img, nil, nil, m.zeroHeaders(ti, e.Rows[i], nil)))
		case schema.OpUpdate:
			if h.EventType == replication.PARTIAL_UPDATE_ROWS_EVENT {
				if err := partialAfterImage(ti, e.Rows[i], e.Rows[i+1]); err != nil {
					return out, err
				}
			}
			after, err := m.row(ti, e.Rows[i+1], ev)
			if err != nil {
				return out, err
			}
			oldKey, newKey := ev.key(img), ev.key(after)
			if sameKey(oldKey, newKey) {
				out = append(out, m.record(ev, op, i/2, img, after, newKey, m.zeroHeaders(ti, e.Rows[i], e.Rows[i+1])))
				break
			}
			// A changed primary key is a delete of the old row and a create
			// of the new one, as Debezium does; headers link the two.
			del := m.record(ev, schema.OpDelete, i/2, img, nil, oldKey, map[string]string{"__debezium.newkey": keyText(newKey)})
			ins := m.record(ev, schema.OpCreate, i/2, nil, after, newKey, map[string]string{"__debezium.oldkey": keyText(oldKey)})
			out = append(out, del, ins)
		}
	}
	return out, nil
}

// rowsEvent is what the records of one rows event share, worked out once
// an event instead of once a record: the source block, the transaction's
// ID, the time, the table's order so far, and memory for the event's row
// images, keys and transaction blocks, allocated together. Every row,
// key and block carved from it is its own (a slice's capacity ends where
// it does), so a record can be changed or kept alone as before; a record
// kept alive keeps its event's memory alive, a few KiB.
type rowsEvent struct {
	ti    *tableInfo
	src   schema.Source
	txID  string
	tsMs  int64
	order int64 // the table's DataCollectionOrder so far
	vals  []any
	txs   []schema.Transaction
}

func (m *mapper) rowsEvent(h *replication.EventHeader, ti *tableInfo, images int) *rowsEvent {
	return &rowsEvent{
		ti: ti, src: m.source(h), txID: m.txIDFor(h), tsMs: m.now().UnixMilli(), order: m.tableOrder[ti.id],
		// A record per image at most; each image with its key.
		vals: make([]any, 0, images*(len(ti.cols)+len(ti.outKey))),
		txs:  make([]schema.Transaction, 0, images),
	}
}

// carve returns n values of ev's memory (more if it ran out).
func (ev *rowsEvent) carve(n int) schema.Row {
	if cap(ev.vals)-len(ev.vals) < n {
		ev.vals = make([]any, 0, max(n, 64))
	}
	i := len(ev.vals)
	ev.vals = ev.vals[:i+n]
	return ev.vals[i : i+n : i+n]
}

// key is keyOf with the key carved from the event's memory.
func (ev *rowsEvent) key(img schema.Row) schema.Row {
	if len(ev.ti.outKey) == 0 {
		return nil
	}
	return fillKey(ev.carve(len(ev.ti.outKey)), ev.ti, img)
}

func (m *mapper) row(ti *tableInfo, raw []any, ev *rowsEvent) (schema.Row, error) {
	if len(raw) != len(ti.cols) {
		return nil, fmt.Errorf("%w: row of %s has %d values for %d columns", ErrUnsupported, ti.id, len(raw), len(ti.cols))
	}
	row := ev.carve(len(raw))
	for i, v := range raw {
		x, err := mapValue(&ti.cols[i], v, m.zeroAsNull)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", ti.id, err)
		}
		row[i] = x
	}
	return ti.project(row), nil
}

// mapValue converts one decoded value of column c; the snapshot shares it.
func mapValue(c *column, v any, zeroAsNull bool) (any, error) {
	x, err := convert(c, v, zeroAsNull)
	if err != nil {
		return nil, err
	}
	if x == nil && !c.optional && v != nil && zeroAsNull {
		// a zero date in a NOT NULL column: Debezium gives the epoch
		x, _ = convert(c, v, false)
	}
	return x, nil
}

// record makes the record of one row of ev; key is the image's key when
// the caller has it already (nil: made here).
func (m *mapper) record(ev *rowsEvent, op schema.Op, idx int, before, after, key schema.Row, headers map[string]string) schema.Record {
	img := after
	if img == nil {
		img = before
	}
	if key == nil {
		key = ev.key(img)
	}
	m.txOrder++
	ev.order++
	src := ev.src
	src.Row = idx
	ev.txs = append(ev.txs, schema.Transaction{ID: ev.txID, TotalOrder: m.txOrder, DataCollectionOrder: ev.order})
	return schema.Record{
		Op:          op,
		Table:       ev.ti.id,
		KeySchema:   ev.ti.keySchema,
		Key:         key,
		ValueSchema: ev.ti.valueSchema,
		Before:      before,
		After:       after,
		Source:      src,
		Transaction: &ev.txs[len(ev.txs)-1],
		TsMs:        ev.tsMs,
		Headers:     headers,
		ID:          m.nextID(),
	}
}

// dropSkipped removes the records of skipped ops from out[start:].
func (m *mapper) dropSkipped(out []schema.Record, start int) []schema.Record {
	if len(m.skipOps) == 0 {
		return out
	}
	kept := out[:start]
	for _, r := range out[start:] {
		if !m.skipOps[r.Op] {
			kept = append(kept, r)
		}
	}
	return kept
}

func keyOf(ti *tableInfo, img schema.Row) schema.Row {
	if len(ti.outKey) == 0 {
		return nil
	}
	return fillKey(make(schema.Row, len(ti.outKey)), ti, img)
}

// fillKey sets k, of len(ti.outKey), to img's key columns and returns it.
func fillKey(k schema.Row, ti *tableInfo, img schema.Row) schema.Row {
	for i, j := range ti.outKey {
		k[i] = img[j]
	}
	return k
}

func keyText(k schema.Row) string {
	r := schema.Record{Key: k}
	return r.KeyString()
}

// sameKey is keyText(a) == keyText(b), without the texts for the usual
// key types.
func sameKey(a, b schema.Row) bool {
	if eq, ok := schema.KeyValuesEqual(a, b); ok {
		return eq
	}
	return keyText(a) == keyText(b)
}

// isNoise reports statements that are not schema changes but still come
// as their own transaction.
func isNoise(q string) bool {
	u := strings.ToUpper(q)
	for _, p := range []string{"FLUSH", "ANALYZE", "OPTIMIZE", "REPAIR", "GRANT", "REVOKE", "SET ", "CREATE USER", "DROP USER", "ALTER USER", "XA ", "SAVEPOINT", "# "} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

// heartbeat is an OpHeartbeat record at the committed position: the source
// is idle, and lag and positions stay measurable.
func (m *mapper) heartbeat() schema.Record {
	now := m.now().UnixMilli()
	return schema.Record{
		Op: schema.OpHeartbeat,
		Source: schema.Source{Connector: m.flavor, Name: m.serverName, TsMs: now,
			GTID: m.committed.GTIDSet, File: m.committed.File, Pos: uint64(m.committed.Pos)},
		TsMs:     now,
		Position: m.encodeCommitted(),
		ID:       streamID(m.epoch, m.committed.File, m.committed.Pos, 0),
	}
}

// statement maps a statement logged as its own transaction: TRUNCATE gives
// an OpTruncate record per captured table, other DDL an OpSchemaChange
// record, with the statement's structured changes (ddl.go), when a table it
// names (or, for statements without one, its database) is captured.
func (m *mapper) statement(h *replication.EventHeader, q, defaultDB string, out []schema.Record) ([]schema.Record, error) {
	d, err := m.readStatement(h, q, defaultDB)
	if err != nil {
		return out, err
	}
	if d.res.Truncate && d.parsed {
		for _, id := range d.res.Tables {
			if !m.filter.match(id.Database, id.Table) {
				continue
			}
			rec := m.marker(schema.OpTruncate, h, nil)
			m.txOrder++
			m.tableOrder[id]++
			rec.Transaction.TotalOrder, rec.Transaction.DataCollectionOrder = m.txOrder, m.tableOrder[id]
			rec.Table = id
			if ti := m.tableByID(id); ti != nil {
				rec.KeySchema, rec.ValueSchema = ti.keySchema, ti.valueSchema
			}
			if !m.skipOps[schema.OpTruncate] {
				out = append(out, rec)
			}
		}
		return out, nil
	}
	if m.newTable != nil {
		for _, c := range d.changes {
			// A table renamed into the capture brings rows the stream
			// never carried. A created one does not: every row it gets
			// (CREATE TABLE … SELECT's too, logged as row events) follows
			// its CREATE in the binlog, so a snapshot would only read them
			// again, and under schema_changes: ignore it would write the
			// source's current columns over what ignore documents
			// (TestDDLUnderIgnore failed so in CI, December 7).
			if c.Kind == schema.RenameTable && !m.filter.match(c.Table.Database, c.Table.Table) && m.filter.match(c.NewTable.Database, c.NewTable.Table) {
				m.newTable(c.NewTable)
			}
		}
	}
	if !d.captured || m.noDDL {
		return out, nil
	}
	rec := m.marker(schema.OpSchemaChange, h, nil)
	rec.Table = schema.TableID{Database: d.db}
	var captured []schema.TableID
	if d.parsed {
		// The first captured table it names: the change travels on that
		// table's topic. It is a barrier on the queues of every captured
		// table it names (schema.Record.BarrierTables).
		for _, id := range d.res.Tables {
			if id.Table != "" && m.filter.match(id.Database, id.Table) && !slices.Contains(captured, id) {
				captured = append(captured, id)
			}
		}
		if len(captured) > 0 {
			rec.Table = captured[0]
		}
	}
	rec.Change = &schema.SchemaChange{DDL: q, Kind: d.res.Kind, Tables: d.changes, Captured: captured}
	return append(out, rec), nil
}

// tableByID finds the cached shape of a captured table, or nil.
func (m *mapper) tableByID(id schema.TableID) *tableInfo {
	for _, ti := range m.tables {
		if ti != nil && ti.id == id {
			return ti
		}
	}
	return nil
}

// Headers that keep the original text of zero dates (KeepZeroDates): the
// row holds NULL (or the epoch) there, since a zero date is no instant.
const (
	ZeroDatesBeforeHeader = "sluice.zero_dates.before"
	ZeroDatesAfterHeader  = "sluice.zero_dates.after"
)

// zeroHeaders notes the zero dates of a row event's images, or nil.
func (m *mapper) zeroHeaders(ti *tableInfo, before, after []any) map[string]string {
	if !m.keepZero {
		return nil
	}
	var h map[string]string
	for _, img := range []struct {
		raw []any
		key string
	}{{before, ZeroDatesBeforeHeader}, {after, ZeroDatesAfterHeader}} {
		var notes []string
		for i, v := range img.raw {
			if s, ok := v.(string); ok {
				notes = zeroDateNote(notes, ti, i, s)
			}
		}
		if len(notes) > 0 {
			if h == nil {
				h = map[string]string{}
			}
			h[img.key] = strings.Join(notes, ";")
		}
	}
	return h
}

// zeroDateNote appends "column=text" when column i of ti is a date or
// datetime column kept in the record and s is a zero date.
func zeroDateNote(notes []string, ti *tableInfo, i int, s string) []string {
	c := &ti.cols[i]
	var zero bool
	switch c.kind {
	case kDate:
		_, mo, d, ok := parseYMD(s)
		zero = ok && (mo == 0 || d == 0)
	case kDatetime, kTimestamp:
		_, z, ok := parseDatetime(s)
		zero = ok && z
	}
	if !zero || ti.keep != nil && !slices.Contains(ti.keep, i) {
		return notes
	}
	return append(notes, c.name+"="+s)
}
