package binlog

import (
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// TestColumnRulesStreamAndSnapshot: excluded columns are absent and masked
// columns masked, with the same schema and values, in snapshot records and
// in streamed ones.
func TestColumnRulesStreamAndSnapshot(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE users (id INT PRIMARY KEY, email VARCHAR(20), name VARCHAR(50), ssn CHAR(11), secret VARBINARY(16), age INT)")
	exec(t, c, "INSERT INTO users VALUES (1, 'a@x.example', 'Zoë Smith', '123-45-6789', 0x0102, 30)")
	cfg := testConfig(env, db)
	cfg.Snapshot = SnapshotInitial
	cfg.ExcludeColumns = []string{db + ".users.age", "*.*.secret"}
	cfg.Mask = []MaskRule{
		{Columns: db + ".users.email", Kind: MaskHash, Salt: "s1"},
		{Columns: db + ".*.ssn", Kind: MaskFixed, Value: "XXX"},
		{Columns: db + ".users.name", Kind: MaskTruncate, Length: 3},
	}
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO users VALUES (2, 'b@x.example', 'Émile Zola', '987-65-4321', 0x03, 40)")
	exec(t, c, "UPDATE users SET email = NULL WHERE id = 1")
	own := func(rs []schema.Record) []schema.Record {
		var out []schema.Record
		for _, r := range rs {
			if r.Op.IsData() && r.Table.Database == db {
				out = append(out, r)
			}
		}
		return out
	}
	recs := readUntil(t, s, func(rs []schema.Record) bool { return countOps(own(rs), schema.OpUpdate) == 1 })
	var got []string
	var schemas []*schema.Schema
	for _, r := range own(recs) {
		schemas = append(schemas, r.ValueSchema)
		line := r.Op.String()
		for _, img := range []schema.Row{r.Before, r.After} {
			if img == nil {
				continue
			}
			var vals []string
			for _, v := range img {
				vals = append(vals, renderValue(v))
			}
			line += " [" + strings.Join(vals, " ") + "]"
		}
		got = append(got, line)
	}
	h1, h2 := hexHash("s1", "a@x.example"), hexHash("s1", "b@x.example")
	want := []string{
		`r [int64(1) "` + h1 + `" "Zoë" "XXX"]`,
		`c [int64(2) "` + h2 + `" "Émi" "XXX"]`,
		`u [int64(1) "` + h1 + `" "Zoë" "XXX"] [int64(1) nil "Zoë" "XXX"]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, sc := range schemas {
		if !sc.Equal(schemas[0]) {
			t.Fatalf("schema of record %d differs from the snapshot's:\n%+v\n%+v", i, sc, schemas[0])
		}
	}
	var fields []string
	for _, f := range schemas[0].Fields {
		fields = append(fields, f.Name+":"+f.Schema.Param(schema.ParamSourceType))
	}
	if g, w := strings.Join(fields, " "), "id:int email:varchar(64) name:varchar(3) ssn:varchar(11)"; g != w {
		t.Fatalf("value schema %s, want %s", g, w)
	}
}
