package binlog

import (
	"errors"
	"reflect"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

func TestPositionTextFormGolden(t *testing.T) {
	ps := []Position{
		{Flavor: FlavorMariaDB, GTIDSet: "0-1-42", File: "mysql-bin.000001", Pos: 1234},
		{Flavor: FlavorMariaDB, GTIDSet: "0-1-42,1-2-7", File: "mysql-bin.000003", Pos: 4},
		{Flavor: FlavorMySQL, File: "binlog.000009", Pos: 157},
		{Flavor: FlavorMySQL, GTIDSet: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", File: "binlog.000001", Pos: 900},
	}
	var out []byte
	for _, p := range ps {
		b := EncodePosition(p)
		back, err := ParsePosition(b)
		if err != nil {
			t.Fatalf("ParsePosition(%s): %v", b, err)
		}
		p.Version = PositionVersion
		if back != p {
			t.Errorf("round trip of %s gave %+v", b, back)
		}
		out = append(append(out, b...), '\n')
	}
	checkGolden(t, "positions.golden", string(out))
}

func TestParsePositionRejects(t *testing.T) {
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `{"v":2,"flavor":"mariadb","gtid":"0-1-1"}`,
		`{"v":1,"flavor":"oracle","gtid":"0-1-1"}`,
		`{"v":1,"flavor":"mysql"}`,
		`{"v":1,"flavor":"mysql","file":"b.000001","pos":0}`,
		`{"v":1,"flavor":"mysql","file":"b.000001","pos":4,"extra":1}`,
		`{"v":1,"flavor":"mysql","file":"b.000001","pos":4} {}`,
		`{"v":1,"flavor":"mysql","file":"b.000001","pos":-4}`,
	} {
		if _, err := ParsePosition([]byte(s)); !errors.Is(err, ErrBadPosition) {
			t.Errorf("ParsePosition(%q) = %v, want ErrBadPosition", s, err)
		}
	}
}

func FuzzParsePosition(f *testing.F) {
	f.Add([]byte(`{"v":1,"flavor":"mariadb","gtid":"0-1-42","file":"mysql-bin.000001","pos":1234}`))
	f.Add([]byte(`{"v":1,"flavor":"mysql","file":"binlog.000009","pos":157}`))
	f.Add([]byte(`{"v":1,"flavor":"mysql","gtid":"3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"}`))
	f.Add([]byte(`{"v":1`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePosition(b)
		if err != nil {
			if !errors.Is(err, ErrBadPosition) {
				t.Fatalf("error %v does not wrap ErrBadPosition", err)
			}
			return
		}
		// A parsed position re-encodes to a form that parses to itself.
		back, err := ParsePosition(EncodePosition(p))
		if err != nil || back != p {
			t.Fatalf("re-encoding %+v: %+v, %v", p, back, err)
		}
	})
}

// A Previous_gtids event whose set has a UUID with tagged GTIDs only is
// read as that UUID's (go-mysql's text form of it names the UUID before).
func TestPreviousGTIDsWithTagOnlyUUID(t *testing.T) {
	const text = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,4e11fa47-71ca-11e1-9e33-c80aa9429562:blue:1-2"
	want, err := mysql.ParseMysqlGTIDSet(text)
	if err != nil {
		t.Fatal(err)
	}
	body := want.Encode()
	for _, checksum := range []int{replication.BinlogChecksumLength, 0} {
		raw := append(make([]byte, replication.EventHeaderSize), body...)
		raw = append(raw, make([]byte, checksum)...)
		got, err := previousGTIDs(&replication.BinlogEvent{RawData: raw})
		if err != nil || got.String() != want.String() {
			t.Errorf("checksum %d bytes: %v, %v, want %s", checksum, got, err, want)
		}
	}
}

// A position with incremental snapshot progress round-trips, and progress
// naming no table, or something that is not a db.table name, is refused.
func TestPositionIncrementalProgress(t *testing.T) {
	p := Position{Flavor: FlavorMariaDB, GTIDSet: "0-1-42", File: "mysql-bin.000001", Pos: 1234, Epoch: 7,
		Incremental: &IncrementalProgress{ID: "adhoc-1", Tables: []string{"db.t", "db.u"}, Key: [][]byte{[]byte("1024"), []byte("x")}, Paused: true}}
	b := EncodePosition(p)
	back, err := ParsePosition(b)
	if err != nil {
		t.Fatalf("ParsePosition(%s): %v", b, err)
	}
	p.Version = PositionVersion
	if !reflect.DeepEqual(back, p) {
		t.Fatalf("round trip of %s gave %+v", b, back)
	}
	for _, s := range []string{
		`{"v":1,"flavor":"mariadb","gtid":"0-1-1","incremental":{"id":"a","tables":[]}}`,
		`{"v":1,"flavor":"mariadb","gtid":"0-1-1","incremental":{"id":"a","tables":["nodot"]}}`,
		`{"v":1,"flavor":"mariadb","gtid":"0-1-1","incremental":{"id":"a","tables":["a.b.c"]}}`,
		`{"v":1,"flavor":"mariadb","gtid":"0-1-1","incremental":{"id":"a","tables":["a.b"],"other":1}}`,
	} {
		if _, err := ParsePosition([]byte(s)); !errors.Is(err, ErrBadPosition) {
			t.Errorf("ParsePosition(%q) = %v, want ErrBadPosition", s, err)
		}
	}
}
