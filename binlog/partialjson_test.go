package binlog

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

func TestApplyJSONDiffs(t *testing.T) {
	rep, ins, rem := replication.JsonDiffOperationReplace, replication.JsonDiffOperationInsert, replication.JsonDiffOperationRemove
	for _, tc := range []struct {
		before string
		diffs  jsonDiffs
		want   string
	}{
		{`{"a":1,"b":[1,2,3]}`, jsonDiffs{{Op: rep, Path: "$.a", Value: "42"}}, `{"a":42,"b":[1,2,3]}`},
		// an inserted key goes where MySQL keeps it: shortest first, then by bytes
		{`{"a":1,"bb":2,"ccc":3}`, jsonDiffs{{Op: ins, Path: "$.ab", Value: `"x"`}, {Op: ins, Path: "$.z", Value: "null"}}, `{"a":1,"z":null,"ab":"x","bb":2,"ccc":3}`},
		{`{"a b":{"c":[1,{"d":2}]}}`, jsonDiffs{{Op: rep, Path: `$."a b".c[1].d`, Value: "1.0"}, {Op: rem, Path: `$."a b".c[0]`}}, `{"a b":{"c":[{"d":1.0}]}}`},
		{`[1,2]`, jsonDiffs{{Op: ins, Path: "$[5]", Value: "3"}, {Op: ins, Path: "$[0]", Value: "0"}}, `[0,1,2,3]`},
		{`{"a":1}`, jsonDiffs{{Op: rep, Path: "$", Value: `[1]`}}, `[1]`},
		{`{"a":1}`, jsonDiffs{}, `{"a":1}`},
	} {
		got, err := applyJSONDiffs(tc.before, tc.diffs)
		if err != nil || got != tc.want {
			t.Errorf("%s %v: %s, %v; want %s", tc.before, tc.diffs, got, err, tc.want)
		}
	}
	for _, bad := range []jsonDiffs{
		{{Op: rep, Path: "$.x.y", Value: "1"}}, {{Op: rem, Path: "$[9]"}}, {{Op: ins, Path: "$.a", Value: "1"}},
		{{Op: rep, Path: "a", Value: "1"}}, {{Op: rep, Path: "$[x]", Value: "1"}}, {{Op: rep, Path: "$.a", Value: "{"}},
	} {
		if _, err := applyJSONDiffs(`{"a":[1]}`, bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := applyJSONDiffs(nil, jsonDiffs{}); err == nil {
		t.Error("a NULL before image: no error")
	}
}

// FuzzApplyJSONDiffs: any document, path and value give a document or an
// error, never a panic.
func FuzzApplyJSONDiffs(f *testing.F) {
	f.Add(`{"a":[1,{"b":2}]}`, `$.a[1].b`, `"x"`, uint8(0))
	f.Add(`[1,2]`, `$[0]`, `3`, uint8(1))
	f.Add(`{"a b":1}`, `$."a b"`, ``, uint8(2))
	f.Fuzz(func(t *testing.T, doc, path, val string, op uint8) {
		_, _ = applyJSONDiffs(doc, jsonDiffs{{Op: replication.JsonDiffOperation(op % 3), Path: path, Value: val}})
	})
}
