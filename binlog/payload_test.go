package binlog

import (
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"
)

// payloadEvent wraps events (raw, without checksums) in a
// TRANSACTION_PAYLOAD event ending at end, compressed with ctype.
func payloadEvent(t testing.TB, inner [][]byte, ctype byte, checksum bool, end uint32) *replication.BinlogEvent {
	var plain []byte
	for _, r := range inner {
		plain = append(plain, r...)
	}
	data := plain
	if ctype == replication.ZSTD {
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		data = enc.EncodeAll(plain, nil)
	}
	body := append([]byte{replication.OTW_PAYLOAD_COMPRESSION_TYPE_FIELD, 1, ctype, replication.OTW_PAYLOAD_HEADER_END_MARK}, data...)
	size := replication.EventHeaderSize + len(body)
	if checksum {
		size += replication.BinlogChecksumLength
	}
	raw := make([]byte, replication.EventHeaderSize, size)
	raw[4] = byte(replication.TRANSACTION_PAYLOAD_EVENT)
	binary.LittleEndian.PutUint32(raw[9:], uint32(size))
	binary.LittleEndian.PutUint32(raw[13:], end)
	raw = append(raw, body...)
	if checksum {
		raw = binary.LittleEndian.AppendUint32(raw, crc32.ChecksumIEEE(raw))
	}
	h := &replication.EventHeader{}
	if err := h.Decode(raw); err != nil {
		t.Fatal(err)
	}
	return &replication.BinlogEvent{RawData: raw, Header: h, Event: &replication.GenericEvent{}}
}

// fixtureFormat returns the fixture's format description, its events that
// a transaction holds (without their checksums) and whether it has them.
func fixtureFormat(t testing.TB) (fde *replication.BinlogEvent, evs []*replication.BinlogEvent, raws [][]byte, checksum bool) {
	for _, ev := range fixtureEvents(t) {
		switch e := ev.Event.(type) {
		case *replication.FormatDescriptionEvent:
			if fde == nil {
				fde, checksum = ev, e.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32
			}
		case *replication.TableMapEvent, *replication.RowsEvent, *replication.XIDEvent, *replication.QueryEvent:
			raw := ev.RawData
			if checksum {
				raw = append([]byte(nil), raw[:len(raw)-replication.BinlogChecksumLength]...)
				binary.LittleEndian.PutUint32(raw[9:], uint32(len(raw)))
			}
			evs, raws = append(evs, ev), append(raws, raw)
		}
	}
	if fde == nil || len(evs) == 0 {
		t.Fatal("the fixture has no format description or no events")
	}
	return fde, evs, raws, checksum
}

func fixtureEventParser(t testing.TB, fde *replication.BinlogEvent) *eventParser {
	ep := newEventParser(replication.BinlogSyncerConfig{Flavor: FlavorMariaDB, ParseTime: true,
		RenderJSONAsMySQLText: true, RowsEventDecodeFunc: decodeRowsEvent})
	if _, err := ep.parse(fde); err != nil {
		t.Fatal(err)
	}
	return ep
}

// TestPayloadStream: the events of a transaction payload, compressed or
// not, come out one by one as go-mysql decodes them alone, each at the
// payload's start but the last, at its end.
func TestPayloadStream(t *testing.T) {
	fde, evs, raws, checksum := fixtureFormat(t)
	for _, ctype := range []byte{replication.ZSTD, replication.NONE} {
		ep := fixtureEventParser(t, fde)
		ev := payloadEvent(t, raws, ctype, checksum, 100000)
		got, err := ep.parse(ev)
		if err != nil {
			t.Fatal(err)
		}
		ps, ok := got.Event.(*payloadStream)
		if !ok {
			t.Fatalf("parsed as %T", got.Event)
		}
		start := ev.Header.LogPos - ev.Header.EventSize
		for i := 0; ; i++ {
			inner, err := ps.next()
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			if inner == nil {
				if i != len(evs) {
					t.Fatalf("compression %d: %d events, want %d", ctype, i, len(evs))
				}
				break
			}
			want := evs[i]
			if inner.Header.EventType != want.Header.EventType {
				t.Fatalf("event %d: %s, want %s", i, inner.Header.EventType, want.Header.EventType)
			}
			if pos := map[bool]uint32{true: ev.Header.LogPos, false: start}[i == len(evs)-1]; inner.Header.LogPos != pos {
				t.Errorf("event %d at %d, want %d", i, inner.Header.LogPos, pos)
			}
			if g, ok := inner.Event.(*replication.RowsEvent); ok {
				w := want.Event.(*replication.RowsEvent)
				if err := decodeRows(g); err != nil {
					t.Fatal(err)
				}
				if err := decodeRows(w); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(g.Rows, w.Rows) {
					t.Errorf("event %d: rows %v, want %v", i, g.Rows, w.Rows)
				}
			}
		}
	}
}

// FuzzPayloadStream: any payload gives events or an error, never a panic.
func FuzzPayloadStream(f *testing.F) {
	fde, _, raws, checksum := fixtureFormat(f)
	var plain []byte
	for _, r := range raws[:min(len(raws), 6)] {
		plain = append(plain, r...)
	}
	f.Add(plain)
	f.Fuzz(func(t *testing.T, data []byte) {
		ep := fixtureEventParser(t, fde)
		got, err := ep.parse(payloadEvent(t, [][]byte{data}, replication.NONE, checksum, 100000))
		if err != nil {
			return
		}
		ps := got.Event.(*payloadStream)
		for range 1000 {
			inner, err := ps.next()
			if err != nil || inner == nil {
				return
			}
			if re, ok := inner.Event.(*replication.RowsEvent); ok {
				_ = decodeRows(re)
			}
		}
	})
}
