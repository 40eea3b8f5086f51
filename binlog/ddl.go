package binlog

import (
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// ddlTables finds the tables a DDL statement names, for filtering:
// TRUNCATE, CREATE/ALTER/DROP TABLE, RENAME TABLE and CREATE/DROP INDEX ...
// ON. parsed is false for other statements and for text it cannot follow;
// kind is the statement's first word, upper case.
func ddlTables(q, defaultDB string) (kind string, tables []schema.TableID, parsed bool) {
	toks, err := sqlTokens(q)
	if err != nil {
		if f := strings.Fields(q); len(f) > 0 {
			kind = strings.ToUpper(f[0])
		}
		return kind, nil, false
	}
	if len(toks) == 0 {
		return "", nil, false
	}
	kind = strings.ToUpper(toks[0].text)
	word := func(i int, w ...string) bool {
		if i >= len(toks) || toks[i].quoted {
			return false
		}
		for _, x := range w {
			if strings.EqualFold(toks[i].text, x) {
				return true
			}
		}
		return false
	}
	// name reads [db.]table at i and returns the index after it.
	name := func(i int) (schema.TableID, int, bool) {
		if i >= len(toks) || toks[i].punct || toks[i].str {
			return schema.TableID{}, i, false
		}
		id := schema.TableID{Database: defaultDB, Table: toks[i].text}
		if i+2 < len(toks) && toks[i+1].text == "." && toks[i+1].punct && !toks[i+2].punct {
			id = schema.TableID{Database: toks[i].text, Table: toks[i+2].text}
			i += 2
		}
		return id, i + 1, id.Database != ""
	}
	// list reads name[, name...] at i.
	list := func(i int, pairs bool) ([]schema.TableID, bool) {
		var out []schema.TableID
		for {
			id, j, ok := name(i)
			if !ok {
				return nil, false
			}
			out = append(out, id)
			if pairs { // RENAME TABLE a TO b
				if !word(j, "TO") {
					return nil, false
				}
				if id, j, ok = name(j + 1); !ok {
					return nil, false
				}
				out = append(out, id)
			}
			if j < len(toks) && toks[j].punct && toks[j].text == "," {
				i = j + 1
				continue
			}
			return out, true
		}
	}
	i := 1
	switch kind {
	case "TRUNCATE":
		if word(i, "TABLE") {
			i++
		}
		t, ok := list(i, false)
		return kind, t, ok && len(t) == 1
	case "RENAME":
		if !word(i, "TABLE", "TABLES") {
			return kind, nil, false
		}
		t, ok := list(i+1, true)
		return kind, t, ok
	case "CREATE", "ALTER", "DROP":
		for word(i, "TEMPORARY", "ONLINE", "IGNORE", "OR", "REPLACE", "UNIQUE", "FULLTEXT", "SPATIAL") {
			i++
		}
		switch {
		case word(i, "TABLE"):
			i++
			if word(i, "IF") && word(i+1, "NOT") && word(i+2, "EXISTS") {
				i += 3
			} else if word(i, "IF") && word(i+1, "EXISTS") {
				i += 2
			}
			if kind == "DROP" {
				t, ok := list(i, false)
				return kind, t, ok
			}
			id, _, ok := name(i)
			return kind, []schema.TableID{id}, ok
		case word(i, "INDEX"):
			for j := i + 1; j < len(toks); j++ {
				if word(j, "ON") {
					id, _, ok := name(j + 1)
					return kind, []schema.TableID{id}, ok
				}
			}
		}
	}
	return kind, nil, false
}
