package binlog

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// globalGrant finds a GRANT of global privileges in text whose whitespace
// (line breaks of prose and SQL, comment markers' indentation) is collapsed.
var globalGrant = regexp.MustCompile(`GRANT ([A-Z_ ,]+?) ON \*\.\* TO`)

// grantLists returns the privilege lists of the global GRANTs in file
// (relative to the repository's root), but for an administrator's ALL
// PRIVILEGES.
func grantLists(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	var out []string
	for _, m := range globalGrant.FindAllStringSubmatch(text, -1) {
		if m[1] != "ALL PRIVILEGES" {
			out = append(out, m[1])
		}
	}
	return out
}

// TestSourceGrantListIsOne: the source account's privileges are one list,
// SourcePrivileges, wherever the repository gives them: README's first
// pipeline, docs/source-setup.md, every example that names them,
// scripts/servers.sh's CDC accounts (MariaDB and MySQL) and the advice of
// `sluice check` (grantAdvice). Each file must give the list at least
// as often as it is known to, so a list that moves away is not silently
// unchecked.
func TestSourceGrantListIsOne(t *testing.T) {
	files := map[string]int{ // file: least number of lists in it
		"README.md":                             1,
		"docs/source-setup.md":                  2,
		"scripts/servers.sh":                    2,
		"examples/compose/mysql-init.sql":       1,
		"examples/mysql-embedded-postgres.yaml": 1,
		"examples/mysql-rocketmq-postgres.yaml": 1,
	}
	// Every other example that grants global privileges is held to the list too.
	err := filepath.WalkDir("../examples", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("..", path)
		if _, ok := files[rel]; !ok {
			files[rel] = 0
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, least := range files {
		lists := grantLists(t, file)
		if len(lists) < least {
			t.Errorf("%s gives the source's GRANT %d times, want at least %d", file, len(lists), least)
		}
		for _, l := range lists {
			if l != SourcePrivileges {
				t.Errorf("%s grants %q, not the one list %q (binlog.SourcePrivileges)", file, l, SourcePrivileges)
			}
		}
	}
	m := globalGrant.FindStringSubmatch(grantAdvice("'sluice'@'%'"))
	if m == nil || m[1] != SourcePrivileges {
		t.Errorf("sluice check advises %q, not the one list %q", grantAdvice("'sluice'@'%'"), SourcePrivileges)
	}
}
