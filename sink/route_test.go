package sink

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

func routed(routes []Route, cols []ColumnRule) Config {
	return Config{Dialect: "postgres", DSN: "host=127.0.0.1", Pipeline: "p", Routes: routes, Columns: cols}
}

// TestRoutingConfigErrors: what the config alone shows wrong is refused by
// Validate, with the rule's place and the reason.
func TestRoutingConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"bad regex", routed([]Route{{Match: `shop\.(orders`, Table: "x"}}, nil), "Routes[0].Match \""},
		{"empty match", routed([]Route{{Table: "x"}}, nil), "Routes[0].Match is empty"},
		{"no target", routed([]Route{{Match: `a\.b`}}, nil), "Routes[0] names neither Schema nor Table"},
		{"capture beyond groups", routed([]Route{{Match: `shop\.(\w+)`, Table: "$1_$2"}}, nil), "Routes[0].Table \"$1_$2\" refers to $2, but the pattern"},
		{"unknown placeholder", routed([]Route{{Match: `a\.b`, Table: "${schema}"}}, nil), "Routes[0].Table: "},
		{"columns bad regex", routed(nil, []ColumnRule{{Match: `[`, Drop: []string{"x"}}}), "Columns[0].Match \""},
		{"columns empty", routed(nil, []ColumnRule{{Match: `a\.b`}}), "Columns[0] has neither Rename nor Drop"},
		{"renamed and dropped", routed(nil, []ColumnRule{{Match: `a\.b`, Rename: map[string]string{"x": "y"}, Drop: []string{"x"}}}), `Columns[0].Drop: column "x" is both renamed and dropped`},
		{"two to one", routed(nil, []ColumnRule{{Match: `a\.b`, Rename: map[string]string{"x": "z", "y": "z"}}}), `Columns[0].Rename: columns `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.cfg)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want ErrConfig with %q", err, tc.want)
			}
		})
	}
	if err := Validate(routed([]Route{{Match: `shop\.(\w+)`, Schema: "s_$1", Table: "${db}_$0"}}, []ColumnRule{{Match: `.*`, Drop: []string{"x"}}})); err != nil {
		t.Fatalf("a good routing config: %v", err)
	}
}

// TestRouteTarget: the first matching route names the target, with its
// captures and the placeholders expanded once; others keep the templates,
// and a config without routes has no routing at all.
func TestRouteTarget(t *testing.T) {
	c := routed([]Route{
		{Match: `shop\.shard_(\d+)_(\w+)`, Schema: "arch", Table: "$2_s$1"},
		{Match: `shop\.shard_.*`, Table: "never"},
		{Match: `(\w+)\.legacy_(.+)`, Schema: "old_$1", Table: "${table}$$"},
		{Match: `crm\..*`, Schema: "c"},
		{Match: `(o)(p)(q)(r)(s)(t)(u)(v)(w)(x)(y)\.z`, Table: "$12$0"},
	}, nil)
	c.TableTemplate = "t_${table}"
	if err := c.normalize(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   schema.TableID
		want target
	}{
		{schema.TableID{Database: "shop", Table: "shard_7_orders"}, target{Schema: "arch", Table: "orders_s7"}},
		{schema.TableID{Database: "hr", Table: "legacy_$1"}, target{Schema: "old_hr", Table: "legacy_$1$$"}},
		{schema.TableID{Database: "crm", Table: "users"}, target{Schema: "c", Table: "t_users"}},
		{schema.TableID{Database: "shop", Table: "items"}, target{Schema: "shop", Table: "t_items"}},
		{schema.TableID{Database: "opqrstuvwxy", Table: "z"}, target{Schema: "opqrstuvwxy", Table: "o2opqrstuvwxy.z"}},
		{schema.TableID{Database: "xshop", Table: "shard_1_a"}, target{Schema: "xshop", Table: "t_shard_1_a"}},
	} {
		if got := c.target(tc.id); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.id, got, tc.want)
		}
	}
	d := Config{Dialect: "postgres", DSN: "x", Pipeline: "p"}
	if err := d.normalize(); err != nil || d.routing != nil {
		t.Fatalf("no routes or columns: routing %v, %v", d.routing, err)
	}
}

// TestRouteColumnsLeavesInputs: column rules map a copy; the caller's
// records, rows and schemas are unchanged, and unmatched tables' records
// are passed through as they are.
func TestRouteColumnsLeavesInputs(t *testing.T) {
	c := routed(nil, []ColumnRule{{Match: `db\.t`, Rename: map[string]string{"v": "val"}, Drop: []string{"w"}}})
	if err := c.normalize(); err != nil {
		t.Fatal(err)
	}
	s := &Sink{backend: backend{cfg: &c}}
	val := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{{Name: "id"}, {Name: "v"}, {Name: "w"}}}
	in := []schema.Record{
		{Op: schema.OpUpdate, Table: tID, KeySchema: tKey, Key: schema.Row{int64(1)}, ValueSchema: val,
			Before: schema.Row{int64(1), "a", "x"}, After: schema.Row{int64(1), "b", "y"}},
		{Op: schema.OpCreate, Table: schema.TableID{Database: "db", Table: "u"}, ValueSchema: val, After: schema.Row{int64(2), "c", "z"}},
	}
	out, err := s.routeColumns(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].ValueSchema.Fields; len(got) != 2 || got[0].Name != "id" || got[1].Name != "val" {
		t.Fatalf("mapped fields %+v", got)
	}
	if a, b := out[0].After, out[0].Before; len(a) != 2 || a[1] != "b" || len(b) != 2 || b[1] != "a" {
		t.Fatalf("mapped rows %v %v", b, a)
	}
	if len(val.Fields) != 3 || val.Fields[1].Name != "v" || len(in[0].After) != 3 || out[1].ValueSchema != val || len(out[1].After) != 3 {
		t.Fatalf("inputs changed or an unmatched table mapped: %+v %v %+v", val.Fields, in[0].After, out[1])
	}
	c1 := routed(nil, []ColumnRule{{Match: `db\.t`, Rename: map[string]string{"v": "val"}}, {Match: `db\.u`, Rename: map[string]string{"v": "vu"}}})
	if err := c1.normalize(); err != nil {
		t.Fatal(err)
	}
	s.cfg = &c1
	if out, err := s.routeColumns(in); err != nil || out[0].ValueSchema.Fields[1].Name != "val" || out[1].ValueSchema.Fields[1].Name != "vu" {
		t.Fatalf("one schema, two tables of two rules: %v %+v", err, out)
	}
	c2 := routed(nil, []ColumnRule{{Match: `db\.t`, Drop: []string{"id"}}})
	if err := c2.normalize(); err != nil {
		t.Fatal(err)
	}
	s.cfg = &c2
	if _, err := s.routeColumns(in); !errors.Is(err, ErrConfig) || !isFatal(err) || !strings.Contains(err.Error(), "primary key") {
		t.Fatalf("dropped key column: %v", err)
	}
}

// TestRouteSchemaChange: an applied schema change follows the column rule:
// added and renamed columns take their target names, the changes of a
// dropped column are left out (a placement after it goes to the end), the
// shape loses it; a rename between a kept and a dropped column is refused.
func TestRouteSchemaChange(t *testing.T) {
	c := routed(nil, []ColumnRule{{Match: `db\.t`, Rename: map[string]string{"a": "a2", "b": "b2"}, Drop: []string{"x", "y"}}})
	if err := c.normalize(); err != nil {
		t.Fatal(err)
	}
	s := &Sink{backend: backend{cfg: &c}}
	def := func(n string) *schema.ColumnDef { return &schema.ColumnDef{Name: n} }
	ch := &schema.SchemaChange{Tables: []schema.TableChange{{Kind: schema.AlterTable, Table: tID, Columns: []schema.ColumnChange{
		{Kind: schema.AddColumn, Name: "a", Column: def("a"), After: "x"},
		{Kind: schema.AddColumn, Name: "x", Column: def("x")},
		{Kind: schema.ModifyColumn, Name: "y", Column: def("y")},
		{Kind: schema.RenameColumn, Name: "a", NewName: "b"},
		{Kind: schema.DropColumn, Name: "x"},
	}, Shape: &schema.TableShape{Columns: []schema.ColumnDef{*def("id"), *def("b"), *def("x")}, PrimaryKey: []string{"id"}}}}}
	out, err := s.routeColumns([]schema.Record{{Op: schema.OpSchemaChange, Table: schema.TableID{Database: "db"}, Change: ch}})
	if err != nil {
		t.Fatal(err)
	}
	tc := out[0].Change.Tables[0]
	if len(tc.Columns) != 2 || tc.Columns[0].Name != "a2" || tc.Columns[0].Column.Name != "a2" || tc.Columns[0].After != "" ||
		tc.Columns[1].Name != "a2" || tc.Columns[1].NewName != "b2" {
		t.Fatalf("mapped columns %+v", tc.Columns)
	}
	if sh := tc.Shape; len(sh.Columns) != 2 || sh.Columns[1].Name != "b2" || sh.PrimaryKey[0] != "id" {
		t.Fatalf("mapped shape %+v", sh)
	}
	if ch.Tables[0].Columns[0].Name != "a" || len(ch.Tables[0].Columns) != 5 || len(ch.Tables[0].Shape.Columns) != 3 {
		t.Fatalf("the input change was modified: %+v", ch.Tables[0])
	}
	bad := &schema.SchemaChange{Tables: []schema.TableChange{{Kind: schema.AlterTable, Table: tID, Columns: []schema.ColumnChange{
		{Kind: schema.RenameColumn, Name: "a", NewName: "x"}}}}}
	if _, err := s.routeColumns([]schema.Record{{Op: schema.OpSchemaChange, Change: bad}}); !errors.Is(err, ErrSchemaChange) || !isFatal(err) {
		t.Fatalf("rename onto a dropped column: %v", err)
	}
}
