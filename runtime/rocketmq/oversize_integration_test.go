package rocketmq

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// fiveMiB is a row of id whose doc column holds 5 MiB of text.
func fiveMiB(id schema.TableID, key int64) schema.Record {
	r := bigRec(key, 10, 5<<20, 1)
	r.Table = id
	return r
}

func small(id schema.TableID, key int64) schema.Record {
	r := bigRec(key, 10, 10, 1)
	r.Table = id
	return r
}

func tailAll(t *testing.T, ctx context.Context, cfg Config, topic string) []TailMessage {
	t.Helper()
	var got []TailMessage
	if err := Tail(ctx, cfg, TailOptions{Topics: []string{topic}}, func(m TailMessage) error { got = append(got, m); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}

// A 5 MiB record against the real broker under each OversizePolicy; and
// the broker itself refusing it when MaxMessageBytes is set above its limit.
func TestIntegrationOversize(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t.Run("fail", func(t *testing.T) {
		id := schema.TableID{Database: "db", Table: "big"}
		cfg := itConfig(t, id)
		p, err := NewPublisher(ctx, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		err = p.Publish(ctx, []schema.Record{small(id, 1), fiveMiB(id, 2)}, func(error) { t.Error("refused batch acked") })
		if !errors.Is(err, ErrOversize) || !runtime.IsFatal(err) || !strings.Contains(err.Error(), `db.big key "2"`) {
			t.Fatalf("error %v, want fatal ErrOversize naming db.big key 2", err)
		}
		topic, _ := p.reg.Topic(id)
		if n, err := maxOffsets(ctx, cfg.NameServers, topic); err != nil || n != 0 {
			t.Fatalf("topic holds %d messages (%v), want 0", n, err)
		}
	})

	t.Run("broker-limit", func(t *testing.T) {
		// Past our check, the broker (default maxMessageSize 4 MiB) refuses
		// the message: the default MaxMessageBytes is what keeps it out.
		// The client zlib-compresses a message sent alone from
		// DefaultMaxMessageBytes (compressBodyFrom), so the 5 MiB must be
		// incompressible: random bytes.
		id := schema.TableID{Database: "db", Table: "big"}
		cfg := itConfig(t, id)
		cfg.MaxMessageBytes, cfg.SendRetries = 64<<20, -1
		p, err := NewPublisher(ctx, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		acked := make(chan error, 1)
		r := small(id, 2)
		noise := make([]byte, 5<<20)
		_, _ = rand.Read(noise)
		r.After[2] = noise
		if err := p.Publish(ctx, []schema.Record{r}, func(err error) { acked <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-acked; err == nil {
			t.Fatal("the broker stored a 5 MiB message; the 4 MiB default limit is wrong")
		} else {
			t.Logf("broker refused the 5 MiB message: %v", err)
		}
	})

	t.Run("dlq", func(t *testing.T) {
		id := schema.TableID{Database: "db", Table: "big"}
		cfg := itConfig(t, id)
		cfg.OversizePolicy = OversizeDLQ
		deleteTopicAfter(t, cfg.NameServers, DeadLetterTopic(cfg.Pipeline))
		publishAll(t, ctx, cfg, []schema.Record{small(id, 1), fiveMiB(id, 2), small(id, 3)})
		main := tailAll(t, ctx, cfg, TopicName(cfg.Pipeline, id.Database, id.Table, TopicPerTable))
		var keys []string
		for _, m := range main {
			keys = append(keys, m.Properties["KEYS"])
		}
		if len(main) != 2 || strings.Contains(strings.Join(keys, ","), "2") {
			t.Fatalf("pipeline topic has keys %v, want 1 and 3", keys)
		}
		dl := tailAll(t, ctx, cfg, DeadLetterTopic(cfg.Pipeline))
		if len(dl) != 1 {
			t.Fatalf("dead-letter topic has %d messages, want 1", len(dl))
		}
		var body struct{ Table, Key, Error string }
		if err := json.Unmarshal(dl[0].Value, &body); err != nil {
			t.Fatalf("dead letter body %.200q: %v", dl[0].Value, err)
		}
		if body.Table != "db.big" || body.Key != "2" || !strings.Contains(body.Error, "more than max_message_bytes") ||
			!strings.Contains(dl[0].Properties[DeadLetterErrorProperty], `key "2"`) {
			t.Fatalf("dead letter %+v properties %v", body, dl[0].Properties)
		}
		t.Logf("dead letter of %d bytes for a %d-byte record", len(dl[0].Value), 5<<20)
	})

	t.Run("truncate_columns", func(t *testing.T) {
		id := schema.TableID{Database: "db", Table: "big"}
		cfg := itConfig(t, id)
		cfg.OversizePolicy = OversizeTruncateColumns
		publishAll(t, ctx, cfg, []schema.Record{fiveMiB(id, 2)})
		got := tailAll(t, ctx, cfg, TopicName(cfg.Pipeline, id.Database, id.Table, TopicPerTable))
		if len(got) != 1 || got[0].Properties[DroppedColumnsProperty] != "doc" {
			t.Fatalf("%d messages, properties %v; want one with %s=doc", len(got), got[0].Properties, DroppedColumnsProperty)
		}
		rec, err := cfg.Codec.Decode(got[0].Key, got[0].Value)
		if err != nil {
			t.Fatal(err)
		}
		if rec.After[3] != nil || rec.After[1] != "small" || rec.KeyString() != "2" {
			t.Fatalf("row after %v", rec.After[:2])
		}
	})
}
