package binlog

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

func TestSnapshotPositionRoundTrip(t *testing.T) {
	p := Position{Flavor: FlavorMariaDB, GTIDSet: "0-1-42", File: "mariadb-bin.000002", Pos: 1234,
		Snapshot: &SnapshotProgress{Database: "shop", Table: "orders", Key: [][]byte{[]byte("42"), {0, 0xff}}}}
	b := EncodePosition(p)
	if !strings.Contains(string(b), `"v":2`) {
		t.Fatalf("snapshot position %s is not version 2", b)
	}
	back, err := ParsePosition(b)
	if err != nil {
		t.Fatal(err)
	}
	p.Version = PositionVersionSnapshot
	if !reflect.DeepEqual(back, p) {
		t.Fatalf("round trip gave %+v, want %+v", back, p)
	}
	for _, bad := range []string{
		`{"v":1,"flavor":"mariadb","gtid":"0-1-1","snapshot":{"db":"a","table":"b"}}`,
		`{"v":2,"flavor":"mariadb","gtid":"0-1-1","snapshot":{"db":"","table":"b"}}`,
		`{"v":3,"flavor":"mariadb","gtid":"0-1-1"}`,
	} {
		if _, err := ParsePosition([]byte(bad)); !errors.Is(err, ErrBadPosition) {
			t.Errorf("ParsePosition(%s) = %v, want ErrBadPosition", bad, err)
		}
	}
}

func TestParseLabels(t *testing.T) {
	for in, want := range map[string][]string{
		"enum('small','medium','large')": {"small", "medium", "large"},
		"set('a','it''s','')":            {"a", "it's", ""},
		"enum('x,y','ä')":                {"x,y", "ä"},
	} {
		got, err := parseLabels(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseLabels(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"enum", "enum('a'", "enum('a' 'b')", "enum(a)"} {
		if _, err := parseLabels(bad); err == nil {
			t.Errorf("parseLabels(%s) accepted", bad)
		}
	}
}

func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{"enum('a','b')", "set('it''s')", "enum('\\'')", "enum(''"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		labels, err := parseLabels(s)
		if err == nil && labels == nil {
			t.Fatal("nil labels without error")
		}
	})
}

func TestKeyLiteral(t *testing.T) {
	intCol := &column{name: "id", kind: kInt}
	strCol := &column{name: "s", kind: kString}
	dtCol := &column{name: "d", kind: kDatetime}
	for _, tc := range []struct {
		c         *column
		cs, coll  string
		raw, want string
	}{
		{intCol, "", "", "-42", "-42"},
		{strCol, "latin1", "latin1_swedish_ci", "a'b", "_latin1 X'612762' COLLATE latin1_swedish_ci"},
		{dtCol, "", "", "2020-01-02 03:04:05.5", "'2020-01-02 03:04:05.5'"},
		{&column{name: "b", kind: kBits}, "", "", "\x01\x00", "256"},
		{&column{name: "v", kind: kBytes}, "", "", "\x00'", "X'0027'"},
	} {
		got, err := keyLiteral(tc.c, tc.cs, tc.coll, []byte(tc.raw))
		if err != nil || got != tc.want {
			t.Errorf("keyLiteral(%s, %q) = %q, %v; want %q", tc.c.name, tc.raw, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		c        *column
		cs, coll string
		raw      string
	}{
		{intCol, "", "", "1 OR 1=1"},
		{intCol, "", "", ""},
		{dtCol, "", "", "2020' OR '1"},
		{strCol, "latin1; DROP", "x", "a"},
		{&column{name: "e", kind: kEnum}, "", "", "a"},
	} {
		if _, err := keyLiteral(tc.c, tc.cs, tc.coll, []byte(tc.raw)); !errors.Is(err, ErrBadPosition) {
			t.Errorf("keyLiteral(%s, %q) = %v, want ErrBadPosition", tc.c.name, tc.raw, err)
		}
	}
}

// TestInfoColumnSpecMatchesTableMap: the char/binary metadata rebuilt from
// information_schema decodes to the same length as the table map's.
func TestInfoColumnSpecMatchesTableMap(t *testing.T) {
	for _, octets := range []int64{0, 4, 255, 256, 400, 765, 1020} {
		ic := infoColumn{name: "c", dataType: "char", columnType: "char(x)"}
		ic.octets.Int64, ic.octets.Valid = octets, true
		ic.charset.String, ic.charset.Valid = "latin1", true
		sp, err := ic.spec()
		if err != nil {
			t.Fatal(err)
		}
		var c column
		s, src, err := columnSchema(&c, sp.typ, sp.meta, false, sp.charset)
		if err != nil {
			t.Fatal(err)
		}
		if c.kind != kString || s.Params["length"] != itoa(octets) || src != "char("+itoa(octets)+")" {
			t.Errorf("octets %d: kind %d, length %s, type %s", octets, c.kind, s.Params["length"], src)
		}
	}
	ic := infoColumn{name: "e", dataType: "enum", columnType: "enum('a','b')"}
	sp, err := ic.spec()
	if err != nil {
		t.Fatal(err)
	}
	var c column
	if _, _, err := columnSchema(&c, sp.typ, sp.meta, false, sp.charset); err != nil || c.kind != kEnum || sp.typ != mysql.MYSQL_TYPE_STRING {
		t.Errorf("enum spec gave kind %d, %v", c.kind, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// FuzzKeyLiteral: whatever bytes a stored position holds, an accepted key
// literal cannot leave its quotes.
func FuzzKeyLiteral(f *testing.F) {
	for _, s := range []string{"42", "-1.5e3", "2020-01-01 00:00:00", "a'b", "1 OR 1=1", "\x00\xff"} {
		f.Add(s, uint8(kInt))
	}
	f.Fuzz(func(t *testing.T, raw string, k uint8) {
		c := &column{name: "k", kind: kind(k%uint8(kGeometry)) + 1}
		lit, err := keyLiteral(c, "latin1", "latin1_swedish_ci", []byte(raw))
		if err != nil {
			return
		}
		inner, quoted := lit, true
		switch {
		case strings.HasPrefix(lit, "_latin1 X'"):
			inner = strings.TrimSuffix(strings.TrimPrefix(lit, "_latin1 X'"), "' COLLATE latin1_swedish_ci")
		case strings.HasPrefix(lit, "X'"):
			inner = strings.TrimSuffix(strings.TrimPrefix(lit, "X'"), "'")
		case strings.HasPrefix(lit, "'"):
			inner = strings.TrimSuffix(strings.TrimPrefix(lit, "'"), "'")
		default:
			quoted = false
		}
		if strings.ContainsAny(inner, "'\\") || !quoted && (strings.ContainsAny(inner, "`;()/*# \n") || strings.Contains(inner, "--")) {
			t.Fatalf("keyLiteral(%d, %q) = %q escapes its quotes", c.kind, raw, lit)
		}
	})
}
