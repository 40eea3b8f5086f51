package converter_test

import (
	"errors"
	"fmt"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/schema"
)

func Example() {
	tab := &schema.Table{ID: schema.TableID{Database: "shop", Table: "items"}, PrimaryKey: []string{"id"},
		Columns: []schema.Column{
			{Name: "id", Schema: schema.Primitive(schema.Int32, false)},
			{Name: "price", Schema: schema.DecimalSchema(8, 2, true)},
		}}
	rec := schema.Record{
		Op: schema.OpCreate, Table: tab.ID,
		KeySchema: tab.KeySchema("srv.shop.items.Key"), Key: schema.Row{int64(7)},
		ValueSchema: tab.ValueSchema("srv.shop.items.Value"), After: schema.Row{int64(7), schema.MustDec("9.99")},
		Source: schema.Source{Connector: "mariadb", Name: "srv", File: "bin.000001", Pos: 4},
	}
	c := converter.NewJSON(converter.DefaultOptions())
	key, value, err := c.Encode(&rec)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(key))
	back, err := c.Decode(key, value)
	if err != nil {
		panic(err)
	}
	fmt.Println(back.Op, back.Table, back.After[1])

	// Markers have no envelope.
	_, _, err = c.Encode(&schema.Record{Op: schema.OpCommit})
	fmt.Println(errors.Is(err, converter.ErrNotData))

	// Payload-only JSON for plain consumers.
	plain := converter.NewJSON(converter.Options{Schemas: false})
	key, _, _ = plain.Encode(&rec)
	fmt.Println(string(key))
	// Output:
	// {"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false,"name":"srv.shop.items.Key"},"payload":{"id":7}}
	// c shop.items 9.99
	// true
	// {"id":7}
}
