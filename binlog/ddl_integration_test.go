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
			d := db + "."
			// A version comment of the flavor: MariaDB's /*M! and INET6, MySQL's /*!.
			versioned, wantVersioned := "/*M!100301 ALTER TABLE t ADD COLUMN IF NOT EXISTS g INET6 */", "ALTER "+d+"t [ADD g binary(16) if]"
			if env.flavor == FlavorMySQL {
				versioned, wantVersioned = "/*!80000 ALTER TABLE t ADD COLUMN g BINARY(16) */", "ALTER "+d+"t [ADD g binary(16)]"
			}
			for _, q := range []string{
				"ALTER TABLE t RENAME COLUMN a TO b, ADD COLUMN d DECIMAL(3,1) NOT NULL DEFAULT 1.5",
				versioned,
				"RENAME TABLE t TO u",
				"DROP TABLE u",
			} {
				exec(t, c, q)
			}
			got := schemaChanges(t, s, db, 4)
			want := []string{
				"ALTER " + d + `t [RENAME a>b] [ADD d decimal(3,1) not-null default="1.5"]`,
				wantVersioned,
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

// TestMySQLDDLKeepsStreaming (issue 26, d2): ordinary MySQL DDL — spatial
// indexes, the SRID attribute, column visibility, functional indexes,
// CHECK constraints, CREATE TABLE … LIKE and … AS SELECT — does not stop
// the source, with and without a schema history; with one, a captured
// table whose SHOW CREATE TABLE has /*!80003 SRID 4326 */ and a spatial
// key is read at the first start. Rows written after each statement
// arrive with every column.
func TestMySQLDDLKeepsStreaming(t *testing.T) {
	for _, history := range []bool{false, true} {
		t.Run(fmt.Sprintf("history=%v", history), func(t *testing.T) {
			env := needServer(t)
			if env.flavor != FlavorMySQL {
				t.Skip("MySQL syntax (SRID, SET INVISIBLE, functional indexes)")
			}
			c, db := adminConn(t, env)
			exec(t, c, "CREATE TABLE pre (id INT PRIMARY KEY, p POINT SRID 4326 NOT NULL, g GEOMETRY, v INT INVISIBLE, a INT, SPATIAL INDEX(p), INDEX fi ((a + 1)), CHECK (a > 0))")
			exec(t, c, "INSERT INTO pre (id, p, g, v, a) VALUES (1, ST_GeomFromText('POINT(1 2)', 4326), NULL, 7, 1)")
			cfg := testConfig(env, db)
			if history {
				cfg.HistoryFile = filepath.Join(t.TempDir(), "history.jsonl")
			}
			s := openSource(t, cfg, nil)
			type step struct {
				ddl, dml string
				table    string
				cols     int // the columns of the row dml writes
			}
			steps := []step{
				{"CREATE TABLE geo (id INT PRIMARY KEY, p POINT SRID 4326 NOT NULL, g GEOMETRY, SPATIAL INDEX(p))",
					"INSERT INTO geo VALUES (1, ST_GeomFromText('POINT(1 2)', 4326), NULL)", "geo", 3},
				{"ALTER TABLE geo ADD COLUMN q GEOMETRY SRID 0", "INSERT INTO geo VALUES (2, ST_GeomFromText('POINT(1 2)', 4326), NULL, NULL)", "geo", 4},
				{"ALTER TABLE geo ADD SPATIAL INDEX sp2 (p)", "INSERT INTO geo VALUES (3, ST_GeomFromText('POINT(1 2)', 4326), NULL, NULL)", "geo", 4},
				{"CREATE SPATIAL INDEX sp3 ON geo (p)", "INSERT INTO geo VALUES (4, ST_GeomFromText('POINT(1 2)', 4326), NULL, NULL)", "geo", 4},
				{"ALTER TABLE geo ALTER COLUMN g SET INVISIBLE", "INSERT INTO geo (id, p, g, q) VALUES (5, ST_GeomFromText('POINT(1 2)', 4326), NULL, NULL)", "geo", 4},
				{"ALTER TABLE geo ALTER COLUMN g SET VISIBLE, ADD COLUMN r INT", "INSERT INTO geo VALUES (6, ST_GeomFromText('POINT(1 2)', 4326), NULL, NULL, 6)", "geo", 5},
				{"CREATE TABLE f (id INT PRIMARY KEY, a INT, b VARCHAR(10), INDEX fi ((a + 1)), CHECK (a > 0), CONSTRAINT cb CHECK (b <> 'x') NOT ENFORCED)",
					"INSERT INTO f VALUES (1, 1, 'a')", "f", 3},
				{"ALTER TABLE f ADD INDEX fj ((lower(b))), ADD CONSTRAINT c2 CHECK (a < 100)", "INSERT INTO f VALUES (2, 2, 'b')", "f", 3},
				{"ALTER TABLE f DROP CHECK c2", "INSERT INTO f VALUES (3, 300, 'c')", "f", 3},
				{"CREATE TABLE f2 LIKE f", "INSERT INTO f2 VALUES (1, 1, 'a')", "f2", 3},
				{"CREATE TABLE f3 AS SELECT * FROM f", "INSERT INTO f3 VALUES (9, 9, 'z')", "f3", 3},
				{"CREATE TABLE f4 (x INT) AS SELECT id, a FROM f", "INSERT INTO f4 VALUES (1, 9, 9)", "f4", 3},
				{"ALTER TABLE pre ALTER COLUMN v SET VISIBLE", "INSERT INTO pre VALUES (2, ST_GeomFromText('POINT(1 2)', 4326), NULL, 7, 1)", "pre", 5},
			}
			for _, st := range steps {
				exec(t, c, st.ddl)
				exec(t, c, st.dml)
			}
			exec(t, c, "CREATE TABLE done (id INT PRIMARY KEY)")
			exec(t, c, "INSERT INTO done VALUES (1)")
			recs := readUntil(t, s, func(rs []schema.Record) bool {
				for _, r := range ownData(rs, db) {
					if r.Table.Table == "done" && r.Op == schema.OpCreate {
						return true
					}
				}
				return false
			})
			creates := map[string][]schema.Record{}
			for _, r := range ownData(recs, db) {
				if r.Op == schema.OpCreate {
					creates[r.Table.Table] = append(creates[r.Table.Table], r)
				}
			}
			next := map[string]int{}
			if n := len(creates["f3"]); n != 4 { // the 3 rows of the SELECT, then one
				t.Errorf("f3: %d rows, want 4", n)
			}
			next["f3"] = 3
			next["f4"] = 3
			for _, st := range steps {
				rs := creates[st.table]
				i := next[st.table]
				next[st.table]++
				if i >= len(rs) {
					t.Errorf("after %q: no row of %s", st.ddl, st.table)
					continue
				}
				if len(rs[i].After) != st.cols {
					t.Errorf("after %q: row of %s has %d columns, want %d", st.ddl, st.table, len(rs[i].After), st.cols)
				}
			}
		})
	}
}
