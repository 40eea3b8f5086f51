package binlog

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// renderChanges writes structured changes compactly:
// "KIND db.t[>db.u] {col changes} pk=…".
func renderChanges(cs []schema.TableChange) string {
	var out []string
	for _, c := range cs {
		s := c.Kind + " " + c.Table.String()
		if c.NewTable != (schema.TableID{}) {
			s += ">" + c.NewTable.String()
		}
		if c.OrReplace {
			s += " or-replace"
		}
		for _, cc := range c.Columns {
			s += " [" + cc.Kind + " " + cc.Name
			if cc.NewName != "" {
				s += ">" + cc.NewName
			}
			if d := cc.Column; d != nil && cc.Kind != schema.AlterDefault {
				s += " " + d.SourceType
				if d.Type != nil && !d.Type.Optional {
					s += " not-null"
				}
			}
			if d := cc.Column; d != nil && d.Default != nil {
				if d.Default.Expr {
					s += " default=expr:" + d.Default.Value
				} else {
					s += fmt.Sprintf(" default=%q", d.Default.Value)
				}
			}
			if cc.IfExists {
				s += " if"
			}
			if cc.First {
				s += " first"
			}
			if cc.After != "" {
				s += " after " + cc.After
			}
			s += "]"
		}
		if c.PrimaryKey != nil {
			s += " pk=" + strings.Join(c.PrimaryKey, ",")
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func TestReadDDLStructure(t *testing.T) {
	for _, tc := range []struct{ q, want string }{
		{"ALTER TABLE t RENAME COLUMN a TO b", "ALTER d.t [RENAME a>b]"},
		{"ALTER TABLE t CHANGE COLUMN a b VARCHAR(10) NOT NULL AFTER c", "ALTER d.t [MODIFY a>b varchar(10) not-null after c]"},
		{"ALTER TABLE t CHANGE a a BIGINT", "ALTER d.t [MODIFY a bigint]"},
		{"RENAME TABLE a TO b, c TO o.d", "RENAME d.a>d.b; RENAME d.c>o.d"},
		{"ALTER TABLE t ADD COLUMN c DECIMAL(3,1) DEFAULT 1.5, DROP COLUMN x, MODIFY y INT UNSIGNED NOT NULL FIRST",
			`ALTER d.t [ADD c decimal(3,1) default="1.5"] [DROP x] [MODIFY y int unsigned not-null first]`},
		{"/*!40000 ALTER TABLE t ADD COLUMN x INT */", "ALTER d.t [ADD x int]"},
		{"/*M!100301 ALTER TABLE t ADD COLUMN x INT */", "ALTER d.t [ADD x int]"},
		{"ALTER TABLE t ADD COLUMN IF NOT EXISTS x INT, DROP COLUMN IF EXISTS y", "ALTER d.t [ADD x int if] [DROP y if]"},
		{"ALTER TABLE t ADD (p INT, q TEXT)", "ALTER d.t [ADD p int] [ADD q text]"},
		// FLOAT(M,D) and DOUBLE(M,D) keep M and D (a MySQL target creates them so); FLOAT(p) does not have them.
		{"ALTER TABLE t ADD f FLOAT(7,3), ADD g DOUBLE(12,4) UNSIGNED, ADD h FLOAT(30), ADD r REAL(5,1)",
			"ALTER d.t [ADD f float(7,3)] [ADD g double(12,4) unsigned] [ADD h double] [ADD r double(5,1)]"},
		{"CREATE TABLE o.t (id INT PRIMARY KEY, v VARCHAR(20) NOT NULL DEFAULT 'a''b', n INT DEFAULT -3, f DOUBLE DEFAULT 2.5e0, ts TIMESTAMP(3) NULL DEFAULT CURRENT_TIMESTAMP(3), z INT DEFAULT NULL)",
			`CREATE o.t [ADD id int not-null] [ADD v varchar(20) not-null default="a'b"] [ADD n int default="-3"] [ADD f double default="2.5"] [ADD ts timestamp(3) default=expr:CURRENT_TIMESTAMP(3)] [ADD z int] pk=id`},
		{"CREATE TABLE t (a INT, b INT, PRIMARY KEY (b, a))", "CREATE d.t [ADD a int] [ADD b int] pk=b,a"},
		{"CREATE OR REPLACE TABLE t (a INT)", "CREATE d.t or-replace [ADD a int]"},
		{"ALTER ONLINE TABLE t ADD g INET6, ADD p POINT", "ALTER d.t [ADD g binary(16)] [ADD p geometry]"},
		// MariaDB's SHOW CREATE TABLE
		{"CREATE TABLE `a2` (\n  `id` int(11) NOT NULL,\n  `ts` timestamp(3) NOT NULL DEFAULT current_timestamp(3) ON UPDATE current_timestamp(3),\n" +
			"  `u` uuid DEFAULT uuid(),\n  `x` int(11) INVISIBLE DEFAULT NULL,\n  `c` varchar(10) /*M!100301 COMPRESSED*/ DEFAULT NULL,\n  PRIMARY KEY (`id`)\n" +
			") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci ROW_FORMAT=DYNAMIC COMMENT='t'",
			"CREATE d.a2 [ADD id int not-null] [ADD ts timestamp(3) not-null default=expr:CURRENT_TIMESTAMP(3)] [ADD u binary(16) default=expr:UUID()] [ADD x int] [ADD c varchar(10)] pk=id"},
		// MySQL's spatial syntax, column visibility, functional indexes,
		// CHECK constraints and CREATE TABLE … SELECT as the binlog has it
		{"CREATE TABLE geo (id INT PRIMARY KEY, p POINT SRID 4326 NOT NULL, g GEOMETRY, SPATIAL INDEX(p))",
			"CREATE d.geo [ADD id int not-null] [ADD p geometry not-null] [ADD g geometry] pk=id"},
		{"ALTER TABLE geo ADD SPATIAL INDEX sp (p)", ""},
		{"ALTER TABLE geo ADD COLUMN q GEOMETRY SRID 0, ADD SPATIAL KEY (q)", "ALTER d.geo [ADD q geometry]"},
		{"ALTER TABLE t ALTER COLUMN c SET INVISIBLE", ""},
		{"ALTER TABLE t ALTER `c d` SET VISIBLE, ADD COLUMN z INT", "ALTER d.t [ADD z int]"},
		{"ALTER TABLE t ADD COLUMN v INT INVISIBLE, ADD g POINT SRID 4326", "ALTER d.t [ADD v int] [ADD g geometry]"},
		{"CREATE TABLE f (id INT PRIMARY KEY, a INT, INDEX fi ((a + 1)), CHECK (a > 0), CONSTRAINT cb CHECK (a <> 3) NOT ENFORCED)",
			"CREATE d.f [ADD id int not-null] [ADD a int] pk=id"},
		{"ALTER TABLE f ADD INDEX fj ((lower(b))), ADD CONSTRAINT c2 CHECK (a < 100)", ""},
		{"CREATE TABLE `f3` (\n  `id` int NOT NULL,\n  `b` varchar(10) DEFAULT NULL\n) START TRANSACTION", "CREATE d.f3 [ADD id int not-null] [ADD b varchar(10)]"},
		// MySQL's SHOW CREATE TABLE
		{"CREATE TABLE `geo` (\n  `id` int NOT NULL,\n  `p` point NOT NULL /*!80003 SRID 4326 */,\n  `g` geometry DEFAULT NULL /*!80023 INVISIBLE */,\n" +
			"  `a` int DEFAULT NULL,\n  PRIMARY KEY (`id`),\n  SPATIAL KEY `p` (`p`),\n  KEY `fi` (((`a` + 1))),\n  CONSTRAINT `geo_chk_1` CHECK ((`a` > 0))\n" +
			") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci",
			"CREATE d.geo [ADD id int not-null] [ADD p geometry not-null] [ADD g geometry] [ADD a int] pk=id"},
		{"DROP TABLE IF EXISTS a, o.b", "DROP d.a; DROP o.b"},
		{"ALTER TABLE t ADD x INT, RENAME TO u", "ALTER d.t [ADD x int]; RENAME d.t>d.u"},
		{"ALTER TABLE t ALTER COLUMN c SET DEFAULT 5", `ALTER d.t [DEFAULT c default="5"]`},
		{"ALTER TABLE t ALTER COLUMN c DROP DEFAULT", `ALTER d.t [DEFAULT c]`},
		{"ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (a, b)", "ALTER d.t pk=a,b"},
		{"ALTER TABLE t ADD INDEX ix (a)", ""},
		{"CREATE INDEX ix ON t (a)", ""},
		{"TRUNCATE t", ""},
		{"CREATE DATABASE x", ""},
		{"ALTER TABLE t ADD COLUMN `we``ird` ENUM('a','it''s') CHARACTER SET latin1", "ALTER d.t [ADD we`ird enum('a','it''s')]"},
		{"CREATE TABLE o.cs (k VARCHAR(4) CHARACTER SET cp1251 PRIMARY KEY, b VARCHAR(6) CHARACTER SET big5)", "CREATE o.cs [ADD k varchar(4) not-null] [ADD b varchar(6)] pk=k"},
		{"ALTER TABLE t ADD c TEXT COLLATE utf8mb4_uca1400_ai_ci, ADD u VARCHAR(3) CHARACTER SET utf8mb3 COLLATE utf8mb3_uca1400_as_cs", "ALTER d.t [ADD c text] [ADD u varchar(3)]"},
	} {
		res, err := readDDL(tc.q, "d")
		if err != nil {
			t.Errorf("%s: %v", tc.q, err)
			continue
		}
		if got := renderChanges(res.tableChanges()); got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.q, got, tc.want)
		}
	}
}

// TestReadDDLRefuses: what the parser rejects is an errDDLSyntax, with no
// structure guessed.
func TestReadDDLRefuses(t *testing.T) {
	for _, q := range []string{
		"CREATE TABLE t (a INT) WITH SYSTEM VERSIONING", // it adds row_start and row_end
		"ALTER TABLE t ADD COLUMN w WIBBLE",
		"ALTER TABLE t ADD COLUMN point POINT", // a substituted type name as a column name too
		"CREATE TABLE u SELECT * FROM t",
		"ALTER TABLE `unterminated",
		"ALTER TABLE t EXCHANGE PARTITION p WITH TABLE x",
	} {
		res, err := readDDL(q, "d")
		if !errors.Is(err, errDDLSyntax) || len(res.changes) != 0 {
			t.Errorf("%s: %v %v, want errDDLSyntax and no changes", q, err, renderChanges(res.tableChanges()))
		}
	}
}

// TestShapesFollowHistory: with a history the changes carry the table's
// whole shape after them.
func TestShapesFollowHistory(t *testing.T) {
	h := newSchemaHistory()
	if err := h.apply("CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(5))", "d"); err != nil {
		t.Fatal(err)
	}
	res, err := readDDL("ALTER TABLE t RENAME COLUMN a TO b, ADD c INT NOT NULL DEFAULT 7 FIRST", "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := effect(&res, h.tables); err != nil {
		t.Fatal(err)
	}
	s := res.changes[0].Shape
	var cols []string
	for _, c := range s.Columns {
		cols = append(cols, c.Name+" "+c.SourceType)
	}
	if got := strings.Join(cols, ", ") + " pk=" + strings.Join(s.PrimaryKey, ","); got != "c int, id int, b varchar(5) pk=id" {
		t.Fatalf("shape %s", got)
	}
}

func TestUnparsedMatters(t *testing.T) {
	tracked := func(id schema.TableID) bool { return id.Database == "cap" || id.Database == "we`ird" }
	for _, tc := range []struct {
		q, db string
		want  bool
	}{
		{"ALTER TABLE t WAIT 2 ADD x INT", "cap", true},
		{"ALTER TABLE t WAIT 2 ADD x INT", "other", false},
		{"ALTER TABLE cap.t WAIT 2 ADD x INT", "", true},
		{"ALTER TABLE `we``ird`.t WAIT 2 ADD x INT", "other", true},
		{"ALTER TABLE other.t WAIT 2 ADD x INT DEFAULT 1.5", "", false},
		{"/*!40000 ALTER TABLE t WAIT 2 ADD x INT */", "cap", true},
		{"/* c */ CREATE TABLE t (a INT) WITH SYSTEM VERSIONING", "cap", true},
		{"GRANT SELECT ON cap.* TO u", "cap", false},
		{"CREATE USER x", "cap", false},
	} {
		if got := unparsedMatters(tc.q, tc.db, tracked); got != tc.want {
			t.Errorf("unparsedMatters(%q, %q) = %v, want %v", tc.q, tc.db, got, tc.want)
		}
	}
}

// BenchmarkReadDDL: the cost of reading one typical ALTER into structure.
func BenchmarkReadDDL(b *testing.B) {
	q := "ALTER TABLE t RENAME COLUMN a TO b, ADD COLUMN d DECIMAL(3,1) NOT NULL DEFAULT 1.5 AFTER b, MODIFY c VARCHAR(40) CHARACTER SET latin1"
	for i := 0; i < b.N; i++ {
		if _, err := readDDL(q, "d"); err != nil {
			b.Fatal(err)
		}
	}
}

// The pooled parsers are shared by every source of the process: the
// statements one returns live in its memory until its next Parse, so two
// sources reading DDL and statement DML at once must each finish with
// theirs first (go test -race caught a source reading its ALTER's nodes
// while another source's parse reused the parser).
func TestParsersSharedBySources(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				table := fmt.Sprintf("t%d_%d", g, i)
				res, err := readDDL("ALTER TABLE db."+table+" ADD COLUMN c"+table+" INT NOT NULL DEFAULT 7, DROP COLUMN d", "db")
				if err != nil || res.kind != "ALTER" || len(res.tables) != 1 || res.tables[0].Table != table {
					t.Errorf("readDDL of %s: %+v, %v", table, res, err)
					return
				}
				kind, tables, dml := dmlTables("UPDATE db."+table+" SET v = 1 WHERE id = 2", "db")
				if kind != "UPDATE" || !dml || len(tables) != 1 || tables[0].Table != table {
					t.Errorf("dmlTables of %s: %s %v %v", table, kind, tables, dml)
					return
				}
			}
		}()
	}
	wg.Wait()
}
