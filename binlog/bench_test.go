package binlog

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/sluicecdc/sluice/schema"
)

// fixtureRaw returns the raw events of the fixture after its format
// description, and that description.
func fixtureRaw(b *testing.B) (fde []byte, raws [][]byte, rows int) {
	for _, ev := range fixtureEvents(b) {
		switch e := ev.Event.(type) {
		case *replication.FormatDescriptionEvent:
			fde = ev.RawData
		case *replication.RowsEvent:
			rows += len(e.Rows)
			raws = append(raws, ev.RawData)
		default:
			raws = append(raws, ev.RawData)
		}
	}
	return fde, raws, rows
}

// Both benchmarks keep one parser (and mapper) across iterations, as a
// stream does, so table maps of an unchanged table hit the cache.

// BenchmarkDecodeRaw is the baseline: go-mysql decoding the fixture's
// events, as the syncer does.
func BenchmarkDecodeRaw(b *testing.B) {
	fde, raws, rows := fixtureRaw(b)
	p := newParser()
	if _, err := p.Parse(fde); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range raws {
			if _, err := p.Parse(r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkDecodeAndMap is the same decoding plus mapping to records: its
// ratio to BenchmarkDecodeRaw is the mapper's cost.
func BenchmarkDecodeAndMap(b *testing.B) {
	fde, raws, rows := fixtureRaw(b)
	p := newParser()
	m := fixtureMapper(b)
	if _, err := p.Parse(fde); err != nil {
		b.Fatal(err)
	}
	var out []schema.Record
	b.ReportAllocs()
	for b.Loop() {
		// replaying the same GTIDs: start each pass from the fixture's set
		m.gset, _ = mysql.ParseGTIDSet(FlavorMariaDB, "0-1-5")
		for _, r := range raws {
			ev, err := p.Parse(r)
			if err != nil {
				b.Fatal(err)
			}
			if out, err = m.Map(ev, out[:0]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}
