package postgres

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

const usPerDay = int64(86400_000_000)

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

// Convert turns a value of the schema model into a lib/pq parameter.
func (d Dialect) Convert(col string, s *schema.Schema, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if out, ok, err := dialect.ConvertCommon(col, s, v); ok {
		if str, isStr := out.(string); isStr && err == nil && strings.IndexByte(str, 0) >= 0 {
			// PostgreSQL's text types cannot hold U+0000; its own error
			// ("invalid byte sequence for encoding UTF8: 0x00") names
			// neither the column nor a way out.
			return nil, dialect.ValueErr(col, s, v, "text with a NUL byte (U+0000), which no PostgreSQL text type can hold: "+
				"remove it at the source, leave the column out (source exclude_columns), or set on_error: skip or dlq in the sink section to set such rows aside")
		}
		return out, err
	}
	switch s.Logical {
	case schema.Time:
		us, err := dialect.Micros(col, s, v)
		if err != nil {
			return nil, err
		}
		if d.interval {
			// INTERVAL takes any duration; "[-]H:MM:SS.ffffff" with hours
			// beyond 24 is its input format. MinInt64 has no positive twin.
			if us == math.MinInt64 {
				return nil, dialect.ValueErr(col, s, v, "duration out of range")
			}
			return dialect.FormatTime(us), nil
		}
		if us < 0 || us > usPerDay {
			return nil, dialect.ValueErr(col, s, v, "TIME outside 00:00:00..24:00:00 does not fit PostgreSQL TIME: set time_as_interval: true (the default) in the sink section, which makes TIME columns INTERVAL; tables made before are altered when auto_evolve is on (the default), else run ALTER TABLE ... ALTER COLUMN ... TYPE INTERVAL")
		}
		return dialect.FormatTime(us), nil
	case schema.ZonedTimestamp:
		str, err := dialect.TimestampText(col, s, v)
		if err != nil {
			return nil, err
		}
		return str + "+00", nil
	case schema.Bits:
		u, ok := schema.AsUint64(v)
		if !ok {
			return nil, dialect.ValueErr(col, s, v, "want uint64")
		}
		n := dialect.BitLength(s)
		if n < 64 && u>>uint(n) != 0 {
			return nil, dialect.ValueErr(col, s, v, fmt.Sprintf("more than %d bits", n))
		}
		return bitString(u, n), nil
	}
	switch s.Type {
	case schema.Uint64:
		u, ok := schema.AsUint64(v)
		if !ok {
			return nil, dialect.ValueErr(col, s, v, "want uint64")
		}
		return strconv.FormatUint(u, 10), nil
	case schema.Float32:
		switch x := v.(type) {
		case float32:
			return pgFloat(float64(x), 32), nil
		case float64:
			return pgFloat(x, 32), nil
		}
		return nil, dialect.ValueErr(col, s, v, "want float32")
	case schema.Float64:
		switch x := v.(type) {
		case float64:
			return pgFloat(x, 64), nil
		case float32:
			return pgFloat(float64(x), 64), nil
		}
		return nil, dialect.ValueErr(col, s, v, "want float64")
	}
	return nil, dialect.ValueErr(col, s, v, "unsupported schema")
}
