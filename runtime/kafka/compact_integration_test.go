package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/schema"
)

// TestIntegrationCompactFormat: in the compact format a record's value is
// its payload alone (what JsonConverter reads with schemas.enable=false),
// its schemas named by the sluice_schema header and stored once, before
// it, in the compacted SchemaTopic, where the ID checks out against the
// schemas; a subscriber of another process finds them there and decodes
// the records as the publisher had them.
func TestIntegrationCompactFormat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := Config{Brokers: brokers(t), Pipeline: "it-compact-" + suffix(), Partitions: 2, Format: FormatCompact}
	table := schema.TableID{Database: "db", Table: "t"}
	recs := []schema.Record{update(table, 1, 2), update(table, 2, 2), update(table, 1, 3)}
	publishAll(ctx, t, cfg, recs)

	topic := TopicName(cfg.Pipeline, table.Database, table.Table)
	var data []TailMessage
	if err := Tail(ctx, cfg, TailOptions{Topics: []string{topic}}, func(m TailMessage) error { data = append(data, m); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(data) != len(recs) {
		t.Fatalf("%d records in %s, want %d", len(data), topic, len(recs))
	}
	ref := data[0].Headers[SchemaHeader]
	for _, m := range data {
		if bytes.Contains(m.Value, []byte(`"schema"`)) || !json.Valid(m.Value) || m.Headers[SchemaHeader] != ref || ref == "" {
			t.Fatalf("record %d of %s: value %s, header %s=%q: want the payload alone, naming schemas %q", m.Offset, topic, m.Value, SchemaHeader, m.Headers[SchemaHeader], ref)
		}
	}
	// sluice tail --key finds a compact record's key through its schemas
	var keyed []int64
	if err := Tail(ctx, cfg, TailOptions{Topics: []string{topic}, Key: "1"}, func(m TailMessage) error { keyed = append(keyed, m.Offset); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keyed) != 2 {
		t.Errorf("tail --key 1 found %d records (offsets %v), want 2", len(keyed), keyed)
	}
	var stored []converter.SchemaEntry
	if err := Tail(ctx, cfg, TailOptions{Topics: []string{SchemaTopic(cfg.Pipeline)}}, func(m TailMessage) error {
		var e converter.SchemaEntry
		if err := json.Unmarshal(m.Value, &e); err != nil {
			t.Errorf("schema record %s: %v", m.Value, err)
		}
		stored = append(stored, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || stored[0].ID != ref || converter.SchemaID(stored[0].KeySchema(), stored[0].Value) != ref {
		t.Fatalf("schema topic holds %+v, want one entry %s whose ID is its schemas'", stored, ref)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rc, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, SchemaTopic(cfg.Pipeline))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := rc.On(SchemaTopic(cfg.Pipeline), nil); err != nil || !hasConfig(c.Configs, "cleanup.policy", "compact") {
		t.Errorf("schema topic configs %+v (%v): want cleanup.policy=compact, so that the broker keeps every schema", c.Configs, err)
	}

	sub, err := NewSubscriber(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(ctx)
	var mu sync.Mutex
	got := map[int64]int64{} // key -> last version
	n := 0
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		_ = sub.Consume(cctx, func(_ context.Context, rs []schema.Record) error {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rs {
				if r.KeySchema == nil || r.ValueSchema == nil || r.Op != schema.OpUpdate {
					t.Errorf("decoded %+v: want an update with its schemas", r)
				}
				got[r.Key[0].(int64)] = r.After[1].(int64)
				n++
			}
			if n >= len(recs) {
				stop()
			}
			return nil
		})
	}()
	<-cctx.Done()
	mu.Lock()
	defer mu.Unlock()
	if ctx.Err() != nil {
		t.Fatalf("consumed %d of %d records before the timeout", n, len(recs))
	}
	if got[1] != 3 || got[2] != 2 {
		t.Errorf("decoded versions %v, want 1:3 2:2", got)
	}
}

func hasConfig(cs []kadm.Config, key, value string) bool {
	for _, c := range cs {
		if c.Key == key && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}
