package binlog

import (
	"encoding/binary"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

// FuzzMapRowsEvent mutates the row images of the recorded fixture's rows
// events (keeping their headers, table id and column count, which come from
// the server), decodes them with go-mysql under the fixture's table maps and
// maps the result: the mapper must return records or an error, never panic.
func FuzzMapRowsEvent(f *testing.F) {
	evs := fixtureEvents(f)
	var prefix [][]byte // format description and table maps, in order
	var heads [][]byte
	for _, ev := range evs {
		switch e := ev.Event.(type) {
		case *replication.FormatDescriptionEvent, *replication.TableMapEvent:
			prefix = append(prefix, ev.RawData)
		case *replication.RowsEvent:
			if e.ColumnCount >= 251 || ev.Header.EventType < replication.WRITE_ROWS_EVENTv1 || ev.Header.EventType > replication.DELETE_ROWS_EVENTv1 {
				continue
			}
			// header, table id and flags, column count, column bitmap(s)
			n := replication.EventHeaderSize + 8 + 1 + int(e.ColumnCount+7)/8
			if ev.Header.EventType == replication.UPDATE_ROWS_EVENTv1 {
				n += int(e.ColumnCount+7) / 8
			}
			if len(ev.RawData) < n+4 {
				continue
			}
			f.Add(uint8(len(heads)), ev.RawData[n:len(ev.RawData)-4])
			heads = append(heads, ev.RawData[:n])
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		if len(heads) == 0 || len(body) > 1<<16 {
			return
		}
		head := heads[int(which)%len(heads)]
		raw := append(append(append([]byte{}, head...), body...), 0, 0, 0, 0) // checksum, not verified
		binary.LittleEndian.PutUint32(raw[9:13], uint32(len(raw)))
		p := newParser()
		m := fixtureMapper(t)
		for _, b := range prefix {
			ev, err := p.Parse(b)
			if err != nil {
				t.Fatalf("fixture event: %v", err)
			}
			if _, err := m.Map(ev, nil); err != nil {
				t.Fatalf("fixture table map: %v", err)
			}
		}
		ev, err := parseNoPanic(p, raw)
		if err != nil || ev == nil {
			return
		}
		recs, err := m.Map(ev, nil)
		if err == nil && len(body) > 0 && which == 0 && len(recs) == 0 {
			t.Fatalf("rows event decoded but mapped to no records")
		}
	})
}

// parseNoPanic shields the fuzz target from panics inside go-mysql's own
// decoder (the syncer recovers those and closes the stream with an error).
func parseNoPanic(p *replication.BinlogParser, raw []byte) (ev *replication.BinlogEvent, err error) {
	defer func() {
		if recover() != nil {
			ev, err = nil, nil
		}
	}()
	return p.Parse(raw)
}
