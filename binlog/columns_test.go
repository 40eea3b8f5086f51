package binlog

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/sluicecdc/sluice/schema"
)

// usersTable is shop.users(id INT PK, email VARCHAR(20), name VARCHAR(100),
// ssn CHAR(11), photo VARBINARY(100), age INT, note TEXT).
func usersTable(t *testing.T) *tableInfo {
	t.Helper()
	specs := []colSpec{
		{name: "id", typ: mysql.MYSQL_TYPE_LONG},
		{name: "email", typ: mysql.MYSQL_TYPE_VARCHAR, meta: 80, charset: csUTF8MB4, nullable: true},
		{name: "name", typ: mysql.MYSQL_TYPE_VARCHAR, meta: 400, charset: csUTF8MB4, nullable: true},
		{name: "ssn", typ: mysql.MYSQL_TYPE_STRING, meta: uint16(mysql.MYSQL_TYPE_STRING)<<8 | 44, charset: csUTF8MB4, nullable: true},
		{name: "photo", typ: mysql.MYSQL_TYPE_VARCHAR, meta: 100, charset: csBinary, nullable: true},
		{name: "age", typ: mysql.MYSQL_TYPE_LONG, nullable: true},
		{name: "note", typ: mysql.MYSQL_TYPE_BLOB, meta: 2, charset: csUTF8MB4, nullable: true},
	}
	ti, err := buildTableSpecs(schema.TableID{Database: "shop", Table: "users"}, specs, []int{0}, "srv")
	if err != nil {
		t.Fatal(err)
	}
	return ti
}

func hexHash(salt, v string) string {
	h := sha256.Sum256([]byte(salt + v))
	return hex.EncodeToString(h[:])
}

func TestColumnRulesProjectAndMask(t *testing.T) {
	cr, err := compileColumnRules([]string{"shop.users.age", "*.*.note"}, []MaskRule{
		{Columns: "shop.users.email", Kind: MaskHash, Salt: "pepper"},
		{Columns: "shop.*.ssn", Kind: MaskFixed, Value: "***"},
		{Columns: "shop.users.name", Kind: MaskTruncate, Length: 3},
		{Columns: "shop.users.photo", Kind: MaskTruncate, Length: 2},
		{Columns: "shop.users.e*", Kind: MaskFixed, Value: "never: an earlier rule matched"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ti := usersTable(t)
	if err := cr.apply(ti, "srv"); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range ti.valueSchema.Fields {
		names = append(names, f.Name+":"+f.Schema.Param(schema.ParamSourceType))
	}
	if g, w := strings.Join(names, " "), "id:int email:varchar(64) name:varchar(3) ssn:varchar(11) photo:varbinary(2)"; g != w {
		t.Fatalf("value schema %q, want %q", g, w)
	}
	if ti.valueSchema.Fields[1].Schema.Type != schema.String || ti.valueSchema.Fields[4].Schema.Type != schema.Bytes {
		t.Fatalf("masked columns changed type: %+v", ti.valueSchema.Fields)
	}
	if len(ti.keySchema.Fields) != 1 || ti.keySchema.Fields[0].Name != "id" {
		t.Fatalf("key schema %+v", ti.keySchema)
	}
	row := ti.project(schema.Row{int64(7), "a@b.example", "Zoë Smith", "123-45-6789", []byte{1, 2, 3}, int64(40), "secret"})
	want := schema.Row{int64(7), hexHash("pepper", "a@b.example"), "Zoë", "***", []byte{1, 2}, nil}
	if len(row) != 5 {
		t.Fatalf("row %v has %d values, want 5", row, len(row))
	}
	for i := range row {
		if renderValue(row[i]) != renderValue(want[i]) {
			t.Errorf("value %d (%s) = %s, want %s", i, ti.valueSchema.Fields[i].Name, renderValue(row[i]), renderValue(want[i]))
		}
	}
	if k := keyOf(ti, row); len(k) != 1 || k[0] != int64(7) {
		t.Fatalf("key %v", k)
	}
	nulls := ti.project(schema.Row{int64(8), nil, nil, nil, nil, nil, nil})
	for i, v := range nulls[1:] {
		if v != nil {
			t.Errorf("NULL in column %d masked to %v", i+1, v)
		}
	}
}

func TestMaskBytesHash(t *testing.T) {
	m := &MaskRule{Kind: MaskHash, Salt: "s"}
	got := maskValue(m, []byte("abc"))
	if string(got.([]byte)) != hexHash("s", "abc") {
		t.Fatalf("bytes hash %s", got)
	}
	if maskValue(&MaskRule{Kind: MaskTruncate, Length: 10}, "short") != "short" {
		t.Fatal("truncate of a shorter value changed it")
	}
}

func TestColumnRulesErrors(t *testing.T) {
	for _, tc := range []struct {
		exclude []string
		mask    []MaskRule
		applyOK bool   // compile succeeds; the error comes when applied to usersTable
		want    string // in the message
	}{
		{exclude: []string{"shop.users"}, want: "db.table.column"},
		{exclude: []string{"shop..x"}, want: "db.table.column"},
		{mask: []MaskRule{{Columns: "a.b.c", Kind: "scramble"}}, want: "hash, fixed or truncate"},
		{mask: []MaskRule{{Columns: "a.b.c", Kind: MaskTruncate}}, want: "Length"},
		{exclude: []string{"shop.users.id"}, applyOK: true, want: "primary-key column"},
		{mask: []MaskRule{{Columns: "shop.users.age", Kind: MaskHash}}, applyOK: true, want: "only to string and binary"},
		{mask: []MaskRule{{Columns: "shop.users.id", Kind: MaskFixed}}, applyOK: true, want: "only to string and binary"},
	} {
		cr, err := compileColumnRules(tc.exclude, tc.mask)
		if tc.applyOK {
			if err != nil {
				t.Fatalf("%v %v: %v", tc.exclude, tc.mask, err)
			}
			err = cr.apply(usersTable(t), "srv")
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v, want ErrConfig mentioning %q", tc.exclude, tc.mask, err, tc.want)
		}
	}
	// a hash on a string key column is allowed: distinct keys stay distinct
	specs := []colSpec{{name: "code", typ: mysql.MYSQL_TYPE_VARCHAR, meta: 40, charset: csUTF8MB4}}
	ti, err := buildTableSpecs(schema.TableID{Database: "d", Table: "t"}, specs, []int{0}, "srv")
	if err != nil {
		t.Fatal(err)
	}
	cr, _ := compileColumnRules(nil, []MaskRule{{Columns: "d.t.code", Kind: MaskHash}})
	if err := cr.apply(ti, "srv"); err != nil {
		t.Fatalf("hash of a key column: %v", err)
	}
	if k := keyOf(ti, ti.project(schema.Row{"x"})); k[0] != hexHash("", "x") {
		t.Fatalf("hashed key %v", k)
	}
	// config validation catches bad patterns at NewSource
	c := Config{Host: "h", User: "u", ServerID: 1, Flavor: FlavorMariaDB, ServerName: "s", ExcludeColumns: []string{"nope"}}
	if _, err := NewSource(c, nil); !errors.Is(err, ErrConfig) {
		t.Fatalf("NewSource with a bad column pattern: %v", err)
	}
}
