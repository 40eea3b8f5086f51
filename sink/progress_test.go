package sink

import (
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
	"github.com/sluicecdc/sluice/sink/mysql"
	"github.com/sluicecdc/sluice/sink/postgres"
)

// Which source tables land on a control table: in the default schema (or
// the one named), under the dialect's case rules.
func TestControlCollision(t *testing.T) {
	for _, c := range []struct {
		dialect  dialect.Dialect
		template string
		id       schema.TableID
		want     string // "" : no collision
	}{
		{postgres.Dialect{}, "${db}", schema.TableID{Database: "public", Table: "sluice_progress"}, "progress table"},
		{postgres.Dialect{}, "${db}", schema.TableID{Database: "shop", Table: "sluice_progress"}, ""},
		{postgres.Dialect{}, "${db}", schema.TableID{Database: "public", Table: "SLUICE_PROGRESS"}, ""}, // quoted: another table
		{postgres.Dialect{}, "${db}", schema.TableID{Database: "public", Table: "sluice_pending"}, "pending table"},
		{postgres.Dialect{}, "${db}", schema.TableID{Database: "app", Table: "positions"}, "control table"},
		{postgres.Dialect{}, "${db}", schema.TableID{Database: "public", Table: "positions"}, ""},
		{mysql.Dialect{}, "${db}", schema.TableID{Database: "Public", Table: "SLUICE_Progress"}, "progress table"},
		{mysql.Dialect{}, "x_${db}", schema.TableID{Database: "public", Table: "sluice_progress"}, ""},
	} {
		s := &Sink{defaultSchema: "public", backend: backend{d: c.dialect, cfg: &Config{ProgressTable: "sluice_progress", PendingTable: "sluice_pending",
			ControlTables: []string{"app.positions"}, SchemaTemplate: c.template, TableTemplate: "${table}"}}}
		err := s.controlCollision(c.id)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%T %s: %v", c.dialect, c.id, err)
		case c.want != "" && (err == nil || !isFatal(err) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.id.String())):
			t.Errorf("%T %s: %v, want a fatal error naming %s and the %s", c.dialect, c.id, err, c.id, c.want)
		}
	}
}
