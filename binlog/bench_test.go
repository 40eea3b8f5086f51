package binlog

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/sluicecdc/sluice/binlog/charset"
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

// BenchmarkDecodeText decodes a 40-character value per charset family:
// UTF-8 (validated only), a single-byte table and a double-byte table.
func BenchmarkDecodeText(b *testing.B) {
	for _, tc := range []struct{ cs, text string }{
		{csUTF8MB4, "Grüße aus Köln, 40 Zeichen mit Umlauten!"},
		{csLatin1, "Grüße aus Köln, 40 Zeichen mit Umlauten!"},
		{"cp1251", "Съешь же ещё этих мягких французских бул"},
		{"gbk", "我能吞下玻璃而不伤身体我能吞下玻璃而不伤身体我能吞下玻璃而不伤身体我能吞下玻璃而"},
	} {
		enc := encodeFor(b, tc.cs, tc.text)
		b.Run(tc.cs, func(b *testing.B) {
			b.SetBytes(int64(len(enc)))
			for i := 0; i < b.N; i++ {
				if charset.Decode(enc, tc.cs) != tc.text {
					b.Fatal("mismatch")
				}
			}
		})
	}
}

// encodeFor encodes text in cs with x/text (the inverse of decodeText for
// these samples).
func encodeFor(b *testing.B, cs, text string) []byte {
	switch cs {
	case csUTF8MB4:
		return []byte(text)
	case csLatin1:
		out, _ := charmap.Windows1252.NewEncoder().Bytes([]byte(text))
		return out
	case "cp1251":
		out, _ := charmap.Windows1251.NewEncoder().Bytes([]byte(text))
		return out
	case "gbk":
		out, _ := simplifiedchinese.GBK.NewEncoder().Bytes([]byte(text))
		return out
	}
	b.Fatalf("no encoder for %s", cs)
	return nil
}
