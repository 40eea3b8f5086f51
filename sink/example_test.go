package sink_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink"
)

// A sink writing into PostgreSQL: tables land in schema "<source db>" under
// their source names, created and evolved as records arrive.
func ExampleNew() {
	ctx := context.Background()
	cfg := sink.DefaultConfig()
	cfg.Dialect = sink.DialectPostgres
	cfg.DSN = os.Getenv("SLUICE_PG_DSN")
	cfg.Pipeline = "orders-to-warehouse"
	s, err := sink.New(ctx, cfg, slog.Default())
	if err != nil {
		slog.Error("sink unavailable", "err", err)
		return
	}
	defer s.Close()

	key := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{{Name: "id", Schema: schema.Primitive(schema.Int64, false)}}}
	value := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "total", Schema: schema.DecimalSchema(10, 2, true)},
	}}
	rec := schema.Record{
		Op:        schema.OpCreate,
		Table:     schema.TableID{Database: "shop", Table: "orders"},
		KeySchema: key, Key: schema.Row{int64(1)},
		ValueSchema: value, After: schema.Row{int64(1), schema.MustDec("9.90")},
		Delivery: &schema.Delivery{Topic: "shop-orders", Queue: 0, Offset: 42}, ID: schema.ID{Epoch: 1, Pos: 42},
	}
	if err := s.Write(ctx, []schema.Record{rec}); err != nil {
		slog.Error("write failed", "err", err) // retry unless schema.ClassOf(err) is schema.ClassFatal
	}
}
