package binlog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/sluicecdc/sluice/schema"
)

// TestPartialJSONUpdates (issue 26, d3): with binlog_row_value_options=
// PARTIAL_JSON the binlog carries JSON_SET, JSON_REPLACE and JSON_REMOVE
// as changes to the document; each update record's after image is the
// document the server holds after it (its SELECT, in sluice's JSON text),
// for nested paths, several changes in one statement, two JSON columns,
// several rows, and columns of every width around them.
func TestPartialJSONUpdates(t *testing.T) {
	env := needServer(t)
	if env.flavor != FlavorMySQL {
		t.Skip("binlog_row_value_options is MySQL's")
	}
	c, db := adminConn(t, env)
	exec(t, c, `CREATE TABLE j (id INT PRIMARY KEY, d DECIMAL(20,6), doc JSON, ts TIMESTAMP(2) NULL, vc VARCHAR(300), tm TIME(3),
  e ENUM('a','b'), st SET('x','y'), b BIT(12), bl BLOB, dt DATETIME(6), doc2 JSON, note VARCHAR(20), f DOUBLE)`)
	exec(t, c, `INSERT INTO j VALUES
  (1, 1.5, '{"a":1,"b":[1,2,3],"c":{"d":"x","e":[{"f":1}]}}', '2020-01-01 00:00:00.12', REPEAT('v', 280), '12:00:00.5', 'b', 'x,y', b'101', x'00ff', '2020-01-01 00:00:00', '[1,{"k":"v"}]', 'n1', 0.5),
  (2, NULL, '{"a":2,"long key":{"z":null}}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '{}', 'n2', NULL),
  (3, 3, '[1,2,{"a":[3,4]}]', NULL, 'x', NULL, 'a', '', b'0', x'', NULL, NULL, NULL, 1e300)`)
	s := openSource(t, testConfig(env, db), nil)
	exec(t, c, "SET SESSION binlog_row_value_options='PARTIAL_JSON'")
	updates := []string{
		"UPDATE j SET doc = JSON_SET(doc, '$.a', 42) WHERE id = 1",
		"UPDATE j SET doc = JSON_SET(doc, '$.c.d', 'longer text than before', '$.b[1]', 2.5e-7, '$.c.e[0].f', JSON_OBJECT('g', 1)) WHERE id = 1",
		"UPDATE j SET doc = JSON_REPLACE(doc, '$.b[2]', 'three', '$.nope', 1) WHERE id = 1",
		"UPDATE j SET doc = JSON_REMOVE(doc, '$.c.e[0]', '$.b[0]') WHERE id = 1",
		"UPDATE j SET doc = JSON_SET(doc, '$.new', JSON_ARRAY(1, 2), '$.zz', 'x', '$.c.aa', true) WHERE id = 1",
		"UPDATE j SET doc = JSON_SET(doc, '$.\"long key\".z', 'é😀\"') , doc2 = JSON_SET(doc2, '$.k2', 7), note = 'n2b' WHERE id = 2",
		"UPDATE j SET doc = JSON_SET(doc, '$[2].a[1]', 40, '$[0]', 'first'), doc2 = '[\"whole\"]' WHERE id = 3",
		"UPDATE j SET doc = JSON_SET(doc, '$.a', 100) WHERE id IN (1, 2)",
		"UPDATE j SET note = 'only note' WHERE id = 1",
		"UPDATE j SET doc = JSON_REMOVE(doc, '$.new[1]'), doc2 = JSON_REPLACE(doc2, '$[1].k', 'w') WHERE id = 1",
	}
	var want []string // per update record: id, doc, doc2, note
	server := func(where string) {
		r, err := c.Execute("SELECT id, doc, doc2, note FROM j WHERE " + where + " ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < r.RowNumber(); i++ {
			id, _ := r.GetInt(i, 0)
			doc, _ := r.GetString(i, 1)
			doc2, _ := r.GetString(i, 2)
			note, _ := r.GetString(i, 3)
			want = append(want, fmt.Sprintf("%d %s %s %s", id, compactServerJSON(doc), compactServerJSON(doc2), note))
		}
	}
	for _, u := range updates {
		exec(t, c, u)
		_, where, _ := strings.Cut(u, "WHERE ")
		server(where)
	}
	partial := countBinlogEvents(t, c, "Update_rows_partial")
	if partial < len(updates)-1 {
		t.Fatalf("the server wrote %d partial update events, want at least %d", partial, len(updates)-1)
	}
	recs := readUntil(t, s, func(rs []schema.Record) bool { return countOps(ownData(rs, db), schema.OpUpdate) >= len(want) })
	var got []string
	for _, r := range ownData(recs, db) {
		if r.Op == schema.OpUpdate {
			str := func(v any) string {
				if v == nil {
					return ""
				}
				return fmt.Sprint(v)
			}
			got = append(got, fmt.Sprintf("%d %s %s %s", r.After[0], str(colValue(t, r, "doc")), str(colValue(t, r, "doc2")), str(colValue(t, r, "note"))))
		}
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			g := "<none>"
			if i < len(got) {
				g = got[i]
			}
			t.Errorf("update record %d:\n got %s\nwant %s", i, g, want[i])
		}
	}
}

// countBinlogEvents counts the events of type typ (as SHOW BINLOG EVENTS
// names it) in the MySQL server's current binlog file.
func countBinlogEvents(t *testing.T, c *client.Conn, typ string) int {
	t.Helper()
	r, err := c.Execute("SHOW BINARY LOG STATUS")
	if err != nil {
		t.Fatal(err)
	}
	file, _ := r.GetString(0, 0)
	if r, err = c.Execute("SHOW BINLOG EVENTS IN '" + file + "'"); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; i < r.RowNumber(); i++ {
		if got, _ := r.GetString(i, 2); got == typ {
			n++
		}
	}
	return n
}
