package integration

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/sluicecdc/sluice"

// allowed lists, per top-level package folder, which of our folders it may
// import (DEVELOPERS.md: schema imports nothing of ours; converter imports
// schema; binlog and sink import schema and never each other; runtime defines
// contracts and wires transports; cmd registers connectors).
var allowed = map[string][]string{
	"schema":      {},
	"converter":   {"schema"},
	"binlog":      {"schema"},
	"sink":        {"schema"},
	"runtime":     {"schema", "converter"},
	"cmd":         {"schema", "converter", "binlog", "sink", "runtime"},
	"integration": {"schema", "converter", "binlog", "sink", "runtime", "cmd"},
}

// innerAllowed narrows the rules for inner packages: each may import only
// the listed packages of ours (full paths below the module), whatever its
// top-level folder allows.
var innerAllowed = map[string][]string{
	"binlog/charset": {}, // character-set decoding: a leaf, testable without the replica client
	// the DDL reader: never binlog (the source passes its column type
	// builder in), so it is tested and fuzzed without the replica client
	"binlog/ddl":    {"schema"},
	"schema/secure": {}, // TLS modes and DSN redaction: a leaf beside the record model
}

// rooms narrows what the runtime's packages import in production code
// (their tests may wire any of them together): the contracts (package
// runtime) import none of the others; the engine, the stores and the
// plugin registry import the contracts, the registry also the stores (the
// Lease a task carries); a transport never imports the engine, a store or
// the registry, except that the embedded transport registers its plugin.
var rooms = map[string][]string{
	"runtime":          {"schema"},
	"runtime/engine":   {"schema", "runtime"},
	"runtime/storage":  {"schema", "runtime"},
	"runtime/plugin":   {"schema", "runtime", "runtime/storage"},
	"runtime/kafka":    {"schema", "schema/secure", "converter", "runtime"},
	"runtime/rocketmq": {"schema", "converter", "runtime"},
	"runtime/embedded": {"schema", "runtime", "runtime/plugin"},
	// the transports' test kit
	"runtime/transporttest": {"schema", "runtime"},
}

// innerPackage returns the inner package of innerAllowed that holds
// importPath (or its test variants), or "".
func innerPackage(importPath string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
	rel = strings.TrimSuffix(strings.TrimSuffix(rel, ".test"), "_test")
	if _, ok := innerAllowed[rel]; ok {
		return rel
	}
	return ""
}

// harness lists the benchmark packages, each with the one package whose
// production code may import it (its entry): the benchmark harness stays
// out of the binary's production packages (`sluice bench` is a thin entry
// in cmd/sluice/app). Tests may import them.
var harness = map[string]string{
	module + "/cmd/sluice/internal/bench": module + "/cmd/sluice/app",
	module + "/runtime/rocketmq/rawbench": module + "/cmd/sluice/internal/bench",
	module + "/runtime/kafka/rawbench":    module + "/cmd/sluice/internal/bench",
}

// testSupport lists the packages of tests' helpers: schema/schematest for
// every package's tests (servers needed or fail under CI, polling), and
// runtime/transporttest, the kit every transport's tests run. Production
// code never imports them.
var testSupport = map[string]bool{module + "/schema/schematest": true, module + "/runtime/transporttest": true}

// topFolder maps a package (or its test variants, "x_test", "x.test") to
// its top-level folder.
func topFolder(importPath string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
	rel = strings.TrimSuffix(strings.TrimSuffix(rel, ".test"), "_test")
	top, _, _ := strings.Cut(rel, "/")
	return top
}

func TestImportGraph(t *testing.T) {
	cmd := exec.Command("go", "list", "-test", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := strings.Fields(strings.ReplaceAll(fields[0], "[", " "))[0]
		from := topFolder(pkg)
		rules, ok := allowed[from]
		if !ok {
			t.Errorf("package %s is in folder %q, which is not part of the fixed layout", pkg, from)
			continue
		}
		checked++
		seen[pkg] = true
		inner := innerPackage(pkg)
		// a test variant is listed as "pkg [pkg.test]"; pkg_test and pkg.test are tests too
		variant := len(fields) > 1 && strings.HasPrefix(fields[1], "[")
		production := !variant && !strings.HasSuffix(pkg, ".test") && !strings.HasSuffix(pkg, "test")
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if production && testSupport[imp] && !testSupport[pkg] {
				t.Errorf("%s imports %s: the test-support package is for tests (and test-support packages) only", pkg, imp)
			}
			if entry, ok := harness[imp]; ok && production && pkg != entry {
				t.Errorf("%s imports %s: the benchmark harness is imported only by its entry %s (and tests)", pkg, imp, entry)
			}
			if room, ok := rooms[strings.TrimPrefix(pkg, module+"/")]; ok && production {
				if rel := strings.TrimPrefix(imp, module+"/"); rel != strings.TrimPrefix(pkg, module+"/") && !contains(room, rel) {
					t.Errorf("%s imports %s: it may import only %v of ours", pkg, imp, room)
				}
			}
			if inner != "" {
				rel := strings.TrimPrefix(imp, module+"/")
				if innerPackage(imp) != inner && !contains(innerAllowed[inner], rel) { // itself, or its own tests
					t.Errorf("%s imports %s: %s may import only %v of ours", pkg, imp, inner, innerAllowed[inner])
				}
				continue
			}
			to := topFolder(imp)
			if to == from {
				continue
			}
			ok := false
			for _, a := range rules {
				ok = ok || a == to
			}
			if !ok {
				t.Errorf("%s imports %s: %s may import only %v of ours", pkg, imp, from, rules)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked only %d packages; go list output:\n%s", checked, out)
	}
	for h := range harness {
		if !seen[h] {
			t.Errorf("benchmark package %s is missing: move it back or update the harness rule", h)
		}
	}
	for room := range rooms {
		if !seen[module+"/"+room] {
			t.Errorf("runtime package %s is missing: move it back or update its rule", room)
		}
	}
	for inner := range innerAllowed {
		if !seen[module+"/"+inner] {
			t.Errorf("inner package %s is missing: move it back or update its rule", inner)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestTopLevelLayout(t *testing.T) {
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"cmd": true, "binlog": true, "schema": true, "converter": true, "sink": true, "runtime": true, "integration": true,
		"go.mod": true, "go.sum": true, "docker-compose.yml": true, "README.md": true}
	helpers := map[string]bool{"scripts": true, "examples": true, "docs": true, ".ci": true, ".git": true, ".gitignore": true, "Dockerfile": true, ".dockerignore": true}
	for _, e := range entries {
		if !want[e.Name()] && !helpers[e.Name()] {
			t.Errorf("unexpected top-level entry %q: the layout is fixed (helper folders: scripts, examples, docs)", e.Name())
		}
		delete(want, e.Name())
	}
	for name := range want {
		if _, err := os.Stat(filepath.Join("..", name)); err != nil {
			t.Errorf("missing top-level entry %q", name)
		}
	}
}

// TestSinkDriversBehindDialects: the sink's core never asks which dialect
// it has, so only the dialect packages import a database driver, and the
// dialect contract imports no dialect.
func TestSinkDriversBehindDialects(t *testing.T) {
	drivers := map[string]string{"github.com/lib/pq": module + "/sink/postgres", "github.com/go-sql-driver/mysql": module + "/sink/mysql"}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/sink/...")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := fields[0]
		seen[pkg] = true
		for _, imp := range fields[1:] {
			if owner, ok := drivers[imp]; ok && pkg != owner {
				t.Errorf("%s imports the driver %s: only %s may", pkg, imp, owner)
			}
			if pkg == module+"/sink/dialect" && strings.HasPrefix(imp, module+"/sink/") {
				t.Errorf("the dialect contract imports %s", imp)
			}
		}
	}
	for _, p := range []string{"sink", "sink/dialect", "sink/postgres", "sink/mysql"} {
		if !seen[module+"/"+p] {
			t.Errorf("package %s missing from go list", p)
		}
	}
}

// TestServerPortsBelowEphemeral: every default port of scripts/servers.sh
// (and the port above it, which brokers and Kafka's controller take) is
// below 32768, where the kernel's ephemeral ports begin: an outgoing
// connection took MySQL's 33306 once and the server failed to start.
func TestServerPortsBelowEphemeral(t *testing.T) {
	b, err := os.ReadFile("../scripts/servers.sh")
	if err != nil {
		t.Fatal(err)
	}
	defaults := regexp.MustCompile(`_PORT:-(\d+)\}`).FindAllStringSubmatch(string(b), -1)
	if len(defaults) < 8 {
		t.Fatalf("found %d default ports in scripts/servers.sh, want the servers' (at least 8)", len(defaults))
	}
	for _, m := range defaults {
		if n, _ := strconv.Atoi(m[1]); n+1 >= 32768 {
			t.Errorf("scripts/servers.sh: default port %d is in the kernel's ephemeral range (32768 and up)", n)
		}
	}
}

// TestExportedNamesHaveDocs: every exported type, function, constant and
// variable of a production package says what it is (a comment on it, on
// its group, or at the end of its line). Methods are left out: most of
// them implement an interface, whose doc speaks for them.
func TestExportedNamesHaveDocs(t *testing.T) {
	var missing []string
	err := filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "integration", "scripts", "examples", "docs":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Recv == nil && decl.Name.IsExported() && decl.Doc == nil {
					missing = append(missing, fset.Position(decl.Pos()).String()+" "+decl.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && s.Doc == nil && decl.Doc == nil {
							missing = append(missing, fset.Position(s.Pos()).String()+" "+s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, name := range s.Names {
							if name.IsExported() && s.Doc == nil && s.Comment == nil && decl.Doc == nil {
								missing = append(missing, fset.Position(s.Pos()).String()+" "+name.Name)
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Errorf("%s: exported without a doc comment", m)
	}
}
