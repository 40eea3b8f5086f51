package schema

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
)

// refKeyString is KeyString as it was written first, all through fmt: the
// message key and the queue of every row depend on these bytes, so the
// faster rendering must not change one of them.
func refKeyString(key Row) string {
	var b strings.Builder
	for i, v := range key {
		if i > 0 {
			b.WriteByte('|')
		}
		switch x := v.(type) {
		case nil:
			b.WriteString("\\N")
		case []byte:
			fmt.Fprintf(&b, "%x", x)
		case Geom:
			fmt.Fprintf(&b, "%d:%x", x.SRID, x.WKB)
		case string:
			b.WriteString(strings.NewReplacer("\\", "\\\\", "|", "\\|").Replace(x))
		default:
			fmt.Fprint(&b, x)
		}
	}
	return b.String()
}

func TestKeyStringAsFmt(t *testing.T) {
	keys := []Row{
		nil, {}, {nil}, {int64(0)}, {int64(-1), int64(math.MinInt64), int64(math.MaxInt64)},
		{uint64(math.MaxUint64), uint64(0)}, {int(-7)}, {"plain"}, {"a|b\\c", ""}, {"\\N", nil},
		{[]byte{}, []byte{0, 0xff, 0x10}}, {Geom{SRID: 4326, WKB: []byte{1, 2}}}, {Geom{}},
		{MustDec("-123.4500"), MustDec("0.00"), Dec{}, MustDec("99999999999999999999999999.5")},
		{Dec{Unscaled: big.NewInt(-5), Scale: 3}}, {1.5, float32(2.25), math.Inf(-1), math.NaN(), 1e21},
		{true, false}, {time.Date(2026, 12, 3, 4, 5, 6, 7, time.UTC)}, {int8(-3), uint16(9), int32(5)},
		{"ü€", "x", []byte("|")},
	}
	for _, k := range keys {
		r := Record{Key: k}
		if got, want := r.KeyString(), refKeyString(k); got != want {
			t.Errorf("KeyString(%#v) = %q, want %q", k, got, want)
		}
	}
}

func FuzzKeyString(f *testing.F) {
	f.Add(int64(1), uint64(2), "s", []byte{1}, int64(-5), int32(2))
	f.Add(int64(math.MinInt64), uint64(math.MaxUint64), "a|\\b", []byte{}, int64(0), int32(0))
	f.Fuzz(func(t *testing.T, i int64, u uint64, s string, raw []byte, unscaled int64, scale int32) {
		k := Row{i, u, s, raw, Dec{Unscaled: big.NewInt(unscaled), Scale: scale % 40}, Geom{SRID: uint32(u), WKB: raw}, nil}
		r := Record{Key: k}
		if got, want := r.KeyString(), refKeyString(k); got != want {
			t.Fatalf("KeyString(%#v) = %q, want %q", k, got, want)
		}
	})
}

// KeyValuesEqual decides only keys of int64, uint64 and string columns of
// the same types and lengths, and then answers as comparing KeyString does.
func TestKeyValuesEqual(t *testing.T) {
	vals := []any{int64(1), int64(2), uint64(1), "1", "a|b", "", []byte("1"), MustDec("1.0"), nil}
	simple := func(v any) bool {
		switch v.(type) {
		case int64, uint64, string:
			return true
		}
		return false
	}
	for _, a := range vals {
		for _, b := range vals {
			for _, pair := range [][2]Row{{{a}, {b}}, {{int64(7), a}, {int64(7), b}}, {{a}, {a, b}}} {
				eq, decided := KeyValuesEqual(pair[0], pair[1])
				wantDecided := len(pair[0]) == len(pair[1])
				for i := range pair[0] {
					if wantDecided && (!simple(pair[0][i]) || fmt.Sprintf("%T", pair[0][i]) != fmt.Sprintf("%T", pair[1][i])) {
						wantDecided = false
					}
				}
				if decided != wantDecided {
					t.Errorf("KeyValuesEqual(%#v, %#v): decided %v, want %v", pair[0], pair[1], decided, wantDecided)
				}
				ra, rb := Record{Key: pair[0]}, Record{Key: pair[1]}
				if decided && eq != (ra.KeyString() == rb.KeyString()) {
					t.Errorf("KeyValuesEqual(%#v, %#v) = %v, KeyString says otherwise", pair[0], pair[1], eq)
				}
			}
		}
	}
}
