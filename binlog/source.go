package binlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	drv "github.com/go-sql-driver/mysql"

	"github.com/sluicecdc/sluice/schema"
)

const (
	maxBatch = 512 // records per Read, about
	// maxTxBatch is how far a Read batch grows past maxBatch to end with
	// its last transaction's commit (larger transactions are cut).
	maxTxBatch     = 8192
	queueBatches   = 16  // event batches buffered between the reader and Read
	eventCache     = 256 // decoded events buffered by go-mysql
	backoffInitial = 250 * time.Millisecond
	backoffMax     = 30 * time.Second
	maxRetries     = 12 // consecutive failed reconnects before Read fails
	// maxDeniedReconnects is how many refused logins in a row a reconnect
	// rides out before the denial is taken as final: a restarting server
	// (or a proxy in front of one, or a failover target) may refuse the
	// account for a moment while its grant tables load or its accounts
	// are created again by an init script. A first connect that is refused
	// fails at once: that is a wrong password or a missing grant.
	maxDeniedReconnects = 3
	dialTimeout         = 10 * time.Second
)

// Source reads row changes from a MySQL or MariaDB server as a replica. It
// satisfies the runtime's Source contract: Open, then Read until done, then
// Close.
type Source struct {
	cfg   Config
	log   *slog.Logger
	plain atomic.Bool // TLSMode preferred and the server offers no TLS

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	ch      chan batch
	queued  *byteGate // the bytes of ch's sized batches (snapshotQueueBytes)
	err     error     // sticky error returned by Read
	closed  bool
	rest    []schema.Record // records taken from ch but not yet returned
	columns *columnRules    // compiled ExcludeColumns and Mask
	connID  atomic.Uint32   // server thread id of the replication connection
	// zeroLogPos: the server is MariaDB 11.4 or later, which may send
	// events with log pos 0 (set in Open, read by syncerConfig).
	zeroLogPos bool
	snap       snapCounters
	hints      *typeHints // column types the table maps do not show
	// startPos is what StartPosition returns: set by Open when it begins
	// somewhere no saved position says (see StartPosition).
	startPos []byte
	// incr runs incremental snapshots (incremental.go); set by Open.
	incr      *incremental
	incrStats incrCounters
	wake      waker // wakes the streamer waiting for an event (incremental.go)
}

type batch struct {
	recs []schema.Record
	err  error
	// size is what the batch holds of the queue's byte gate (0: none; the
	// snapshot's batches, whose size is not bounded by a binlog event's).
	size int
}

// NewSource validates cfg and returns a source that is not yet connected.
func NewSource(cfg Config, log *slog.Logger) (*Source, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	cfg.Include = append([]string(nil), cfg.Include...)
	cfg.Exclude = append([]string(nil), cfg.Exclude...)
	cfg.ExcludeColumns = append([]string(nil), cfg.ExcludeColumns...)
	cfg.Mask = append([]MaskRule(nil), cfg.Mask...)
	cr, err := compileColumnRules(cfg.ExcludeColumns, cfg.Mask)
	if err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, log: log.With("source", cfg.ServerName), columns: cr}, nil
}

func (s *Source) addr() string { return net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.Port)) }

// Open connects and starts streaming just after position, an encoded
// Position from a commit record, or from the server's current position when
// position is nil.
func (s *Source) Open(ctx context.Context, position []byte) error {
	err := s.open(ctx, position)
	if err != nil && schema.ClassOf(err) == schema.ClassUnknown && denied(err) {
		err = fmt.Errorf("%w: %w; grant the privileges `sluice check` lists", ErrAccessDenied, err)
	}
	return err
}

func (s *Source) open(ctx context.Context, position []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.done != nil {
		return errors.New("binlog: source already open")
	}
	var start Position
	var err error
	conn, err := s.dial(ctx)
	if err != nil {
		return connectError(s.addr(), s.cfg.User, err)
	}
	defer conn.Close()
	s.zeroLogPos = s.cfg.Flavor == FlavorMariaDB && mariaDBAtLeast(conn.GetServerVersion(), 11, 4)
	var resume *SnapshotProgress
	doSnapshot := false
	if position == nil {
		// Before the start point: a branch prepared before it and committed
		// after it would not be captured.
		if err := s.awaitPreparedXA(ctx, conn); err != nil {
			return err
		}
		if s.cfg.Snapshot != SnapshotNever {
			doSnapshot = true
		} else {
			if start, err = currentPosition(conn, s.cfg.Flavor); err != nil {
				return err
			}
			start.Epoch = newEpoch()
			if s.cfg.snapshotNewTables() { // as the stream's positions will
				start.Capture = captureKey(s.cfg.Include, s.cfg.Exclude)
			}
			s.startPos = EncodePosition(start)
			s.log.Info("binlog: starting at the server's current position", "position", start.String())
		}
	} else {
		if start, err = ParsePosition(position); err != nil {
			return err
		}
		if start.Flavor != s.cfg.Flavor {
			return fmt.Errorf("%w: stored position is for %s, the config says %s", ErrBadPosition, start.Flavor, s.cfg.Flavor)
		}
		if g, ok := withoutAnonymous(start); ok {
			s.log.Info("binlog: the position's GTID set names the anonymous GTID (written by an older version): resuming without it", "position", start.String(), "gtid", g)
			start.GTIDSet = g
		}
		if start.Epoch == 0 {
			// Written by hand or by an older version: its records get IDs
			// of a new epoch, so sinks apply them rather than skip them.
			start.Epoch = newEpoch()
			s.log.Info("binlog: the position has no epoch: record IDs begin a new one", "epoch", fmt.Sprintf("%x", start.Epoch))
		}
		switch {
		case start.Snapshot != nil:
			resume, start.Snapshot, start.Version = start.Snapshot, nil, PositionVersion
			doSnapshot = true
			s.log.Info("binlog: resuming the snapshot", "table", resume.Database+"."+resume.Table, "stream_from", start.String())
		case s.cfg.Snapshot == SnapshotInitialOnly:
			// the snapshot is complete: nothing more to read
			s.log.Info("binlog: the snapshot is complete (Snapshot is initial_only)", "position", start.String())
			s.cancel, s.done, s.ch, s.err = func() {}, make(chan struct{}), make(chan batch), ErrSnapshotDone
			close(s.done)
			return nil
		case s.cfg.Snapshot == SnapshotWhenNeeded:
			purged, err := positionPurged(conn, start)
			if err != nil {
				return err
			}
			if purged {
				s.log.Warn("binlog: the saved position was purged from the server's binlog: taking a new snapshot", "position", start.String())
				doSnapshot = true
			}
		}
		if !doSnapshot || resume != nil {
			s.log.Info("binlog: resuming", "position", start.String())
		}
	}
	if s.cfg.HistoryStore == HistoryInDatabase && s.cfg.History == nil {
		return fmt.Errorf("%w: HistoryStore %q needs History, the database store", ErrConfig, HistoryInDatabase)
	}
	if err := checkServer(conn, s.cfg.historyStore() != nil); err != nil {
		return err
	}
	for _, p := range durabilityProblems(conn) {
		s.log.Warn("binlog: "+p.Detail, "fix", p.Fix)
	}
	if cols, err := undecodableColumns(conn, newFilter(s.cfg.Include, s.cfg.Exclude), s.columns); err != nil {
		s.log.Warn("binlog: cannot check the columns' character sets", "err", err)
	} else if len(cols) > 0 {
		return schema.Fatal(fmt.Errorf("%w: captured columns in character sets sluice cannot decode: %s; convert them (ALTER TABLE ... CONVERT TO CHARACTER SET utf8mb4) or leave them out with exclude_columns", ErrUnsupported, listSome(cols)))
	}
	collations, collationNames, err := loadCollations(conn)
	if err != nil {
		s.log.Warn("binlog: cannot read the server's collations, using built-in ones", "err", err)
	}
	var snap *snapshotter
	if doSnapshot {
		if snap, err = s.prepareSnapshot(ctx, start, resume); err != nil {
			return err
		}
		// The mapper starts where the stream goes on from: the snapshot's
		// point, or for a resumed snapshot the interrupted run's stream
		// position, caught up to the new point before the snapshot reads on.
		start = snap.start
		if snap.from != nil {
			start = *snap.from
		}
		if snap.fresh {
			s.startPos = EncodePosition(snap.startPosition())
		}
	}
	var hist *schemaHistory
	if store := s.cfg.historyStore(); store != nil {
		if hist, err = s.openHistory(ctx, store, conn, start); err != nil {
			if snap != nil {
				snap.close()
			}
			return err
		}
	}
	include := s.cfg.Include
	if s.incr, err = newIncremental(s, start.Incremental); err != nil {
		if snap != nil {
			snap.close()
		}
		return err
	}
	s.incr.resumed()
	capture := ""
	if s.cfg.snapshotNewTables() {
		capture = captureKey(s.cfg.Include, s.cfg.Exclude)
		if position != nil && !doSnapshot {
			s.newlyCaptured(ctx, conn, start.Capture, capture)
			start.Incremental = s.incr.prog
		}
	}
	if s.cfg.SignalTable != "" {
		if len(include) > 0 { // the signals are read from the binlog
			include = append(slices.Clip(include), s.cfg.SignalTable)
		}
		if !newFilter(include, s.cfg.Exclude).match(s.incr.signal.Database, s.incr.signal.Table) {
			if snap != nil {
				snap.close()
			}
			return fmt.Errorf("%w: exclude leaves out signal_table %s: its signals are read from the binlog", ErrConfig, s.cfg.SignalTable)
		}
	}
	s.hints = &typeHints{cfg: s.cfg}
	m, err := newMapper(mapperConfig{
		Flavor: s.cfg.Flavor, ServerName: s.cfg.ServerName, Include: include, Exclude: s.cfg.Exclude,
		ZeroAsNull: s.cfg.zeroDateAsNull(), KeepZero: s.cfg.KeepZeroDates, Collations: collations, CollationNames: collationNames, Heartbeats: s.cfg.Heartbeat > 0,
		GTIDKnown: position == nil || snap != nil && snap.from == nil,
		Columns:   s.columns, History: hist, HistoryFile: s.cfg.historyFile(), SkipDDL: s.cfg.SkipDDL, Log: s.log, Hints: s.hints.get, ShowCreate: s.hints.showCreate,
		SkipOps: s.cfg.skippedOps(), SkipSchemaChanges: s.cfg.SkipSchemaChanges,
	}, start)
	if err != nil {
		if snap != nil {
			snap.close()
		}
		return err
	}
	if capture != "" {
		m.capture = capture
		m.newTable = func(id schema.TableID) { s.incr.capture(m, []schema.TableID{id}, "renamed into the capture") }
	}
	rctx, cancel := context.WithCancel(context.Background())
	if snap != nil {
		s.cancel, s.done, s.ch, s.queued = cancel, make(chan struct{}), make(chan batch, queueBatches), newByteGate(snapshotQueueBytes)
		go s.snapshotThenStream(rctx, m, snap)
		return nil
	}
	syncer, stream, err := s.startSync(start)
	if err != nil {
		cancel()
		return err
	}
	s.cancel, s.done, s.ch, s.queued = cancel, make(chan struct{}), make(chan batch, queueBatches), newByteGate(snapshotQueueBytes)
	go s.run(rctx, m, syncer, stream)
	return nil
}

// captureKey is the Position.Capture of a source's Include and Exclude.
func captureKey(include, exclude []string) string {
	b, _ := json.Marshal(struct {
		Include []string `json:"include,omitempty"`
		Exclude []string `json:"exclude,omitempty"`
	}{include, exclude})
	return string(b)
}

// newlyCaptured queues, for a snapshot of their own, the tables the
// source captures now (capture) and did not when the position it opens at
// was saved (was): include or exclude changed meanwhile.
func (s *Source) newlyCaptured(ctx context.Context, conn *client.Conn, was, capture string) {
	if was == capture {
		return
	}
	if was == "" {
		s.log.Info("binlog: the position does not say which tables were captured (saved by an older version, or with snapshot_new_tables off): tables captured since are not snapshotted now")
		return
	}
	var old struct{ Include, Exclude []string }
	if err := json.Unmarshal([]byte(was), &old); err != nil {
		s.log.Warn("binlog: the position's capture is unreadable: tables captured since are not snapshotted now", "err", err)
		return
	}
	ids, err := listCaptured(ctx, clientCatalog(conn), newFilter(s.cfg.Include, s.cfg.Exclude))
	if err != nil {
		s.log.Warn("binlog: cannot list the captured tables: tables captured since the position are not snapshotted now", "err", err)
		return
	}
	f := newFilter(old.Include, old.Exclude)
	ids = slices.DeleteFunc(ids, func(id schema.TableID) bool { return f.match(id.Database, id.Table) })
	s.incr.capture(nil, ids, "include or exclude changed")
}

// StartPosition returns, after Open, the position to save before anything
// is read, when Open began somewhere no saved position says: the server's
// current position (with the new epoch) when Open was given none and
// Snapshot is never, or a fresh snapshot's start (its epoch, its first
// table, no row read yet). Resuming from it reads every change made since
// Open, so a stop before the first record loses nothing. It is nil when
// the position Open was given stays right (a stream or a snapshot resumed).
func (s *Source) StartPosition() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startPos
}

// snapshotThenStream reads the snapshot, then streams from the position it
// is consistent with (or stops with ErrSnapshotDone for initial_only).
func (s *Source) snapshotThenStream(ctx context.Context, m *mapper, snap *snapshotter) {
	var err error
	if snap.from != nil {
		m.snapshot = snap.resume
		if err = s.catchUp(ctx, m, snap.start); err == nil {
			err = m.moveTo(snap.start)
		}
	}
	if err == nil {
		err = snap.run(ctx)
	}
	snap.close()
	if err == nil && s.cfg.Snapshot == SnapshotInitialOnly {
		err = ErrSnapshotDone
	}
	if err == nil {
		var syncer *replication.BinlogSyncer
		var stream *replication.BinlogStreamer
		if syncer, stream, err = s.startSync(m.Committed()); err == nil {
			s.run(ctx, m, syncer, stream)
			return
		}
	}
	if err != nil && schema.ClassOf(err) == schema.ClassUnknown && denied(err) {
		err = fmt.Errorf("%w: snapshot: %w; grant SELECT on the captured tables", ErrAccessDenied, err)
	}
	if ctx.Err() == nil {
		s.send(ctx, batch{err: err})
	}
	close(s.done)
}

// mariaDBAtLeast reports whether a MariaDB version string (such as
// "11.4.2-MariaDB-log" or "5.5.5-10.11.6-MariaDB") is major.minor or later.
func mariaDBAtLeast(version string, major, minor int) bool {
	v := strings.TrimPrefix(version, "5.5.5-") // the replication-era prefix of MariaDB 10+
	var ma, mi int
	if _, err := fmt.Sscanf(v, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// currentPosition asks the server where its binlog ends now.
// CurrentPosition returns the server's current binlog position, encoded as
// Open takes it: a source opened there reads only what is committed after
// this call. Tools use it to mark a point before a load (sluice bench) or
// to move a pipeline to the present by hand.
func CurrentPosition(ctx context.Context, cfg Config) ([]byte, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	conn, err := dialServer(ctx, &cfg, tlsFor(&cfg), nil)
	if err != nil {
		return nil, connectError(addr, cfg.User, err)
	}
	defer conn.Close()
	p, err := currentPosition(conn, cfg.Flavor)
	if err != nil {
		return nil, err
	}
	p.Epoch = newEpoch() // a pipeline moved here applies what follows
	return EncodePosition(p), nil
}

func currentPosition(conn *client.Conn, flavor string) (Position, error) {
	p := Position{Version: PositionVersion, Flavor: flavor}
	var r *mysql.Result
	var err error
	if flavor == FlavorMySQL {
		r, err = conn.Execute("SHOW BINARY LOG STATUS")
		if err != nil {
			r, err = conn.Execute("SHOW MASTER STATUS")
		}
	} else {
		r, err = conn.Execute("SHOW MASTER STATUS")
	}
	if err != nil {
		return p, fmt.Errorf("binlog: read the binlog position (grant REPLICATION CLIENT / BINLOG MONITOR): %w", err)
	}
	if r.RowNumber() == 0 {
		return p, errors.New("binlog: the server has no binary log; start it with log-bin, binlog-format=ROW")
	}
	p.File, _ = r.GetString(0, 0)
	pos, _ := r.GetUint(0, 1)
	p.Pos = uint32(pos)
	if flavor == FlavorMySQL {
		if gs, err := r.GetStringByName(0, "Executed_Gtid_Set"); err == nil {
			p.GTIDSet = strings.ReplaceAll(strings.TrimSpace(gs), "\n", "")
		}
	} else {
		r, err = conn.Execute("SELECT @@gtid_binlog_pos")
		if err != nil {
			return p, fmt.Errorf("binlog: read @@gtid_binlog_pos: %w", err)
		}
		p.GTIDSet, _ = r.GetString(0, 0)
	}
	return p, nil
}

// checkServer fails early on settings that make the binlog unusable.
func checkServer(conn *client.Conn, history bool) error {
	r, err := conn.Execute("SELECT @@binlog_format, @@binlog_row_image")
	if err != nil {
		return fmt.Errorf("binlog: read server settings: %w", err)
	}
	format, _ := r.GetString(0, 0)
	image, _ := r.GetString(0, 1)
	if !strings.EqualFold(format, "ROW") {
		return fmt.Errorf("%w: binlog_format is %s; set binlog_format=ROW on the server", ErrUnsupported, format)
	}
	if !strings.EqualFold(image, "FULL") {
		return fmt.Errorf("%w: binlog_row_image is %s; set binlog_row_image=FULL on the server", ErrUnsupported, image)
	}
	if r, err := conn.Execute("SELECT @@binlog_row_metadata"); err == nil {
		if md, _ := r.GetString(0, 0); !strings.EqualFold(md, "FULL") && !history {
			return fmt.Errorf("%w (it is %s), or set history_file in the source section: a schema history supplies the column names", ErrMissingMetadata, md)
		}
	}
	return nil
}

// loadCollations reads the server's collations: id -> charset and id ->
// collation name.
func loadCollations(conn *client.Conn) (map[uint64]string, map[uint64]string, error) {
	r, err := conn.Execute("SELECT ID, CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLLATIONS WHERE ID IS NOT NULL")
	if err != nil {
		return nil, nil, err
	}
	m, names := make(map[uint64]string, r.RowNumber()), make(map[uint64]string, r.RowNumber())
	add := func(r *mysql.Result) {
		for i := 0; i < r.RowNumber(); i++ {
			id, err1 := r.GetUint(i, 0)
			cs, err2 := r.GetString(i, 1)
			name, err3 := r.GetString(i, 2)
			if err1 == nil && err2 == nil {
				if cs == "utf8" {
					cs = csUTF8MB3
				}
				m[id] = cs
				if err3 == nil && name != "" {
					names[id] = normCollation(name)
				}
			}
		}
	}
	add(r)
	// MariaDB lists its charset-specific uca1400 collations (utf16_uca1400_ai_ci,
	// ...) only here; MySQL's table has no ID column.
	if r, err := conn.Execute("SELECT ID, CHARACTER_SET_NAME, FULL_COLLATION_NAME FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY WHERE ID IS NOT NULL"); err == nil {
		add(r)
	}
	return m, names, nil
}

// rawMode: on MySQL, which compresses transactions, the syncer hands
// events on undecoded and mapEvent decodes them (payload.go).
func (s *Source) rawMode() bool { return s.cfg.Flavor == FlavorMySQL }

func (s *Source) syncerConfig() replication.BinlogSyncerConfig {
	hb := s.cfg.Heartbeat
	if hb <= 0 {
		hb = 10 * time.Second // still keeps the connection's read timeout meaningful
	}
	return replication.BinlogSyncerConfig{
		ServerID: s.cfg.ServerID, Flavor: s.cfg.Flavor,
		Host: s.cfg.Host, Port: uint16(s.cfg.Port), User: s.cfg.User, Password: s.cfg.Password,
		// DECIMAL as go-mysql's exact text (every declared fraction
		// digit): convert parses it once into a schema.Dec. UseDecimal
		// would parse it into a shopspring Decimal first, only to have it
		// printed back for that.
		UseDecimal: false, ParseTime: true,
		// MySQL's JSON in its stored key order and type-faithful tokens,
		// which nativeJSON brings to the snapshot's text.
		RenderJSONAsMySQLText: true,
		// Rows decoded when mapped, partial JSON updates with all of their
		// changes (partialjson.go).
		RowsEventDecodeFunc: decodeRowsEvent,
		// MySQL: events decoded by the source, compressed transactions as a
		// stream (payload.go).
		RawModeEnabled:  s.rawMode(),
		HeartbeatPeriod: hb, ReadTimeout: max(35*time.Second, 3*hb+5*time.Second),
		DisableRetrySync: true, EventCacheCount: eventCache,
		// MariaDB 11.4 may send events with log pos 0; record IDs are built
		// from each event's end position, so have the client fill it in
		// (it asks for annotate events then, to count every byte).
		FillZeroLogPos: s.zeroLogPos,
		Logger:         libraryLogger(s.log),
	}
}

func (s *Source) startSync(p Position) (*replication.BinlogSyncer, *replication.BinlogStreamer, error) {
	sc := s.syncerConfig()
	sc.TLSConfig = s.tlsConfig() // nil unless TLSMode asks for TLS
	byGTID, err := s.resumeByGTID(p)
	if err != nil {
		return nil, nil, err
	}
	syncer := replication.NewBinlogSyncer(sc)
	var stream *replication.BinlogStreamer
	if byGTID {
		var gset mysql.GTIDSet
		if gset, err = mysql.ParseGTIDSet(p.Flavor, p.GTIDSet); err == nil {
			stream, err = syncer.StartSyncGTID(gset)
		}
	} else {
		stream, err = syncer.StartSync(mysql.Position{Name: p.File, Pos: p.Pos})
	}
	if err != nil {
		syncer.Close()
		return nil, nil, s.classify(tlsError(&s.cfg, s.addr(), err), p)
	}
	s.connID.Store(syncer.LastConnectionID())
	return syncer, stream, nil
}

// resumeByGTID decides how the stream starts at p: by its GTID set
// (auto-positioning, which survives a failover) or by file and offset.
// MySQL auto-positions only with gtid_mode=ON, so its mode is read at
// every start: a server switched to OFF or *_PERMISSIVE, or one that never
// had GTIDs, is read by file and offset.
func (s *Source) resumeByGTID(p Position) (bool, error) {
	if p.GTIDSet == "" || s.cfg.Flavor != FlavorMySQL {
		return p.GTIDSet != "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	conn, err := s.dial(ctx)
	if err != nil {
		return false, connectError(s.addr(), s.cfg.User, err)
	}
	defer conn.Close()
	mode, err := gtidMode(conn)
	if err != nil {
		return false, err
	}
	if strings.EqualFold(mode, "ON") {
		return true, nil
	}
	if p.File == "" {
		return false, fmt.Errorf("%w: the position %s names no binlog file, and the server's gtid_mode is %s: GTID auto-positioning needs gtid_mode=ON; set it back to ON, or reset the position (sluice positions reset) and snapshot again", ErrBadPosition, p.String(), mode)
	}
	return false, nil
}

// anonymousSID is the server UUID of MySQL's anonymous GTID events
// (transactions logged without a GTID): it belongs in no GTID set.
const anonymousSID = "00000000-0000-0000-0000-000000000000"

// withoutAnonymous returns p's GTID set without the anonymous UUID, which
// older versions saved from anonymous GTID events (as
// "00000000-0000-0000-0000-000000000000:0", a set MySQL rejects with error
// 1773), and whether there was one to remove.
func withoutAnonymous(p Position) (string, bool) {
	if p.Flavor != FlavorMySQL || !strings.Contains(p.GTIDSet, anonymousSID) {
		return p.GTIDSet, false
	}
	var keep []string
	for _, part := range strings.Split(p.GTIDSet, ",") {
		if !strings.HasPrefix(strings.TrimSpace(part), anonymousSID) {
			keep = append(keep, strings.TrimSpace(part))
		}
	}
	return strings.Join(keep, ","), true
}

// gtidMode reads MySQL's @@GLOBAL.gtid_mode (OFF, OFF_PERMISSIVE,
// ON_PERMISSIVE or ON).
func gtidMode(conn *client.Conn) (string, error) {
	r, err := conn.Execute("SELECT @@GLOBAL.gtid_mode")
	if err != nil {
		return "", fmt.Errorf("binlog: read @@gtid_mode: %w", err)
	}
	mode, _ := r.GetString(0, 0)
	return mode, nil
}

// classify wraps err, marking a purged position as ErrPositionPurged, a
// stream another replica took over as ErrServerIDInUse and a refused login
// as ErrAccessDenied (all fatal); other errors are returned wrapped and
// unclassified, which the reconnect loop and the runtime retry.
func (s *Source) classify(err error, p Position) error {
	if schema.ClassOf(err) != schema.ClassUnknown {
		return err
	}
	if sameServerID(err) {
		// MySQL reports this as 1236, the code of a purged position too:
		// tell them apart before the purge diagnosis.
		return fmt.Errorf("%w: stream from %s at %s: %w; another replica with server_id %d connected to the server and took the stream over: give every pipeline and replica its own server_id (a second run of this pipeline stops by itself once its positions are fenced)", ErrServerIDInUse, s.addr(), p.String(), err, s.cfg.ServerID)
	}
	code, isServer := serverErrorCode(err)
	switch {
	case isServer && code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG && (s.cfg.Flavor != FlavorMySQL || purgedMessage(err)):
		return fmt.Errorf("%w: resuming at %s: %v; the binlog there was purged or never existed: snapshot the tables again and start from the current position", ErrPositionPurged, p.String(), err)
	case isServer && code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG:
		// The server would refuse every reconnect the same way.
		return fmt.Errorf("%w: resuming at %s: %v; if the server's gtid_mode changed, restart the pipeline (it resumes by file and offset unless gtid_mode is ON); otherwise reset the position (sluice positions reset) and snapshot again", ErrStreamRefused, p.String(), err)
	case isServer && (code == mysql.ER_MALFORMED_GTID_SET_ENCODING || code == mysql.ER_MALFORMED_GTID_SET_SPECIFICATION):
		return fmt.Errorf("%w: resuming at %s: the server cannot read the position's GTID set: %v; reset the position (sluice positions reset) and snapshot again", ErrBadPosition, p.String(), err)
	}
	if denied(err) {
		return fmt.Errorf("%w: stream from %s as %s: %w; grant REPLICATION SLAVE and REPLICATION CLIENT (MariaDB: BINLOG MONITOR) and check the password (sluice check)", ErrAccessDenied, s.addr(), s.cfg.User, err)
	}
	return fmt.Errorf("binlog: stream from %s at %s: %w", s.addr(), p.String(), err)
}

// purgedMessage reports a MySQL 1236 error that says the binlog at the
// position is gone (purged, or a file the server does not have), as
// opposed to a stream the server refuses for another reason.
func purgedMessage(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"purged", "could not find first log file", "could not open log file", "could not find next log", "binary log is not open"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// connectError classifies a failed connection: a refused login is fatal
// (ErrAccessDenied), anything else (server down, network) is left to retry.
func connectError(addr, user string, err error) error {
	if denied(err) {
		return fmt.Errorf("%w: connect to %s as %s: %w; check the source user and password (sluice check)", ErrAccessDenied, addr, user, err)
	}
	return fmt.Errorf("binlog: connect to %s as %s: %w", addr, user, err)
}

// denied reports the server refusing a login or a privilege.
func denied(err error) bool {
	code, ok := anyServerErrorCode(err)
	if !ok {
		return false
	}
	switch code {
	case mysql.ER_ACCESS_DENIED_ERROR, mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, mysql.ER_DBACCESS_DENIED_ERROR,
		mysql.ER_TABLEACCESS_DENIED_ERROR, mysql.ER_ACCESS_DENIED_NO_PASSWORD_ERROR:
		return true
	}
	return false
}

// isUnknownDatabase reports the server's "Unknown database" (1049).
func isUnknownDatabase(err error) bool {
	code, ok := anyServerErrorCode(err)
	return ok && code == mysql.ER_BAD_DB_ERROR
}

// anyServerErrorCode finds a server error in err's chain from either
// client: go-mysql's or database/sql's driver.
func anyServerErrorCode(err error) (uint16, bool) {
	if code, ok := serverErrorCode(err); ok {
		return code, true
	}
	var de *drv.MySQLError
	if errors.As(err, &de) {
		return de.Number, true
	}
	return 0, false
}

// sameServerID reports the server's answer to a second replica connecting
// with this one's server_id: MariaDB's error 4052, MySQL's 1236 with that
// text.
func sameServerID(err error) bool {
	code, ok := serverErrorCode(err)
	return ok && (code == 4052 || (code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG && strings.Contains(strings.ToLower(err.Error()), "same server_uuid/server_id")))
}

// serverErrorCode finds a server error in err's chain, following both
// Unwrap and the Cause of github.com/pingcap/errors.
func serverErrorCode(err error) (uint16, bool) {
	for i := 0; err != nil && i < 32; i++ {
		if me, ok := err.(*mysql.MyError); ok {
			return me.Code, true
		}
		switch x := err.(type) {
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Cause() error }:
			err = x.Cause()
		default:
			return 0, false
		}
	}
	return 0, false
}

// run reads events until ctx is done or a fatal error, reconnecting from
// the last committed position on connection loss.
func (s *Source) run(ctx context.Context, m *mapper, syncer *replication.BinlogSyncer, stream *replication.BinlogStreamer) {
	defer close(s.done)
	defer func() {
		if syncer != nil {
			syncer.Close()
		}
	}()
	if s.incr != nil {
		s.incr.next(ctx) // a snapshot the saved position was in the middle of
	}
	failures, denials := 0, 0
	for {
		err := s.pump(ctx, m, stream, &failures)
		if ctx.Err() != nil {
			return
		}
		syncer.Close()
		syncer = nil
		m.resetTx()
		err = s.classify(err, m.Committed())
		for schema.ClassOf(err) != schema.ClassFatal {
			failures++
			if failures > maxRetries {
				err = schema.Wrapf("binlog", err, "giving up after %d reconnects", maxRetries)
				break
			}
			delay := min(backoffInitial<<min(failures-1, 10), backoffMax)
			s.log.Warn("binlog: connection lost, reconnecting", "err", err, "attempt", failures, "delay", delay, "position", m.Committed().String())
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			syncer, stream, err = s.startSync(m.Committed())
			if err == nil {
				s.log.Info("binlog: reconnected", "position", m.Committed().String())
				denials = 0
				break
			}
			if errors.Is(err, ErrAccessDenied) && denials < maxDeniedReconnects {
				denials++
				s.log.Warn("binlog: the server refused the reconnect's login; retrying, since a restarting server may refuse it until its accounts are loaded", "err", err, "denied", denials, "of", maxDeniedReconnects)
				err = schema.Retriable(err)
			}
		}
		if err != nil {
			s.send(ctx, batch{err: err})
			return
		}
	}
}

// pump maps events to batches until an error.
func (s *Source) pump(ctx context.Context, m *mapper, stream *replication.BinlogStreamer, failures *int) error {
	for {
		ev, err := stream.GetEvent(s.wake.get(ctx))
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.Canceled) && s.wake.woken() && s.incr != nil {
				// a chunk handed over or a signal sent, maybe on an idle server
				if err := s.incr.step(ctx, m); err != nil {
					return err
				}
				continue
			}
			return err
		}
		*failures = 0
		if err := s.mapEvent(ctx, m, ev); err != nil {
			return err
		}
	}
}

// mapEvent maps one event and hands its records on.
func (s *Source) mapEvent(ctx context.Context, m *mapper, ev *replication.BinlogEvent) error {
	if s.rawMode() {
		if m.raw == nil {
			m.raw = newEventParser(s.syncerConfig())
		}
		parsed, err := m.raw.parse(ev)
		if err != nil {
			return fmt.Errorf("binlog: decoding a %s event (at %s:%d): %w", ev.Header.EventType, m.file, ev.Header.LogPos, err)
		}
		ev = parsed
	}
	m.emit = func(recs []schema.Record) error { return s.handOn(ctx, m, recs) }
	recs, err := m.Map(ev, nil)
	m.emit = nil
	if err != nil {
		// One "binlog:" prefix: the mapper's errors mostly carry it already.
		return schema.Wrapf("binlog", fmt.Errorf("%w (at %s:%d)", err, m.file, ev.Header.LogPos), "")
	}
	return s.handOn(ctx, m, recs)
}

// handOn sends records m made to Read, after saving the schema history
// they may depend on.
func (s *Source) handOn(ctx context.Context, m *mapper, recs []schema.Record) error {
	if m.hist != nil && len(m.hist.pending) > 0 {
		// on disk before any position after the statement is handed on
		if err := s.saveHistory(ctx, m.hist.pending); err != nil {
			return err
		}
		m.hist.pending = m.hist.pending[:0]
	}
	if s.incr != nil {
		recs = s.incr.observe(m, recs)
	}
	if len(recs) > 0 && !s.send(ctx, batch{recs: recs}) {
		return ctx.Err()
	}
	if s.incr != nil {
		return s.incr.step(ctx, m)
	}
	return nil
}

// catchUp streams from the mapper's position to the consistent point of a
// resumed snapshot. The interrupted run read part of the tables at an older
// point; streaming the changes since then, before the rest is read at the
// new point, brings every row forward (rows deleted meanwhile included) and
// keeps IDs growing: the changes order after the old point's rows and
// before the new point's. Positions handed on meanwhile carry the snapshot
// progress, so a restart resumes the snapshot again.
func (s *Source) catchUp(ctx context.Context, m *mapper, to Position) error {
	if atOrAfter(m.committed.File, m.committed.Pos, to) {
		return nil
	}
	s.log.Info("binlog: resumed snapshot: streaming the changes since the interrupted run", "from", m.Committed().String(), "to", to.String())
	syncer, stream, err := s.startSync(m.Committed())
	if err != nil {
		return err
	}
	defer syncer.Close()
	for {
		ev, err := stream.GetEvent(ctx)
		if err != nil {
			return schema.Wrapf("binlog", s.classify(err, m.Committed()), "resumed snapshot: catching the stream up from %s to %s", m.Committed().String(), to.String())
		}
		h := ev.Header
		if h.LogPos >= h.EventSize && h.LogPos > 0 && !m.inTx && h.EventType != replication.ROTATE_EVENT &&
			atOrAfter(m.file, h.LogPos-h.EventSize, to) {
			return nil // the event starts at or after the snapshot's point
		}
		if err := s.mapEvent(ctx, m, ev); err != nil {
			return err
		}
		if !m.inTx && atOrAfter(m.committed.File, m.committed.Pos, to) {
			return nil
		}
	}
}

// send hands b on to Read, first waiting for room in the queue's byte gate
// when b is sized.
func (s *Source) send(ctx context.Context, b batch) bool {
	if !s.queued.acquire(ctx, b.size) {
		return false
	}
	select {
	case s.ch <- b:
		return true
	case <-ctx.Done():
		return false
	}
}

// Read blocks until at least one record is ready or ctx is done and returns
// up to about 512 records in source order; a batch that would end inside a
// transaction waits for the transaction's commit, up to 8192 records.
// Commit records carry the position to resume from; no other record does.
func (s *Source) Read(ctx context.Context) ([]schema.Record, error) {
	s.mu.Lock()
	ch, queued, done, rest, sticky, closed := s.ch, s.queued, s.done, s.rest, s.err, s.closed
	s.rest = nil
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if sticky != nil && len(rest) == 0 {
		return nil, sticky
	}
	if ch == nil {
		return nil, errors.New("binlog: Read before Open")
	}
	out := rest
	if len(out) == 0 {
		select {
		case b := <-ch:
			queued.release(b.size)
			if b.err != nil {
				return nil, s.fail(b.err)
			}
			out = b.recs
		case <-done:
			select { // what the reader sent before it ended comes first
			case b := <-ch:
				queued.release(b.size)
				if b.err != nil {
					return nil, s.fail(b.err)
				}
				out = b.recs
			default:
				return nil, ErrClosed
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
gather:
	for len(out) < maxBatch || (insideTx(out) && len(out) < maxTxBatch) {
		select {
		case b := <-ch:
			queued.release(b.size)
			if b.err != nil {
				s.fail(b.err) // returned by the next Read
				return out, nil
			}
			out = appendBatch(out, b.recs)
			continue
		default:
		}
		if !insideTx(out) {
			break
		}
		// The batch would end inside a transaction. Its rest is already in
		// the binlog (a transaction is logged at its commit), so wait for
		// it: transports mark transaction ends only when the commit comes
		// in the same batch as the rows.
		select {
		case b := <-ch:
			queued.release(b.size)
			if b.err != nil {
				s.fail(b.err)
				return out, nil
			}
			out = appendBatch(out, b.recs)
		case <-done:
			break gather
		case <-ctx.Done():
			return out, nil
		}
	}
	if end := batchEnd(out); end < len(out) {
		s.mu.Lock()
		s.rest = out[end:]
		s.mu.Unlock()
		out = out[:end:end]
	}
	return out, nil
}

// insideTx reports whether recs end inside a transaction: its last record
// belongs to one and is not its commit (commit records carry a Position).
func insideTx(recs []schema.Record) bool {
	if len(recs) == 0 {
		return false
	}
	last := &recs[len(recs)-1]
	return last.Position == nil && last.Transaction != nil && last.Transaction.ID != ""
}

// appendBatch appends recs to a Read batch out, growing it once to a full
// batch's size rather than doubling and copying it as it fills (a record
// is 384 bytes).
func appendBatch(out, recs []schema.Record) []schema.Record {
	if len(out)+len(recs) > cap(out) {
		out = slices.Grow(out, max(maxBatch, 2*len(out))+len(recs)-len(out))
	}
	return append(out, recs...)
}

// batchEnd is where a Read batch ends: all of recs up to maxBatch records;
// past that, at the first transaction boundary, up to maxTxBatch records.
func batchEnd(recs []schema.Record) int {
	if len(recs) <= maxBatch {
		return len(recs)
	}
	for i := maxBatch - 1; i < len(recs) && i < maxTxBatch; i++ {
		if recs[i].Position != nil {
			return i + 1
		}
	}
	return min(len(recs), maxTxBatch)
}

func (s *Source) fail(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
	return s.err
}

// Close stops reading and releases the connection. It is safe to call more
// than once and from any goroutine.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	if s.hints != nil {
		s.hints.close()
	}
	return nil
}

// openHistory loads the schema history up to start; an empty history is
// seeded with the CREATE TABLE of every included table, at start.
func (s *Source) openHistory(ctx context.Context, store HistoryStore, conn *client.Conn, start Position) (*schemaHistory, error) {
	h, err := loadStoredHistory(ctx, store, start)
	if err != nil {
		return nil, err
	}
	if h.last != nil {
		if comparePositions(*h.last, start) < 0 {
			s.log.Info("binlog: schema history loaded", "store", store.String(), "tables", len(h.tables))
		}
		return h, nil
	}
	ids, err := listCaptured(ctx, clientCatalog(conn), newFilter(s.cfg.Include, s.cfg.Exclude))
	if err != nil {
		return nil, fmt.Errorf("binlog: schema history: list tables: %w", err)
	}
	var entries []HistoryEntry
	for _, id := range ids {
		db, table := id.Database, id.Table
		cr, err := conn.Execute("SHOW CREATE TABLE " + quoteIdent(db) + "." + quoteIdent(table))
		if err != nil {
			return nil, fmt.Errorf("binlog: schema history: SHOW CREATE TABLE %s.%s (grant SELECT): %w", db, table, err)
		}
		ddl, _ := cr.GetString(0, 1)
		if err := h.apply(ddl, db); err != nil {
			return nil, fmt.Errorf("%w: SHOW CREATE TABLE %s.%s gave %q: %v", ErrUnparsedDDL, db, table, ddl, err)
		}
		entries = append(entries, HistoryEntry{Position: start, DB: db, DDL: ddl})
	}
	if len(entries) == 0 {
		// an entry that changes nothing marks the history as started
		entries = append(entries, HistoryEntry{Position: start, DB: "", DDL: "-- schema history started"})
	}
	if err := s.saveHistory(ctx, entries); err != nil {
		return nil, err
	}
	p := start
	h.last = &p
	s.log.Info("binlog: schema history started", "store", store.String(), "tables", len(h.tables), "position", start.String())
	return h, nil
}

// saveHistory appends entries to the schema history before any position
// after them is handed on. A failure the store does not call fatal is
// retried a few times; a fatal one (a writer fenced off: another worker
// holds the task now) stops the source, still matching the store's error.
func (s *Source) saveHistory(ctx context.Context, entries []HistoryEntry) error {
	store := s.cfg.historyStore()
	var err error
	delay := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if err = store.Append(ctx, entries...); err == nil {
			return nil
		}
		if schema.ClassOf(err) == schema.ClassFatal || attempt == 5 {
			break
		}
		s.log.Warn("binlog: schema history: append failed, retrying", "store", store.String(), "err", err, "attempt", attempt)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay *= 2
	}
	if schema.ClassOf(err) == schema.ClassFatal {
		return schema.Wrapf("binlog", err, "schema history %s", store)
	}
	return fmt.Errorf("%w: schema history %s: %v", ErrUnsupported, store, err)
}
