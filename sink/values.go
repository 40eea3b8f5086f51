package sink

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// Conversion from the schema's Go representation (schema/doc.go) to driver
// parameters. Dates and times travel as text in the server's input format so
// that no driver applies a time zone to them.

const (
	usPerDay  = int64(86400_000_000)
	usMaxTime = int64(838*3600+59*60+59)*1_000_000 + 0 // MySQL TIME upper bound
)

func valueErr(col string, s *schema.Schema, v any, why string) error {
	return fatal(fmt.Errorf("%w: column %q (%s): %s (value %v of Go type %T)", ErrValue, col, s, why, v, v))
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}

func asUint64(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint64:
		return x, true
	case uint:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	}
	if i, ok := asInt64(v); ok && i >= 0 {
		return uint64(i), true
	}
	return 0, false
}

// micros reads a time, timestamp or zoned timestamp of the schema model:
// int64 microseconds.
func micros(col string, s *schema.Schema, v any) (int64, error) {
	us, ok := asInt64(v)
	if !ok {
		return 0, valueErr(col, s, v, "want int64 microseconds")
	}
	return us, nil
}

// timestampText renders a (zoned) timestamp value as wall-clock text.
func timestampText(col string, s *schema.Schema, v any) (string, error) {
	us, err := micros(col, s, v)
	if err != nil {
		return "", err
	}
	str, ok := formatTimestamp(us)
	if !ok {
		return "", valueErr(col, s, v, "timestamp outside years 1..9999")
	}
	return str, nil
}

func formatDate(days int64) (string, bool) {
	if days < -800_000 || days > 3_000_000 { // well outside years 1..9999; also keeps days*86400 from overflowing
		return "", false
	}
	t := time.Unix(days*86400, 0).UTC()
	if t.Year() < 1 || t.Year() > 9999 {
		return "", false
	}
	return t.Format("2006-01-02"), true
}

func formatTimestamp(us int64) (string, bool) {
	t := time.UnixMicro(us).UTC()
	y, mo, d := t.Date()
	if y < 1 || y > 9999 {
		return "", false
	}
	h, mi, sec := t.Clock()
	var b [26]byte
	put := func(at, v, width int) {
		for i := at + width - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, y, 4)
	b[4] = '-'
	put(5, int(mo), 2)
	b[7] = '-'
	put(8, d, 2)
	b[10] = ' '
	put(11, h, 2)
	b[13] = ':'
	put(14, mi, 2)
	b[16] = ':'
	put(17, sec, 2)
	frac := t.Nanosecond() / 1000
	if frac == 0 {
		return string(b[:19]), true
	}
	b[19] = '.'
	put(20, frac, 6)
	n := 26
	for b[n-1] == '0' {
		n--
	}
	return string(b[:n]), true
}

// formatTime renders µs as [-]H:MM:SS.ffffff (hours may exceed 24).
func formatTime(us int64) string {
	sign := ""
	if us < 0 {
		sign, us = "-", -us
	}
	h := us / 3_600_000_000
	us -= h * 3_600_000_000
	m := us / 60_000_000
	us -= m * 60_000_000
	s := us / 1_000_000
	us -= s * 1_000_000
	return fmt.Sprintf("%s%02d:%02d:%02d.%06d", sign, h, m, s, us)
}

func bitString(v uint64, n int) string {
	var b strings.Builder
	b.Grow(n)
	for i := n - 1; i >= 0; i-- {
		if v>>uint(i)&1 == 1 {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	return b.String()
}

func pgFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// convertCommon handles the conversions both dialects share; handled is false
// for the ones a dialect decides itself.
func convertCommon(col string, s *schema.Schema, v any) (out any, handled bool, err error) {
	switch s.Logical {
	case schema.Decimal:
		switch x := v.(type) {
		case schema.Dec:
			return x.String(), true, nil
		case *schema.Dec:
			return x.String(), true, nil
		case string:
			if _, err := schema.ParseDec(x); err != nil {
				return nil, true, valueErr(col, s, v, "not a decimal")
			}
			return x, true, nil
		}
		return nil, true, valueErr(col, s, v, "want schema.Dec")
	case schema.Date:
		d, ok := asInt64(v)
		if !ok {
			return nil, true, valueErr(col, s, v, "want int32 days since 1970-01-01")
		}
		str, ok := formatDate(d)
		if !ok {
			return nil, true, valueErr(col, s, v, "date outside years 1..9999")
		}
		return str, true, nil
	case schema.Timestamp:
		str, err := timestampText(col, s, v)
		return str, true, err
	case schema.Json, schema.Enum, schema.Set:
		switch x := v.(type) {
		case string:
			return x, true, nil
		case []byte:
			return string(x), true, nil
		}
		return nil, true, valueErr(col, s, v, "want string")
	case schema.Year:
		y, ok := asInt64(v)
		if !ok {
			return nil, true, valueErr(col, s, v, "want int64 year")
		}
		return y, true, nil
	case schema.Geometry:
		if b, ok := v.([]byte); ok {
			return b, true, nil
		}
		return nil, true, valueErr(col, s, v, "want []byte WKB")
	case schema.Time, schema.ZonedTimestamp, schema.Bits:
		return nil, false, nil
	}
	switch s.Type {
	case schema.Int8, schema.Int16, schema.Int32, schema.Int64:
		i, ok := asInt64(v)
		if !ok {
			return nil, true, valueErr(col, s, v, "want int64")
		}
		return i, true, nil
	case schema.Bool:
		if b, ok := v.(bool); ok {
			return b, true, nil
		}
		return nil, true, valueErr(col, s, v, "want bool")
	case schema.String:
		switch x := v.(type) {
		case string:
			return x, true, nil
		case []byte:
			return string(x), true, nil
		}
		return nil, true, valueErr(col, s, v, "want string")
	case schema.Bytes:
		switch x := v.(type) {
		case []byte:
			return x, true, nil
		case string:
			return []byte(x), true, nil
		}
		return nil, true, valueErr(col, s, v, "want []byte")
	}
	return nil, false, nil
}

func (d postgres) convert(col string, s *schema.Schema, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if out, ok, err := convertCommon(col, s, v); ok {
		return out, err
	}
	switch s.Logical {
	case schema.Time:
		us, err := micros(col, s, v)
		if err != nil {
			return nil, err
		}
		if d.interval {
			// INTERVAL takes any duration; "[-]H:MM:SS.ffffff" with hours
			// beyond 24 is its input format. MinInt64 has no positive twin.
			if us == math.MinInt64 {
				return nil, valueErr(col, s, v, "duration out of range")
			}
			return formatTime(us), nil
		}
		if us < 0 || us > usPerDay {
			return nil, valueErr(col, s, v, "TIME outside 00:00:00..24:00:00 does not fit PostgreSQL TIME: set time_as_interval: true in the sink section, which makes TIME columns INTERVAL; tables made before are altered when auto_evolve is on (the default), else run ALTER TABLE ... ALTER COLUMN ... TYPE INTERVAL")
		}
		return formatTime(us), nil
	case schema.ZonedTimestamp:
		str, err := timestampText(col, s, v)
		if err != nil {
			return nil, err
		}
		return str + "+00", nil
	case schema.Bits:
		u, ok := asUint64(v)
		if !ok {
			return nil, valueErr(col, s, v, "want uint64")
		}
		n := bitLength(s)
		if n < 64 && u>>uint(n) != 0 {
			return nil, valueErr(col, s, v, fmt.Sprintf("more than %d bits", n))
		}
		return bitString(u, n), nil
	}
	switch s.Type {
	case schema.Uint64:
		u, ok := asUint64(v)
		if !ok {
			return nil, valueErr(col, s, v, "want uint64")
		}
		return strconv.FormatUint(u, 10), nil
	case schema.Float32:
		switch x := v.(type) {
		case float32:
			return pgFloat(float64(x), 32), nil
		case float64:
			return pgFloat(x, 32), nil
		}
		return nil, valueErr(col, s, v, "want float32")
	case schema.Float64:
		switch x := v.(type) {
		case float64:
			return pgFloat(x, 64), nil
		case float32:
			return pgFloat(float64(x), 64), nil
		}
		return nil, valueErr(col, s, v, "want float64")
	}
	return nil, valueErr(col, s, v, "unsupported schema")
}

func (mysql) convert(col string, s *schema.Schema, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if out, ok, err := convertCommon(col, s, v); ok {
		return out, err
	}
	switch s.Logical {
	case schema.Time:
		us, err := micros(col, s, v)
		if err != nil {
			return nil, err
		}
		if us < -usMaxTime || us > usMaxTime {
			return nil, valueErr(col, s, v, "TIME outside ±838:59:59")
		}
		return formatTime(us), nil
	case schema.ZonedTimestamp:
		// The session time zone is UTC (see New), so the wall clock is UTC.
		str, err := timestampText(col, s, v)
		if err != nil {
			return nil, err
		}
		return str, nil
	case schema.Bits:
		u, ok := asUint64(v)
		if !ok {
			return nil, valueErr(col, s, v, "want uint64")
		}
		return u, nil
	}
	switch s.Type {
	case schema.Uint64:
		u, ok := asUint64(v)
		if !ok {
			return nil, valueErr(col, s, v, "want uint64")
		}
		return strconv.FormatUint(u, 10), nil
	case schema.Float32, schema.Float64:
		var f float64
		switch x := v.(type) {
		case float32:
			f = float64(x)
		case float64:
			f = x
		default:
			return nil, valueErr(col, s, v, "want float")
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, valueErr(col, s, v, "MySQL cannot store NaN or infinity")
		}
		return f, nil
	}
	return nil, valueErr(col, s, v, "unsupported schema")
}
