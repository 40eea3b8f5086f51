package binlog

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	drv "github.com/go-sql-driver/mysql"

	"github.com/sluicecdc/sluice/binlog/charset"
	"github.com/sluicecdc/sluice/schema"
)

const snapshotLogEvery = 10 * time.Second

// SnapshotStats counts the progress of the initial snapshot of a Source.
type SnapshotStats struct {
	Tables     int64 // tables this run of the snapshot reads
	TablesDone int64 // tables finished
	Rows       int64 // rows read so far
	Running    bool  // a snapshot is in progress
	// EstimatedRows is the server's estimate of the rows of all tables
	// (information_schema.TABLES.TABLE_ROWS; approximate for InnoDB).
	EstimatedRows int64
	// StartedMs is when this run of the snapshot began (Unix ms; 0: none).
	StartedMs int64
}

type snapCounters struct {
	tables, tablesDone, rows, estRows, startedMs atomic.Int64
	running                                      atomic.Bool
	// readers is how many connections read the snapshot's tables;
	// inFlight the bytes of rows read and not yet handed on as records,
	// and peakInFlight its highest value (parallel.go).
	readers, inFlight, peakInFlight atomic.Int64
}

// SnapshotStats returns the progress of the initial snapshot (zero when the
// source did not snapshot).
func (s *Source) SnapshotStats() SnapshotStats {
	return SnapshotStats{Tables: s.snap.tables.Load(), TablesDone: s.snap.tablesDone.Load(),
		Rows: s.snap.rows.Load(), Running: s.snap.running.Load(), EstimatedRows: s.snap.estRows.Load(), StartedMs: s.snap.startedMs.Load()}
}

// snapshotter reads the included tables inside one consistent-snapshot
// transaction on one connection.
type snapshotter struct {
	s     *Source
	db    *sql.DB
	conn  *sql.Conn
	start Position // the streaming position the snapshot is consistent with
	// from, for a resumed snapshot, is where the interrupted run's stream
	// stood: the stream is caught up from there to start before the rest
	// of the snapshot is read (see Source.catchUp).
	from   *Position
	rows   uint64 // rows numbered so far: the next row's ID index
	tables []schema.TableID
	resume *SnapshotProgress // nil: from the first table's start
	fresh  bool              // a new snapshot, not a resumed one
	ms     int64             // when the snapshot started, for source.ts_ms
	// readers are the connections that read key ranges of one table in
	// parallel (Config.SnapshotThreads > 1), each in a transaction that
	// sees exactly the snapshot conn sees (begin); none: conn reads.
	readers []*snapshotter
}

// snapTable is one table as the snapshot reads it.
type snapTable struct {
	ti         *tableInfo
	charsets   []string // per column, "" when none
	collations []string // per column, "" when none
	keyable    bool     // keyset pagination on the primary key is possible
	selectList string
	keyList    string // the key columns as selectList selects them
	// avgRow is the estimated size of a row read last (readRange).
	avgRow  atomic.Int64
	from    string
	orderBy string
	estRows int64
}

// openSnapshotter opens the snapshot's connection, in the session the
// snapshot reads in (binary names, UTC), with no transaction begun.
func (s *Source) openSnapshotter(ctx context.Context) (_ *snapshotter, err error) {
	dc := drv.NewConfig()
	dc.User, dc.Passwd, dc.Net, dc.Addr = s.cfg.User, s.cfg.Password, "tcp", net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.Port))
	dc.Timeout = dialTimeout
	dc.TLS = s.tlsConfig()
	conn, err := drv.NewConnector(dc)
	if err != nil {
		return nil, fmt.Errorf("binlog: snapshot connection: %w", err)
	}
	sn := &snapshotter{s: s, db: sql.OpenDB(conn), ms: time.Now().UnixMilli()}
	sn.db.SetMaxOpenConns(1)
	defer func() {
		if err != nil {
			sn.close()
		}
	}()
	if sn.conn, err = sn.db.Conn(ctx); err != nil {
		return nil, fmt.Errorf("binlog: snapshot: connect to %s as %s: %w", s.addr(), s.cfg.User, tlsError(&s.cfg, s.addr(), err))
	}
	for _, q := range []string{
		"SET NAMES binary", // raw bytes in each column's own charset, decoded like the binlog's
		"SET time_zone = '+00:00'",
	} {
		if _, err := sn.conn.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("binlog: snapshot: %s: %w", q, err)
		}
	}
	return sn, nil
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// prepareSnapshot opens the snapshot connection, starts the consistent
// snapshot transaction and lists the tables to read. resume, when set,
// continues an interrupted snapshot whose streaming position is start.
func (s *Source) prepareSnapshot(ctx context.Context, start Position, resume *SnapshotProgress) (_ *snapshotter, err error) {
	sn, err := s.openSnapshotter(ctx)
	if err != nil {
		return nil, err
	}
	sn.resume, sn.fresh = resume, resume == nil
	defer func() {
		if err != nil {
			sn.close()
		}
	}()
	if err := sn.openReaders(ctx); err != nil {
		return nil, err
	}
	for _, c := range sn.conns() {
		if _, err := c.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
			return nil, fmt.Errorf("binlog: snapshot: SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ: %w", err)
		}
	}
	pos, err := sn.begin(ctx)
	if err != nil {
		return nil, err
	}
	// A fresh snapshot begins a new epoch: its rows order after everything
	// read before (an earlier history, a reset). A resumed one goes on in
	// the epoch of the interrupted run, at a new consistent point: its
	// stream is caught up to that point first, then it reads the rest.
	sn.start = pos
	if resume == nil {
		sn.start.Epoch = newEpoch()
	} else {
		sn.start.Epoch = start.Epoch
		from := start
		sn.from = &from
		sn.rows = resume.Rows
	}
	if sn.tables, err = sn.listTables(ctx); err != nil {
		return nil, err
	}
	return sn, nil
}

// startPosition is where a fresh snapshot stands before it reads a row: at
// its consistent point, in its epoch, at the start of its first table (a
// snapshot of no table is complete there, and streams on from it).
func (sn *snapshotter) startPosition() Position {
	p := sn.start
	if len(sn.tables) > 0 {
		p.Snapshot = &SnapshotProgress{Database: sn.tables[0].Database, Table: sn.tables[0].Table}
	}
	return p
}

// begin starts the consistent-snapshot transaction and returns the binlog
// position it is consistent with. MariaDB reports that position inside the
// transaction (binlog_snapshot_file/position), so no global lock is taken;
// MySQL needs FLUSH TABLES WITH READ LOCK for the instant of reading it.
//
// The parallel readers' transactions see the same snapshot as conn's. On
// MySQL each begins while the same global read lock is held, as conn's
// does: no transaction commits between them. On MariaDB, still without a
// lock, all begin at once and each reads its own binlog_snapshot_position:
// MariaDB takes a consistent snapshot in the binlog's commit order, so
// equal positions are equal snapshots. When a commit fell between them,
// all roll back and begin again; after mariaDBSnapshotAttempts tries the
// snapshot goes on with conn alone (one reader), as strong as ever.
func (sn *snapshotter) begin(ctx context.Context) (Position, error) {
	p := Position{Version: PositionVersion, Flavor: sn.s.cfg.Flavor}
	if sn.s.cfg.Flavor == FlavorMariaDB {
		var err error
		if p.File, p.Pos, err = sn.beginMariaDB(ctx); err != nil {
			return p, err
		}
		var gtid sql.NullString
		if err := sn.conn.QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", p.File, p.Pos).Scan(&gtid); err != nil {
			return p, fmt.Errorf("binlog: snapshot: BINLOG_GTID_POS: %w", err)
		}
		p.GTIDSet = gtid.String
		return p, nil
	}
	if _, err := sn.conn.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		return p, fmt.Errorf("binlog: snapshot: FLUSH TABLES WITH READ LOCK (grant RELOAD): %w", err)
	}
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			_, _ = sn.conn.ExecContext(context.WithoutCancel(ctx), "UNLOCK TABLES")
		}
	}
	defer unlock()
	for i, c := range sn.conns() {
		if err := startSnapshotTx(ctx, c); err != nil {
			return p, err
		}
		if i == 0 {
			snapshotBegun()
		}
	}
	status, err := sn.binlogStatus(ctx)
	// The status rows are closed by now: UNLOCK TABLES on a connection whose
	// result set is still open waits for ever.
	unlock()
	if err != nil {
		return p, err
	}
	p.File, p.GTIDSet = status["File"], strings.ReplaceAll(strings.TrimSpace(status["Executed_Gtid_Set"]), "\n", "")
	n, _ := strconv.ParseUint(status["Position"], 10, 32)
	p.Pos = uint32(n)
	return p, nil
}

// binlogStatus reads the one row of SHOW BINARY LOG STATUS (SHOW MASTER
// STATUS before MySQL 8.4) by column name, and closes its result set before
// it returns.
func (sn *snapshotter) binlogStatus(ctx context.Context) (map[string]string, error) {
	rows, err := sn.conn.QueryContext(ctx, "SHOW BINARY LOG STATUS")
	if err != nil {
		rows, err = sn.conn.QueryContext(ctx, "SHOW MASTER STATUS")
	}
	if err != nil {
		return nil, fmt.Errorf("binlog: snapshot: read the binlog position (grant REPLICATION CLIENT): %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("binlog: snapshot: read the binlog position: %w", err)
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("binlog: snapshot: read the binlog position: %w", err)
		}
		return nil, errors.New("binlog: snapshot: the server has no binary log; start it with log-bin, binlog-format=ROW")
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, fmt.Errorf("binlog: snapshot: read the binlog position: %w", err)
	}
	out := make(map[string]string, len(cols))
	for i, c := range cols {
		out[c] = vals[i].String
	}
	for rows.Next() { // drain, so Close leaves the connection free
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("binlog: snapshot: read the binlog position: %w", err)
	}
	return out, nil
}

// listTables lists the included base tables in (database, table) order,
// without those a resumed snapshot already finished.
func (sn *snapshotter) listTables(ctx context.Context) ([]schema.TableID, error) {
	out, err := listCaptured(ctx, sn.catalog, newFilter(sn.s.cfg.Include, sn.s.cfg.Exclude))
	if err != nil {
		return nil, fmt.Errorf("binlog: snapshot: list tables: %w", err)
	}
	out = slices.DeleteFunc(out, func(id schema.TableID) bool { // signals are not data
		return strings.EqualFold(id.String(), sn.s.cfg.SignalTable)
	})
	if sn.resume != nil {
		r := schema.TableID{Database: sn.resume.Database, Table: sn.resume.Table}
		out = slices.DeleteFunc(out, func(id schema.TableID) bool { return compareTableID(id, r) < 0 })
	}
	return out, nil
}

// catalog is listCaptured's catalogQuery on the snapshot connection.
func (sn *snapshotter) catalog(ctx context.Context, query string, args ...any) ([][]string, error) {
	rows, err := sn.conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func compareTableID(a, b schema.TableID) int {
	if c := strings.Compare(a.Database, b.Database); c != 0 {
		return c
	}
	return strings.Compare(a.Table, b.Table)
}

func (sn *snapshotter) close() {
	for _, r := range sn.readers {
		r.close()
	}
	if sn.conn != nil {
		_, _ = sn.conn.ExecContext(context.Background(), "COMMIT")
		sn.conn.Close()
	}
	sn.db.Close()
}

// loadTable reads a table's columns and primary key from information_schema
// and builds the same schemas the binlog's table map gives.
func (sn *snapshotter) loadTable(ctx context.Context, id schema.TableID) (*snapTable, error) {
	var checked map[string]bool // MariaDB's JSON: LONGTEXT with a json_valid CHECK
	if sn.s.cfg.Flavor == FlavorMariaDB {
		var err error
		if checked, err = jsonChecked(ctx, sn.catalog, id); err != nil {
			return nil, err
		}
	}
	rows, err := sn.conn.QueryContext(ctx, `SELECT COLUMN_NAME, LOWER(DATA_TYPE), COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, COLLATION_NAME,
  CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, COLUMN_DEFAULT
  FROM information_schema.COLUMNS c WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, id.Database, id.Table)
	if err != nil {
		return nil, fmt.Errorf("binlog: snapshot: columns of %s: %w", id, err)
	}
	st := &snapTable{from: quoteIdent(id.Database) + "." + quoteIdent(id.Table)}
	var specs []colSpec
	for rows.Next() {
		var ic infoColumn
		if err := rows.Scan(&ic.name, &ic.dataType, &ic.columnType, &ic.nullable, &ic.charset, &ic.collation,
			&ic.octets, &ic.precision, &ic.scale, &ic.fsp, &ic.def); err != nil {
			rows.Close()
			return nil, err
		}
		ic.jsonChecked = checked[ic.name]
		sp, err := ic.spec()
		sp.flavor = sn.s.cfg.Flavor
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("table %s column %s: %w", id, ic.name, err)
		}
		specs = append(specs, sp)
		st.charsets = append(st.charsets, sp.charset)
		st.collations = append(st.collations, ic.collation.String)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, nil // dropped since it was listed
	}
	for i := range specs {
		if err := sn.recoverLabels(ctx, id, &specs[i]); err != nil {
			return nil, err
		}
	}
	var pk []int
	krows, err := sn.conn.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
  WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX`, id.Database, id.Table)
	if err != nil {
		return nil, fmt.Errorf("binlog: snapshot: primary key of %s: %w", id, err)
	}
	for krows.Next() {
		var name string
		if err := krows.Scan(&name); err != nil {
			krows.Close()
			return nil, err
		}
		for i, sp := range specs {
			if sp.name == name {
				pk = append(pk, i)
			}
		}
	}
	krows.Close()
	if st.ti, err = buildTableSpecs(id, specs, pk, sn.s.cfg.ServerName); err != nil {
		return nil, err
	}
	if err := sn.s.columns.apply(st.ti, sn.s.cfg.ServerName); err != nil {
		return nil, err
	}
	list := make([]string, len(specs))
	for i, c := range st.ti.cols {
		list[i] = quoteIdent(c.name)
		if c.kind == kFloat32 {
			// FLOAT's text form keeps 6 digits; as a double it is exact.
			list[i] = "(" + list[i] + " + 0e0)"
		}
	}
	st.selectList = strings.Join(list, ", ")
	st.keyable = len(pk) > 0
	order, keys := make([]string, len(pk)), make([]string, len(pk))
	for i, k := range pk {
		order[i], keys[i] = quoteIdent(specs[k].name), list[k]
		switch st.ti.cols[k].kind {
		case kEnum, kSet, kJSON, kGeometry: // compared as text, sorted by index
			st.keyable = false
		}
	}
	st.orderBy, st.keyList = strings.Join(order, ", "), strings.Join(keys, ", ")
	var est sql.NullInt64
	_ = sn.conn.QueryRowContext(ctx, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", id.Database, id.Table).Scan(&est)
	st.estRows = est.Int64
	return st, nil
}

// infoColumn is one row of information_schema.COLUMNS.
type infoColumn struct {
	name, dataType, columnType, nullable string
	charset, collation                   sql.NullString
	octets, precision, scale, fsp        sql.NullInt64
	jsonChecked                          bool // a json_valid CHECK on the column (MariaDB's JSON)
	def                                  sql.NullString
}

// spec rebuilds the table map's type byte and metadata of the column.
func (ic *infoColumn) spec() (colSpec, error) {
	sp := colSpec{name: ic.name, nullable: ic.nullable == "YES",
		unsigned: strings.Contains(strings.ToLower(ic.columnType), "unsigned"), charset: csBinary,
		colType: strings.ToLower(ic.columnType)}
	if ic.def.Valid {
		sp.def = &ic.def.String
	}
	if ic.charset.Valid {
		sp.charset = ic.charset.String
		if sp.charset == "utf8" {
			sp.charset = csUTF8MB3
		}
		sp.collation = normCollation(ic.collation.String)
	}
	octets := uint16(min(max(ic.octets.Int64, 0), 65535))
	switch ic.dataType {
	case "tinyint":
		sp.typ = mysql.MYSQL_TYPE_TINY
		if strings.HasPrefix(strings.ToLower(ic.columnType), "tinyint(1)") {
			sp.ext = extTinyint1
		}
	case "smallint":
		sp.typ = mysql.MYSQL_TYPE_SHORT
	case "mediumint":
		sp.typ = mysql.MYSQL_TYPE_INT24
	case "int", "integer":
		sp.typ = mysql.MYSQL_TYPE_LONG
	case "bigint":
		sp.typ = mysql.MYSQL_TYPE_LONGLONG
	case "float":
		sp.typ = mysql.MYSQL_TYPE_FLOAT
	case "double", "real", "double precision":
		sp.typ = mysql.MYSQL_TYPE_DOUBLE
	case "decimal", "numeric":
		sp.typ = mysql.MYSQL_TYPE_NEWDECIMAL
		sp.meta = uint16(ic.precision.Int64)<<8 | uint16(ic.scale.Int64)
	case "bit":
		n := uint16(ic.precision.Int64)
		sp.typ, sp.meta = mysql.MYSQL_TYPE_BIT, (n/8)<<8|n%8
	case "year":
		sp.typ = mysql.MYSQL_TYPE_YEAR
	case "date":
		sp.typ = mysql.MYSQL_TYPE_DATE
	case "time":
		sp.typ, sp.meta = mysql.MYSQL_TYPE_TIME2, uint16(ic.fsp.Int64)
	case "datetime":
		sp.typ, sp.meta = mysql.MYSQL_TYPE_DATETIME2, uint16(ic.fsp.Int64)
	case "timestamp":
		sp.typ, sp.meta = mysql.MYSQL_TYPE_TIMESTAMP2, uint16(ic.fsp.Int64)
	case "varchar", "varbinary":
		sp.typ, sp.meta = mysql.MYSQL_TYPE_VARCHAR, octets
	case "char", "binary":
		// the table map's encoding: real type in the high byte, with bits
		// 8-9 of the length folded into it
		sp.typ = mysql.MYSQL_TYPE_STRING
		sp.meta = uint16(mysql.MYSQL_TYPE_STRING^byte((octets&0x300)>>4))<<8 | octets&0xFF
	case "tinytext", "tinyblob":
		sp.typ, sp.meta = mysql.MYSQL_TYPE_BLOB, 1
	case "text", "blob":
		sp.typ, sp.meta = mysql.MYSQL_TYPE_BLOB, 2
	case "mediumtext", "mediumblob":
		sp.typ, sp.meta = mysql.MYSQL_TYPE_BLOB, 3
	case "longtext", "longblob":
		sp.typ, sp.meta = mysql.MYSQL_TYPE_BLOB, 4
		if ic.jsonChecked && ic.dataType == "longtext" {
			sp.ext = extJSON
		}
	case "json":
		sp.typ = mysql.MYSQL_TYPE_JSON
	case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection", "geomcollection":
		sp.typ = mysql.MYSQL_TYPE_GEOMETRY
	case "vector":
		sp.typ = mysql.MYSQL_TYPE_VECTOR
	case "uuid", "inet6", "inet4":
		n := uint16(16)
		if ic.dataType == "inet4" {
			n = 4
		}
		sp.typ, sp.charset, sp.ext = mysql.MYSQL_TYPE_STRING, csBinary, ic.dataType
		sp.meta = uint16(mysql.MYSQL_TYPE_STRING)<<8 | n
	case "enum", "set":
		labels, err := parseLabels(ic.columnType)
		if err != nil {
			return sp, err
		}
		sp.labels = labels
		b0 := byte(mysql.MYSQL_TYPE_ENUM)
		if ic.dataType == "set" {
			b0 = mysql.MYSQL_TYPE_SET
		}
		sp.typ, sp.meta = mysql.MYSQL_TYPE_STRING, uint16(b0)<<8|1
	default:
		return sp, schema.Fatal(fmt.Errorf("%w: column type %s in a snapshot; leave the column out with exclude_columns or the table with exclude", ErrUnsupported, ic.columnType))
	}
	return sp, nil
}

// recoverLabels replaces the ENUM/SET labels MySQL's information_schema
// lost: its data dictionary keeps COLUMN_TYPE (and SHOW CREATE TABLE
// prints it) in utf8mb3, so a label with a character outside the BMP reads
// as '?'. Such a label is read from a row that holds it (the rows carry
// it intact; ENUM compares with its index, SET with its bits); a label no
// row holds keeps the '?' (no snapshot row can need it; streaming reads
// the labels from the table map).
func (sn *snapshotter) recoverLabels(ctx context.Context, id schema.TableID, sp *colSpec) error {
	// (MariaDB stores such a label as '?' itself.)
	if sn.s.cfg.Flavor != FlavorMySQL || charset.MaxBytesPerChar(sp.charset) < 4 || !slices.ContainsFunc(sp.labels, func(l string) bool { return strings.Contains(l, "?") }) {
		return nil
	}
	isSet := sp.typ == mysql.MYSQL_TYPE_STRING && byte(sp.meta>>8) == mysql.MYSQL_TYPE_SET
	col := quoteIdent(sp.name)
	for i, l := range sp.labels {
		if !strings.Contains(l, "?") {
			continue
		}
		var raw []byte
		var mask uint64
		where := col + " = ?"
		if isSet {
			where = col + " & ? <> 0"
		}
		arg := uint64(i + 1)
		if isSet {
			arg = 1 << uint(i)
		}
		err := sn.conn.QueryRowContext(ctx, "SELECT "+col+", "+col+" + 0 FROM "+quoteIdent(id.Database)+"."+quoteIdent(id.Table)+" WHERE "+where+" LIMIT 1", arg).Scan(&raw, &mask)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("binlog: snapshot: labels of %s.%s: %w", id, sp.name, err)
		}
		text := charset.Decode(raw, sp.charset)
		if !isSet {
			sp.labels[i] = text
			continue
		}
		// the k-th label of the value is its k-th member bit
		parts := strings.Split(text, ",")
		k := bits.OnesCount64(mask & (1<<uint(i) - 1))
		if k < len(parts) && bits.OnesCount64(mask) == len(parts) {
			sp.labels[i] = parts[k]
		}
	}
	sn.s.log.Warn("binlog: information_schema gives '?' for an ENUM/SET label outside the BMP; the labels were read from the rows",
		"table", id.String(), "column", sp.name, "labels", len(sp.labels))
	return nil
}

// parseLabels reads the labels of "enum('a','b”c')" or "set(...)".
func parseLabels(columnType string) ([]string, error) {
	open := strings.IndexByte(columnType, '(')
	if open < 0 || !strings.HasSuffix(columnType, ")") {
		return nil, fmt.Errorf("%w: cannot read the labels of %q", ErrUnsupported, columnType)
	}
	s := columnType[open+1 : len(columnType)-1]
	labels := []string{}
	for len(s) > 0 {
		if s[0] != '\'' {
			return nil, fmt.Errorf("%w: cannot read the labels of %q", ErrUnsupported, columnType)
		}
		var b strings.Builder
		i := 1
		for ; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				break
			}
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
		}
		if i >= len(s) {
			return nil, fmt.Errorf("%w: unterminated label in %q", ErrUnsupported, columnType)
		}
		labels = append(labels, b.String())
		s = s[i+1:]
		if strings.HasPrefix(s, ",") {
			s = s[1:]
		} else if s != "" {
			return nil, fmt.Errorf("%w: cannot read the labels of %q", ErrUnsupported, columnType)
		}
	}
	return labels, nil
}

// textValue converts a value of the text protocol (connection charset
// binary) to the decoded-binlog form and then through the same conversion
// as the streaming path.
func textValue(c *column, cs string, raw []byte, zeroAsNull bool) (any, error) {
	if raw == nil {
		return nil, nil
	}
	var v any
	var err error
	switch c.kind {
	case kInt, kYear:
		v, err = strconv.ParseInt(string(raw), 10, 64)
	case kUint64:
		v, err = strconv.ParseUint(string(raw), 10, 64)
	case kFloat32, kFloat64:
		v, err = strconv.ParseFloat(string(raw), 64)
	case kDecimal, kDate, kTime, kDatetime, kTimestamp, kJSON:
		v = string(raw)
	case kBits:
		if len(raw) > 8 {
			return nil, fmt.Errorf("%w: column %s: %d-byte BIT value", ErrUnsupported, c.name, len(raw))
		}
		var n uint64
		for _, b := range raw {
			n = n<<8 | uint64(b)
		}
		v = n
	case kString, kBytes, kGeometry:
		v = raw
	case kUUID, kInet6, kInet4:
		v, err = extBinary(c, raw) // the server's text, back to the binlog's bytes
	case kEnum:
		label := charset.Decode(raw, cs)
		if label == "" {
			v = int64(0)
			break
		}
		i := slices.Index(c.labels, label)
		if i < 0 {
			return nil, fmt.Errorf("%w: column %s: %q is not one of its labels", ErrUnsupported, c.name, label)
		}
		v = int64(i + 1)
	case kSet:
		var bits int64
		if len(raw) > 0 {
			for _, l := range strings.Split(charset.Decode(raw, cs), ",") {
				i := slices.Index(c.labels, l)
				if i < 0 {
					return nil, fmt.Errorf("%w: column %s: %q is not one of its labels", ErrUnsupported, c.name, l)
				}
				bits |= 1 << uint(i)
			}
		}
		v = bits
	default:
		v = raw
	}
	if err != nil {
		return nil, fmt.Errorf("%w: column %s: %v", ErrUnsupported, c.name, err)
	}
	return mapValue(c, v, zeroAsNull)
}

// keyLiteral renders the text form of a key value as an SQL literal that
// compares the way the column sorts. It rejects text that is not of the
// column's kind, so a tampered position cannot inject SQL.
func keyLiteral(c *column, cs, collation string, raw []byte) (string, error) {
	bad := func() (string, error) {
		return "", fmt.Errorf("%w: snapshot key %q is not a valid %s value", ErrBadPosition, truncate(raw, 40), c.name)
	}
	only := func(allowed string) bool {
		if len(raw) == 0 {
			return false
		}
		for _, b := range raw {
			if !strings.ContainsRune(allowed, rune(b)) {
				return false
			}
		}
		return true
	}
	switch c.kind {
	case kInt, kYear:
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return bad()
		}
		return strconv.FormatInt(n, 10), nil
	case kUint64:
		n, err := strconv.ParseUint(string(raw), 10, 64)
		if err != nil {
			return bad()
		}
		return strconv.FormatUint(n, 10), nil
	case kDecimal:
		d, err := schema.ParseDec(string(raw))
		if err != nil {
			return bad()
		}
		return d.String(), nil
	case kFloat32, kFloat64:
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return bad()
		}
		return strconv.FormatFloat(f, 'e', -1, 64), nil // a DOUBLE literal
	case kDate, kTime, kDatetime, kTimestamp:
		if !only("0123456789-:. ") {
			return bad()
		}
		return "'" + string(raw) + "'", nil
	case kBits:
		if len(raw) > 8 {
			return bad()
		}
		var n uint64
		for _, b := range raw {
			n = n<<8 | uint64(b)
		}
		return strconv.FormatUint(n, 10), nil
	case kBytes:
		return "X'" + hex.EncodeToString(raw) + "'", nil
	case kUUID, kInet6, kInet4:
		b, err := extBinary(c, raw)
		if err != nil {
			return bad()
		}
		// the binary form: under SET NAMES binary the server does not parse
		// text cast to these types (CAST('::1' AS INET6) is NULL)
		return "CAST(X'" + hex.EncodeToString(b) + "' AS " + map[kind]string{kUUID: "UUID", kInet6: "INET6", kInet4: "INET4"}[c.kind] + ")", nil
	case kString:
		if !isName(cs) || !isName(collation) {
			return bad()
		}
		return "_" + cs + " X'" + hex.EncodeToString(raw) + "' COLLATE " + collation, nil
	}
	return bad()
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// chunkQuery builds the query of the next chunk after key (nil: the first).
func (st *snapTable) chunkQuery(key [][]byte, limit int) (string, error) {
	return st.boundedChunkQuery(key, nil, limit)
}

// boundedChunkQuery is chunkQuery for the rows whose key is also at most
// upTo (nil: no bound).
func (st *snapTable) boundedChunkQuery(key, upTo [][]byte, limit int) (string, error) {
	return st.keysetQuery(st.selectList, key, upTo, " LIMIT "+strconv.Itoa(limit))
}

// keysetQuery selects sel from the rows after key up to upTo (nil: no
// bound) in key order, with tail (LIMIT ...) after the ORDER BY.
func (st *snapTable) keysetQuery(sel string, key, upTo [][]byte, tail string) (string, error) {
	q := "SELECT " + sel + " FROM " + st.from
	if !st.keyable {
		return q, nil
	}
	var where []string
	if key != nil {
		c, err := st.keyAfter(key)
		if err != nil {
			return "", err
		}
		where = append(where, c)
	}
	if upTo != nil {
		c, err := st.keyAfter(upTo)
		if err != nil {
			return "", err
		}
		where = append(where, "NOT ("+c+")")
	}
	if len(where) == 2 {
		where[0] = "(" + where[0] + ")"
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q + " ORDER BY " + st.orderBy + tail, nil
}

// keyAfter is the condition "the primary key is greater than key", with
// (a, b) > (x, y) spelled out, which every optimizer turns into a range.
func (st *snapTable) keyAfter(key [][]byte) (string, error) {
	if len(key) != len(st.ti.keyIdx) {
		return "", fmt.Errorf("%w: snapshot key of %s has %d values, the primary key has %d columns", ErrBadPosition, st.ti.id, len(key), len(st.ti.keyIdx))
	}
	lits := make([]string, len(key))
	for i, k := range st.ti.keyIdx {
		l, err := keyLiteral(&st.ti.cols[k], st.charsets[k], st.collations[k], key[i])
		if err != nil {
			return "", err
		}
		lits[i] = l
	}
	var ors []string
	for i := range key {
		var ands []string
		for j := 0; j < i; j++ {
			ands = append(ands, quoteIdent(st.ti.cols[st.ti.keyIdx[j]].name)+" = "+lits[j])
		}
		ands = append(ands, quoteIdent(st.ti.cols[st.ti.keyIdx[i]].name)+" > "+lits[i])
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	return strings.Join(ors, " OR "), nil
}

// row decodes one row a chunk query read (raw, in selectList's order) into
// the record's row, with the notes of its zero dates when keepZero is set.
func (st *snapTable) row(raw []sql.RawBytes, zeroAsNull, keepZero bool) (schema.Row, []string, error) {
	row := make(schema.Row, len(raw))
	var zeros []string
	for i := range raw {
		var err error
		if row[i], err = textValue(&st.ti.cols[i], st.charsets[i], raw[i], zeroAsNull); err != nil {
			return nil, nil, err
		}
		if keepZero && raw[i] != nil {
			zeros = zeroDateNote(zeros, st.ti, i, string(raw[i]))
		}
	}
	return st.ti.project(row), zeros, nil
}

// run reads every table and sends OpRead records; the last one carries the
// plain streaming position.
func (sn *snapshotter) run(ctx context.Context) error {
	s := sn.s
	s.snap.startedMs.Store(time.Now().UnixMilli())
	s.snap.running.Store(true)
	defer s.snap.running.Store(false)
	s.snap.tables.Store(int64(len(sn.tables)))
	var est int64 // the server's row estimates, for progress and ETA
	for _, id := range sn.tables {
		var n sql.NullInt64
		_ = sn.conn.QueryRowContext(ctx, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", id.Database, id.Table).Scan(&n)
		est += n.Int64
	}
	s.snap.estRows.Store(est)
	first := sn.fresh
	// One batch held back, so the very last record can be marked; each
	// batch is one read of at most snapshot_chunk_bytes (and one row),
	// handed on through the queue's byte gate.
	var held []schema.Record
	var heldBytes int
	flush := func(next []schema.Record, nextBytes int) bool {
		if len(held) > 0 && !s.send(ctx, batch{recs: held, size: heldBytes}) {
			return false
		}
		held, heldBytes = next, nextBytes
		return true
	}
	t0 := time.Now()
	var total int64
	s.snap.readers.Store(int64(max(len(sn.readers), 1)))
	s.log.Info("binlog: snapshot starting", "tables", len(sn.tables), "readers", max(len(sn.readers), 1), "resume", sn.resume != nil, "stream_from", sn.start.String())
	for ti, id := range sn.tables {
		st, err := sn.loadTable(ctx, id)
		if err != nil {
			return err
		}
		if st == nil {
			continue
		}
		if len(st.ti.keyIdx) == 0 {
			s.log.Warn("binlog: snapshot: table has no primary key: reading it in one pass; an interrupted snapshot reads it again (duplicates)", "table", id.String())
		} else if !st.keyable {
			s.log.Warn("binlog: snapshot: primary key cannot be paged (ENUM/SET column): reading the table in one pass", "table", id.String())
		}
		var key [][]byte
		if sn.resume != nil && id.Database == sn.resume.Database && id.Table == sn.resume.Table {
			key = sn.resume.Key
		}
		if s.cfg.SnapshotTruncate && key == nil {
			// rows of the table the source no longer has leave the target;
			// the table's snapshot rows follow
			if !flush([]schema.Record{sn.truncate(st.ti)}, 0) {
				return ctx.Err()
			}
		}
		next := func() *SnapshotProgress {
			if ti+1 < len(sn.tables) {
				return &SnapshotProgress{Database: sn.tables[ti+1].Database, Table: sn.tables[ti+1].Table}
			}
			return nil
		}
		tStart, lastLog := time.Now(), time.Now()
		var rowsRead int64
		tableFirst := key == nil // Debezium's first_in_data_collection
		if key != nil && st.keyable {
			if _, err := st.keyAfter(key); err != nil {
				// the key of the interrupted run no longer fits the table
				// (its primary key changed): read the table from its start
				s.log.Warn("binlog: snapshot: the saved key does not fit the table any more: reading it from the start", "table", id.String(), "err", err)
				key = nil
			}
		}
		// emit turns the rows a reader read into records, in key order:
		// their IDs, snapshot markers and positions are given here.
		emit := func(pc *snapPiece) error {
			recs := make([]schema.Record, 0, len(pc.rows))
			for _, r := range pc.rows {
				rec := sn.record(st.ti, r.row, first, tableFirst)
				tableFirst, first = false, false
				if len(r.zeros) > 0 {
					rec.Headers = map[string]string{ZeroDatesAfterHeader: strings.Join(r.zeros, ";")}
				}
				recs = append(recs, rec)
			}
			n := int64(len(recs))
			rowsRead += n
			total += n
			s.snap.rows.Add(n)
			done := pc.end
			if done { // Debezium's last_in_data_collection on the table's last row
				var last *schema.Record
				if len(recs) > 0 {
					last = &recs[len(recs)-1]
				} else if len(held) > 0 && held[len(held)-1].Table == id && held[len(held)-1].Op == schema.OpRead {
					last = &held[len(held)-1]
				}
				if last != nil && last.Source.Snapshot == "true" {
					last.Source.Snapshot = "last_in_data_collection"
				}
			}
			if len(recs) > 0 {
				p := sn.start
				if done {
					p.Snapshot = next()
				} else if st.keyable {
					p.Snapshot = &SnapshotProgress{Database: id.Database, Table: id.Table, Key: pc.key}
				}
				if p.Snapshot != nil {
					p.Snapshot.Rows = sn.rows
					recs[len(recs)-1].Position = EncodePosition(p)
				}
				if !flush(recs, recordsSize(recs)) {
					return ctx.Err()
				}
			}
			s.snap.inFlight.Add(-pc.bytes)
			if time.Since(lastLog) >= snapshotLogEvery {
				lastLog = time.Now()
				rate := float64(rowsRead) / time.Since(tStart).Seconds()
				args := []any{"table", id.String(), "rows", rowsRead, "rows_per_s", int64(rate)}
				if st.estRows > rowsRead && rate > 0 {
					args = append(args, "eta", time.Duration(float64(st.estRows-rowsRead)/rate*float64(time.Second)).Round(time.Second))
				}
				s.log.Info("binlog: snapshot progress", args...)
			}
			return nil
		}
		if len(sn.readers) > 0 && st.keyable {
			err = sn.readParallel(ctx, st, key, emit)
		} else {
			err = sn.readRange(ctx, sn.conn, st, key, nil, emit)
		}
		if err != nil {
			return err
		}
		s.snap.tablesDone.Add(1)
		el := time.Since(tStart)
		s.log.Info("binlog: snapshot of table done", "table", id.String(), "rows", rowsRead, "elapsed", el.Round(time.Millisecond),
			"rows_per_s", int64(float64(rowsRead)/max(el.Seconds(), 1e-6)))
	}
	plain := EncodePosition(sn.start)
	if len(held) > 0 {
		last := &held[len(held)-1]
		last.Position = plain
		if last.Source.Snapshot != "first" {
			last.Source.Snapshot = "last"
		}
		if !flush(nil, 0) {
			return ctx.Err()
		}
	} else {
		hb := schema.Record{Op: schema.OpHeartbeat, Source: schema.Source{Connector: s.cfg.Flavor, Name: s.cfg.ServerName,
			TsMs: time.Now().UnixMilli(), GTID: sn.start.GTIDSet, File: sn.start.File, Pos: uint64(sn.start.Pos)},
			TsMs: time.Now().UnixMilli(), Position: plain, ID: sn.nextID()}
		if !s.send(ctx, batch{recs: []schema.Record{hb}}) {
			return ctx.Err()
		}
	}
	el := time.Since(t0)
	s.log.Info("binlog: snapshot done", "rows", total, "elapsed", el.Round(time.Millisecond),
		"rows_per_s", int64(float64(total)/max(el.Seconds(), 1e-6)), "stream_from", sn.start.String())
	return nil
}

func (sn *snapshotter) record(ti *tableInfo, row schema.Row, first, tableFirst bool) schema.Record {
	snap := "true"
	switch {
	case first:
		snap = "first"
	case tableFirst:
		snap = "first_in_data_collection"
	}
	return schema.Record{
		Op:          schema.OpRead,
		Table:       ti.id,
		KeySchema:   ti.keySchema,
		Key:         keyOf(ti, row),
		ValueSchema: ti.valueSchema,
		After:       row,
		// No GTID: a snapshot row is no transaction's (Debezium's is null too).
		Source: schema.Source{Version: Version, Connector: sn.s.cfg.Flavor, Name: sn.s.cfg.ServerName, TsMs: sn.ms, Snapshot: snap,
			File: sn.start.File, Pos: uint64(sn.start.Pos)},
		TsMs: time.Now().UnixMilli(),
		ID:   sn.nextID(),
	}
}

// truncate is the TRUNCATE record Config.SnapshotTruncate sends before the
// rows of a table; it orders before them (the next row number).
func (sn *snapshotter) truncate(ti *tableInfo) schema.Record {
	return schema.Record{
		Op: schema.OpTruncate, Table: ti.id, KeySchema: ti.keySchema, ValueSchema: ti.valueSchema,
		Source: schema.Source{Version: Version, Connector: sn.s.cfg.Flavor, Name: sn.s.cfg.ServerName, TsMs: sn.ms, Snapshot: "true",
			GTID: sn.start.GTIDSet, File: sn.start.File, Pos: uint64(sn.start.Pos), Query: "TRUNCATE TABLE " + quoteIdent(ti.id.Database) + "." + quoteIdent(ti.id.Table) + " /* snapshot_truncate */"},
		TsMs: time.Now().UnixMilli(),
		ID:   sn.nextID(),
	}
}

// nextID is the identity of the next snapshot row: the snapshot's epoch and
// consistent position, PhaseSnapshot (after the stream up to that position,
// before every change after it) and the row's number in the snapshot.
func (sn *snapshotter) nextID() schema.ID {
	id := schema.ID{Epoch: sn.start.Epoch, File: fileSeq(sn.start.File), Pos: uint64(sn.start.Pos), Phase: schema.PhaseSnapshot, Index: sn.rows}
	sn.rows++
	return id
}

// positionPurged reports whether the server's binlog no longer reaches back
// to p (for Snapshot "when_needed").
func positionPurged(q interface {
	Execute(string, ...any) (*mysql.Result, error)
}, p Position) (bool, error) {
	r, err := q.Execute("SHOW BINARY LOGS")
	if err != nil {
		return false, fmt.Errorf("binlog: list binary logs (grant REPLICATION CLIENT / BINLOG MONITOR): %w", err)
	}
	if r.RowNumber() == 0 {
		return true, nil
	}
	firstLog, _ := r.GetString(0, 0)
	if p.GTIDSet != "" && p.Flavor == FlavorMySQL && p.File != "" {
		// resumed by file and offset unless gtid_mode is ON (resumeByGTID)
		r, err := q.Execute("SELECT @@GLOBAL.gtid_mode")
		if err != nil {
			return false, fmt.Errorf("binlog: read @@gtid_mode: %w", err)
		}
		if mode, _ := r.GetString(0, 0); !strings.EqualFold(mode, "ON") {
			p.GTIDSet = ""
		}
	}
	if p.GTIDSet == "" {
		for i := 0; i < r.RowNumber(); i++ {
			if name, _ := r.GetString(i, 0); name == p.File {
				return false, nil
			}
		}
		return true, nil
	}
	if p.Flavor == FlavorMySQL {
		r, err := q.Execute("SELECT @@GLOBAL.gtid_purged")
		if err != nil {
			return false, err
		}
		purgedText, _ := r.GetString(0, 0)
		ours, err1 := mysql.ParseMysqlGTIDSet(p.GTIDSet)
		purged, err2 := mysql.ParseMysqlGTIDSet(strings.ReplaceAll(purgedText, "\n", ""))
		if err1 != nil || err2 != nil {
			return false, fmt.Errorf("binlog: compare GTID sets: %v %v", err1, err2)
		}
		return !ours.Contain(purged), nil
	}
	r, err = q.Execute("SELECT BINLOG_GTID_POS(?, 4)", firstLog)
	if err != nil {
		return false, fmt.Errorf("binlog: BINLOG_GTID_POS: %w", err)
	}
	startText, _ := r.GetString(0, 0)
	oldest, err1 := mysql.ParseMariadbGTIDSet(startText)
	ours, err2 := mysql.ParseMariadbGTIDSet(p.GTIDSet)
	if err1 != nil || err2 != nil {
		return false, fmt.Errorf("binlog: compare GTID positions: %v %v", err1, err2)
	}
	om, um := oldest.(*mysql.MariadbGTIDSet), ours.(*mysql.MariadbGTIDSet)
	for domain, g := range om.Sets {
		have := um.Sets[domain]
		if have == nil || have.SequenceNumber < g.SequenceNumber {
			return true, nil
		}
	}
	return false, nil
}
