package binlog

import "testing"

func TestMySQLJSON(t *testing.T) {
	for in, want := range map[string]string{
		// go-mysql's binlog text: Go's float formatting becomes MySQL's
		`{"a":1000000000000000.0,"b":1.5e-05,"c":100.0,"d":1e-15,"e":1.5e-16,"f":-0.0,"g":100000000000000000000.0}`: `{"a":1e15,"b":0.000015,"c":100.0,"d":0.000000000000001,"e":1.5e-16,"f":-0.0,"g":1e20}`,
		// the server's text: only the spaces go
		`{"k": [1, 2, null], "s": "a, b: \"c\"", "x": 1e15, "y": 0.000015}`: `{"k":[1,2,null],"s":"a, b: \"c\"","x":1e15,"y":0.000015}`,
		// DECIMAL tokens and integers stay as written
		`[1.50, -0.001, 18446744073709551615, -9223372036854775808, 12]`: `[1.50,-0.001,18446744073709551615,-9223372036854775808,12]`,
		`"\u0001\b\/é\ud83d\ude00"`:                                      `"\u0001\b/é😀"`,
		``:                                                               ``,
	} {
		got, err := mysqlJSON(in)
		if err != nil || got != want {
			t.Errorf("mysqlJSON(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{`{`, `[1,]`, `{"a" 1}`, `"\x"`, `1 2`, `[1e]`, `tru`} {
		if _, err := mysqlJSON(bad); err == nil {
			t.Errorf("mysqlJSON(%s): no error", bad)
		}
	}
}

// FuzzMySQLJSON: any input gives an error or a text that maps to itself.
func FuzzMySQLJSON(f *testing.F) {
	for _, s := range []string{`{"k": [1, 2.5e-7, null]}`, `"a\u0000"`, `[[[]]]`, `-0.0`, `1e400`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := mysqlJSON(s)
		if err != nil {
			return
		}
		again, err := mysqlJSON(out)
		if err != nil || again != out {
			t.Fatalf("mysqlJSON(%q) = %q, which maps to %q (%v)", s, out, again, err)
		}
	})
}
