package converter

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestZonedRoundTrip(t *testing.T) {
	vals := []int64{0, -1, 1, math.MinInt64, math.MaxInt64, 253402300799999999, 253402300800000000, -62135596800000000, -62135596800000001}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		vals = append(vals, rng.Int64(), rng.Int64N(1<<52)-1<<51)
	}
	for _, us := range vals {
		s := appendZoned(nil, us)
		got, err := parseZoned(s)
		if err != nil || got != us {
			t.Fatalf("%d -> %s -> %d, %v", us, s, got, err)
		}
	}
	// Within Go's time range the text is what RFC 3339 gives.
	for _, us := range vals[:2000] {
		tm := time.UnixMicro(us).UTC()
		if tm.Year() < 0 || tm.Year() > 9999 {
			continue
		}
		if want := tm.Format(time.RFC3339Nano); string(appendZoned(nil, us)) != want {
			t.Fatalf("%d: %s, want %s", us, appendZoned(nil, us), want)
		}
	}
	for _, bad := range []string{"", "2020-01-01", "2020-13-01T00:00:00Z", "2020-01-01T00:00:00", "2020-01-01T00:00:00.Z", "+999999999-01-01T00:00:00Z", "2020-01-01T00:00:00Zjunk"} {
		if _, err := parseZoned([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
