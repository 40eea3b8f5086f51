package mysql

import (
	"math"
	"strconv"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

const usMaxTime = int64(838*3600+59*60+59) * 1_000_000 // MySQL TIME upper bound

// Convert turns a value of the schema model into a go-sql-driver/mysql
// parameter.
func (Dialect) Convert(col string, s *schema.Schema, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if out, ok, err := dialect.ConvertCommon(col, s, v); ok {
		return out, err
	}
	switch s.Logical {
	case schema.Time:
		us, err := dialect.Micros(col, s, v)
		if err != nil {
			return nil, err
		}
		if us < -usMaxTime || us > usMaxTime {
			return nil, dialect.ValueErr(col, s, v, "TIME outside ±838:59:59")
		}
		return dialect.FormatTime(us), nil
	case schema.ZonedTimestamp:
		// The session time zone is UTC (see New), so the wall clock is UTC.
		str, err := dialect.TimestampText(col, s, v)
		if err != nil {
			return nil, err
		}
		return str, nil
	case schema.Bits:
		u, ok := schema.AsUint64(v)
		if !ok {
			return nil, dialect.ValueErr(col, s, v, "want uint64")
		}
		return u, nil
	}
	switch s.Type {
	case schema.Uint64:
		u, ok := schema.AsUint64(v)
		if !ok {
			return nil, dialect.ValueErr(col, s, v, "want uint64")
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
			return nil, dialect.ValueErr(col, s, v, "want float")
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, dialect.ValueErr(col, s, v, "MySQL cannot store NaN or infinity")
		}
		return f, nil
	}
	return nil, dialect.ValueErr(col, s, v, "unsupported schema")
}
