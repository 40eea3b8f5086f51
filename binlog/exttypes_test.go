package binlog

import (
	"net/netip"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/sluicecdc/sluice/schema"
)

// TestFormatInet6 pins MariaDB's text form of INET6 values (read from the
// server: CAST(CAST(x AS INET6) AS CHAR)); TestMariaDBExtTypesStreamAndSnapshot
// checks the same against the real server.
func TestFormatInet6(t *testing.T) {
	for in, want := range map[string]string{
		"::": "::", "::1": "::1", "::1.2.3.4": "::1.2.3.4", "::ffff:1.2.3.4": "::ffff:1.2.3.4",
		"1:0:2:0:0:3:0:4": "1:0:2::3:0:4", "1:0:0:2:0:0:3:4": "1::2:0:0:3:4", "0:0:1::": "0:0:1::",
		"1:2:3:4:5:6:7:0": "1:2:3:4:5:6:7::", "ABCD::": "abcd::", "::0.0.0.2": "::2", "::ffff:0:0": "::ffff:0.0.0.0",
		"0:0:0:0:0:1:0:0": "::1:0:0", "1::ffff:1.2.3.4": "1::ffff:102:304", "1:2:3:4:5:6:0:8": "1:2:3:4:5:6::8",
		"::1:2": "::0.1.0.2", "::0:1:0": "::0.1.0.0", "0:0:0:0:0:1:0:1": "::1:0:1",
	} {
		a := netip.MustParseAddr(in).As16()
		if got := formatInet6(a[:]); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestExtValues(t *testing.T) {
	u := &column{name: "u", kind: kUUID, pad: 16}
	i6 := &column{name: "i6", kind: kInet6, pad: 16}
	i4 := &column{name: "i4", kind: kInet4, pad: 4}
	for _, tc := range []struct {
		c    *column
		in   any // as go-mysql gives it: trailing zero bytes dropped
		want string
	}{
		{u, "\x6c\xcd\x78\x0c\xba\xba\x10\x26\x95\x64\x5b\x8c\x65\x60\x24\xdb", "6ccd780c-baba-1026-9564-5b8c656024db"},
		{u, "", "00000000-0000-0000-0000-000000000000"},
		{u, "\x01", "01000000-0000-0000-0000-000000000000"},
		{i6, "", "::"},
		{i6, []byte{0xfe, 0x80}, "fe80::"},
		{i4, "\x0a", "10.0.0.0"},
	} {
		got, err := convert(tc.c, tc.in, true)
		if err != nil || got != tc.want {
			t.Errorf("%s %q: %#v, %v; want %q", tc.c.name, tc.in, got, err, tc.want)
			continue
		}
		b, err := extBinary(tc.c, []byte(tc.want))
		if err != nil {
			t.Fatal(err)
		}
		if back, _ := extValue(tc.c, b); back != tc.want {
			t.Errorf("%s: the snapshot's text %q comes back as %q", tc.c.name, tc.want, back)
		}
	}
	for _, bad := range []struct {
		c    *column
		text string
	}{{u, "not-a-uuid"}, {i6, "1.2.3.4"}, {i4, "::1"}, {i6, "fe80::1%eth0"}} {
		if _, err := extBinary(bad.c, []byte(bad.text)); err == nil || schema.ClassOf(err) != schema.ClassFatal {
			t.Errorf("%s %q: %v, want a fatal error", bad.c.name, bad.text, err)
		}
	}
	if _, err := convert(u, make([]byte, 17), true); err == nil || schema.ClassOf(err) != schema.ClassFatal {
		t.Errorf("17-byte UUID: %v, want a fatal error", err)
	}
}

// TestUnknownSnapshotTypeIsFatal: a column type the snapshot cannot read
// stops the pipeline (retrying cannot help) instead of restarting forever.
func TestUnknownSnapshotTypeIsFatal(t *testing.T) {
	ic := infoColumn{name: "x", dataType: "frobnicate", columnType: "frobnicate"}
	if _, err := ic.spec(); err == nil || schema.ClassOf(err) != schema.ClassFatal {
		t.Fatalf("spec: %v (class %v), want fatal", err, schema.ClassOf(err))
	}
}

// FuzzExtBinary reads arbitrary snapshot text as UUID, INET6 and INET4:
// an error or bytes that render back to a value, never a panic.
func FuzzExtBinary(f *testing.F) {
	for _, s := range []string{"6ccd780c-baba-1026-9564-5b8c656024db", "::ffff:1.2.3.4", "1.2.3.4", "", "::1%x"} {
		f.Add(uint8(0), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, text []byte) {
		c := []*column{{kind: kUUID, pad: 16}, {kind: kInet6, pad: 16}, {kind: kInet4, pad: 4}}[int(which)%3]
		b, err := extBinary(c, text)
		if err != nil {
			return
		}
		if _, err := extValue(c, b); err != nil {
			t.Fatalf("%q parsed to %x which does not render: %v", text, b, err)
		}
	})
}

// TestMaskExtColumn: a masked UUID/INET column becomes the VARCHAR of its
// text (the target must not make a uuid column for hashes), and its
// values are masked as strings.
func TestMaskExtColumn(t *testing.T) {
	bin16 := uint16(mysql.MYSQL_TYPE_STRING)<<8 | 16
	specs := []colSpec{
		{name: "id", typ: mysql.MYSQL_TYPE_LONG},
		{name: "u", typ: mysql.MYSQL_TYPE_STRING, meta: bin16, charset: csBinary, nullable: true, ext: extUUID},
		{name: "ip", typ: mysql.MYSQL_TYPE_STRING, meta: bin16, charset: csBinary, nullable: true, ext: extInet6},
	}
	ti, err := buildTableSpecs(schema.TableID{Database: "d", Table: "t"}, specs, []int{0}, "srv")
	if err != nil {
		t.Fatal(err)
	}
	cr, err := compileColumnRules(nil, []MaskRule{{Columns: "d.t.u", Kind: MaskHash}, {Columns: "d.t.ip", Kind: MaskTruncate, Length: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cr.apply(ti, "srv"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"u": "varchar(64)", "ip": "varchar(4)"} {
		sch := ti.valueSchema.Fields[ti.valueSchema.FieldIndex(name)].Schema
		if st := sch.Param(schema.ParamSourceType); st != want || sch.Type != schema.String {
			t.Errorf("%s: %v source type %q, want string %s", name, sch, st, want)
		}
	}
	u, _ := convert(&ti.cols[1], "\x01", true)
	ip, _ := convert(&ti.cols[2], "\xfe\x80", true)
	row := ti.project(schema.Row{int64(1), u, ip})
	if row[1] != hexHash("", "01000000-0000-0000-0000-000000000000") || row[2] != "fe80" {
		t.Errorf("masked row %v", row)
	}
}
