package binlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"
)

// MySQL writes a transaction compressed (binlog_transaction_compression)
// as one TRANSACTION_PAYLOAD event holding all of its events. go-mysql
// decompresses such an event whole and decodes every event in it before
// handing it on: memory grows with the transaction. On MySQL the syncer
// therefore runs in raw mode (events handed on undecoded, but for format
// descriptions and rotations) and eventParser decodes them, a payload
// through a zstd stream, one inner event at a time (payloadStream): what
// a compressed transaction holds in memory is its compressed bytes and the
// decoder's window.

// eventParser decodes the events of a raw-mode stream with the options
// of the syncer's parser.
type eventParser struct {
	p        *replication.BinlogParser
	mk       func() *replication.BinlogParser
	innerFDE []byte // the format description for events inside payloads: no checksums
	checksum bool   // events end in a CRC32
}

func newEventParser(sc replication.BinlogSyncerConfig) *eventParser {
	mk := func() *replication.BinlogParser {
		p := replication.NewBinlogParser()
		p.SetFlavor(sc.Flavor)
		p.SetUseDecimal(sc.UseDecimal)
		p.SetParseTime(sc.ParseTime)
		p.SetRenderJSONAsMySQLText(sc.RenderJSONAsMySQLText)
		p.SetRowsEventDecodeFunc(sc.RowsEventDecodeFunc)
		p.SetVerifyChecksum(sc.VerifyChecksum)
		if sc.TimestampStringLocation != nil {
			p.SetTimestampStringLocation(sc.TimestampStringLocation)
		}
		return p
	}
	return &eventParser{p: mk(), mk: mk}
}

// inner is a parser for the events of one payload (its table maps are the
// payload's own, as go-mysql's are).
func (ep *eventParser) inner() (*replication.BinlogParser, error) {
	if ep.innerFDE == nil {
		return nil, fmt.Errorf("a transaction payload before any format description")
	}
	p := ep.mk()
	if _, err := p.Parse(ep.innerFDE); err != nil {
		return nil, err
	}
	return p, nil
}

// parse decodes a raw-mode event: a format description (decoded by the
// syncer) sets up both parsers, a transaction payload becomes a
// payloadStream, any other undecoded event is decoded, with the syncer's
// header (it may have filled in the position).
func (ep *eventParser) parse(ev *replication.BinlogEvent) (out *replication.BinlogEvent, err error) {
	defer func() {
		if r := recover(); r != nil { // go-mysql's decoding must not stop the process
			out, err = nil, fmt.Errorf("%w: undecodable %s event: %v", ErrUnsupported, ev.Header.EventType, r)
		}
	}()
	switch e := ev.Event.(type) {
	case *replication.FormatDescriptionEvent:
		ep.checksum = e.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32
		if _, err := ep.p.Parse(ev.RawData); err != nil {
			return nil, err
		}
		// the same format without checksums, for the events in payloads
		raw := bytes.Clone(ev.RawData)
		if e.ChecksumAlgorithm != replication.BINLOG_CHECKSUM_ALG_UNDEF && len(raw) >= replication.EventHeaderSize+5 {
			raw[len(raw)-5] = byte(replication.BINLOG_CHECKSUM_ALG_OFF)
		}
		ep.innerFDE = raw
		return ev, nil
	case *replication.GenericEvent:
		if ev.Header.EventType == replication.TRANSACTION_PAYLOAD_EVENT {
			ps, err := ep.payload(ev)
			if err != nil {
				return nil, fmt.Errorf("%w: transaction payload: %v", ErrUnsupported, err)
			}
			return &replication.BinlogEvent{RawData: ev.RawData, Header: ev.Header, Event: ps}, nil
		}
		out, err := ep.p.Parse(ev.RawData)
		if err != nil {
			return nil, err
		}
		out.Header = ev.Header
		return out, nil
	}
	return ev, nil
}

// payloadStream is a TRANSACTION_PAYLOAD event whose inner events are
// decompressed and decoded one at a time (next). Each inner event carries
// the payload's start as its position, the last one the payload's end, as
// go-mysql gives them.
type payloadStream struct {
	h     *replication.EventHeader
	r     io.Reader
	dec   *zstd.Decoder // nil for an uncompressed payload
	inner *replication.BinlogParser
	ahead *replication.BinlogEvent // the next inner event, read to know the last
	done  bool
	left  uint64 // bytes the payload's events may still take (its uncompressed size)
}

// maxInnerEvent bounds an event in a payload (MySQL's max_allowed_packet
// is at most 1 GiB).
const maxInnerEvent = 1 << 30

func (ep *eventParser) payload(ev *replication.BinlogEvent) (*payloadStream, error) {
	body := ev.RawData[replication.EventHeaderSize:]
	if ep.checksum {
		if len(body) < replication.BinlogChecksumLength {
			return nil, fmt.Errorf("event of %d bytes", len(ev.RawData))
		}
		body = body[:len(body)-replication.BinlogChecksumLength]
	}
	ctype, usize := uint64(replication.ZSTD), uint64(maxInnerEvent)
	for {
		if len(body) < 1 {
			return nil, fmt.Errorf("header cut short")
		}
		field := body[0]
		body = body[1:]
		if field == replication.OTW_PAYLOAD_HEADER_END_MARK {
			break
		}
		// as go-mysql reads them: a length byte, then a little-endian value
		if len(body) < 1 || len(body)-1 < int(body[0]) {
			return nil, fmt.Errorf("header field %d cut short", field)
		}
		n := int(body[0])
		switch field {
		case replication.OTW_PAYLOAD_COMPRESSION_TYPE_FIELD:
			ctype = mysql.FixedLengthInt(body[1 : 1+n])
		case replication.OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD:
			usize = min(usize, mysql.FixedLengthInt(body[1:1+n]))
		}
		body = body[1+n:]
	}
	inner, err := ep.inner()
	if err != nil {
		return nil, err
	}
	ps := &payloadStream{h: ev.Header, inner: inner, left: usize}
	switch ctype {
	case replication.ZSTD:
		dec, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, err
		}
		ps.dec, ps.r = dec, dec
	case replication.NONE:
		ps.r, ps.left = bytes.NewReader(body), min(ps.left, uint64(len(body)))
	default:
		return nil, fmt.Errorf("compression type %d", ctype)
	}
	return ps, nil
}

// next returns the next inner event, nil after the last.
func (ps *payloadStream) next() (*replication.BinlogEvent, error) {
	if ps.done {
		return nil, nil
	}
	if ps.ahead == nil {
		ev, err := ps.read()
		if err != nil || ev == nil {
			ps.close()
			return nil, err
		}
		ps.ahead = ev
	}
	ev := ps.ahead
	next, err := ps.read()
	if err != nil {
		ps.close()
		return nil, err
	}
	ps.ahead = next
	if ps.h.LogPos >= ps.h.EventSize {
		ev.Header.LogPos = ps.h.LogPos - ps.h.EventSize
		if next == nil {
			ev.Header.LogPos = ps.h.LogPos
		}
	}
	if next == nil {
		ps.close()
	}
	return ev, nil
}

// read decompresses and decodes one inner event; nil at the end.
func (ps *payloadStream) read() (*replication.BinlogEvent, error) {
	var head [replication.EventHeaderSize]byte
	if _, err := io.ReadFull(ps.r, head[:]); err != nil {
		if err == io.EOF {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: transaction payload: %v", ErrUnsupported, err)
	}
	size := binary.LittleEndian.Uint32(head[9:13])
	if size < replication.EventHeaderSize || uint64(size) > ps.left {
		return nil, fmt.Errorf("%w: transaction payload: inner event of %d bytes, %d left", ErrUnsupported, size, ps.left)
	}
	ps.left -= uint64(size)
	raw := make([]byte, size)
	copy(raw, head[:])
	if _, err := io.ReadFull(ps.r, raw[replication.EventHeaderSize:]); err != nil {
		return nil, fmt.Errorf("%w: transaction payload: %v", ErrUnsupported, err)
	}
	return ps.parse(raw)
}

func (ps *payloadStream) parse(raw []byte) (ev *replication.BinlogEvent, err error) {
	defer func() {
		if r := recover(); r != nil {
			ev, err = nil, fmt.Errorf("%w: transaction payload: undecodable event: %v", ErrUnsupported, r)
		}
	}()
	if ev, err = ps.inner.Parse(raw); err != nil {
		return nil, fmt.Errorf("%w: transaction payload: %v", ErrUnsupported, err)
	}
	return ev, nil
}

func (ps *payloadStream) close() {
	ps.done = true
	if ps.dec != nil {
		ps.dec.Close()
		ps.dec = nil
	}
}

// Dump and Decode make payloadStream a replication.Event.
func (ps *payloadStream) Dump(w io.Writer) { fmt.Fprintln(w, "transaction payload, read as a stream") }

func (ps *payloadStream) Decode([]byte) error { return nil }
