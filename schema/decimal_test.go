package schema

import (
	"math"
	"math/big"
	"strings"
	"testing"
)

// refString is the plain big.Int rendering that Append's int64 fast path
// must match digit for digit.
func refString(d Dec) string {
	u := d.unscaled()
	s := new(big.Int).Abs(u).String()
	if d.Scale > 0 {
		if len(s) <= int(d.Scale) {
			s = strings.Repeat("0", int(d.Scale)-len(s)+1) + s
		}
		s = s[:len(s)-int(d.Scale)] + "." + s[len(s)-int(d.Scale):]
	}
	if u.Sign() < 0 {
		s = "-" + s
	}
	return s
}

func TestDecString(t *testing.T) {
	cases := []struct {
		in   string
		want string
	}{
		{"0", "0"}, {"0.00", "0.00"}, {"-0.05", "-0.05"}, {"12.30", "12.30"}, {"-123.4500", "-123.4500"},
		{".5", "0.5"}, {"99999999999999999999999999999999999.123456789012345678901234567890", "99999999999999999999999999999999999.123456789012345678901234567890"},
		{"-9223372036854775808", "-9223372036854775808"}, {"-922337203685477580.8", "-922337203685477580.8"},
		{"9223372036854775807", "9223372036854775807"}, {"9223372036854775808", "9223372036854775808"},
	}
	for _, c := range cases {
		if got := MustDec(c.in).String(); got != c.want {
			t.Errorf("MustDec(%q).String() = %q, want %q", c.in, got, c.want)
		}
	}
	if got := (Dec{}).String(); got != "0" {
		t.Errorf("zero Dec = %q", got)
	}
}

func FuzzDecString(f *testing.F) {
	for _, seed := range []int64{0, 1, -1, 5, -5, 123456, math.MaxInt64, math.MinInt64} {
		f.Add(seed, int32(0), false)
		f.Add(seed, int32(3), true)
	}
	f.Fuzz(func(t *testing.T, v int64, scale int32, big2 bool) {
		scale %= 40
		u := big.NewInt(v)
		if big2 { // beyond int64: the big.Int path
			u.Mul(u, new(big.Int).Lsh(big.NewInt(1), 70))
		}
		d := Dec{Unscaled: u, Scale: scale}
		if got, want := d.String(), refString(d); got != want {
			t.Fatalf("Dec{%s, %d}.String() = %q, want %q", u, scale, got, want)
		}
	})
}

// refParse is ParseDec without its int64 fast path: every literal through
// big.Int.
func refParse(s string) (Dec, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg || strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	if digits == "" || len(digits) > 200 || strings.Trim(digits, "0123456789") != "" {
		return Dec{}, false
	}
	u, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return Dec{}, false
	}
	if neg {
		u.Neg(u)
	}
	return Dec{Unscaled: u, Scale: int32(len(frac))}, true
}

// ParseDec's int64 fast path (up to 18 digits) gives what big.Int parsing
// gives: the same number, the same scale, the same refusals.
func FuzzParseDec(f *testing.F) {
	for _, s := range []string{"0", "-0", "-0.00", "+5", "1.", ".5", ".", "-", "", "1.2.3", "0x10", "1e5", " 1",
		"000000000000000000123.45", "999999999999999999", "-999999999999999999", "9999999999999999999",
		"-99999999999999999.9", "123456789012345678.9", "-9223372036854775808", "1_000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseDec(s)
		want, ok := refParse(s)
		if (err == nil) != ok {
			t.Fatalf("ParseDec(%q) err = %v, reference ok = %v", s, err, ok)
		}
		if ok && (!got.Equal(want) || got.String() != want.String()) {
			t.Fatalf("ParseDec(%q) = %s (scale %d), want %s (scale %d)", s, got, got.Scale, want, want.Scale)
		}
	})
}
