package admin

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestOffsetsRefuseASkip: with WithPositionOrder, PATCH .../offsets takes
// an offset before or at the saved one, refuses (400, nothing stored) one
// after it or unordered unless ?skip=true, answers the order's ErrInvalid
// as 400, and takes any offset when none is saved.
func TestOffsetsRefuseASkip(t *testing.T) {
	// positions here are {"n": N}; "x" ones cannot be ordered
	order := func(a, b string) (int, error) {
		if strings.Contains(a, "bad") {
			return 0, fmt.Errorf("%w: not a position", ErrInvalid)
		}
		if strings.Contains(a+b, "x") {
			return 0, errors.New("other server")
		}
		na, _ := strconv.Atoi(strings.Trim(a, `{}"n: `))
		nb, _ := strconv.Atoi(strings.Trim(b, `{}"n: `))
		return na - nb, nil
	}
	o := &offsetting{fakeCluster: newFake(), pos: map[string]string{"a": `{"n":5}`}}
	h := NewHandler(o, "", WithPositionOrder(order))
	body := func(off string) string { return `{"offsets": [{"partition": {"server": "a"}, "offset": ` + off + `}]}` }
	for _, c := range []struct {
		path, off string
		code      int
		stored    string
	}{
		{"", `{"n":7}`, 400, `{"n":5}`},            // forward
		{"", `{"x":1}`, 400, `{"n":5}`},            // unordered
		{"", `{"bad":1}`, 400, `{"n":5}`},          // not a position
		{"?skip=maybe", `{"n":7}`, 400, `{"n":5}`}, // not a flag
		{"", `{"n":5}`, 200, `{"n":5}`},            // the same
		{"", `{"n":3}`, 200, `{"n":3}`},            // back
		{"?skip=true", `{"n":9}`, 200, `{"n":9}`},  // forward, asked for
		{"?skip=false", `{"x":2}`, 400, `{"n":9}`}, // unordered, not asked for
		{"?skip=1", `{"x":2}`, 200, `{"x":2}`},     // unordered, asked for
	} {
		code, out := do(t, h, "PATCH", "/connectors/a/offsets"+c.path, body(c.off))
		if code != c.code || o.pos["a"] != c.stored {
			t.Errorf("PATCH%s %s: %d %s, stored %s; want %d, stored %s", c.path, c.off, code, out, o.pos["a"], c.code, c.stored)
		}
		if code == 400 && c.off == `{"n":7}` && c.path == "" && !strings.Contains(out, "?skip=true") {
			t.Errorf("the refusal does not say how to skip: %s", out)
		}
	}
	o.pos["a"] = ""
	if code, out := do(t, h, "PATCH", "/connectors/a/offsets", body(`{"x":3}`)); code != 200 || o.pos["a"] != `{"x":3}` {
		t.Errorf("PATCH with no saved position: %d %s, stored %s", code, out, o.pos["a"])
	}
}
