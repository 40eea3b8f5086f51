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
			var got []schema.Record
			readUntil(t, s, func(rs []schema.Record) bool {
				got = got[:0]
				for _, r := range rs {
					if r.Op == schema.OpSchemaChange && r.Table.Database == db {
						got = append(got, r)
					}
				}
				return len(got) >= 4
			})
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
			if !history {
				if shape != nil {
					t.Errorf("without a history the ALTER carries a shape %+v", shape)
				}
				return
			}
			var cols []string
			for _, c := range shape.Columns {
				cols = append(cols, c.Name+" "+c.SourceType)
			}
			if g := strings.Join(cols, ", ") + " pk=" + strings.Join(shape.PrimaryKey, ","); g != "id int, b varchar(10), d decimal(3,1) pk=id" {
				t.Errorf("shape after the ALTER: %s", g)
			}
			if s := got[3].Change.Tables[0].Shape; s == nil || len(s.Columns) != 4 {
				t.Errorf("the DROP does not carry the table's last shape: %+v", s)
			}
		})
	}
}
