package binlog

import (
	"fmt"
	"testing"
)

// information_schema's COLUMN_DEFAULT becomes the column's value, as
// Debezium puts it on the field schema; NULL and expressions give none.
func TestColumnDefault(t *testing.T) {
	cases := []struct {
		c      column
		def    string
		flavor string
		want   string // fmt %T %v, "" for none
	}{
		{column{kind: kInt}, "-7", FlavorMariaDB, "int64 -7"},
		{column{kind: kUint64}, "18446744073709551615", FlavorMariaDB, "uint64 18446744073709551615"},
		{column{kind: kString}, "'it''s ü'", FlavorMariaDB, "string it's ü"},
		{column{kind: kString}, "NULL", FlavorMariaDB, ""},
		{column{kind: kString, optional: true}, "abc", FlavorMySQL, "string abc"},
		{column{kind: kBits}, "b'1010'", FlavorMariaDB, "uint64 10"},
		{column{kind: kTimestamp}, "current_timestamp()", FlavorMariaDB, ""},
		{column{kind: kTimestamp}, "CURRENT_TIMESTAMP", FlavorMySQL, ""},
		{column{kind: kDate}, "'2000-01-01'", FlavorMariaDB, "int32 10957"},
		{column{kind: kEnum, labels: []string{"on", "off"}}, "'off'", FlavorMariaDB, "string off"},
		{column{kind: kInt}, "'x'", FlavorMariaDB, ""}, // not the column's kind: no default
		// MySQL writes a binary column's default as a hex literal.
		{column{kind: kBytes}, "0x6162", FlavorMySQL, "[]uint8 [97 98]"},
		{column{kind: kBytes}, "0x", FlavorMySQL, "[]uint8 []"},
		{column{kind: kBytes, pad: 3}, "0x61", FlavorMySQL, "[]uint8 [97 0 0]"}, // BINARY(3) DEFAULT 'a'
		{column{kind: kBytes}, "0xzz", FlavorMySQL, ""},
	}
	for _, tc := range cases {
		v, ok := columnDefault(&tc.c, tc.def, tc.flavor)
		got := ""
		if ok {
			got = fmt.Sprintf("%T %v", v, v)
		}
		if got != tc.want {
			t.Errorf("default %q of kind %v: %q, want %q", tc.def, tc.c.kind, got, tc.want)
		}
	}
}

func TestSchemaName(t *testing.T) {
	for in, want := range map[string]string{"srv.db.t": "srv.db.t", `srv.db.we"ird tåble`: "srv.db.we_ird_t_ble", "a-b.c_d": "a-b.c_d"} {
		if got := schemaName(in); got != want {
			t.Errorf("schemaName(%q) = %q, want %q", in, got, want)
		}
	}
}
