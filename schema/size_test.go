package schema

import "testing"

// TestRecordSizeGrowsWithPayload: a record's size follows its values, so
// that a window in bytes holds few records of large rows.
func TestRecordSizeGrowsWithPayload(t *testing.T) {
	small := Record{Op: OpCreate, After: Row{int64(1), "x"}, Transaction: &Transaction{ID: "0-1-2"}}
	big := small
	big.After = Row{int64(1), string(make([]byte, 1<<20))}
	if s := small.Size(); s < 100 || s > 2048 {
		t.Fatalf("small record: %d bytes", s)
	}
	if d := big.Size() - small.Size(); d < 1<<20-8 || d > 1<<20+64 {
		t.Fatalf("a 1 MiB value adds %d bytes", d)
	}
	if RecordsSize([]Record{small, big}) != small.Size()+big.Size() {
		t.Fatal("RecordsSize is not the sum")
	}
}
