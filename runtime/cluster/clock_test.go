package cluster

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Nothing in the package (nor the lease condition of package runtime)
// reads the time but through Config.clock, whose default is the one
// allowed mention of time.Now, and nothing takes the wall part of a
// reading (Unix*, Format; but stamp, which formats timestamps the
// database sent, for display): TestClockSkew skews that clock, so a decision
// made by a worker's wall clock could not hide from it behind a direct
// time.Now.
func TestClockUse(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "storage", "lease.go"))
	wall := map[string]bool{"Unix": true, "UnixMilli": true, "UnixMicro": true, "UnixNano": true, "Format": true, "AppendFormat": true, "YearDay": true, "Clock": true, "Date": true}
	nows := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if fn, ok := n.(*ast.FuncDecl); ok && fn.Name.Name == "stamp" {
				return false // formats a timestamp read from the database, for display
			}
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pos := fset.Position(sel.Pos())
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" {
				switch sel.Sel.Name {
				case "Now":
					nows++
					if filepath.Base(f) != "worker.go" || nows > 1 {
						t.Errorf("%s: time.Now: read the time through Config.clock", pos)
					}
				case "Since", "Until", "Unix", "UnixMilli", "UnixMicro", "Date", "Parse", "ParseInLocation":
					t.Errorf("%s: time.%s: use differences of Config.clock readings (monotonic) and the database's clock", pos, sel.Sel.Name)
				}
				return true
			}
			if wall[sel.Sel.Name] {
				t.Errorf("%s: .%s: the wall part of a reading decides nothing here; timestamps come from the database", pos, sel.Sel.Name)
			}
			return true
		})
	}
	if nows != 1 {
		t.Errorf("time.Now is mentioned %d times; expected once, as Config.clock's default", nows)
	}
}
