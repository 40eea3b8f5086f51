package integration

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// errScan holds the module's production code, parsed, to follow how its
// error messages are built.
type errScan struct {
	fset      *token.FileSet
	sentinels map[string]string               // import path.Name: message of a package-level errors.New
	files     []*ast.File                     // in the order of their paths
	imports   map[*ast.File]map[string]string // per file: imported name -> import path
	pkgOf     map[*ast.File]string
	funcs     map[string][]*ast.FuncDecl // import path.Name: the functions and methods of that name
	fileOf    map[*ast.FuncDecl]*ast.File
	memo      map[*ast.FuncDecl][]string
}

func scanErrors(t *testing.T) *errScan {
	t.Helper()
	s := &errScan{fset: token.NewFileSet(), sentinels: map[string]string{}, imports: map[*ast.File]map[string]string{},
		pkgOf: map[*ast.File]string{}, funcs: map[string][]*ast.FuncDecl{}, fileOf: map[*ast.FuncDecl]*ast.File{}, memo: map[*ast.FuncDecl][]string{}}
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != ".." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(s.fset, p, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", filepath.Dir(p))
		pkg := module
		if rel != "." {
			pkg += "/" + filepath.ToSlash(rel)
		}
		s.pkgOf[f] = pkg
		s.files = append(s.files, f)
		s.imports[f] = map[string]string{}
		for _, im := range f.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			name := path.Base(ip)
			if im.Name != nil {
				name = im.Name.Name
			}
			s.imports[f][name] = ip
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				s.funcs[pkg+"."+decl.Name.Name] = append(s.funcs[pkg+"."+decl.Name.Name], decl)
				s.fileOf[decl] = f
			case *ast.GenDecl:
				if decl.Tok != token.VAR {
					continue
				}
				for _, spec := range decl.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, v := range vs.Values {
						if call, ok := v.(*ast.CallExpr); ok && i < len(vs.Names) {
							if msg, ok := s.literal(f, call); ok && !strings.Contains(strings.ReplaceAll(msg, "%%", ""), "%") {
								s.sentinels[pkg+"."+vs.Names[i].Name] = msg
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
	return s
}

// literal is the message or format of errors.New("…") or fmt.Errorf("…", …).
func (s *errScan) literal(f *ast.File, call *ast.CallExpr) (string, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || len(call.Args) == 0 {
		return "", false
	}
	x, ok := sel.X.(*ast.Ident)
	im := s.imports[f]
	if !ok || !(im[x.Name] == "errors" && sel.Sel.Name == "New" || im[x.Name] == "fmt" && sel.Sel.Name == "Errorf") {
		return "", false
	}
	lit, ok := call.Args[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	m, err := strconv.Unquote(lit.Value)
	return m, err == nil
}

// render is format with each verb replaced by args' text in turn ("…"
// for an empty one).
func render(format string, args []string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("+-# 0123456789.[]*", format[j]) >= 0 {
			j++
		}
		if j < len(format) && format[j] == '%' {
			b.WriteByte('%')
		} else {
			if n < len(args) && args[n] != "" {
				b.WriteString(args[n])
			} else {
				b.WriteString("…")
			}
			n++
		}
		i = j
	}
	return b.String()
}

// firstPrefix is the prefix msg starts with ("sink" of "sink: …"), or "".
func firstPrefix(msg string) string {
	p, _, ok := strings.Cut(msg, ": ")
	if !ok || !prefixLike.MatchString(p) {
		return ""
	}
	return p
}

// transparent are the wrappers whose message is their argument's.
var transparent = map[string]bool{"Fatal": true, "Retriable": true, "fatal": true}

// prefixes lists the prefixes an error expression e of fd (in file f) may
// start with: a sentinel's, a literal message's, a format's own or (for a
// format starting with a verb) its first argument's, a function's of ours
// (any of its returns), a variable's (its last assignment before e).
func (s *errScan) prefixes(f *ast.File, fd *ast.FuncDecl, e ast.Expr, depth int) []string {
	if depth > 8 {
		return nil
	}
	switch e := e.(type) {
	case *ast.ParenExpr:
		return s.prefixes(f, fd, e.X, depth)
	case *ast.Ident:
		if m, ok := s.sentinels[s.pkgOf[f]+"."+e.Name]; ok {
			return nonEmpty(firstPrefix(m))
		}
		if fd == nil {
			return nil
		}
		if rhs := lastAssigned(fd, e); rhs != nil && !isParam(e) {
			return s.prefixes(f, fd, rhs, depth+1)
		}
	case *ast.SelectorExpr:
		if p, ok := e.X.(*ast.Ident); ok {
			if m, ok := s.sentinels[s.imports[f][p.Name]+"."+e.Sel.Name]; ok {
				return nonEmpty(firstPrefix(m))
			}
		}
	case *ast.CallExpr:
		if msg, ok := s.literal(f, e); ok {
			if strings.HasPrefix(msg, "%") && len(e.Args) > 1 {
				return s.prefixes(f, fd, e.Args[1], depth+1)
			}
			return nonEmpty(firstPrefix(render(msg, nil)))
		}
		var key, name string
		switch fn := e.Fun.(type) {
		case *ast.Ident:
			key, name = s.pkgOf[f]+"."+fn.Name, fn.Name
		case *ast.SelectorExpr:
			name = fn.Sel.Name
			if p, ok := fn.X.(*ast.Ident); ok && s.imports[f][p.Name] != "" {
				key = s.imports[f][p.Name] + "." + name
			} else {
				key = s.pkgOf[f] + "." + name // a method: any of the package's of that name
			}
		}
		if transparent[name] && len(e.Args) == 1 {
			return s.prefixes(f, fd, e.Args[0], depth+1)
		}
		if key == module+"/schema.Wrapf" {
			if lit, ok := e.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				p, _ := strconv.Unquote(lit.Value)
				return nonEmpty(p)
			}
		}
		var out []string
		for _, callee := range s.funcs[key] {
			if callee != fd { // a recursive call's error is its own, one level down ("array element: array element: …")
				out = append(out, s.funcPrefixes(callee, depth+1)...)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return nil
}

func nonEmpty(p string) []string {
	if p == "" {
		return nil
	}
	return []string{p}
}

// funcPrefixes lists the prefixes the errors fd returns may start with.
func (s *errScan) funcPrefixes(fd *ast.FuncDecl, depth int) []string {
	if out, ok := s.memo[fd]; ok {
		return out
	}
	s.memo[fd] = nil // a recursive call adds nothing
	res := fd.Type.Results
	if fd.Body == nil || res == nil || len(res.List) == 0 {
		return nil
	}
	if id, ok := res.List[len(res.List)-1].Type.(*ast.Ident); !ok || id.Name != "error" {
		return nil
	}
	f := s.fileOf[fd]
	var out []string
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			if len(n.Results) > 0 {
				out = append(out, s.prefixes(f, fd, n.Results[len(n.Results)-1], depth)...)
			}
		}
		return true
	})
	slices.Sort(out)
	out = slices.Compact(out)
	s.memo[fd] = out
	return out
}

// isParam reports whether v is a parameter (of fd or of a function
// literal in it): its value comes from the caller.
func isParam(v *ast.Ident) bool {
	if v.Obj == nil {
		return false
	}
	_, ok := v.Obj.Decl.(*ast.Field)
	return ok
}

// lastAssigned is the value last assigned to v (the same variable: the
// parser's resolution within the file) in fd before v's use.
func lastAssigned(fd *ast.FuncDecl, v *ast.Ident) ast.Expr {
	var found ast.Expr
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		a, ok := n.(*ast.AssignStmt)
		if !ok || a.Pos() >= v.Pos() {
			return true
		}
		for i, l := range a.Lhs {
			if id, ok := l.(*ast.Ident); ok && id.Name == v.Name && id.Obj == v.Obj {
				switch {
				case len(a.Rhs) == len(a.Lhs):
					found = a.Rhs[i]
				case len(a.Rhs) == 1:
					found = a.Rhs[0]
				}
			}
		}
		return true
	})
	return found
}

// prefixFalseAlarms are the formats the test's approximations misjudge:
// a method is known by its name only, so an argument from another
// module's method of a name ours have too is taken for ours.
var prefixFalseAlarms = map[string]bool{
	"bench: Debezium printed no result (%v): %s": true, // runErr is exec.Cmd's Run, not bench's
}

// TestNoErrorSaysItsPrefixTwice (issue 33, item 5: no doubled prefixes,
// one test over every error path): every error message the code builds
// (each errors.New, and each fmt.Errorf with every prefix each error it
// prints may start with: a package-level error's, or that of the errors
// the function it came from returns, followed through calls, variables
// and wrappers of ours) says each prefix ("sink", "binlog", "read
// source": the words before ": ") once. An error that wraps one with a
// prefix puts it first ("%w: Routes[0]…") or says no prefix of its own.
// Errors of other modules (drivers) are checked on the output of the
// error tests (assertNoRepeatedPrefix).
func TestNoErrorSaysItsPrefixTwice(t *testing.T) {
	s := scanErrors(t)
	if len(s.sentinels) < 20 {
		t.Fatalf("found %d sentinel errors: the parse no longer finds them", len(s.sentinels))
	}
	sites, followed := 0, 0
	for _, f := range s.files {
		var fd *ast.FuncDecl
		ast.Inspect(f, func(n ast.Node) bool {
			if d, ok := n.(*ast.FuncDecl); ok {
				fd = d
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			format, ok := s.literal(f, call)
			if !ok {
				return true
			}
			sites++
			if sel := call.Fun.(*ast.SelectorExpr); sel.Sel.Name == "New" {
				if p := repeatedPrefix(format); p != "" {
					t.Errorf("%s: the error %q says %q twice", s.fset.Position(call.Pos()), format, p+":")
				}
				return true
			}
			args := make([][]string, len(call.Args)-1)
			for i, a := range call.Args[1:] {
				args[i] = s.prefixes(f, fd, a, 0)
				if len(args[i]) > 0 {
					followed++
				}
			}
			// Each argument in turn with each prefix it may have.
			plain := make([]string, len(args))
			msgs := []string{render(format, plain)}
			for i, ps := range args {
				for _, p := range ps {
					one := slices.Clone(plain)
					one[i] = p + ": …"
					msgs = append(msgs, render(format, one))
				}
			}
			for _, msg := range msgs {
				if p := repeatedPrefix(msg); p != "" && !prefixFalseAlarms[format] {
					t.Errorf("%s: the error %q can say %q twice", s.fset.Position(call.Pos()), msg, p+":")
					break
				}
			}
			return true
		})
	}
	if sites < 500 || followed < 100 {
		t.Fatalf("checked %d error sites, %d arguments followed to a prefix: the parse no longer finds them", sites, followed)
	}
	t.Logf("%d error sites, %d arguments followed to a prefix, %d sentinel errors", sites, followed, len(s.sentinels))
}
