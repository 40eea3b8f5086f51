package app

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
)

var (
	tailKeySchema   = &schema.Schema{Type: schema.Struct, Name: "tail.Key", Fields: []schema.Field{{Name: "id", Schema: schema.Primitive(schema.Int64, false)}}}
	tailValueSchema = &schema.Schema{Type: schema.Struct, Name: "tail.Value", Optional: true, Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "v", Schema: schema.Primitive(schema.String, true)},
	}}
)

func tailRecord(db, table string, id int64, v string) schema.Record {
	return schema.Record{Op: schema.OpUpdate, Table: schema.TableID{Database: db, Table: table}, KeySchema: tailKeySchema, Key: schema.Row{id},
		ValueSchema: tailValueSchema, Before: schema.Row{id, "old"}, After: schema.Row{id, v}, TsMs: 1700000000000,
		Source: schema.Source{Connector: "mariadb", Name: "tailtest", Snapshot: "false", TsMs: 1700000000000},
		ID:     schema.ID{Epoch: 1, Pos: uint64(id)}}
}

// tailRecords are three updates of keys 1 to 3 of shop.orders and of
// shop.items, in turn.
func tailRecords() []schema.Record {
	var recs []schema.Record
	for i := range 3 {
		for id := int64(1); id <= 3; id++ {
			recs = append(recs, tailRecord("shop", "orders", id, fmt.Sprintf("o%d-%d", id, i)), tailRecord("shop", "items", id, fmt.Sprintf("i%d-%d", id, i)))
		}
	}
	return recs
}

// publishTail publishes recs with pub, waits for their ack and closes pub.
func publishTail(ctx context.Context, t *testing.T, pub runtime.Publisher, recs []schema.Record) {
	t.Helper()
	acked := make(chan error, 1)
	if err := pub.Publish(ctx, recs, func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTailCommand publishes records of two tables through the Publisher and
// checks `sluice tail --table --key` prints exactly the matching records as
// schemaless JSON lines, in order, and --schemas and --limit.
func TestTailCommand(t *testing.T) {
	ns := schematest.NeedServers(t, "SLUICE_ROCKETMQ_NAMESRV")[0]
	name := fmt.Sprintf("tail_it_%d", rand.IntN(1e9))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// json: --schemas prints the envelopes that format carries (compact,
	// the default, has its schemas in a topic of their own).
	rc := rocketmq.Config{NameServers: []string{ns}, Pipeline: name, Queues: 2, Format: rocketmq.FormatJSON}
	topics := []string{rocketmq.TopicName(name, "shop", "orders", "table"), rocketmq.TopicName(name, "shop", "items", "table")}
	t.Cleanup(func() {
		adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{ns})))
		if err != nil {
			return
		}
		defer adm.Close()
		for _, tp := range topics {
			_ = adm.DeleteTopic(context.Background(), admin.WithTopicDelete(tp), admin.WithBrokerAddrDelete(os.Getenv("SLUICE_ROCKETMQ_BROKER_ADDR")), admin.WithNameSrvAddr([]string{ns}))
		}
	})
	recs := tailRecords()
	pub, err := rocketmq.NewPublisher(ctx, rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	publishTail(ctx, t, pub, recs)

	cfgPath := filepath.Join(t.TempDir(), "p.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`name: %s
transport:
  type: rocketmq
  name_servers: [%q]
  topics: [%s]
sink:
  type: postgres
  dsn: postgres://unused@127.0.0.1:1/x
`, name, ns, strings.Join(topics, ", ")))
	checkTail(t, cfgPath, topics, len(recs))
}

// checkTail runs `sluice tail` on the config at cfgPath, whose topics
// (orders', items') hold the n records of tailRecords.
func checkTail(t *testing.T, cfgPath string, topics []string, n int) {
	t.Helper()
	tail := func(args ...string) []string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main(append([]string{"tail", "--config", cfgPath}, args...), &out, &errb); code != 0 {
			t.Fatalf("sluice tail %v: exit %d: %s", args, code, errb.String())
		}
		return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	}

	got := tail("--table", "shop.orders", "--key", "2")
	t.Logf("tail output:\n%s", strings.Join(got, "\n"))
	topic := topics[0]
	if len(got) != 3 {
		t.Fatalf("got %d lines, want 3:\n%s", len(got), strings.Join(got, "\n"))
	}
	var queue int
	if _, err := fmt.Sscanf(got[0][strings.Index(got[0], `"queue":`):], `"queue":%d`, &queue); err != nil {
		t.Fatalf("no queue in %s", got[0])
	}
	var offsets [3]int64
	for i := range got {
		if _, err := fmt.Sscanf(got[i][strings.Index(got[i], `"offset":`):], `"offset":%d`, &offsets[i]); err != nil {
			t.Fatalf("no offset in %s", got[i])
		}
		want := fmt.Sprintf(`{"topic":%q,"queue":%d,"offset":%d,"key":{"id":2},"value":{"before":{"id":2,"v":"old"},"after":{"id":2,"v":"o2-%d"},`+
			`"source":{"version":`, topic, queue, offsets[i], i)
		if !strings.HasPrefix(got[i], want) {
			t.Errorf("line %d:\n got %s\nwant %s…", i, got[i], want)
		}
		if !strings.Contains(got[i], `"op":"u","ts_ms":1700000000000`) || strings.Contains(got[i], `"schema"`) {
			t.Errorf("line %d is not the schemaless envelope of an update: %s", i, got[i])
		}
		if i > 0 && offsets[i] <= offsets[i-1] {
			t.Errorf("offsets not increasing: %v", offsets)
		}
	}

	all := tail()
	if len(all) != n {
		t.Fatalf("tail of both topics: %d lines, want %d", len(all), n)
	}
	if got := tail("--table", "shop.items", "--limit", "4"); len(got) != 4 || !strings.Contains(got[0], `"topic":"`+topics[1]+`"`) {
		t.Fatalf("--limit 4 on items: %d lines: %v", len(got), got)
	}
	if got := tail("--table", "shop.items", "--key", "3", "--schemas", "--limit", "1"); len(got) != 1 ||
		!strings.Contains(got[0], `"key":{"schema":{"type":"struct"`) || !strings.Contains(got[0], `"payload":{"id":3}`) {
		t.Fatalf("--schemas: %v", got)
	}
}
