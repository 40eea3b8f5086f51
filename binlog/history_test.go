package binlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/binlog/ddl"
	"github.com/sluicecdc/sluice/schema"
)

// shape renders a history table: "col:type[ u][ cs][ (labels)] ... pk=a,b".
func shape(t *ddl.Table) string {
	if t == nil {
		return "<none>"
	}
	var parts []string
	for _, c := range t.Cols {
		s := c.Name + ":" + c.Type
		if c.Unsigned {
			s += " u"
		}
		if c.Charset != "" {
			s += " " + c.Charset
		}
		if c.Labels != nil {
			s += fmt.Sprintf(" %q", c.Labels)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ") + " pk=" + strings.Join(t.PK, ",")
}

func TestHistoryReplay(t *testing.T) {
	id := func(tb string) schema.TableID { return schema.TableID{Database: "d", Table: tb} }
	steps := []struct {
		ddl   string
		table string
		want  string
	}{
		{"CREATE TABLE t (id INT UNSIGNED NOT NULL AUTO_INCREMENT, name VARCHAR(20) DEFAULT 'x,y' COMMENT 'n', PRIMARY KEY (id)) ENGINE=InnoDB DEFAULT CHARSET=latin1",
			"t", "id:int u, name:varchar latin1 pk=id"},
		{"ALTER TABLE t ADD COLUMN kind ENUM('a','it''s') NOT NULL DEFAULT 'a' AFTER id, ADD INDEX ix (name)",
			"t", `id:int u, kind:enum latin1 ["a" "it's"], name:varchar latin1 pk=id`},
		{"ALTER TABLE `d`.`t` ADD b VARBINARY(8) FIRST", "t", `b:varbinary binary, id:int u, kind:enum latin1 ["a" "it's"], name:varchar latin1 pk=id`},
		{"ALTER TABLE t DROP COLUMN b", "t", `id:int u, kind:enum latin1 ["a" "it's"], name:varchar latin1 pk=id`},
		{"ALTER TABLE t MODIFY name TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "t", `id:int u, kind:enum latin1 ["a" "it's"], name:text utf8mb4 pk=id`},
		{"ALTER TABLE t CHANGE COLUMN name full_name VARCHAR(40) AFTER id", "t", `id:int u, full_name:varchar latin1, kind:enum latin1 ["a" "it's"] pk=id`},
		{"ALTER TABLE t RENAME COLUMN full_name TO label", "t", `id:int u, label:varchar latin1, kind:enum latin1 ["a" "it's"] pk=id`},
		{"ALTER TABLE t CHANGE id ident BIGINT", "t", `ident:bigint, label:varchar latin1, kind:enum latin1 ["a" "it's"] pk=ident`},
		{"RENAME TABLE t TO t2", "t", "<none>"},
		{"/* c */ TRUNCATE TABLE t2", "t2", `ident:bigint, label:varchar latin1, kind:enum latin1 ["a" "it's"] pk=ident`},
		{"CREATE TABLE t3 LIKE t2", "t3", `ident:bigint, label:varchar latin1, kind:enum latin1 ["a" "it's"] pk=ident`},
		{"DROP TABLE IF EXISTS t2", "t2", "<none>"},
		{"ALTER TABLE t3 DROP PRIMARY KEY, ADD PRIMARY KEY (label(10), ident), RENAME TO t4", "t4", `ident:bigint, label:varchar latin1, kind:enum latin1 ["a" "it's"] pk=label,ident`},
		{"CREATE TABLE `we``ird` (`a b` int(11) NOT NULL, c char(2) CHARACTER SET ascii, s SET('x','y'), j longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`j`)), ts timestamp NOT NULL DEFAULT current_timestamp() ON UPDATE current_timestamp(), PRIMARY KEY (`a b`) USING BTREE, KEY `k` (c), CONSTRAINT `fk` FOREIGN KEY (c) REFERENCES o (x) ON DELETE CASCADE) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
			"we`ird", `a b:int, c:char ascii, s:set utf8mb4 ["x" "y"], j:longtext utf8mb4, ts:timestamp pk=a b`},
		{"ALTER TABLE `we``ird` CONVERT TO CHARACTER SET latin1, ALGORITHM=INPLACE", "we`ird", `a b:int, c:char latin1, s:set latin1 ["x" "y"], j:longtext latin1, ts:timestamp pk=a b`},
		{"CREATE INDEX ix2 ON t4 (label)", "t4", `ident:bigint, label:varchar latin1, kind:enum latin1 ["a" "it's"] pk=label,ident`},
		{"DROP DATABASE d", "t4", "<none>"},
	}
	h := newSchemaHistory()
	for _, st := range steps {
		if err := h.apply(st.ddl, "d"); err != nil {
			t.Fatalf("%s: %v", st.ddl, err)
		}
		if g := shape(h.tables[id(st.table)]); g != st.want {
			t.Fatalf("after %s\n%s is  %s\nwant       %s", st.ddl, st.table, g, st.want)
		}
	}
}

func TestHistoryRefusesWhatItCannotParse(t *testing.T) {
	h := newSchemaHistory()
	if err := h.apply("CREATE TABLE t (id INT PRIMARY KEY, v INT)", "d"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"ALTER TABLE t ADD COLUMN w WIBBLE",
		"ALTER TABLE t EXCHANGE PARTITION p WITH TABLE x",
		"ALTER TABLE t DROP COLUMN nope",
		"ALTER TABLE nosuch ADD c INT",
		"CREATE TABLE u SELECT * FROM t",
		"CREATE TABLE u (a INT) SELECT 1 AS a",
	} {
		if err := h.apply(q, "d"); !errors.Is(err, ddl.ErrSyntax) {
			t.Errorf("%s: %v, want ddl.ErrSyntax", q, err)
		}
	}
}

// TestHistoryFileReplayUpToPosition: entries after the start position are
// not replayed at load, and come from the file (not parsed again) when the
// stream reaches them.
func TestHistoryFileReplayUpToPosition(t *testing.T) {
	file := filepath.Join(t.TempDir(), "history.jsonl")
	at := func(pos uint32) Position { return Position{Flavor: FlavorMariaDB, File: "bin.000002", Pos: pos} }
	if err := appendHistory(file, []HistoryEntry{
		{Position: at(100), DB: "d", DDL: "CREATE TABLE t (id INT PRIMARY KEY, a INT)"},
		{Position: at(200), DB: "d", DDL: "ALTER TABLE t ADD b INT"},
		{Position: at(300), DB: "d", DDL: "ALTER TABLE t DROP a"},
	}); err != nil {
		t.Fatal(err)
	}
	tid := schema.TableID{Database: "d", Table: "t"}
	h, err := loadHistory(file, at(250))
	if err != nil {
		t.Fatal(err)
	}
	if g := shape(h.tables[tid]); g != "id:int, a:int, b:int pk=id" {
		t.Fatalf("at 250: %s", g)
	}
	all := func(schema.TableID) bool { return true }
	// the stream reaches the DROP at 300; the text it carries is ignored in
	// favour of the file's entry
	changed, err := h.ddl("ALTER TABLE t SOMETHING ODD", "d", at(300), "", nil, all, file)
	if err != nil || !changed {
		t.Fatalf("replayed entry: changed %v err %v", changed, err)
	}
	if g := shape(h.tables[tid]); g != "id:int, b:int pk=id" || len(h.pending) != 0 {
		t.Fatalf("at 300: %s, pending %v", g, h.pending)
	}
	// new DDL is parsed and queued for the file
	if _, err := h.ddl("ALTER TABLE t ADD c VARCHAR(3)", "d", Position{Flavor: FlavorMariaDB, File: "bin.000010", Pos: 4}, "", nil, all, file); err != nil {
		t.Fatal(err)
	}
	if len(h.pending) != 1 || !strings.Contains(shape(h.tables[tid]), "c:varchar utf8mb4") {
		t.Fatalf("pending %v, shape %s", h.pending, shape(h.tables[tid]))
	}
	// an unparseable statement on a captured table is fatal and says how to go on
	_, err = h.ddl("ALTER TABLE t ADD w WIBBLE", "d", Position{Flavor: FlavorMariaDB, File: "bin.000010", Pos: 90}, "0-1-9", nil, all, file)
	if !errors.Is(err, ErrUnparsedDDL) || !strings.Contains(err.Error(), "ALTER TABLE t ADD w WIBBLE") || !strings.Contains(err.Error(), "skip_ddl") || !strings.Contains(err.Error(), "0-1-9") {
		t.Fatalf("unparseable DDL: %v", err)
	}
	// ... unless listed in skip_ddl
	if _, err := h.ddl("ALTER TABLE t ADD w WIBBLE", "d", Position{Flavor: FlavorMariaDB, File: "bin.000010", Pos: 90}, "0-1-9", map[string]bool{"0-1-9": true}, all, file); err != nil {
		t.Fatalf("skipped DDL: %v", err)
	}
	// an entry out of order in the file is refused
	if err := appendHistory(file, []HistoryEntry{{Position: at(150), DB: "d", DDL: "DROP TABLE t"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := loadHistory(file, at(400)); !errors.Is(err, ErrConfig) {
		t.Fatalf("out-of-order history: %v", err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
}

func TestComparePositions(t *testing.T) {
	p := func(f string, n uint32) Position { return Position{File: f, Pos: n} }
	for _, tc := range []struct {
		a, b Position
		want int
	}{
		{p("b.000009", 5), p("b.000010", 4), -1},
		{p("b.999999", 5), p("b.1000000", 4), -1},
		{p("b.000010", 5), p("b.000010", 4), 1},
		{p("b.000010", 4), p("b.000010", 4), 0},
	} {
		if g := comparePositions(tc.a, tc.b); g != tc.want {
			t.Errorf("compare %v %v = %d", tc.a, tc.b, g)
		}
	}
}
