package binlog

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicecdc/sluice/binlog/charset"
	"github.com/sluicecdc/sluice/schema"
)

// convert turns one value decoded by go-mysql (with ParseTime; DECIMAL as
// text or a fmt.Stringer) into the Go representation documented in package
// schema. It never keeps a reference to v's memory, which may belong to the
// event buffer.
func convert(c *column, v any, zeroAsNull bool) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.kind {
	case kInt:
		switch x := v.(type) {
		case int8:
			return int64(x), nil
		case int16:
			return int64(x), nil
		case int32:
			return int64(x), nil
		case int64:
			return x, nil
		case int:
			return int64(x), nil
		case uint8:
			return int64(x), nil
		case uint16:
			return int64(x), nil
		case uint32:
			return int64(x), nil
		}
	case kUint64:
		switch x := v.(type) {
		case uint64:
			return x, nil
		case int64:
			return uint64(x), nil
		}
	case kFloat32:
		switch x := v.(type) {
		case float32:
			return x, nil
		case float64:
			return float32(x), nil
		}
	case kFloat64:
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		}
	case kDecimal:
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case fmt.Stringer:
			s = x.String()
		default:
			return nil, badValue(c, v)
		}
		d, err := schema.ParseDec(s)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.name, err)
		}
		if d.Scale > c.scale {
			return nil, fmt.Errorf("column %s: decimal %s has more fraction digits than the declared scale %d", c.name, s, c.scale)
		}
		return d.Rescale(c.scale), nil
	case kBits:
		switch x := v.(type) {
		case int64:
			return uint64(x), nil
		case uint64:
			return x, nil
		}
	case kYear:
		switch x := v.(type) {
		case int:
			return int64(x), nil
		case int64:
			return x, nil
		}
	case kDate:
		if s, ok := v.(string); ok {
			y, m, d, ok := parseYMD(s)
			if !ok {
				return nil, badValue(c, v)
			}
			if m == 0 || d == 0 {
				return zeroDate(zeroAsNull, int32(0)), nil
			}
			return int32(time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix() / 86400), nil
		}
		if t, ok := v.(time.Time); ok {
			y, m, d := t.Date()
			return int32(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400), nil
		}
	case kTime:
		if s, ok := v.(string); ok {
			us, ok := parseTime(s)
			if !ok {
				return nil, badValue(c, v)
			}
			return us, nil
		}
	case kDatetime, kTimestamp:
		switch x := v.(type) {
		case time.Time:
			if c.kind == kDatetime { // wall clock: go-mysql builds it in UTC
				y, m, d := x.Date()
				h, mi, s := x.Clock()
				return time.Date(y, m, d, h, mi, s, x.Nanosecond(), time.UTC).UnixMicro(), nil
			}
			return x.UnixMicro(), nil
		case string:
			us, zero, ok := parseDatetime(x)
			if !ok {
				return nil, badValue(c, v)
			}
			if zero {
				return zeroDate(zeroAsNull, int64(0)), nil
			}
			return us, nil
		}
	case kString:
		switch x := v.(type) {
		case string:
			return charset.DecodeString(x, c.charset), nil
		case []byte:
			return charset.Decode(x, c.charset), nil
		}
	case kBytes:
		switch x := v.(type) {
		case []byte:
			return padBinary(c, x), nil
		case string:
			return padBinary(c, []byte(x)), nil
		}
	case kUUID, kInet6, kInet4:
		switch x := v.(type) {
		case []byte:
			return extValue(c, padBinary(c, x))
		case string:
			return extValue(c, padBinary(c, []byte(x)))
		}
	case kEnum:
		if i, ok := schema.AsInt64(v); ok {
			if i == 0 { // the error value '' stored for invalid input
				return "", nil
			}
			if i < 0 || int(i) > len(c.labels) {
				return nil, fmt.Errorf("column %s: enum index %d out of range 1-%d", c.name, i, len(c.labels))
			}
			return c.labels[i-1], nil
		}
	case kSet:
		if bits, ok := setBits(v); ok {
			if len(c.labels) < 64 && bits>>uint(len(c.labels)) != 0 {
				return nil, fmt.Errorf("column %s: set bits %#x name members beyond the %d labels", c.name, bits, len(c.labels))
			}
			var b strings.Builder
			for j, l := range c.labels {
				if bits&(1<<uint(j)) != 0 {
					if b.Len() > 0 {
						b.WriteByte(',')
					}
					b.WriteString(l)
				}
			}
			return b.String(), nil
		}
	case kJSON:
		switch x := v.(type) {
		case string:
			if c.charset != "" { // MariaDB's JSON: LONGTEXT
				return charset.DecodeString(x, c.charset), nil
			}
			return nativeJSON(c, x)
		case []byte:
			if c.charset != "" {
				return charset.Decode(x, c.charset), nil
			}
			return nativeJSON(c, string(x))
		}
	case kGeometry:
		if x, ok := v.([]byte); ok {
			// The server stores a 4-byte SRID before the WKB: both paths
			// (binlog and snapshot) keep the two.
			g, ok := schema.ParseMySQLGeometry(x)
			if !ok {
				return nil, fmt.Errorf("column %s: geometry value of %d bytes lacks the SRID prefix", c.name, len(x))
			}
			return g, nil
		}
	}
	return nil, badValue(c, v)
}

// padBinary copies b, restoring the trailing 0x00 bytes of a BINARY(n)
// value: the server writes BINARY(n) to the binlog without them (a value
// ending in 0x00 would otherwise stream shorter than the snapshot reads it,
// and as a key name another row).
func padBinary(c *column, b []byte) []byte {
	n := max(len(b), c.pad)
	out := make([]byte, n)
	copy(out, b)
	return out
}

func badValue(c *column, v any) error {
	s := fmt.Sprintf("%v", v)
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return fmt.Errorf("%w: column %s: cannot map %T value %q", ErrUnsupported, c.name, v, s)
}

func zeroDate[T int32 | int64](asNull bool, epoch T) any {
	if asNull {
		return nil
	}
	return epoch
}

// setBits reads a SET value's member bits: go-mysql gives them as an
// int64, negative when the 64th member is set.
func setBits(v any) (uint64, bool) {
	if x, ok := v.(int64); ok {
		return uint64(x), true
	}
	return schema.AsUint64(v)
}

// parseYMD parses "YYYY-MM-DD" allowing zero month and day.
func parseYMD(s string) (y, m, d int, ok bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, 0, 0, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || m > 12 || d > 31 {
		return 0, 0, 0, false
	}
	return y, m, d, true
}

// parseDatetime parses "YYYY-MM-DD HH:MM:SS[.ffffff]" as a UTC wall clock.
// zero reports a zero or partly zero date, which has no instant.
func parseDatetime(s string) (us int64, zero, ok bool) {
	if len(s) < 19 || s[10] != ' ' || s[13] != ':' || s[16] != ':' {
		return 0, false, false
	}
	y, m, d, ok := parseYMD(s[:10])
	if !ok {
		return 0, false, false
	}
	h, ok1 := digits(s[11:13])
	mi, ok2 := digits(s[14:16])
	sec, ok3 := digits(s[17:19])
	frac, ok4 := fraction(s[19:])
	if !ok1 || !ok2 || !ok3 || !ok4 || h > 23 || mi > 59 || sec > 59 {
		return 0, false, false
	}
	if m == 0 || d == 0 {
		return 0, true, true
	}
	return time.Date(y, time.Month(m), d, h, mi, sec, 0, time.UTC).UnixMicro() + frac, false, true
}

// parseTime parses "[-]H+:MM:SS[.ffffff]" into microseconds.
func parseTime(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	hs, rest, ok := strings.Cut(s, ":")
	if !ok || len(rest) < 5 || rest[2] != ':' || len(hs) == 0 || len(hs) > 4 {
		return 0, false
	}
	h, ok1 := digits(hs)
	m, ok2 := digits(rest[0:2])
	sec, ok3 := digits(rest[3:5])
	frac, ok4 := fraction(rest[5:])
	if !ok1 || !ok2 || !ok3 || !ok4 || m > 59 || sec > 59 {
		return 0, false
	}
	us := ((int64(h)*60+int64(m))*60+int64(sec))*1_000_000 + frac
	if neg {
		us = -us
	}
	return us, true
}

// fraction parses "" or ".d{1,6}" into microseconds.
func fraction(s string) (int64, bool) {
	if s == "" {
		return 0, true
	}
	if s[0] != '.' || len(s) < 2 || len(s) > 7 {
		return 0, false
	}
	f := s[1:] + strings.Repeat("0", 7-len(s))
	n, ok := digits(f)
	return int64(n), ok
}

func digits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// nativeJSON is a MySQL JSON value in one text by snapshot and by stream
// (mysqlJSON).
func nativeJSON(c *column, s string) (any, error) {
	out, err := mysqlJSON(s)
	if err != nil {
		return nil, fmt.Errorf("%w: column %s: %w", ErrUnsupported, c.name, err)
	}
	return out, nil
}
