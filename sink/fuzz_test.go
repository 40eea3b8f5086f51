package sink

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
	"github.com/sluicecdc/sluice/sink/mysql"
	"github.com/sluicecdc/sluice/sink/postgres"
)

// FuzzTemporalText checks that every date, timestamp and time value the sink
// accepts is rendered as text that parses back to the same value, and that
// out-of-range values are refused rather than wrapped.
func FuzzTemporalText(f *testing.F) {
	for _, v := range []int64{0, -1, 1, 86399_999999, 86400_000000, -62135596800_000000, 253402300799_999999, math.MaxInt64, math.MinInt64, 2932896, -719162, 106751991167} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v int64) {
		if s, ok := dialect.FormatTimestamp(v); ok {
			p, err := time.Parse("2006-01-02 15:04:05.999999", s)
			if err != nil || p.UnixMicro() != v {
				t.Fatalf("timestamp %d -> %q -> %v %v", v, s, p.UnixMicro(), err)
			}
		}
		if s, ok := dialect.FormatDate(v); ok {
			p, err := time.Parse("2006-01-02", s)
			if err != nil || p.Unix()/86400 != v {
				t.Fatalf("date %d -> %q -> %v %v", v, s, p.Unix()/86400, err)
			}
		}
		for _, d := range []dialect.Dialect{postgres.Dialect{}, mysql.Dialect{}} {
			out, err := d.Convert("c", &schema.Schema{Type: schema.Int64, Logical: schema.Time}, v)
			if err != nil {
				continue
			}
			s := out.(string)
			neg := strings.HasPrefix(s, "-")
			var h, m, sec, us int64
			if _, err := fmt.Sscanf(strings.TrimPrefix(s, "-"), "%d:%d:%d.%d", &h, &m, &sec, &us); err != nil {
				t.Fatalf("time %d -> %q: %v", v, s, err)
			}
			back := ((h*60+m)*60+sec)*1_000_000 + us
			if neg {
				back = -back
			}
			if back != v || m > 59 || sec > 59 {
				t.Fatalf("%T time %d -> %q -> %d", d, v, s, back)
			}
		}
	})
}

// FuzzReduce drives random batches (one op per byte) through the reducer and
// checks the plan's effect equals applying the records in order.
func FuzzReduce(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3})
	f.Add([]byte{0x10, 0x31, 0x12, 0x40, 0x23})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		seq := map[int64]string{}
		var recs []schema.Record
		for i, b := range ops {
			k, k2, v := int64(b&3), int64(b>>2&3), "v"+strconv.Itoa(i)
			switch b >> 4 % 5 {
			case 0:
				recs = append(recs, ins(k, v))
				seq[k] = v
			case 1:
				recs = append(recs, upd(k, k2, v))
				delete(seq, k)
				seq[k2] = v
			case 2:
				recs = append(recs, del(k))
				delete(seq, k)
			case 3:
				recs = append(recs, trunc())
				seq = map[int64]string{}
			case 4:
				recs = append(recs, schema.Record{Op: schema.OpHeartbeat})
			}
		}
		p, err := reduce(recs, defaultTarget)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]string{}
		for _, tp := range p.tables {
			seen := map[string]bool{}
			for _, c := range tp.changes {
				ks := keyString(c.keyCols, c.key)
				if seen[ks] {
					t.Fatalf("key %s twice in the plan", ks)
				}
				seen[ks] = true
				if !c.del {
					got[c.key[0].(int64)] = c.rec.After[1].(string)
				}
			}
		}
		if !reflect.DeepEqual(got, seq) {
			t.Fatalf("plan %s gives %v, sequential %v", render(p), got, seq)
		}
	})
}
