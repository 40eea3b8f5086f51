package schema

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Dec is an exact decimal number: Unscaled × 10^-Scale. It keeps every digit
// of DECIMAL(65,30). The zero value is 0 with scale 0.
type Dec struct {
	Unscaled *big.Int
	Scale    int32
}

// ParseDec parses a decimal literal such as "-123.4500" keeping its scale.
func ParseDec(s string) (Dec, error) {
	orig := s
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	} else if strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	n := len(intPart) + len(frac)
	if n == 0 || n > 200 {
		return Dec{}, fmt.Errorf("schema: invalid decimal %q", orig)
	}
	if n <= 18 { // fits an int64: no big-number parsing
		var v int64
		for _, part := range [2]string{intPart, frac} {
			for i := 0; i < len(part); i++ {
				c := part[i]
				if c < '0' || c > '9' {
					return Dec{}, fmt.Errorf("schema: invalid decimal %q", orig)
				}
				v = v*10 + int64(c-'0')
			}
		}
		if neg {
			v = -v
		}
		return Dec{Unscaled: big.NewInt(v), Scale: int32(len(frac))}, nil
	}
	digits := intPart + frac
	for _, c := range digits {
		if c < '0' || c > '9' {
			return Dec{}, fmt.Errorf("schema: invalid decimal %q", orig)
		}
	}
	u, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return Dec{}, fmt.Errorf("schema: invalid decimal %q", orig)
	}
	if neg {
		u.Neg(u)
	}
	return Dec{Unscaled: u, Scale: int32(len(frac))}, nil
}

// MustDec is ParseDec for literals in code and tests; it panics on bad input.
func MustDec(s string) Dec {
	d, err := ParseDec(s)
	if err != nil {
		panic(err)
	}
	return d
}

// Rescale returns d with the given scale, padding or cutting fraction digits
// (cutting truncates toward zero; callers use it only to pad to a declared scale).
func (d Dec) Rescale(scale int32) Dec {
	u := d.unscaled()
	switch {
	case scale > d.Scale:
		m := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale-d.Scale)), nil)
		return Dec{Unscaled: new(big.Int).Mul(u, m), Scale: scale}
	case scale < d.Scale:
		m := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale-scale)), nil)
		return Dec{Unscaled: new(big.Int).Quo(u, m), Scale: scale}
	}
	return d
}

func (d Dec) unscaled() *big.Int {
	if d.Unscaled == nil {
		return new(big.Int)
	}
	return d.Unscaled
}

// String renders the number with exactly Scale fraction digits.
func (d Dec) String() string {
	var b [24]byte
	return string(d.Append(b[:0]))
}

// Append appends String's text to buf. Numbers whose unscaled value fits
// an int64 (every DECIMAL up to 18 digits) take no big.Int arithmetic.
func (d Dec) Append(buf []byte) []byte {
	u := d.unscaled()
	var digits []byte
	var tmp [20]byte
	if u.IsInt64() {
		v := u.Int64()
		if v < 0 {
			buf = append(buf, '-')
			// -MinInt64 overflows; its magnitude as uint64 does not.
			digits = strconv.AppendUint(tmp[:0], uint64(-(v+1))+1, 10)
		} else {
			digits = strconv.AppendUint(tmp[:0], uint64(v), 10)
		}
	} else {
		if u.Sign() < 0 {
			buf = append(buf, '-')
		}
		digits = new(big.Int).Abs(u).Append(nil, 10)
	}
	if d.Scale <= 0 {
		return append(buf, digits...)
	}
	scale := int(d.Scale)
	if len(digits) <= scale {
		buf = append(buf, '0', '.')
		for range scale - len(digits) {
			buf = append(buf, '0')
		}
		return append(buf, digits...)
	}
	buf = append(buf, digits[:len(digits)-scale]...)
	buf = append(buf, '.')
	return append(buf, digits[len(digits)-scale:]...)
}

// Equal reports numeric and scale equality.
func (d Dec) Equal(o Dec) bool { return d.Scale == o.Scale && d.unscaled().Cmp(o.unscaled()) == 0 }
