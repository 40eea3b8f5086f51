package binlog

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

func TestConvert(t *testing.T) {
	enum := &column{name: "e", kind: kEnum, labels: []string{"a", "b"}}
	set := &column{name: "s", kind: kSet, labels: []string{"x", "y", "z"}}
	set64 := &column{name: "s64", kind: kSet, labels: make([]string, 64)}
	for i := range set64.labels {
		set64.labels[i] = fmt.Sprint("m", i)
	}
	dec := &column{name: "d", kind: kDecimal, scale: 3}
	for _, tc := range []struct {
		c    *column
		in   any
		want any
		null bool // zero dates as NULL
	}{
		{&column{kind: kInt}, int8(-1), int64(-1), true},
		{&column{kind: kInt}, uint32(math.MaxUint32), int64(math.MaxUint32), true},
		{&column{kind: kUint64}, uint64(math.MaxUint64), uint64(math.MaxUint64), true},
		{dec, "1.5", schema.MustDec("1.500"), true},
		{dec, "-0", schema.MustDec("0.000"), true},
		{&column{kind: kBits}, int64(-1), uint64(math.MaxUint64), true},
		{&column{kind: kDate}, "1970-01-02", int32(1), true},
		{&column{kind: kDate}, "0000-00-00", nil, true},
		{&column{kind: kDate}, "2020-00-10", nil, true},
		{&column{kind: kDate}, "0000-00-00", int32(0), false},
		{&column{kind: kDate}, "0001-01-01", int32(-719162), true},
		{&column{kind: kTime}, "-00:00:00.5", int64(-500000), true},
		{&column{kind: kTime}, "838:59:59.999999", int64(3020399999999), true},
		{&column{kind: kTime}, "01:02:03.12", int64(3723120000), true},
		{&column{kind: kDatetime}, "0000-00-00 00:00:00", nil, true},
		{&column{kind: kDatetime}, "0000-00-00 00:00:00.000", int64(0), false},
		{&column{kind: kDatetime}, "1000-01-01 00:00:00.5", time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro() + 500000, true},
		{&column{kind: kDatetime}, time.Date(2024, 2, 29, 1, 2, 3, 4000, time.UTC), time.Date(2024, 2, 29, 1, 2, 3, 4000, time.UTC).UnixMicro(), true},
		{&column{kind: kTimestamp}, time.Unix(5, 7000).In(time.FixedZone("x", 3600)), int64(5000007), true},
		{&column{kind: kString, charset: csLatin1}, []byte{0xe9, 0x80}, "é€", true},
		{&column{kind: kString, charset: csUTF8MB4}, "ok", "ok", true},
		{&column{kind: kString, charset: csUTF8MB4}, []byte{0xff}, "\uFFFD", true},
		{&column{kind: kString, charset: csUCS2}, []byte{0, 'a', 0x20, 0xac}, "a€", true},
		{&column{kind: kBytes}, []byte{}, []byte{}, true},
		{&column{kind: kBytes, pad: 4}, "\x01", []byte{1, 0, 0, 0}, true}, // BINARY(4): binlog drops trailing zeros
		{&column{kind: kBytes, pad: 4}, "", []byte{0, 0, 0, 0}, true},
		{&column{kind: kBytes, pad: 4}, []byte{0, 0, 0, 9}, []byte{0, 0, 0, 9}, true},
		{&column{kind: kBytes}, "\x01", []byte{1}, true}, // VARBINARY: as is
		{enum, int64(2), "b", true},
		{enum, int64(0), "", true},
		{set, int64(5), "x,z", true},
		{set, int64(0), "", true},
		{set64, int64(-1 << 63), "m63", true}, // the 64th member: go-mysql's int64 is negative
		{&column{kind: kGeometry}, []byte{0, 0, 0, 0, 1, 2}, schema.Geom{WKB: []byte{1, 2}}, true},
		{&column{kind: kGeometry}, []byte{0xe6, 0x10, 0, 0, 1, 2}, schema.Geom{WKB: []byte{1, 2}, SRID: 4326}, true}, // the server's SRID prefix, little-endian
		{&column{kind: kYear}, int(0), int64(0), true},
		{&column{kind: kJSON}, "[]", "[]", true},
		{&column{kind: kFloat32}, float32(0.1), float32(0.1), true},
	} {
		got, err := convert(tc.c, tc.in, tc.null)
		if err != nil {
			t.Errorf("convert(%v, %#v): %v", tc.c.kind, tc.in, err)
			continue
		}
		if d, ok := tc.want.(schema.Dec); ok {
			if g, ok := got.(schema.Dec); !ok || !g.Equal(d) {
				t.Errorf("convert(%#v) = %#v, want %s", tc.in, got, d)
			}
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("convert(kind %d, %#v) = %T(%v), want %T(%v)", tc.c.kind, tc.in, got, got, tc.want, tc.want)
		}
	}
	for _, tc := range []struct {
		c  *column
		in any
	}{
		{enum, int64(3)},
		{set, int64(8)},
		{dec, "1.2345"},
		{dec, "abc"},
		{&column{kind: kDate}, "2020-13-01"},
		{&column{kind: kTime}, "1:2"},
		{&column{kind: kDatetime}, "2020-01-01T00:00:00"},
		{&column{kind: kGeometry}, []byte{1}},
		{&column{kind: kInt}, "7"},
	} {
		if got, err := convert(tc.c, tc.in, true); err == nil {
			t.Errorf("convert(kind %d, %#v) = %#v, want an error", tc.c.kind, tc.in, got)
		}
	}
}

// FuzzConvert feeds the text forms go-mysql produces for temporal and
// decimal columns, and integers for ENUM/SET/BIT, through convert: it must
// return an error or a value of the type package schema documents.
func FuzzConvert(f *testing.F) {
	for _, s := range []string{"2024-02-29", "0000-00-00", "-838:59:59.000000", "1960-01-02 03:04:05.123456", "0000-00-00 00:00:00.000", "-1.50", "99999999.99", "1e5", ""} {
		f.Add(s, int64(3))
	}
	cols := []*column{
		{name: "dt", kind: kDate}, {name: "tm", kind: kTime}, {name: "dtm", kind: kDatetime}, {name: "ts", kind: kTimestamp},
		{name: "d", kind: kDecimal, scale: 2}, {name: "e", kind: kEnum, labels: []string{"a"}},
		{name: "s", kind: kSet, labels: []string{"a", "b"}}, {name: "b", kind: kBits}, {name: "t", kind: kString, charset: csLatin1},
	}
	want := map[kind]reflect.Type{kDate: reflect.TypeFor[int32](), kTime: reflect.TypeFor[int64](), kDatetime: reflect.TypeFor[int64](),
		kTimestamp: reflect.TypeFor[int64](), kDecimal: reflect.TypeFor[schema.Dec](), kEnum: reflect.TypeFor[string](),
		kSet: reflect.TypeFor[string](), kBits: reflect.TypeFor[uint64](), kString: reflect.TypeFor[string]()}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		for _, c := range cols {
			for _, in := range []any{s, n, []byte(s)} {
				for _, null := range []bool{true, false} {
					v, err := convert(c, in, null)
					if err != nil || v == nil {
						continue
					}
					if reflect.TypeOf(v) != want[c.kind] {
						t.Fatalf("convert(%s, %#v) gave %T", c.name, in, v)
					}
					if d, ok := v.(schema.Dec); ok && d.Scale != c.scale {
						t.Fatalf("decimal %s has scale %d, want %d", d, d.Scale, c.scale)
					}
				}
			}
		}
	})
}
