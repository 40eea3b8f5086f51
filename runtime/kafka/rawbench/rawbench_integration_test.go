package rawbench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// The raw round trip on the real broker sends each record once, as
// sluice's publisher encodes it (the JSON converter's key and value, the
// record's identity header), to its table's topic and the partition
// runtime.QueueFor picks, and reads every one of them back, byte for byte.
func TestIntegrationRawRoundTripSendsThePublishersBytes(t *testing.T) {
	brokers := schematest.NeedServers(t, "SLUICE_KAFKA_BROKERS")[0]
	var b [4]byte
	_, _ = rand.Read(b[:])
	prefix := "rawbench-" + hex.EncodeToString(b[:])
	cfg := kafka.Config{Brokers: strings.Split(brokers, ","), Pipeline: prefix, Partitions: 3}

	keySchema := &schema.Schema{Type: schema.Struct, Name: "rb.Key", Fields: []schema.Field{{Name: "id", Schema: schema.Primitive(schema.Int64, false)}}}
	valueSchema := &schema.Schema{Type: schema.Struct, Name: "rb.Value", Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "note", Schema: schema.Primitive(schema.String, true)},
	}}
	table := schema.TableID{Database: "db", Table: "a"} // one: a topic is seconds of metadata waits
	var recs []schema.Record
	for i := range 300 {
		recs = append(recs, schema.Record{Op: schema.OpCreate, Table: table, KeySchema: keySchema, Key: schema.Row{int64(i)},
			ValueSchema: valueSchema, After: schema.Row{int64(i), strings.Repeat("x", i%17)},
			Source: schema.Source{Connector: "mariadb", Name: "rb", Snapshot: "false"}, ID: schema.ID{Epoch: 1, Pos: uint64(i + 1)}})
	}

	var mu sync.Mutex
	var read []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clocked := false
	res, err := roundTrip(ctx, cfg, recs, func() { clocked = true }, func(r *kgo.Record) {
		mu.Lock()
		read = append(read, r)
		mu.Unlock()
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if !clocked || res.Elapsed <= 0 {
		t.Fatalf("atClock called: %v, elapsed %s", clocked, res.Elapsed)
	}
	if res.Messages != len(recs) || len(read) != len(recs) {
		t.Fatalf("%d records sent and %d read back, want %d", res.Messages, len(read), len(recs))
	}

	codec := converter.NewJSON(converter.DefaultOptions())
	seen := map[string]bool{}
	var readBytes int64
	for _, r := range read {
		var id string
		for _, h := range r.Headers {
			readBytes += int64(len(h.Key) + len(h.Value))
			if h.Key == kafka.IDHeader {
				id = string(h.Value)
			}
		}
		readBytes += int64(len(r.Key) + len(r.Value))
		if seen[id] {
			t.Fatalf("record %s read twice", id)
		}
		seen[id] = true
		var rec *schema.Record
		for i := range recs {
			if recs[i].ID.String() == id {
				rec = &recs[i]
			}
		}
		if rec == nil {
			t.Fatalf("a record read back has identity %q, none sent", id)
		}
		key, val, err := codec.Encode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Key, key) || !bytes.Equal(r.Value, val) {
			t.Fatalf("record %s: key %q value %q read back, the publisher encodes key %q value %q", id, r.Key, r.Value, key, val)
		}
		if want := kafka.TopicName(prefix, rec.Table.Database, rec.Table.Table); r.Topic != want {
			t.Fatalf("record %s on topic %q, want %q", id, r.Topic, want)
		}
		if want := int32(runtime.QueueFor(rec, cfg.Partitions)); r.Partition != want {
			t.Fatalf("record %s on partition %d, want %d (runtime.QueueFor)", id, r.Partition, want)
		}
	}
	if readBytes != res.Bytes {
		t.Fatalf("%d bytes read back, the round trip counted %d sent", readBytes, res.Bytes)
	}
}
