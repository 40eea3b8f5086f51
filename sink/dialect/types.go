package dialect

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// FractionDigits is the fractional-second precision of a TIME, DATETIME or
// TIMESTAMP column, read from its source type ("datetime(3)": 3; "datetime":
// 0, whole seconds); 6, every digit sluice keeps, when the record carries no
// source type (e.g. events of another producer).
func FractionDigits(s *schema.Schema) int {
	st := strings.ToLower(strings.TrimSpace(s.Param(schema.ParamSourceType)))
	if st == "" {
		return 6
	}
	word, rest, _ := strings.Cut(st, "(")
	switch strings.TrimSpace(word) {
	case "time", "datetime", "timestamp":
	default:
		return 6
	}
	if rest == "" {
		return 0
	}
	digits, _, ok := strings.Cut(rest, ")")
	n, err := strconv.Atoi(strings.TrimSpace(digits))
	if !ok || err != nil || n < 0 || n > 6 {
		return 6
	}
	return n
}

// PrecisionScale reads a decimal schema's precision and scale (0 when not given).
func PrecisionScale(s *schema.Schema) (int, int, error) {
	p, sc := 0, 0
	var err error
	if v := s.Param(schema.ParamPrecision); v != "" {
		if p, err = strconv.Atoi(v); err != nil || p < 0 || p > 1000 {
			return 0, 0, fmt.Errorf("%w: decimal precision %q", ErrSchema, v)
		}
	}
	if v := s.Param(schema.ParamScale); v != "" {
		if sc, err = strconv.Atoi(v); err != nil || sc < 0 || sc > 1000 || (p > 0 && sc > p) {
			return 0, 0, fmt.Errorf("%w: decimal scale %q", ErrSchema, v)
		}
	}
	return p, sc, nil
}

// BitLength is a BIT schema's length, 64 when not given.
func BitLength(s *schema.Schema) int {
	n, err := strconv.Atoi(s.Param(schema.ParamLength))
	if err != nil || n <= 0 || n > 64 {
		return 64
	}
	return n
}
