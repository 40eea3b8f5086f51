package binlog

import (
	"fmt"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// A session with binlog_format STATEMENT (or MIXED, for statements the
// server deems safe) logs its row changes as QUERY events holding the SQL
// text. The source reads row events only, so such a change would never
// reach the target: on a captured table (or one it cannot tell) it stops
// the source with this fatal error instead of dropping it.

// stmtDMLError returns the error for statement-logged DML q on a captured
// table, or nil when q is no row change or names only tables not captured.
func (m *mapper) stmtDMLError(q, defaultDB string) error {
	kind, tables, dml := dmlTables(q, defaultDB)
	if !dml {
		return nil
	}
	where := "a table it cannot tell"
	if tables != nil {
		captured := false
		for _, id := range tables {
			if m.filter.match(id.Database, id.Table) {
				captured, where = true, id.String()
				break
			}
		}
		if !captured {
			return nil
		}
	}
	return fmt.Errorf("%w: %s on %s was logged as a statement, not as row events (the writing session has binlog_format STATEMENT or MIXED), so its rows cannot be captured: %q; "+
		"set binlog_format=ROW globally and in every writing session (SET GLOBAL binlog_format=ROW, then reconnect the clients), then snapshot the table again "+
		"(or move the pipeline past this statement with the offsets API, knowing the target misses its change)",
		ErrUnsupported, kind, where, truncate([]byte(q), 200))
}

// dmlTables reports whether q is a row change (INSERT, REPLACE, UPDATE,
// DELETE, LOAD DATA) and the tables it writes; tables is nil when q is one
// but its tables cannot be told (multi-table forms, text not followed).
func dmlTables(q, defaultDB string) (kind string, tables []schema.TableID, dml bool) {
	toks, err := sqlTokens(q)
	if err != nil || len(toks) == 0 || toks[0].quoted || toks[0].str || toks[0].punct {
		f := strings.Fields(q)
		if len(f) == 0 {
			return "", nil, false
		}
		kind = strings.ToUpper(f[0])
		return kind, nil, isDMLKind(kind)
	}
	kind = strings.ToUpper(toks[0].text)
	if !isDMLKind(kind) {
		return kind, nil, false
	}
	i := 1
	skip := func(words ...string) {
		for i < len(toks) && !toks[i].quoted && !toks[i].str && !toks[i].punct {
			found := false
			for _, w := range words {
				if strings.EqualFold(toks[i].text, w) {
					found = true
					break
				}
			}
			if !found {
				return
			}
			i++
		}
	}
	name := func() (schema.TableID, bool) {
		if i >= len(toks) || toks[i].punct || toks[i].str {
			return schema.TableID{}, false
		}
		id := schema.TableID{Database: defaultDB, Table: toks[i].text}
		i++
		if i+1 < len(toks) && toks[i].punct && toks[i].text == "." && !toks[i+1].punct && !toks[i+1].str {
			id = schema.TableID{Database: toks[i-1].text, Table: toks[i+1].text}
			i += 2
		}
		return id, id.Database != "" && id.Table != ""
	}
	// single reports the one table at i, unless what follows makes it a
	// multi-table statement.
	single := func() []schema.TableID {
		id, ok := name()
		if !ok {
			return nil
		}
		if i < len(toks) && ((toks[i].punct && toks[i].text == ",") ||
			(!toks[i].quoted && !toks[i].str && strings.EqualFold(toks[i].text, "JOIN")) ||
			(!toks[i].quoted && !toks[i].str && strings.EqualFold(toks[i].text, "USING"))) {
			return nil
		}
		return []schema.TableID{id}
	}
	switch kind {
	case "INSERT", "REPLACE":
		skip("LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO")
		id, ok := name()
		if !ok {
			return kind, nil, true
		}
		return kind, []schema.TableID{id}, true
	case "UPDATE":
		skip("LOW_PRIORITY", "IGNORE")
		return kind, single(), true
	case "DELETE":
		skip("LOW_PRIORITY", "QUICK", "IGNORE")
		if i >= len(toks) || !strings.EqualFold(toks[i].text, "FROM") || toks[i].quoted {
			return kind, nil, true // DELETE t1, t2 FROM ...
		}
		i++
		return kind, single(), true
	case "LOAD":
		if len(toks) < 2 || !(strings.EqualFold(toks[1].text, "DATA") || strings.EqualFold(toks[1].text, "XML")) {
			return kind, nil, false // LOAD INDEX INTO CACHE
		}
		for i < len(toks) && !(strings.EqualFold(toks[i].text, "TABLE") && !toks[i].quoted && !toks[i].str) {
			i++
		}
		i++
		id, ok := name()
		if !ok {
			return kind, nil, true
		}
		return kind, []schema.TableID{id}, true
	}
	return kind, nil, true
}

func isDMLKind(kind string) bool {
	switch kind {
	case "INSERT", "REPLACE", "UPDATE", "DELETE", "LOAD":
		return true
	}
	return false
}
