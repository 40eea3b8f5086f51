package rocketmq_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema"
)

func Example() {
	ctx := context.Background()
	cfg := rocketmq.Config{
		NameServers: []string{"127.0.0.1:19876"},
		Pipeline:    "shop",
		Tables:      []schema.TableID{{Database: "inventory", Table: "orders"}},
	}
	pub, err := rocketmq.NewPublisher(ctx, cfg, slog.Default())
	if err != nil {
		return
	}
	defer pub.Close(ctx)
	_ = pub.Publish(ctx, []schema.Record{ /* from the source */ }, func(err error) {
		// nil: every record is stored on the broker; save the source position.
	})

	sub, err := rocketmq.NewSubscriber(ctx, cfg, slog.Default())
	if err != nil {
		return
	}
	defer sub.Close(ctx)
	_ = sub.Consume(ctx, func(ctx context.Context, recs []schema.Record) error {
		return nil // apply recs; an error redelivers them after a backoff
	})
}

func ExampleTopicName() {
	fmt.Println(rocketmq.TopicName("shop", "inventory", "orders", "table"))
	fmt.Println(rocketmq.TopicName("shop", "inventory", "orders", "database"))
	fmt.Println(rocketmq.TopicName("shop.eu", "my-db", "order items", "table"))
	// Output:
	// shop_inventory_orders
	// shop_inventory
	// shop_eu_my-db_order_items
}
