package binlog

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// TestSchemaChangeRecordsCarryStructure: DDL run on the real server comes
// out as schema-change records with their structured changes, in order,
// with and without a schema history; with one, ALTER and RENAME carry the
// table's whole shape after them.
func TestSchemaChangeRecordsCarryStructure(t *testing.T) {
	for _, history := range []bool{false, true} {
		t.Run(fmt.Sprintf("history=%v", history), func(t *testing.T) {
			env := needServer(t)
			c, db := adminConn(t, env)
			exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10))")
			cfg := testConfig(env, db)
			if history {
				cfg.HistoryFile = filepath.Join(t.TempDir(), "history.jsonl")
			}
			s := openSource(t, cfg, nil)
			for _, q := range []string{
				"ALTER TABLE t RENAME COLUMN a TO b, ADD COLUMN d DECIMAL(3,1) NOT NULL DEFAULT 1.5",
				"/*M!100301 ALTER TABLE t ADD COLUMN IF NOT EXISTS g INET6 */",
				"RENAME TABLE t TO u",
				"DROP TABLE u",
			} {
				exec(t, c, q)
			}
			got := schemaChanges(t, s, db, 4)
			d := db + "."
			want := []string{
				"ALTER " + d + `t [RENAME a>b] [ADD d decimal(3,1) not-null default="1.5"]`,
				"ALTER " + d + "t [ADD g binary(16) if]",
				"RENAME " + d + "t>" + d + "u",
				"DROP " + d + "u",
			}
			for i, r := range got[:4] {
				if g := renderChanges(r.Change.Tables); g != want[i] {
					t.Errorf("record %d (%q):\n got %s\nwant %s", i, r.Change.DDL, g, want[i])
				}
			}
			shape := got[0].Change.Tables[0].Shape
			if !history && shape == nil {
				// Without a history the shape comes from the server, if the
				// source read the ALTER before the RENAME and DROP ran
				// (TestAlterShapeWithoutHistory).
				return
			}
			var cols []string
			for _, c := range shape.Columns {
				cols = append(cols, c.Name+" "+c.SourceType)
			}
			if g := strings.Join(cols, ", ") + " pk=" + strings.Join(shape.PrimaryKey, ","); g != "id int, b varchar(10), d decimal(3,1) pk=id" {
				t.Errorf("shape after the ALTER: %s", g)
			}
			if !history {
				return // a DROP's last shape needs a history
			}
			if s := got[3].Change.Tables[0].Shape; s == nil || len(s.Columns) != 4 {
				t.Errorf("the DROP does not carry the table's last shape: %+v", s)
			}
		})
	}
}

// TestAlterShapeWithoutHistory: without a schema history an ALTER's
// tableChanges carry the table's shape after it, read from the server, as
// Debezium's do (issue 12); when the server has moved on (a later DDL ran
// before the source read this one) the shape would be another's and is
// left out.
func TestAlterShapeWithoutHistory(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10)) DEFAULT CHARSET=latin1")
	render := func(sh *schema.TableShape) string {
		if sh == nil {
			return "<none>"
		}
		var cols []string
		for _, c := range sh.Columns {
			cols = append(cols, fmt.Sprintf("%s %s/%d", c.Name, c.SourceType, c.Length))
		}
		return strings.Join(cols, ", ") + " pk=" + strings.Join(sh.PrimaryKey, ",") + " charset=" + sh.Charset
	}
	changes := func(s *Source, n int) []schema.Record { return schemaChanges(t, s, db, n) }
	// Without a history an ALTER carries no shape, caught up or behind: the
	// server's table may already hold later statements' columns (here the
	// source reads ADD n after ADD e ran), which no check of the statement
	// alone can tell apart from older ones.
	pos := serverPosition(t, c, env.flavor)
	exec(t, c, "ALTER TABLE t ADD COLUMN n INT(7) DEFAULT 5")
	exec(t, c, "ALTER TABLE t ADD COLUMN e INT")
	got := changes(openSource(t, testConfig(env, db), pos), 2)
	for i, r := range got {
		if sh := r.Change.Tables[0].Shape; sh != nil {
			t.Errorf("ALTER %d (%q) without a history carries a shape: %s", i, r.Change.DDL, render(sh))
		}
	}
	// A CREATE that names no charset gets the database's from the server.
	s := openSource(t, testConfig(env, db), nil)
	exec(t, c, "CREATE TABLE u (id INT PRIMARY KEY)")
	if g, want := render(changes(s, 1)[0].Change.Tables[0].Shape), "id int/0 pk=id charset="; !strings.HasPrefix(g, want) || g == want {
		t.Errorf("CREATE's shape: got %s, want %s<the database's charset>", g, want)
	}
}

// schemaChanges reads until s gave n schema-change records of db and
// returns them.
func schemaChanges(t *testing.T, s *Source, db string, n int) []schema.Record {
	t.Helper()
	var got []schema.Record
	readUntil(t, s, func(rs []schema.Record) bool {
		got = got[:0]
		for _, r := range rs {
			if r.Op == schema.OpSchemaChange && r.Table.Database == db {
				got = append(got, r)
			}
		}
		return len(got) >= n
	})
	return got
}
