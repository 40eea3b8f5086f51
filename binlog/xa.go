package binlog

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/sluicecdc/sluice/schema"
)

// XA transactions in the binlog. A branch is logged when it is prepared:
// MySQL writes "XA START xid", its rows, "XA END xid" and an XA_prepare
// event in one GTID transaction; MariaDB the same after a GTID event
// flagged FL_PREPARED_XA (no XA START statement). Its outcome comes later
// as a transaction of its own, the statement "XA COMMIT xid" or "XA
// ROLLBACK xid". XA COMMIT ... ONE PHASE is an ordinary transaction on
// MariaDB, and on MySQL a branch whose XA_prepare event says one_phase.
//
// So a prepared branch's records are held until its outcome: emitted (with
// IDs at the XA COMMIT, where the target sees them commit) or dropped. While
// a branch is held, the positions handed on stay at the branch's start, so a
// restart reads it again; what a restart reads twice between there and the
// position it had reached comes with the same IDs, which sinks skip.

// maxXABytes bounds the records held for prepared XA branches (their
// schema.Record sizes); a branch that would pass it stops the source. A
// variable for tests.
var maxXABytes = 64 << 20

// mariadbFlPreparedXA is MariaDB's GTID event flag of a prepared XA
// branch's transaction.
const mariadbFlPreparedXA = 0x40

// xaBranch is an XA branch read up to its prepare, whose outcome is not
// yet known.
type xaBranch struct {
	recs  []schema.Record
	bytes int
	start Position // the committed position before the branch
	txID  string   // the transaction ID its records carry
	order int64    // the transaction's last TotalOrder
}

// xaOpen starts holding the records of the transaction being read: an XA
// branch, until its XA_prepare event.
func (m *mapper) xaOpen() {
	m.inTx = true
	m.xaRead = &xaBranch{start: m.committed}
}

// xaRows maps a rows event of the branch being read into its held records.
func (m *mapper) xaRows(h *replication.EventHeader, e *replication.RowsEvent, out []schema.Record) ([]schema.Record, error) {
	recs, err := m.rows(h, e, nil)
	if err != nil {
		return out, err
	}
	br := m.xaRead
	n := schema.RecordsSize(recs)
	if m.xaHeld+n > maxXABytes {
		return out, fmt.Errorf("%w: XA transactions prepared but not yet committed or rolled back hold more than %d MiB of row changes, which the source keeps in memory until their outcome (transaction %s): commit or roll back XA transactions sooner, or make them smaller", ErrUnsupported, maxXABytes>>20, m.txIDFor(h))
	}
	br.recs = append(br.recs, recs...)
	br.bytes += n
	m.xaHeld += n
	return out, nil
}

// xaPrepare handles an XA_prepare event: a one-phase commit commits the
// branch now; a prepared branch is held until its outcome.
func (m *mapper) xaPrepare(h *replication.EventHeader, data []byte, out []schema.Record) ([]schema.Record, error) {
	onePhase, xid, err := parseXAPrepare(data)
	if err != nil {
		return out, fmt.Errorf("%w: XA_prepare event: %v", ErrUnsupported, err)
	}
	br := m.xaRead
	if br == nil { // not begun where the mapper saw it: nothing held
		br = &xaBranch{start: m.committed}
	}
	m.xaRead = nil
	if onePhase {
		m.xaHeld -= br.bytes
		return m.commit(h, m.xaRelease(h, br, out))
	}
	br.txID, br.order = m.txID, m.txOrder
	if _, dup := m.xaPrepared[xid]; dup {
		return out, fmt.Errorf("%w: XA transaction %s prepared twice without an XA COMMIT or XA ROLLBACK between", ErrUnsupported, xid)
	}
	// The transaction that prepared it is done (its GTID is executed); the
	// positions handed on stay at the branch's start (heldPosition).
	if err := m.advance(h); err != nil {
		return out, err
	}
	m.xaPrepared[xid] = br
	m.xaOrder = append(m.xaOrder, xid)
	m.resetTx()
	return out, nil
}

// xaOutcome handles "XA COMMIT xid" and "XA ROLLBACK xid": the held branch
// is emitted or dropped, in the outcome's own transaction.
func (m *mapper) xaOutcome(h *replication.EventHeader, q string, commit bool, out []schema.Record) ([]schema.Record, error) {
	xid := xaID(q)
	br, ok := m.xaPrepared[xid]
	if ok {
		delete(m.xaPrepared, xid)
		for i, x := range m.xaOrder {
			if x == xid {
				m.xaOrder = append(m.xaOrder[:i], m.xaOrder[i+1:]...)
				break
			}
		}
		m.xaHeld -= br.bytes
	}
	switch {
	case !ok && commit:
		m.log.Warn("binlog: XA COMMIT of a branch prepared before the source's start position: its changes are not in the stream", "xid", xid, "file", m.file, "pos", h.LogPos)
	case commit:
		out = m.xaRelease(h, br, out)
	}
	return m.commit(h, out)
}

// xaRelease appends a committed branch's records, numbered at the event
// that commits it, between a begin and (the caller's) commit marker.
func (m *mapper) xaRelease(h *replication.EventHeader, br *xaBranch, out []schema.Record) []schema.Record {
	if len(br.recs) == 0 {
		return out
	}
	if br.txID != "" {
		m.txID, m.txOrder = br.txID, br.order
	} else {
		m.txID, m.txOrder = br.recs[0].Transaction.ID, br.recs[len(br.recs)-1].Transaction.TotalOrder
	}
	out = append(out, m.marker(schema.OpBegin, h, nil))
	for _, r := range br.recs {
		r.ID = m.nextID()
		out = append(out, r)
	}
	return out
}

// heldPosition is where a restart must read from while branches are held:
// the start of the oldest one.
func (m *mapper) heldPosition() Position {
	p := m.xaPrepared[m.xaOrder[0]].start
	p.Version, p.Flavor, p.Epoch, p.Snapshot = PositionVersion, m.flavor, m.epoch, nil
	return p
}

// isXAStart reports MySQL's "XA START xid" (also XA BEGIN).
func isXAStart(q string) bool {
	u := strings.ToUpper(q)
	return strings.HasPrefix(u, "XA START ") || strings.HasPrefix(u, "XA BEGIN ")
}

// xaID is the xid of an XA statement as the binlog writes it
// (X'gtrid',X'bqual',formatID), in upper case.
func xaID(q string) string {
	f := strings.Fields(q)
	if len(f) < 3 {
		return ""
	}
	return strings.ToUpper(f[2])
}

// parseXAPrepare reads an XA_prepare event's body: one_phase (1 byte),
// format ID (4), gtrid and bqual lengths (4 each), then their bytes.
func parseXAPrepare(data []byte) (onePhase bool, xid string, err error) {
	if len(data) < 13 {
		return false, "", fmt.Errorf("%d bytes, want at least 13", len(data))
	}
	format := int32(binary.LittleEndian.Uint32(data[1:]))
	gl, bl := binary.LittleEndian.Uint32(data[5:]), binary.LittleEndian.Uint32(data[9:])
	if gl > 64 || bl > 64 || len(data) < 13+int(gl+bl) {
		return false, "", fmt.Errorf("gtrid length %d, bqual length %d in %d bytes", gl, bl, len(data))
	}
	g, b := data[13:13+gl], data[13+gl:13+gl+bl]
	return data[0] != 0, fmt.Sprintf("X'%X',X'%X',%d", g, b, format), nil
}

// xaStartWait bounds how long a first start waits for XA branches prepared
// on the server to be committed or rolled back; xaStartPoll is how often it
// looks. Variables for tests.
var (
	xaStartWait = 30 * time.Second
	xaStartPoll = 500 * time.Millisecond
)

// awaitPreparedXA waits, at a first start, until no XA branch is prepared
// on the server (XA RECOVER), at most xaStartWait. A branch's rows are
// logged at its XA PREPARE: one prepared before the start point and
// committed after it would be in neither the snapshot nor the stream.
// Once it is committed before the start point, the snapshot reads its rows
// (and a start without snapshot begins after it, like after any commit).
// Past the bound the start goes on with a warning naming the branches;
// when it cannot list them (MySQL: without XA_RECOVER_ADMIN) it goes on
// and says so.
func (s *Source) awaitPreparedXA(ctx context.Context, conn *client.Conn) error {
	deadline := time.Now().Add(xaStartWait)
	waiting := false
	for {
		xids, err := preparedXA(conn)
		if err != nil {
			// MySQL answers a user without XA_RECOVER_ADMIN with error
			// 1401 (XAER_RMERR), not an access error.
			s.log.Info("binlog: cannot list prepared XA transactions at the first start (XA RECOVER): a branch prepared before it and committed after it would not be captured; grant XA_RECOVER_ADMIN (MySQL) to have the first start wait for them", "err", err)
			return nil
		}
		switch {
		case len(xids) == 0:
			if waiting {
				s.log.Info("binlog: no XA transaction is prepared any more: starting")
			}
			return nil
		case time.Now().After(deadline):
			s.log.Warn("binlog: XA transactions are still prepared at the first start: those that change captured tables are not captured when they commit (their rows were logged at XA PREPARE, before the start point); snapshot those tables again after their XA COMMIT, or reset the position and start again once XA RECOVER lists none",
				"waited", xaStartWait.String(), "xids", listSome(xids))
			return nil
		case !waiting:
			s.log.Warn("binlog: XA transactions are prepared on the server: the first start waits for their XA COMMIT or XA ROLLBACK, so that their rows are captured", "xids", listSome(xids), "wait", xaStartWait.String())
			waiting = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(xaStartPoll):
		}
	}
}

// preparedXA lists the XA branches prepared on the server (XA RECOVER) in
// the form the binlog names them (xaID, parseXAPrepare).
func preparedXA(conn *client.Conn) ([]string, error) {
	r, err := conn.Execute("XA RECOVER")
	if err != nil {
		return nil, err
	}
	var out []string
	for i := 0; i < r.RowNumber(); i++ {
		format, err1 := r.GetInt(i, 0)
		gl, err2 := r.GetInt(i, 1)
		bl, err3 := r.GetInt(i, 2)
		data, err4 := r.GetString(i, 3)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || gl < 0 || bl < 0 || gl+bl > int64(len(data)) {
			out = append(out, "(unreadable)")
			continue
		}
		out = append(out, fmt.Sprintf("X'%X',X'%X',%d", data[:gl], data[gl:gl+bl], format))
	}
	return out, nil
}
