package integration

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCIGroupsRunEachPairOnce reads the -run patterns of scripts/test.sh's
// integration processes and checks, with go test's own rules for -run, that
// every contract pair runs in exactly one process: a pair named by two
// groups would run twice at once (CI time), and one named by none falls to
// the catch-all process, which the balance of the groups does not count on.
func TestCIGroupsRunEachPairOnce(t *testing.T) {
	b, err := os.ReadFile("../scripts/test.sh")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	var patterns []string
	if m := regexp.MustCompile(`(?m)^\s*fault_rmq='([^']+)'`).FindStringSubmatch(src); m != nil {
		// set2 = "$fault_rmq|^TestContract\$/...": the second fault process
		if s := regexp.MustCompile(`(?m)^\s*set2="\$fault_rmq\|([^"]+)"`).FindStringSubmatch(src); s != nil {
			patterns = append(patterns, strings.ReplaceAll(s[1], `\$`, `$`))
		}
	}
	start := strings.Index(src, "groups=(\n")
	if start < 0 {
		t.Fatal("scripts/test.sh has no groups=( array")
	}
	end := strings.Index(src[start:], "\n    )\n")
	for _, m := range regexp.MustCompile(`(?m)^\s*'([^']+)'\s*$`).FindAllStringSubmatch(src[start:start+end], -1) {
		patterns = append(patterns, m[1])
	}
	if len(patterns) < 3 {
		t.Fatalf("found %d patterns in scripts/test.sh: %q", len(patterns), patterns)
	}
	for _, p := range pairs {
		for _, c := range contract {
			if c.on != nil && !c.on(p) {
				continue
			}
			name := "TestContract/" + p.String() + "/" + c.name
			var in []string
			for _, pat := range patterns {
				if runMatches(t, pat, name) {
					in = append(in, pat)
				}
			}
			if len(in) != 1 {
				t.Errorf("%s runs in %d of scripts/test.sh's processes (want 1): %q", name, len(in), in)
			}
		}
	}
}

// runMatches reports whether go test -run pattern runs the (sub)test name:
// the pattern's alternatives split at top-level '|', each split at '/'
// into one regexp per level, each matching its level of the name (a
// pattern shorter than the name runs everything below it).
func runMatches(t *testing.T, pattern, name string) bool {
	elems := strings.Split(name, "/")
	for _, alt := range splitTop(pattern, '|') {
		levels := splitTop(alt, '/')
		ok := true
		for i, l := range levels {
			if i >= len(elems) {
				break
			}
			re, err := regexp.Compile(l)
			if err != nil {
				t.Fatalf("pattern %q: %v", pattern, err)
			}
			if !re.MatchString(elems[i]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// splitTop splits s at sep outside brackets and parentheses, as go test
// splits -run patterns.
func splitTop(s string, sep byte) []string {
	var out []string
	depth, from := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case sep:
			if depth == 0 {
				out = append(out, s[from:i])
				from = i + 1
			}
		}
	}
	return append(out, s[from:])
}
