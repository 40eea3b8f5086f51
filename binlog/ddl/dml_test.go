package ddl

import (
	"strings"
	"testing"
)

func TestDMLTables(t *testing.T) {
	for _, c := range []struct {
		q      string
		dml    bool
		tables string // "" for none told
	}{
		{"INSERT INTO t VALUES (1)", true, "d.t"},
		{"insert low_priority ignore into `o`.`t` (a) values (1)", true, "o.t"},
		{"REPLACE t SET a=1", true, "d.t"},
		{"UPDATE IGNORE o.t SET a=1", true, "o.t"},
		{"UPDATE t1, t2 SET t1.a=t2.a", true, ""},
		{"UPDATE t1 JOIN t2 ON t1.id=t2.id SET t1.a=1", true, ""},
		{"DELETE QUICK FROM t WHERE a=1", true, "d.t"},
		{"DELETE t1 FROM t1 JOIN t2", true, ""},
		{"DELETE FROM t1 USING t1, t2", true, ""},
		{"LOAD DATA INFILE 'x' REPLACE INTO TABLE o.t", true, "o.t"},
		{"LOAD INDEX INTO CACHE t", false, ""},
		{"/*!40000 INSERT */ INTO t VALUES (1)", true, "d.t"},
		{"SAVEPOINT a", false, ""},
		{"ALTER TABLE t ADD c INT", false, ""},
	} {
		_, tables, dml := DML(c.q, "d")
		var got []string
		for _, id := range tables {
			got = append(got, id.String())
		}
		if dml != c.dml || strings.Join(got, ",") != c.tables {
			t.Errorf("%q: dml %v tables %v, want %v %q", c.q, dml, got, c.dml, c.tables)
		}
	}
}
