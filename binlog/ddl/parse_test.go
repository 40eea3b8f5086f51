package ddl

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/types"

	"github.com/sluicecdc/sluice/schema"
)

// testType stands in for the source's type builder (package binlog), which
// the tests of the structure as records carry it use: the schema says only
// whether the column is optional, the source type is the parser's name of
// the declared type.
func testType(ct ColumnType) (*schema.Schema, string, error) {
	return &schema.Schema{Type: schema.String, Optional: ct.Nullable}, types.TypeStr(ct.Field), nil
}

// TestReadDDLRefuses: what the parser rejects is an ErrSyntax, with no
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
		res, err := Read(q, "d", testType)
		if !errors.Is(err, ErrSyntax) || len(res.changes) != 0 {
			t.Errorf("%s: %v %+v, want ErrSyntax and no changes", q, err, res.Changes())
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
				res, err := Read("ALTER TABLE db."+table+" ADD COLUMN c"+table+" INT NOT NULL DEFAULT 7, DROP COLUMN d", "db", testType)
				if err != nil || res.Kind != "ALTER" || len(res.Tables) != 1 || res.Tables[0].Table != table {
					t.Errorf("Read of %s: %+v, %v", table, res, err)
					return
				}
				kind, tables, dml := DML("UPDATE db."+table+" SET v = 1 WHERE id = 2", "db")
				if kind != "UPDATE" || !dml || len(tables) != 1 || tables[0].Table != table {
					t.Errorf("DML of %s: %s %v %v", table, kind, tables, dml)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestTypeFunc: the caller's TypeFunc types every declared column; its
// error is what Read returns, and a CONVERT TO CHARACTER SET types again
// the columns whose COLLATE it voids, with the new charset.
func TestTypeFunc(t *testing.T) {
	refused := fmt.Errorf("%w: no INT here", ErrSyntax)
	res, err := Read("CREATE TABLE t (a VARCHAR(3), b INT)", "d", func(ct ColumnType) (*schema.Schema, string, error) {
		if ct.Name == "b" {
			return nil, "", refused
		}
		return testType(ct)
	})
	if err != refused || res.Kind != "CREATE" || len(res.Changes()) != 0 {
		t.Fatalf("Read with a refusing TypeFunc: %+v, %v; want its error and no changes", res, err)
	}
	var seen []ColumnType
	record := func(ct ColumnType) (*schema.Schema, string, error) {
		seen = append(seen, ct)
		return testType(ct)
	}
	tables := map[schema.TableID]*Table{}
	for _, q := range []string{"CREATE TABLE t (a VARCHAR(3) COLLATE latin1_bin, b INT) DEFAULT CHARSET=latin1", "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4"} {
		res, err := Read(q, "d", record)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := res.Apply(tables)
		if err != nil {
			t.Fatal(err)
		}
		for id, tb := range ch.Set {
			tables[id] = tb
		}
	}
	var got []string
	for _, ct := range seen {
		got = append(got, fmt.Sprintf("%s %s %q %q", ct.Name, types.TypeStr(ct.Field), ct.Charset, ct.Collation))
	}
	want := []string{`a varchar "latin1" "latin1_bin"`, `b int "" ""`, `a varchar "utf8mb4" ""`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("TypeFunc saw %q, want %q", got, want)
	}
}
