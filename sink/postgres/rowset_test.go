package postgres

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// Every string survives the JSON document unchanged (decoded by
// encoding/json, as PostgreSQL's parser reads the same escapes), including
// quotes, backslashes and every control character; bytes that are not
// UTF-8 go as they are, for the server to refuse as COPY's would be, never
// replaced.
func TestAppendRowsetRow(t *testing.T) {
	var ctl strings.Builder
	for c := 0; c < 0x20; c++ {
		ctl.WriteByte(byte(c))
	}
	strs := []string{"", "plain", `q"uo\te`, ctl.String(), "héllo 数 😀", "\\N", "\x7f"}
	d := Dialect{}
	cols := []string{"s", `we"ird\col`}
	var buf []byte
	for _, s := range strs {
		var err error
		if buf, err = d.AppendRowsetRow(buf, cols, []any{s, s}); err != nil {
			t.Fatal(err)
		}
	}
	buf = d.EndRowset(buf)
	var got []map[string]string
	if err := json.Unmarshal(buf, &got); err != nil {
		t.Fatalf("document %q: %v", buf, err)
	}
	for i, s := range strs {
		if got[i]["s"] != s || got[i][`we"ird\col`] != s {
			t.Errorf("row %d: %q, want %q", i, got[i], s)
		}
	}

	bad := "a\xffb"
	doc, err := d.AppendRowsetRow(nil, []string{"s"}, []any{bad})
	if err != nil || !strings.Contains(string(doc), bad) {
		t.Fatalf("invalid UTF-8: %q (%v), want the bytes kept", doc, err)
	}

	doc, err = d.AppendRowsetRow(nil, []string{"n", "i", "b", "x", "f", "g"}, []any{nil, int64(math.MinInt64), true, []byte{0, 0xff}, math.Inf(-1), 0.1})
	if want := `[{"n":null,"i":-9223372036854775808,"b":true,"x":"\\x00ff","f":"-Inf","g":"0.1"}`; err != nil || string(doc) != want {
		t.Fatalf("scalars: %s (%v), want %s", doc, err, want)
	}
	if _, err := d.AppendRowsetRow(nil, []string{"u"}, []any{uint8(1)}); err == nil {
		t.Fatal("a Go type without a JSON form was accepted")
	}
}
