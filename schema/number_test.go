package schema

import (
	"math"
	"testing"
)

func TestAsIntegers(t *testing.T) {
	for _, tc := range []struct {
		v   any
		i   int64
		iok bool
		u   uint64
		uok bool
	}{
		{int64(-1), -1, true, 0, false},
		{int8(-128), -128, true, 0, false},
		{uint8(255), 255, true, 255, true},
		{int(7), 7, true, 7, true},
		{uint64(math.MaxInt64), math.MaxInt64, true, math.MaxInt64, true},
		{uint64(math.MaxUint64), 0, false, math.MaxUint64, true},
		{uint(3), 3, true, 3, true},
		{"1", 0, false, 0, false},
		{1.0, 0, false, 0, false},
		{nil, 0, false, 0, false},
	} {
		if i, ok := AsInt64(tc.v); i != tc.i || ok != tc.iok {
			t.Errorf("AsInt64(%T %v) = %d, %v; want %d, %v", tc.v, tc.v, i, ok, tc.i, tc.iok)
		}
		if u, ok := AsUint64(tc.v); u != tc.u || ok != tc.uok {
			t.Errorf("AsUint64(%T %v) = %d, %v; want %d, %v", tc.v, tc.v, u, ok, tc.u, tc.uok)
		}
	}
}
