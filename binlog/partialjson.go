package binlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Partial JSON updates (binlog_row_value_options=PARTIAL_JSON, which any
// session may set): a PARTIAL_UPDATE_ROWS_EVENT's after image holds, for a
// JSON column, the list of changes MySQL made to it (replace, insert or
// remove at a path) instead of the document. go-mysql reads only the first
// change of a list, so decodeRows finds each list in the event's bytes and
// puts all of its changes in the after image (jsonDiffs); the mapper
// applies them to the before image, which binlog_row_image=FULL makes the
// whole document.

// jsonDiffs is a JSON column's value in a partial update's after image.
type jsonDiffs []*replication.JsonDiff

var errPartialJSON = errors.New("partial JSON update")

// decodeRowsEvent is go-mysql's decoding of a rows event, put off: it
// reads the event's header (its table) and leaves the rows (lazyRows) to
// decodeRows, called when the mapper maps the event. Events waiting in
// go-mysql's queue, or inside a compressed transaction's payload until the
// mapper reaches them, then hold their bytes only, not their rows decoded
// into values (several times the size); rows of tables not captured are
// never decoded.
func decodeRowsEvent(e *replication.RowsEvent, data []byte) error {
	pos, err := e.DecodeHeader(data)
	if err != nil {
		return err
	}
	e.Rows = [][]any{{lazyRows{pos: pos, data: data}}}
	return nil
}

// lazyRows stands for the rows of an event decodeRowsEvent left undecoded.
type lazyRows struct {
	pos  int
	data []byte
}

// decodeRows decodes the rows decodeRowsEvent left and, for a partial
// update, replaces each JSON change list of the after images by all of its
// changes.
func decodeRows(e *replication.RowsEvent) error {
	if len(e.Rows) != 1 || len(e.Rows[0]) != 1 {
		return nil
	}
	lz, ok := e.Rows[0][0].(lazyRows)
	if !ok {
		return nil
	}
	e.Rows = nil
	if err := e.DecodeData(lz.pos, lz.data); err != nil {
		return err
	}
	// go-mysql knows no other event type it decodes as rows
	if e.Type() != replication.EnumRowsEventTypeUnknown || e.Table.JsonColumnCount() == 0 {
		return nil
	}
	if err := attachJSONDiffs(e, lz.data[lz.pos:]); err != nil {
		return fmt.Errorf("%w of table id %d: %w", errPartialJSON, e.TableID, err)
	}
	return nil
}

// attachJSONDiffs walks the row images of a partial update event (data:
// the rows, after the event's header) as MySQL writes them and sets the
// JSON change lists of the after images.
func attachJSONDiffs(e *replication.RowsEvent, data []byte) error {
	t := e.Table
	n := int(e.ColumnCount)
	if len(t.ColumnType) < n || len(t.ColumnMeta) < n {
		return fmt.Errorf("table map of %d columns for %d", len(t.ColumnType), n)
	}
	jsonCols := int(t.JsonColumnCount())
	pos := 0
	need := func(k int) error {
		if k < 0 || pos+k > len(data) {
			return fmt.Errorf("row image cut short at byte %d", pos)
		}
		return nil
	}
	for row := 0; pos < len(data); row += 2 {
		if row+1 >= len(e.Rows) {
			return fmt.Errorf("more row images than go-mysql decoded")
		}
		for img, bitmap := range [][]byte{e.ColumnBitmap1, e.ColumnBitmap2} {
			var partial []byte
			if img == 1 {
				opts, k := lenEnc(data[pos:])
				if k == 0 {
					return fmt.Errorf("row image cut short at byte %d", pos)
				}
				pos += k
				if opts&uint64(replication.EnumBinlogRowValueOptionsPartialJsonUpdates) != 0 {
					k = (jsonCols + 7) / 8
					if err := need(k); err != nil {
						return err
					}
					partial = data[pos : pos+k]
					pos += k
				}
			}
			present := 0
			for i := 0; i < n; i++ {
				if bit(bitmap, i) {
					present++
				}
			}
			nulls := (present + 7) / 8
			if err := need(nulls); err != nil {
				return err
			}
			nullBits := data[pos : pos+nulls]
			pos += nulls
			jsonIdx, nullIdx := 0, 0
			for i := 0; i < n; i++ {
				isPartial := false
				if t.ColumnType[i] == mysql.MYSQL_TYPE_JSON {
					isPartial = partial != nil && bit(partial, jsonIdx)
					jsonIdx++
				}
				if !bit(bitmap, i) {
					continue
				}
				nullIdx++
				if bit(nullBits, nullIdx-1) {
					continue
				}
				size, err := fieldSize(t.ColumnType[i], t.ColumnMeta[i], data[pos:])
				if err != nil {
					return fmt.Errorf("column %d: %w", i, err)
				}
				if err := need(size); err != nil {
					return err
				}
				if isPartial {
					lb := int(t.ColumnMeta[i])
					diffs, err := splitJSONDiffs(e, data[pos+lb:pos+size])
					if err != nil {
						return fmt.Errorf("column %d: %w", i, err)
					}
					e.Rows[row+1][i] = diffs
				}
				pos += size
			}
		}
	}
	return nil
}

// lenEnc reads a length-encoded integer and its size, 0 when b is too short.
func lenEnc(b []byte) (uint64, int) {
	if len(b) == 0 || b[0] == 0xff {
		return 0, 0
	}
	if need := map[byte]int{0xfc: 3, 0xfd: 4, 0xfe: 9}[b[0]]; len(b) < need {
		return 0, 0
	}
	v, _, n := mysql.LengthEncodedInt(b)
	return v, n
}

func bit(bitmap []byte, i int) bool {
	return i>>3 < len(bitmap) && bitmap[i>>3]&(1<<(uint(i)&7)) != 0
}

// fieldSize is the length of a value of type tp (table map metadata meta)
// at the start of data, as go-mysql's decodeValue reads it.
func fieldSize(tp byte, meta uint16, data []byte) (int, error) {
	length := 0
	if tp == mysql.MYSQL_TYPE_STRING {
		if meta >= 256 {
			b0, b1 := byte(meta>>8), byte(meta)
			if b0&0x30 != 0x30 {
				length, tp = int(uint16(b1)|uint16((b0&0x30)^0x30)<<4), b0|0x30
			} else {
				length, tp = int(b1), b0
			}
		} else {
			length = int(meta)
		}
	}
	lenPrefixed := func(lb int) (int, error) {
		if lb < 1 || lb > 4 || len(data) < lb {
			return 0, fmt.Errorf("length of %d bytes", lb)
		}
		var l uint32
		for j := lb - 1; j >= 0; j-- {
			l = l<<8 | uint32(data[j])
		}
		return lb + int(l), nil
	}
	switch tp {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_YEAR:
		return 1, nil
	case mysql.MYSQL_TYPE_SHORT:
		return 2, nil
	case mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_TIME:
		return 3, nil
	case mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_TIMESTAMP:
		return 4, nil
	case mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_DOUBLE, mysql.MYSQL_TYPE_DATETIME:
		return 8, nil
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		dig2bytes := [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}
		prec, scale := int(meta>>8), int(meta&0xFF)
		if scale > prec {
			return 0, fmt.Errorf("DECIMAL(%d,%d)", prec, scale)
		}
		intg := prec - scale
		return intg/9*4 + dig2bytes[intg%9] + scale/9*4 + dig2bytes[scale%9], nil
	case mysql.MYSQL_TYPE_BIT:
		return (int(meta>>8)*8 + int(meta&0xFF) + 7) / 8, nil
	case mysql.MYSQL_TYPE_TIMESTAMP2:
		return 4 + (int(meta)+1)/2, nil
	case mysql.MYSQL_TYPE_DATETIME2:
		return 5 + (int(meta)+1)/2, nil
	case mysql.MYSQL_TYPE_TIME2:
		return 3 + (int(meta)+1)/2, nil
	case mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET:
		return int(meta & 0xFF), nil
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING:
		if tp != mysql.MYSQL_TYPE_STRING {
			length = int(meta)
		}
		if length < 256 {
			return lenPrefixed(1)
		}
		return lenPrefixed(2)
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_VECTOR, mysql.MYSQL_TYPE_JSON:
		return lenPrefixed(int(meta))
	}
	return 0, fmt.Errorf("column type %d", tp)
}

// splitJSONDiffs reads a JSON change list: each change an operation byte,
// the path (length-encoded), and for replace and insert the value (JSON
// binary, length-encoded). Each change is decoded by go-mysql, as a list
// of one, so that its value is rendered as every other JSON value is.
func splitJSONDiffs(e *replication.RowsEvent, b []byte) (jsonDiffs, error) {
	out := jsonDiffs{}
	for len(b) > 0 {
		op := replication.JsonDiffOperation(b[0])
		k := 1
		pl, m := lenEnc(b[k:])
		k += m + int(pl)
		if m == 0 || k > len(b) {
			return nil, fmt.Errorf("change list cut short")
		}
		if op != replication.JsonDiffOperationRemove {
			vl, m := lenEnc(b[k:])
			k += m + int(vl)
			if m == 0 || k > len(b) {
				return nil, fmt.Errorf("change list cut short")
			}
		}
		d, err := decodeJSONDiff(e, b[:k])
		if err != nil {
			return nil, err
		}
		out = append(out, d)
		b = b[k:]
	}
	return out, nil
}

// decodeJSONDiff decodes one change with go-mysql: a copy of the event
// (its decoding options) over a one-row, one-JSON-column image pair whose
// after image is the change list of that one change.
func decodeJSONDiff(e *replication.RowsEvent, diff []byte) (*replication.JsonDiff, error) {
	one := *e
	one.Table = &replication.TableMapEvent{TableID: e.TableID, ColumnCount: 1,
		ColumnType: []byte{mysql.MYSQL_TYPE_JSON}, ColumnMeta: []uint16{4}}
	one.ColumnCount, one.ColumnBitmap1, one.ColumnBitmap2 = 1, []byte{1}, []byte{1}
	buf := make([]byte, 0, len(diff)+8)
	buf = append(buf, 1)       // before image: the column is NULL
	buf = append(buf, 1, 1, 0) // after image: PARTIAL_JSON, the column partial, not NULL
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(diff)))
	buf = append(buf, diff...)
	if err := one.DecodeData(0, buf); err != nil {
		return nil, err
	}
	if len(one.Rows) != 2 {
		return nil, fmt.Errorf("change not decoded")
	}
	d, ok := one.Rows[1][0].(*replication.JsonDiff)
	if !ok {
		return nil, fmt.Errorf("change not decoded (%T)", one.Rows[1][0])
	}
	return d, nil
}

// applyJSONDiffs applies a partial update's changes to the before image's
// document (go-mysql's text) and returns the after image's, in MySQL's
// key order.
func applyJSONDiffs(before any, diffs jsonDiffs) (string, error) {
	var doc string
	switch x := before.(type) {
	case string:
		doc = x
	case []byte:
		doc = string(x)
	default:
		return "", fmt.Errorf("the before image has no document (%T); binlog_row_image must be FULL", before)
	}
	root, err := parseJSONNode(doc)
	if err != nil {
		return "", err
	}
	for _, d := range diffs {
		legs, err := parseJSONPath(d.Path)
		if err != nil {
			return "", err
		}
		var val *jnode
		if d.Op != replication.JsonDiffOperationRemove {
			if val, err = parseJSONNode(d.Value); err != nil {
				return "", err
			}
		}
		if root, err = applyJSONDiff(root, legs, d.Op, val); err != nil {
			return "", fmt.Errorf("%s at %s: %w", d.Op, d.Path, err)
		}
	}
	var b strings.Builder
	root.write(&b)
	return b.String(), nil
}

func parseJSONNode(s string) (*jnode, error) {
	p := jsonParser{s: s}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.space(); p.i != len(s) {
		return nil, p.errorf("text after the document")
	}
	return n, nil
}

// jsonLeg is one step of a JSON path: an object member or an array index.
type jsonLeg struct {
	key   string
	index int // -1 for a member
}

// parseJSONPath reads the paths MySQL writes in a change list: $ then
// .name, ."quoted name" or [n] legs.
func parseJSONPath(path string) ([]jsonLeg, error) {
	if !strings.HasPrefix(path, "$") {
		return nil, fmt.Errorf("path %q does not start with $", path)
	}
	var legs []jsonLeg
	p := jsonParser{s: path, i: 1}
	for p.space(); p.i < len(path); p.space() {
		switch path[p.i] {
		case '.':
			p.i++
			p.space()
			if p.i < len(path) && path[p.i] == '"' {
				k, err := p.str()
				if err != nil {
					return nil, err
				}
				legs = append(legs, jsonLeg{key: k, index: -1})
				continue
			}
			start := p.i
			for p.i < len(path) && !strings.ContainsRune(".[ ", rune(path[p.i])) {
				p.i++
			}
			if p.i == start || path[start:p.i] == "*" {
				return nil, fmt.Errorf("path %q: member name expected", path)
			}
			legs = append(legs, jsonLeg{key: path[start:p.i], index: -1})
		case '[':
			end := strings.IndexByte(path[p.i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: ] expected", path)
			}
			n, err := strconv.Atoi(strings.TrimSpace(path[p.i+1 : p.i+end]))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("path %q: array index expected", path)
			}
			legs = append(legs, jsonLeg{index: n})
			p.i += end + 1
		default:
			return nil, fmt.Errorf("path %q: unexpected %q", path, path[p.i])
		}
	}
	return legs, nil
}

// applyJSONDiff applies one change at legs under root and returns the
// new root.
func applyJSONDiff(root *jnode, legs []jsonLeg, op replication.JsonDiffOperation, val *jnode) (*jnode, error) {
	if len(legs) == 0 {
		if op != replication.JsonDiffOperationReplace {
			return nil, fmt.Errorf("the document itself")
		}
		return val, nil
	}
	parent := root
	for _, l := range legs[:len(legs)-1] {
		i := parent.find(l)
		if i < 0 {
			return nil, fmt.Errorf("no such path in the before image")
		}
		parent = parent.vals[i]
	}
	last := legs[len(legs)-1]
	i := parent.find(last)
	switch {
	case op == replication.JsonDiffOperationReplace && i >= 0:
		parent.vals[i] = val
	case op == replication.JsonDiffOperationRemove && i >= 0:
		parent.vals = append(parent.vals[:i], parent.vals[i+1:]...)
		if parent.kind == '{' {
			parent.keys = append(parent.keys[:i], parent.keys[i+1:]...)
		}
	case op == replication.JsonDiffOperationInsert && parent.kind == '{' && last.index < 0 && i < 0:
		// MySQL keeps an object's keys shortest first, then by their bytes
		at := len(parent.keys)
		for j, k := range parent.keys {
			if len(last.key) < len(k) || len(last.key) == len(k) && last.key < k {
				at = j
				break
			}
		}
		parent.keys = append(parent.keys[:at], append([]string{last.key}, parent.keys[at:]...)...)
		parent.vals = append(parent.vals[:at], append([]*jnode{val}, parent.vals[at:]...)...)
	case op == replication.JsonDiffOperationInsert && parent.kind == '[' && last.index >= 0:
		at := min(last.index, len(parent.vals))
		parent.vals = append(parent.vals[:at], append([]*jnode{val}, parent.vals[at:]...)...)
	default:
		return nil, fmt.Errorf("the path does not fit the before image")
	}
	return root, nil
}

// find returns the position of leg l's value in n, -1 when absent.
func (n *jnode) find(l jsonLeg) int {
	switch {
	case n.kind == '{' && l.index < 0:
		for i, k := range n.keys {
			if k == l.key {
				return i
			}
		}
	case n.kind == '[' && l.index >= 0 && l.index < len(n.vals):
		return l.index
	}
	return -1
}

// partialAfterImage replaces, in a partial update's after image, each JSON
// column's changes by the document they make of the before image's.
func partialAfterImage(ti *tableInfo, before, after []any) error {
	for i, v := range after {
		switch d := v.(type) {
		case jsonDiffs:
			if i >= len(before) {
				return fmt.Errorf("%w: %s: the before image lacks column %d", ErrUnsupported, ti.id, i)
			}
			doc, err := applyJSONDiffs(before[i], d)
			if err != nil {
				return fmt.Errorf("%w: %w of %s column %d: %w", ErrUnsupported, errPartialJSON, ti.id, i, err)
			}
			after[i] = doc
		case *replication.JsonDiff: // decoded without decodeRowsEvent: only the first change
			return fmt.Errorf("%w: %w of %s: its changes were not all read", ErrUnsupported, errPartialJSON, ti.id)
		}
	}
	return nil
}
