package ddl

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sluicecdc/sluice/schema"
)

// DML reports whether q is a row change (INSERT, REPLACE, UPDATE, DELETE,
// LOAD DATA) and the tables it writes; tables is nil when q is one but its
// tables cannot be told (multi-table forms, text the parser cannot read).
// kind is the statement's first word, upper case. It reads q with the same
// pooled TiDB parser as Read.
func DML(q, defaultDB string) (kind string, tables []schema.TableID, dml bool) {
	parsed := false
	func() {
		defer func() {
			if r := recover(); r != nil { // the parser must not stop the source
				parsed = false
			}
		}()
		withParser(func(p *parser.Parser) {
			stmts, _, err := p.Parse(q, "", "")
			if err == nil && len(stmts) == 1 {
				parsed = true
				kind, tables, dml = dmlOf(stmts[0], defaultDB)
			}
		})
	}()
	if !parsed {
		f := strings.Fields(q)
		if len(f) == 0 {
			return "", nil, false
		}
		kind = strings.ToUpper(f[0])
		if kind == "LOAD" && (len(f) < 2 || !(strings.EqualFold(f[1], "DATA") || strings.EqualFold(f[1], "XML"))) {
			return kind, nil, false // LOAD INDEX INTO CACHE
		}
		return kind, nil, isDMLKind(kind)
	}
	return kind, tables, dml
}

// dmlOf is DML for a statement the parser read.
func dmlOf(st ast.StmtNode, defaultDB string) (kind string, tables []schema.TableID, dml bool) {
	kind = firstWord(st)
	one := func(n *ast.TableName) []schema.TableID {
		if n == nil {
			return nil
		}
		id, err := tableID(n, defaultDB)
		if err != nil || id.Database == "" || id.Table == "" {
			return nil
		}
		return []schema.TableID{id}
	}
	single := func(refs *ast.TableRefsClause) []schema.TableID {
		if refs == nil || refs.TableRefs == nil || refs.TableRefs.Right != nil {
			return nil
		}
		ts, ok := refs.TableRefs.Left.(*ast.TableSource)
		if !ok {
			return nil
		}
		n, _ := ts.Source.(*ast.TableName)
		return one(n)
	}
	switch st := st.(type) {
	case *ast.InsertStmt:
		kind = "INSERT"
		if st.IsReplace {
			kind = "REPLACE"
		}
		return kind, single(st.Table), true
	case *ast.UpdateStmt:
		kind = "UPDATE"
		if st.MultipleTable {
			return kind, nil, true
		}
		return kind, single(st.TableRefs), true
	case *ast.DeleteStmt:
		kind = "DELETE"
		if st.IsMultiTable {
			return kind, nil, true
		}
		return kind, single(st.TableRefs), true
	case *ast.LoadDataStmt:
		return "LOAD", one(st.Table), true
	}
	return kind, nil, false // LOAD INDEX INTO CACHE and the like
}

func isDMLKind(kind string) bool {
	switch kind {
	case "INSERT", "REPLACE", "UPDATE", "DELETE", "LOAD":
		return true
	}
	return false
}
