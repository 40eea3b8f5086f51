package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a relative Markdown link: its file and its #anchor.
var mdLink = regexp.MustCompile(`\]\(([a-z0-9./_-]*\.md)?(#[a-z0-9_-]+)?\)`)

// anchors lists the GitHub anchors of a Markdown file's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, l := range strings.Split(text, "\n") {
		if h, ok := strings.CutPrefix(l, "#"); ok {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	return out
}

// TestReadmeShortWithDocs (issue 33, item 1): README stays short, about
// 15 KB at most, and what it leaves out is in docs/: every relative link
// of README and of docs/*.md names a file that exists and, with a
// #anchor, one of its headings.
func TestReadmeShortWithDocs(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(readme) > 15*1024 {
		t.Errorf("README.md is %d bytes, more than 15 KB: move detail to docs/", len(readme))
	}
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v %v", docs, err)
	}
	links := 0
	for _, file := range append(docs, "../README.md") {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target, anchor := file, strings.TrimPrefix(m[2], "#")
			if m[1] != "" {
				target = filepath.Join(filepath.Dir(file), m[1])
			}
			tb, err := os.ReadFile(target)
			if err != nil {
				t.Errorf("%s links to %s, which is not there", file, m[0])
				continue
			}
			if anchor != "" && !anchors(string(tb))[anchor] {
				t.Errorf("%s links to %s: %s has no heading with that anchor", file, m[0], target)
			}
			links++
		}
	}
	if links < 20 {
		t.Errorf("only %d relative links found: the pattern no longer reads them", links)
	}
}
