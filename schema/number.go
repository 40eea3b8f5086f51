package schema

import "math"

// AsInt64 reads an integer value of the record model (int64, and the
// other Go integer types a value may arrive as) as int64; false when v is
// no integer or does not fit.
func AsInt64(v any) (int64, bool) {
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

// AsUint64 reads an integer value as uint64; false when v is no integer
// or is negative.
func AsUint64(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint64:
		return x, true
	case uint:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	}
	if i, ok := AsInt64(v); ok && i >= 0 {
		return uint64(i), true
	}
	return 0, false
}
