package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/schema"
)

// TestIntegrationDeadLetter stores two rejected records on the real
// broker: one as the codec encodes it, with its cause and origin in the
// headers, and one too large for the broker (2 MiB; Kafka takes 1 MiB by
// default) as the JSON summary that finds the row again.
func TestIntegrationDeadLetter(t *testing.T) {
	prefix := "it_dlq_" + suffix()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{Brokers: brokers(t), Pipeline: prefix, Partitions: 2}
	d, err := NewDeadLetter(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Topic() != prefix+"_dlq" {
		t.Fatalf("topic %q, want %q", d.Topic(), prefix+"_dlq")
	}
	id := schema.TableID{Database: "shop", Table: "orders"}
	small := update(id, 1, 2)
	small.Delivery = &schema.Delivery{Topic: TopicName(prefix, "shop", "orders"), Queue: 1, Offset: 42}
	if err := d.Send(ctx, small, errors.New("refused: small")); err != nil {
		t.Fatal(err)
	}
	strSchema := &schema.Schema{Type: schema.Struct, Name: "it.Big", Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "v", Schema: schema.Primitive(schema.String, false)},
	}}
	big := update(id, 2, 2)
	big.ValueSchema, big.Before, big.After = strSchema, nil, schema.Row{int64(2), strings.Repeat("x", 2<<20)}
	if err := d.Send(ctx, big, errors.New("refused: big")); err != nil {
		t.Fatalf("too large a dead letter must be stored as its summary: %v", err)
	}

	var got []TailMessage
	if err := Tail(ctx, cfg, TailOptions{Topics: []string{d.Topic()}}, func(m TailMessage) error { got = append(got, m); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d dead letters, want 2", len(got))
	}
	byErr := map[string]TailMessage{}
	for _, m := range got {
		byErr[m.Headers[DeadLetterErrorHeader]] = m
	}
	m, ok := byErr["refused: small"]
	if !ok || m.Headers[DeadLetterTableHeader] != "shop.orders" || m.Headers[DeadLetterTopicHeader] != small.Delivery.Topic ||
		m.Headers[DeadLetterPartitionHeader] != "1" || m.Headers[DeadLetterOffsetHeader] != "42" || m.Headers[IDHeader] != small.ID.String() {
		t.Fatalf("small dead letter's headers: %v", m.Headers)
	}
	rec, err := converter.NewJSON(converter.DefaultOptions()).Decode(m.Key, m.Value)
	if err != nil || rec.KeyString() != "1" {
		t.Fatalf("small dead letter decodes to key %q, %v", rec.KeyString(), err)
	}
	m, ok = byErr["refused: big"]
	var sum struct{ Table, Key, Error string }
	if !ok || json.Unmarshal(m.Value, &sum) != nil || sum.Table != "shop.orders" || sum.Key != "2" || sum.Error != "refused: big" {
		t.Fatalf("big dead letter is %.200q, want its JSON summary", m.Value)
	}
}
