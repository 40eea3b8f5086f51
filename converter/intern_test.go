package converter

import (
	"fmt"
	"sync"
	"testing"
	"unsafe"
)

// TestInternTable: the table gives back the text it is given, the same
// string for a text met again, and a new string for a text that takes
// another's slot; under concurrent use too (run with -race).
func TestInternTable(t *testing.T) {
	tab := newInternTable()
	a := tab.get([]byte("mysql-bin.000003"))
	b := tab.get([]byte("mysql-bin.000003"))
	if a != "mysql-bin.000003" || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatalf("a text met again: %q and %q, same string %v", a, b, unsafe.StringData(a) == unsafe.StringData(b))
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = tab.get([]byte("mysql-bin.000003")) }); allocs != 0 {
		t.Errorf("a text held allocates %v times", allocs)
	}
	long := make([]byte, maxInternLen+1)
	if s := tab.get(long); s != string(long) {
		t.Fatal("a long text changed")
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 5 * internSlots { // more texts than slots: they evict each other
				want := fmt.Sprintf("t%d-%d", g%2, i%(2*internSlots))
				if got := tab.get([]byte(want)); got != want {
					t.Errorf("got %q for %q", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestDecodeInternedSource: records decoded from messages share the
// repeating strings of their source blocks, and each record's values are
// still its own message's.
func TestDecodeInternedSource(t *testing.T) {
	c := NewJSON(DefaultOptions())
	r := benchRecord()
	var got []string
	for _, file := range []string{"mysql-bin.000007", "mysql-bin.000008", "mysql-bin.000007"} {
		r.Source.File = file
		k, v, err := c.Encode(&r)
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.Decode(k, v)
		if err != nil {
			t.Fatal(err)
		}
		if d.Source.File != file || d.Source.Name != r.Source.Name || d.Table != r.Table || d.Transaction.ID != r.Transaction.ID {
			t.Fatalf("decoded source %+v of table %s, transaction %+v; want file %s", d.Source, d.Table, d.Transaction, file)
		}
		got = append(got, d.Source.File)
	}
	if unsafe.StringData(got[0]) != unsafe.StringData(got[2]) {
		t.Error("the same file name decoded twice is two strings")
	}
}
