package sink

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// collated is a text column schema as the binlog source makes it: source
// type, length, character set and collation.
func collated(typ, charset, collation string) *schema.Schema {
	s := withParams(&schema.Schema{Type: schema.String}, schema.ParamSourceType, typ, schema.ParamLength, "10", schema.ParamCharset, charset)
	if collation != "" {
		s.Params[schema.ParamCollation] = collation
	}
	return s
}

// keysOf reads the key column k of table as its bytes, sorted.
func (e *tenv) keysOf(t *testing.T, table string) []string {
	t.Helper()
	q := "SELECT CAST(CONVERT(k USING utf8mb4) AS BINARY) FROM " + e.table(table)
	if e.dialect == DialectPostgres {
		q = "SELECT k FROM " + e.table(table)
	}
	rs, err := e.db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var k []byte
		if err := rs.Scan(&k); err != nil {
			t.Fatal(err)
		}
		out = append(out, string(k))
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// collationOf is the target column's collation ("" on PostgreSQL).
func (e *tenv) collationOf(t *testing.T, table, col string) string {
	t.Helper()
	if e.dialect == DialectPostgres {
		return ""
	}
	var c string
	if err := e.db.QueryRow("SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?", e.schema, table, col).Scan(&c); err != nil {
		t.Fatalf("collation of %s.%s: %v", table, col, err)
	}
	return c
}

// TestKeysKeepTheSourceCollation: a key that differs only by case or
// accent under the source's binary collation ('a', 'A', 'ä' in
// utf8mb4_bin; 'é', 'É' in latin1_bin) stays one row each in every target:
// tables created from records, and columns added by a schema change, get
// the source's character set and collation (a binary one where the target
// lacks it, and for a key whose collation the source did not say); an
// existing key column whose collation would merge them is refused before
// anything is written, naming the table, the column, both collations and
// the fix.
func TestKeysKeepTheSourceCollation(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, func(c *Config) { c.SchemaChanges = SchemaChangesApply })
		val := func(k *schema.Schema) *schema.Schema {
			return structOf(schema.Field{Name: "k", Schema: k}, schema.Field{Name: "v", Schema: schema.Primitive(schema.Int64, true)})
		}
		kb := val(collated("varchar(10)", "utf8mb4", "utf8mb4_bin"))
		kl := val(collated("varchar(10)", "latin1", "latin1_bin"))
		// MariaDB's collation, which MySQL lacks: a binary one there.
		ku := val(collated("varchar(10)", "utf8mb4", "utf8mb4_uca1400_as_cs"))
		// a key of a source that did not say its collation: binary.
		kn := val(collated("varchar(10)", "utf8mb4", ""))
		write(t, s, insertInto("kb", kb, "a", int64(1)), insertInto("kb", kb, "A", int64(2)), insertInto("kb", kb, "ä", int64(3)),
			insertInto("kl", kl, "é", int64(1)), insertInto("kl", kl, "É", int64(2)),
			insertInto("ku", ku, "a", int64(1)), insertInto("ku", ku, "A", int64(2)),
			insertInto("kn", kn, "a", int64(1)), insertInto("kn", kn, "A", int64(2)), insertInto("kn", kn, "a ", int64(3)))
		for table, want := range map[string][]string{"kb": {"A", "a", "ä"}, "kl": {"A", "a"}, "ku": {"A", "a"}, "kn": {"A", "a", "a "}} {
			if table == "kl" {
				want = []string{"É", "é"}
			}
			if got := e.keysOf(t, table); !slices.Equal(got, want) {
				t.Errorf("%s keys %q, want %q", table, got, want)
			}
		}
		if e.dialect == DialectMySQL {
			wantColl := map[string]string{"kb": "utf8mb4_bin", "kl": "latin1_bin", "ku": "utf8mb4_uca1400_as_cs", "kn": "utf8mb4_nopad_bin"}
			if e.flavor == "mysql" {
				wantColl["ku"], wantColl["kn"] = "utf8mb4_0900_bin", "utf8mb4_0900_bin"
			}
			for table, want := range wantColl {
				if got := e.collationOf(t, table, "k"); got != want {
					t.Errorf("%s.k has collation %s, want %s", table, got, want)
				}
			}
		}
		// A column added by a schema change gets its collation; a column
		// that is no key and of unknown collation keeps the default.
		add := func(name string, typ *schema.Schema) schema.ColumnChange {
			return schema.ColumnChange{Kind: schema.AddColumn, Name: name, Column: &schema.ColumnDef{Name: name, Type: typ, SourceType: typ.Param(schema.ParamSourceType)}}
		}
		write(t, s, ddlRec("src", "ALTER TABLE kb ADD …", 100, alter("kb", add("c", withParams(collated("varchar(10)", "latin1", "latin1_bin"), schema.ParamSourceType, "varchar(10)")))))
		if e.dialect == DialectMySQL {
			if got := e.collationOf(t, "kb", "c"); got != "latin1_bin" {
				t.Errorf("kb.c added with collation %s, want latin1_bin", got)
			}
		}
		if e.dialect != DialectMySQL {
			return
		}
		// An existing table whose key column is case-insensitive.
		if _, err := e.db.Exec("CREATE TABLE " + e.table("ci") + " (k VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY, v BIGINT)"); err != nil {
			t.Fatal(err)
		}
		err := s.Write(context.Background(), []schema.Record{insertInto("ci", kb, "a", int64(1)), insertInto("ci", kb, "A", int64(2))})
		if !errors.Is(err, ErrSchema) || !isFatal(err) {
			t.Fatalf("write into a case-insensitive key column: %v, want a fatal ErrSchema", err)
		}
		for _, w := range []string{"ci", "key column k", "utf8mb4_general_ci", "utf8mb4_bin", "MODIFY `k` varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
		if got := e.keysOf(t, "ci"); len(got) != 0 {
			t.Errorf("rows written before the refusal: %q", got)
		}
		// A delete alone is refused too: it would delete 'a' for 'A'.
		del := insertInto("ci", kb, "A", nil)
		del.Op, del.Before, del.After = schema.OpDelete, del.After, nil
		s2 := e.open(t, nil)
		if err := s2.Write(context.Background(), []schema.Record{del}); !errors.Is(err, ErrSchema) {
			t.Fatalf("delete from a case-insensitive key column: %v, want ErrSchema", err)
		}
		// A binary key column takes keys of any collation of the source.
		if _, err := e.db.Exec("CREATE TABLE " + e.table("bin") + " (k VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY, v BIGINT)"); err != nil {
			t.Fatal(err)
		}
		ci := val(collated("varchar(10)", "utf8mb4", "utf8mb4_general_ci"))
		write(t, s2, insertInto("bin", ci, "a", int64(1)), insertInto("bin", kb, "A", int64(2)))
	})
}
