package integration

import (
	"regexp"
	"strings"
	"testing"
)

var prefixLike = regexp.MustCompile(`^[a-z][a-z0-9_.-]*( [a-z][a-z0-9_.-]*){0,2}$`)

// repeatedPrefix returns the first error prefix ("sink", "read source", …:
// one to three lower-case words before ": ") that occurs twice in line, as
// in "sink: sink: …" or "rocketmq: topic t: rocketmq: …", or "" if none does.
// In a log line a prefix may follow a quote, "=" or "(".
func repeatedPrefix(line string) string {
	segs := strings.Split(line, ": ")
	seen := map[string]bool{}
	for _, s := range segs[:len(segs)-1] {
		if i := strings.LastIndexAny(s, `"=(`); i >= 0 {
			s = s[i+1:]
		}
		if !prefixLike.MatchString(s) {
			continue
		}
		if seen[s] {
			return s
		}
		seen[s] = true
	}
	return ""
}

// assertNoRepeatedPrefix fails for each line of out that says a prefix twice.
func assertNoRepeatedPrefix(t *testing.T, what, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if p := repeatedPrefix(l); p != "" {
			t.Errorf("%s: %q is said twice in: %s", what, p+":", l)
		}
	}
}

func TestRepeatedPrefix(t *testing.T) {
	for line, want := range map[string]string{
		"sink: sink: column does not exist":                                             "sink",
		`level=ERROR msg="task failed" err="sink: sink: table t: bad"`:                  "sink",
		"sluice: rocketmq: offsets of t queue 0: rocketmq: the broker refused":          "rocketmq",
		"sink: apply db.t: value out of range":                                          "",
		`level=ERROR msg="task failed" err="read source: binlog: access denied: x"`:     "",
		"binlog: position no longer available on the server: snapshot the tables again": "",
		"": "",
	} {
		if got := repeatedPrefix(line); got != want {
			t.Errorf("repeatedPrefix(%q) = %q, want %q", line, got, want)
		}
	}
}
