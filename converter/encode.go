package converter

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/sluicecdc/sluice/schema"
)

// appendCSchema writes a Connect schema; field is its "field" member or "".
func appendCSchema(b []byte, c *cschema, field string) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, c.typ)
	switch {
	case c.fields != nil || c.typ == "struct":
		b = append(b, `,"fields":[`...)
		for i, f := range c.fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCSchema(b, f.s, f.name)
		}
		b = append(b, ']')
	case c.items != nil:
		b = append(b, `,"items":`...)
		b = appendCSchema(b, c.items, "")
	case c.keys != nil:
		b = append(b, `,"keys":`...)
		b = appendCSchema(b, c.keys, "")
		b = append(b, `,"values":`...)
		b = appendCSchema(b, c.values, "")
	}
	b = append(b, `,"optional":`...)
	b = strconv.AppendBool(b, c.optional)
	if c.name != "" {
		b = append(b, `,"name":`...)
		b = appendString(b, c.name)
	}
	if c.version != 0 {
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, int64(c.version), 10)
	}
	if c.doc != "" {
		b = append(b, `,"doc":`...)
		b = appendString(b, c.doc)
	}
	if len(c.params) > 0 {
		b = append(b, `,"parameters":{`...)
		for i, p := range c.params {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, p[0])
			b = append(b, ':')
			b = appendString(b, p[1])
		}
		b = append(b, '}')
	}
	if c.def != nil {
		p, err := planOf(c)
		if err == nil {
			var d []byte
			if d, err = appendValue(nil, p, c.def); err == nil {
				b = append(b, `,"default":`...)
				b = append(b, d...)
			}
		}
	}
	if field != "" {
		b = append(b, `,"field":`...)
		b = appendString(b, field)
	}
	return append(b, '}')
}

// appendRow writes a struct value aligned with p's fields.
func appendRow(b []byte, p *plan, row schema.Row) ([]byte, error) {
	if len(row) != len(p.fields) {
		return nil, fmt.Errorf("%w: row has %d values for %d fields", ErrValue, len(row), len(p.fields))
	}
	b = append(b, '{')
	var err error
	for i, fp := range p.fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p.keys[i]...)
		if b, err = appendValue(b, fp, row[i]); err != nil {
			return nil, fmt.Errorf("field %s: %w", p.names[i], err)
		}
	}
	return append(b, '}'), nil
}

func typeErr(v any, p *plan) error {
	return fmt.Errorf("%w: %T for %s", ErrValue, v, p.s)
}

// appendValue writes one value per its plan.
func appendValue(b []byte, p *plan, v any) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	switch p.kind {
	case kInt, kDate:
		switch x := v.(type) {
		case int64:
			return strconv.AppendInt(b, x, 10), nil
		case int32:
			return strconv.AppendInt(b, int64(x), 10), nil
		case int:
			return strconv.AppendInt(b, int64(x), 10), nil
		case int16:
			return strconv.AppendInt(b, int64(x), 10), nil
		case int8:
			return strconv.AppendInt(b, int64(x), 10), nil
		}
	case kUintDec:
		if x, ok := v.(uint64); ok {
			var buf [9]byte
			n := 8
			for i := 0; i < 8; i++ {
				buf[1+i] = byte(x >> (56 - 8*i))
			}
			start := 1
			for start < n && buf[start] == 0 && buf[start+1] < 0x80 {
				start++
			}
			if buf[start] >= 0x80 {
				start-- // a zero sign byte
			}
			return appendBase64(b, buf[start:]), nil
		}
	case kUintLong:
		if x, ok := v.(uint64); ok {
			return strconv.AppendInt(b, int64(x), 10), nil // wraps above 2^63-1, as Debezium's long mode
		}
	case kUsToMs, kUsToMsI32:
		if x, ok := v.(int64); ok {
			ms := x / 1000
			if x < 0 && x%1000 != 0 {
				ms-- // floor: Debezium cuts toward the past
			}
			if p.kind == kUsToMsI32 && (ms < math.MinInt32 || ms > math.MaxInt32) {
				return nil, fmt.Errorf("%w: time %dµs does not fit Kafka Connect's Time (int32 ms); use time.precision.mode adaptive_time_microseconds", ErrValue, x)
			}
			return strconv.AppendInt(b, ms, 10), nil
		}
	case kBytesText:
		if x, ok := v.([]byte); ok {
			return appendBinaryText(b, x, p.binary), nil
		}
	case kFloat32:
		switch x := v.(type) {
		case float32:
			if p.c != nil && p.c.typ == "double" {
				return appendFloat(b, float64(x), 64), nil // FLOAT(M,D): the float's exact double
			}
			return appendFloat(b, float64(x), 32), nil
		}
	case kFloat64:
		switch x := v.(type) {
		case float64:
			return appendFloat(b, x, 64), nil
		case float32:
			return appendFloat(b, float64(x), 64), nil
		}
	case kBool:
		if x, ok := v.(bool); ok {
			return strconv.AppendBool(b, x), nil
		}
	case kString:
		if x, ok := v.(string); ok {
			return appendString(b, x), nil
		}
	case kBytes:
		if x, ok := v.([]byte); ok {
			return appendBase64(b, x), nil
		}
	case kDecBytes, kDecString, kDecDouble, kDecVar:
		d, ok := v.(schema.Dec)
		if !ok {
			if pd, isPtr := v.(*schema.Dec); isPtr && pd != nil {
				d, ok = *pd, true
			}
		}
		if !ok {
			break
		}
		if p.kind != kDecVar && d.Scale != p.scale {
			if d.Scale > p.scale {
				return nil, fmt.Errorf("%w: decimal %s has more fraction digits than scale %d", ErrValue, d, p.scale)
			}
			d = d.Rescale(p.scale)
		}
		switch p.kind {
		case kDecBytes:
			return appendBase64(b, twosComplement(d.Unscaled)), nil
		case kDecString:
			return appendString(b, d.String()), nil
		case kDecDouble:
			f, _ := strconv.ParseFloat(d.String(), 64)
			return appendFloat(b, f, 64), nil
		default:
			b = append(b, `{"scale":`...)
			b = strconv.AppendInt(b, int64(d.Scale), 10)
			b = append(b, `,"value":`...)
			b = appendBase64(b, twosComplement(d.Unscaled))
			return append(b, '}'), nil
		}
	case kZoned:
		if x, ok := v.(int64); ok {
			b = append(b, '"')
			b = appendZonedFsp(b, x, p.fsp)
			return append(b, '"'), nil
		}
	case kBitsBytes:
		if x, ok := v.(uint64); ok {
			if p.nbits < 64 && x>>p.nbits != 0 {
				return nil, fmt.Errorf("%w: bits value %d wider than %d bits", ErrValue, x, p.nbits)
			}
			var buf [8]byte
			for i := 0; i < p.nbytes; i++ {
				buf[i] = byte(x >> (8 * i))
			}
			return appendBase64(b, buf[:p.nbytes]), nil
		}
	case kBitsBool:
		if x, ok := v.(uint64); ok {
			if x > 1 {
				return nil, fmt.Errorf("%w: BIT(1) value %d", ErrValue, x)
			}
			return strconv.AppendBool(b, x == 1), nil
		}
	case kGeometry:
		var g schema.Geom
		switch x := v.(type) {
		case schema.Geom:
			g = x
		case []byte: // WKB without SRID
			g.WKB = x
		default:
			return nil, fmt.Errorf("%w: %T for %s (want schema.Geom)", ErrValue, v, p.s)
		}
		if p.point {
			px, py, ok := pointXY(g.WKB)
			if !ok {
				return nil, fmt.Errorf("%w: POINT column value is not a WKB point (%d bytes)", ErrValue, len(g.WKB))
			}
			b = append(b, `{"x":`...)
			b = appendFloat(b, px, 64)
			b = append(b, `,"y":`...)
			b = appendFloat(b, py, 64)
			b = append(b, ',')
		} else {
			b = append(b, '{')
		}
		b = append(b, `"wkb":`...)
		b = appendBase64(b, g.WKB)
		if g.SRID == 0 { // Debezium: no SRID is a null srid
			return append(b, `,"srid":null}`...), nil
		}
		b = append(b, `,"srid":`...)
		b = strconv.AppendInt(b, int64(int32(g.SRID)), 10) // Connect int32, as Debezium's Integer
		return append(b, '}'), nil
	case kStruct:
		if x, ok := v.(schema.Row); ok {
			return appendRow(b, p, x)
		}
		if x, ok := v.([]any); ok {
			return appendRow(b, p, x)
		}
	case kArray:
		if x, ok := v.([]any); ok {
			b = append(b, '[')
			var err error
			for i, e := range x {
				if i > 0 {
					b = append(b, ',')
				}
				if b, err = appendValue(b, p.elem, e); err != nil {
					return nil, err
				}
			}
			return append(b, ']'), nil
		}
	case kMap:
		if x, ok := v.(map[string]any); ok {
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			b = append(b, '{')
			var err error
			for i, k := range keys {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendString(b, k)
				b = append(b, ':')
				if b, err = appendValue(b, p.elem, x[k]); err != nil {
					return nil, err
				}
			}
			return append(b, '}'), nil
		}
	}
	return nil, typeErr(v, p)
}

func appendInt(b []byte, v int64) []byte   { return strconv.AppendInt(b, v, 10) }
func appendUint(b []byte, v uint64) []byte { return strconv.AppendUint(b, v, 10) }

func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

func appendBase64(b []byte, src []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, src)
	return append(b, '"')
}

// twosComplement is Java's BigInteger.toByteArray: the shortest big-endian
// two's-complement form (at least one byte).
func twosComplement(u *big.Int) []byte {
	if u == nil {
		return []byte{0}
	}
	if u.IsInt64() {
		x := u.Int64()
		var buf [8]byte
		for i := 0; i < 8; i++ {
			buf[i] = byte(x >> (56 - 8*i))
		}
		i := 0
		for i < 7 {
			if (buf[i] == 0 && buf[i+1] < 0x80) || (buf[i] == 0xff && buf[i+1] >= 0x80) {
				i++
				continue
			}
			break
		}
		out := make([]byte, 8-i)
		copy(out, buf[i:])
		return out
	}
	if u.Sign() >= 0 {
		raw := u.Bytes()
		if raw[0] >= 0x80 {
			return append([]byte{0}, raw...)
		}
		return raw
	}
	// -x = ^(x-1): bytes of |u|-1 inverted.
	m := new(big.Int).Neg(u)
	m.Sub(m, big.NewInt(1))
	raw := m.Bytes()
	if len(raw) == 0 || raw[0] >= 0x80 {
		raw = append([]byte{0}, raw...)
	}
	for i := range raw {
		raw[i] = ^raw[i]
	}
	return raw
}

// fromTwosComplement is the inverse of twosComplement.
func fromTwosComplement(raw []byte) *big.Int {
	if len(raw) == 0 {
		return new(big.Int)
	}
	if len(raw) <= 8 {
		x := int64(int8(raw[0]))
		for _, c := range raw[1:] {
			x = x<<8 | int64(c)
		}
		return big.NewInt(x)
	}
	if raw[0] < 0x80 {
		return new(big.Int).SetBytes(raw)
	}
	inv := make([]byte, len(raw))
	for i, c := range raw {
		inv[i] = ^c
	}
	m := new(big.Int).SetBytes(inv)
	m.Add(m, big.NewInt(1))
	return m.Neg(m)
}

const hexDigits = "0123456789abcdef"

// safeASCII marks bytes that need no escaping inside a JSON string.
var safeASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return
}()

// appendString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// <, > and & are kept as is (not HTML-escaped); U+2028/U+2029 are escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
