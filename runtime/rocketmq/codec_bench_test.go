package rocketmq

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/schema"
)

// benchRecords are updates of the table `sluice bench` writes (id BIGINT
// PRIMARY KEY, account INT, amount DECIMAL(12,2), note VARCHAR(64),
// created DATETIME(6)) with the schemas the binlog source gives it.
func benchRecords(n int) []schema.Record {
	src := func(t schema.Type, l schema.Logical, optional bool, typ string) *schema.Schema {
		return &schema.Schema{Type: t, Logical: l, Optional: optional, Params: map[string]string{schema.ParamSourceType: typ}}
	}
	amount := schema.DecimalSchema(12, 2, false)
	amount.Params[schema.ParamSourceType] = "decimal(12,2)"
	note := src(schema.String, schema.None, true, "varchar(64)")
	note.Params[schema.ParamLength], note.Params[schema.ParamCharset] = "64", "utf8mb4"
	tab := &schema.Table{ID: schema.TableID{Database: "sluice_bench", Table: "events"}, PrimaryKey: []string{"id"}, Columns: []schema.Column{
		{Name: "id", Schema: src(schema.Int64, schema.None, false, "bigint")},
		{Name: "account", Schema: src(schema.Int32, schema.None, false, "int")},
		{Name: "amount", Schema: amount},
		{Name: "note", Schema: note},
		{Name: "created", Schema: src(schema.Int64, schema.Timestamp, false, "datetime(6)")},
	}}
	ks, vs := tab.KeySchema("bench.sluice_bench.events.Key"), tab.ValueSchema("bench.sluice_bench.events.Value")
	recs := make([]schema.Record, n)
	for i := range recs {
		id := int64(i)
		row := func(amt string) schema.Row {
			return schema.Row{id, int64(i % 1000), schema.MustDec(amt), "note of the row", int64(1700000000000000 + i)}
		}
		recs[i] = schema.Record{Op: schema.OpUpdate, Table: tab.ID, KeySchema: ks, Key: schema.Row{id}, ValueSchema: vs,
			Before: row("100.25"), After: row("101.50"), TsMs: 1700000000123, ID: nextTestID(),
			Source: schema.Source{Version: "sluice", Connector: "mariadb", Name: "bench", TsMs: 1700000000000, ServerID: 1,
				GTID: "0-1-42", File: "mysql-bin.000001", Pos: uint64(4 + i), Row: 0, Thread: 9},
			Transaction: &schema.Transaction{ID: "0-1-42", TotalOrder: id + 1, DataCollectionOrder: id + 1}}
	}
	return recs
}

// BenchmarkJSONMessages is the transport's own work for a record of the
// json format, without a broker: the publisher's message (encoding and
// properties) and the batch body it sends, then the subscriber decoding
// the message as the client hands it over (body and properties, as the
// broker returns them with its own).
func BenchmarkJSONMessages(b *testing.B) {
	const n = 100
	recs := benchRecords(n)
	p := testPublisher(b, okSender{}, func(c *Config) { c.Codec, c.Format = nil, FormatJSON })
	s := &Subscriber{cfg: p.cfg, log: quietLog()}
	ctx := context.Background()
	topic := "t_sluice_bench_events"
	msgs := make([]*primitive.Message, n)
	var in []*primitive.MessageExt
	for i := range recs {
		m, _, err := p.message(ctx, &recs[i], topic)
		if err != nil {
			b.Fatal(err)
		}
		x := &primitive.MessageExt{Message: *primitive.NewMessage(topic, m.Body), QueueOffset: int64(i)}
		x.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: "broker-a", QueueId: 1}
		x.UnmarshalProperties([]byte(m.MarshallProperties() + "MIN_OFFSET\x010\x02MAX_OFFSET\x01100\x02UNIQ_KEY\x017F0000010000\x02CONSUME_START_TIME\x011700000000000\x02"))
		in = append(in, x)
	}
	var buf []byte
	b.Run("publish", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := processCPU(b)
		for b.Loop() {
			for i := range recs {
				m, _, err := p.message(ctx, &recs[i], topic)
				if err != nil {
					b.Fatal(err)
				}
				msgs[i] = m
			}
			buf = marshalBatch(buf[:0], msgs)
		}
		reportRecordCPU(b, cpu0, n)
	})
	b.Run("consume", func(b *testing.B) {
		b.ReportAllocs()
		var out []schema.Record
		cpu0 := processCPU(b)
		for b.Loop() {
			out = out[:0]
			for _, m := range in {
				var err error
				if out, err = s.decodeAll(ctx, m, out); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportRecordCPU(b, cpu0, n)
	})
}

// processCPU is the process's CPU time (user and system, every thread,
// the collector's too), which a loaded machine inflates far less than the
// wall-clock time of an op.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportRecordCPU reports the process CPU per record since cpu0, of b.N
// rounds of n records.
func reportRecordCPU(b *testing.B, cpu0 time.Duration, n int) {
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N*n), "cpu-ns/record")
}
