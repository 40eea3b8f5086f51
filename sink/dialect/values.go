package dialect

import (
	"fmt"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// Conversion from the schema's Go representation (schema/doc.go) to driver
// parameters. Dates and times travel as text in the server's input format so
// that no driver applies a time zone to them.

// ValueErr is a value of column col the target cannot take, and why.
func ValueErr(col string, s *schema.Schema, v any, why string) error {
	return schema.Fatal(fmt.Errorf("%w: column %q (%s): %s (value %v of Go type %T)", ErrValue, col, s, why, v, v))
}

// Micros reads a time, timestamp or zoned timestamp of the schema model:
// int64 microseconds.
func Micros(col string, s *schema.Schema, v any) (int64, error) {
	us, ok := schema.AsInt64(v)
	if !ok {
		return 0, ValueErr(col, s, v, "want int64 microseconds")
	}
	return us, nil
}

// TimestampText renders a (zoned) timestamp value as wall-clock text.
func TimestampText(col string, s *schema.Schema, v any) (string, error) {
	us, err := Micros(col, s, v)
	if err != nil {
		return "", err
	}
	str, ok := FormatTimestamp(us)
	if !ok {
		return "", ValueErr(col, s, v, "timestamp outside years 1..9999")
	}
	return str, nil
}

// FormatDate writes a date given as days since 1970-01-01 as YYYY-MM-DD;
// false when it is outside years 1 to 9999, which no target stores.
func FormatDate(days int64) (string, bool) {
	if days < -800_000 || days > 3_000_000 { // well outside years 1..9999; also keeps days*86400 from overflowing
		return "", false
	}
	t := time.Unix(days*86400, 0).UTC()
	if t.Year() < 1 || t.Year() > 9999 {
		return "", false
	}
	return t.Format("2006-01-02"), true
}

// FormatTimestamp writes a UTC time given as microseconds since the epoch
// in the targets' literal form; false outside years 1 to 9999.
func FormatTimestamp(us int64) (string, bool) {
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

// FormatTime renders µs as [-]H:MM:SS.ffffff (hours may exceed 24).
func FormatTime(us int64) string {
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

// ConvertCommon handles the conversions both dialects share; handled is false
// for the ones a dialect decides itself.
func ConvertCommon(col string, s *schema.Schema, v any) (out any, handled bool, err error) {
	switch s.Logical {
	case schema.Decimal:
		switch x := v.(type) {
		case schema.Dec:
			return x.String(), true, nil
		case *schema.Dec:
			return x.String(), true, nil
		case string:
			if _, err := schema.ParseDec(x); err != nil {
				return nil, true, ValueErr(col, s, v, "not a decimal")
			}
			return x, true, nil
		}
		return nil, true, ValueErr(col, s, v, "want schema.Dec")
	case schema.Date:
		d, ok := schema.AsInt64(v)
		if !ok {
			return nil, true, ValueErr(col, s, v, "want int32 days since 1970-01-01")
		}
		str, ok := FormatDate(d)
		if !ok {
			return nil, true, ValueErr(col, s, v, "date outside years 1..9999")
		}
		return str, true, nil
	case schema.Timestamp:
		str, err := TimestampText(col, s, v)
		return str, true, err
	case schema.Json, schema.Enum, schema.Set:
		out, err := text(col, s, v)
		return out, true, err
	case schema.Year:
		y, ok := schema.AsInt64(v)
		if !ok {
			return nil, true, ValueErr(col, s, v, "want int64 year")
		}
		return y, true, nil
	case schema.Geometry:
		switch g := v.(type) {
		case schema.Geom:
			return g.WKB, true, nil // the target column holds the WKB
		case []byte:
			return g, true, nil
		}
		return nil, true, ValueErr(col, s, v, "want Geom")
	case schema.Time, schema.ZonedTimestamp, schema.Bits:
		return nil, false, nil
	}
	switch s.Type {
	case schema.Int8, schema.Int16, schema.Int32, schema.Int64:
		if _, ok := v.(int64); ok {
			return v, true, nil // boxed already: no new box
		}
		i, ok := schema.AsInt64(v)
		if !ok {
			return nil, true, ValueErr(col, s, v, "want int64")
		}
		return i, true, nil
	case schema.Bool:
		if b, ok := v.(bool); ok {
			return b, true, nil
		}
		return nil, true, ValueErr(col, s, v, "want bool")
	case schema.String:
		out, err := text(col, s, v)
		return out, true, err
	case schema.Bytes:
		switch x := v.(type) {
		case []byte:
			return x, true, nil
		case string:
			return []byte(x), true, nil
		}
		return nil, true, ValueErr(col, s, v, "want []byte")
	}
	return nil, false, nil
}

// text reads a string value (string, or its bytes).
func text(col string, s *schema.Schema, v any) (any, error) {
	switch x := v.(type) {
	case string:
		return v, nil // boxed already: no copy of the string header
	case []byte:
		return string(x), nil
	}
	return nil, ValueErr(col, s, v, "want string")
}
