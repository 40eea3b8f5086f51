package rocketmq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

var (
	bigKeySchema = &schema.Schema{Type: schema.Struct, Name: "db.t.Key", Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)}}}
	bigValueSchema = &schema.Schema{Type: schema.Struct, Name: "db.t.Value", Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "note", Schema: schema.Primitive(schema.String, true)},
		{Name: "blob", Schema: schema.Primitive(schema.Bytes, true)},
		{Name: "doc", Schema: schema.Primitive(schema.String, true)},
		{Name: "required", Schema: schema.Primitive(schema.String, false)},
	}}
)

// bigRec is a row of bigValueSchema: blob and doc of the given sizes, and a
// required column of reqSize bytes.
func bigRec(id int64, blob, doc, reqSize int) schema.Record {
	return schema.Record{Op: schema.OpCreate, Table: tbl, KeySchema: bigKeySchema, Key: schema.Row{id}, ValueSchema: bigValueSchema,
		After: schema.Row{id, "small", bytes.Repeat([]byte{0xAB}, blob), strings.Repeat("d", doc), strings.Repeat("r", reqSize)}, ID: nextTestID()}
}

type fakeDLQ struct {
	mu     sync.Mutex
	recs   []schema.Record
	causes []error
	err    error
}

func (f *fakeDLQ) Send(_ context.Context, rec schema.Record, cause error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.recs = append(f.recs, rec)
	f.causes = append(f.causes, cause)
	return nil
}

func (f *fakeSender) all() []*primitive.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*primitive.Message
	for _, ms := range f.sent {
		out = append(out, ms...)
	}
	return out
}

// publishWait publishes recs and waits for the ack.
func publishWait(t *testing.T, p *Publisher, recs []schema.Record) (publishErr, ackErr error) {
	t.Helper()
	done := make(chan error, 1)
	if err := p.Publish(context.Background(), recs, func(err error) { done <- err }); err != nil {
		return err, nil
	}
	return nil, <-done
}

// withCodec sets the JSON codec and the json format, whose messages carry
// the whole envelopes these tests size and decode (the default format,
// compact, also stores a schema message first).
func withCodec(c *Config) { c.Codec, c.Format = defaultCodec(), FormatJSON }

func TestOversizeFailIsFatalAndNamesTableKeySize(t *testing.T) {
	f := newFakeSender()
	p := testPublisher(t, f, withCodec)
	defer p.Close(context.Background())
	err, _ := publishWait(t, p, []schema.Record{bigRec(1, 10, 10, 1), bigRec(7, 5<<20, 0, 1)})
	if !errors.Is(err, ErrOversize) || !runtime.IsFatal(err) {
		t.Fatalf("error %v: want fatal ErrOversize", err)
	}
	for _, want := range []string{"db.t", `key "7"`, "bytes", "max_message_bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
	if n := f.count(); n != 0 {
		t.Fatalf("%d messages sent, want none of the failed batch", n)
	}
}

func TestOversizeWithinLimitIsSent(t *testing.T) {
	f := newFakeSender()
	p := testPublisher(t, f, func(c *Config) { withCodec(c); c.MaxMessageBytes = 2 << 20 })
	defer p.Close(context.Background())
	// 1 MiB of bytes is ~1.4 MB of base64: under 2 MiB.
	if perr, aerr := publishWait(t, p, []schema.Record{bigRec(1, 1<<20, 0, 1)}); perr != nil || aerr != nil {
		t.Fatal(perr, aerr)
	}
	if f.count() != 1 {
		t.Fatalf("%d messages sent, want 1", f.count())
	}
	// The same record over a limit of 1 MiB is refused.
	q := testPublisher(t, newFakeSender(), func(c *Config) { withCodec(c); c.MaxMessageBytes = 1 << 20 })
	defer q.Close(context.Background())
	if perr, _ := publishWait(t, q, []schema.Record{bigRec(1, 1<<20, 0, 1)}); !errors.Is(perr, ErrOversize) {
		t.Fatalf("error %v, want ErrOversize", perr)
	}
}

func TestOversizeDLQSendsToDeadLetterAndAcks(t *testing.T) {
	f := newFakeSender()
	d := &fakeDLQ{}
	p := testPublisher(t, f, func(c *Config) { withCodec(c); c.OversizePolicy = OversizeDLQ })
	p.dlq = d
	defer p.Close(context.Background())
	perr, aerr := publishWait(t, p, []schema.Record{bigRec(1, 10, 10, 1), bigRec(2, 5<<20, 0, 1), bigRec(3, 10, 10, 1)})
	if perr != nil || aerr != nil {
		t.Fatalf("publish %v, ack %v", perr, aerr)
	}
	if len(d.recs) != 1 || d.recs[0].Key[0] != int64(2) || !errors.Is(d.causes[0], ErrOversize) || !strings.Contains(d.causes[0].Error(), `key "2"`) {
		t.Fatalf("dead letters %v causes %v, want key 2 with ErrOversize", d.recs, d.causes)
	}
	var keys []string
	for _, m := range f.all() {
		keys = append(keys, m.GetProperty(KeyProperty))
	}
	if len(keys) != 2 || strings.Contains(strings.Join(keys, " "), `"id":2`) {
		t.Fatalf("sent keys %v, want those of 1 and 3 only", keys)
	}
	// A failing dead-letter send fails Publish (nothing acked).
	d.err = errors.New("broker down")
	if perr, _ := publishWait(t, p, []schema.Record{bigRec(4, 5<<20, 0, 1)}); perr == nil || !strings.Contains(perr.Error(), "broker down") {
		t.Fatalf("error %v, want the dead-letter failure", perr)
	}
}

func TestOversizeTruncateColumnsDropsLargestNullable(t *testing.T) {
	f := newFakeSender()
	p := testPublisher(t, f, func(c *Config) { withCodec(c); c.OversizePolicy = OversizeTruncateColumns })
	defer p.Close(context.Background())
	// blob (3 MiB, 4 MiB as base64) is dropped first; doc (1 MiB) then fits.
	in := bigRec(5, 3<<20, 1<<20, 1)
	perr, aerr := publishWait(t, p, []schema.Record{in})
	if perr != nil || aerr != nil {
		t.Fatalf("publish %v, ack %v", perr, aerr)
	}
	msgs := f.all()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	if got := msgs[0].GetProperty(DroppedColumnsProperty); got != "blob" {
		t.Fatalf("%s = %q, want blob", DroppedColumnsProperty, got)
	}
	if messageSize(msgs[0]) > DefaultMaxMessageBytes {
		t.Fatalf("message of %d bytes sent", messageSize(msgs[0]))
	}
	out, err := defaultCodec().Decode([]byte(msgs[0].GetProperty(KeyProperty)), msgs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if out.After[2] != nil || out.After[3] != strings.Repeat("d", 1<<20) || out.After[1] != "small" || out.After[0] != int64(5) {
		t.Fatalf("after = id %v note %v blob %T doc %d bytes", out.After[0], out.After[1], out.After[2], len(out.After[3].(string)))
	}
	if in.After[2] == nil {
		t.Fatal("the caller's record was modified")
	}

	// Both large: both go, largest first; an update's before image too.
	upd := bigRec(6, 3<<20, 3<<20, 1)
	upd.Op, upd.Before = schema.OpUpdate, schema.Row{int64(6), "old", []byte("x"), strings.Repeat("o", 1<<20), "r"}
	if perr, aerr := publishWait(t, p, []schema.Record{upd}); perr != nil || aerr != nil {
		t.Fatalf("publish %v, ack %v", perr, aerr)
	}
	var m2 *primitive.Message
	for _, m := range f.all() {
		if strings.Contains(m.GetProperty(KeyProperty), `"id":6`) {
			m2 = m
		}
	}
	if m2 == nil || m2.GetProperty(DroppedColumnsProperty) != "doc,blob" {
		t.Fatalf("message %v, want columns doc,blob dropped", m2)
	}
	out, err = defaultCodec().Decode([]byte(m2.GetProperty(KeyProperty)), m2.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out.Before[3] != nil || out.After[3] != nil || out.After[2] != nil || out.Before[1] != "old" {
		t.Fatalf("before %v", out.Before[:2])
	}
}

func TestOversizeTruncateColumnsFailsWhenNothingLeft(t *testing.T) {
	p := testPublisher(t, newFakeSender(), func(c *Config) { withCodec(c); c.OversizePolicy = OversizeTruncateColumns })
	defer p.Close(context.Background())
	// The large value is in a NOT NULL column: it cannot be dropped.
	perr, _ := publishWait(t, p, []schema.Record{bigRec(8, 10, 10, 5<<20)})
	if !errors.Is(perr, ErrOversize) || !runtime.IsFatal(perr) || !strings.Contains(perr.Error(), "[blob doc note]") {
		t.Fatalf("error %v: want fatal ErrOversize listing the dropped columns", perr)
	}
}

func TestOversizePolicyConfig(t *testing.T) {
	c, err := Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "p", Codec: testCodec{}}.withDefaults()
	if err != nil || c.OversizePolicy != OversizeFail || c.MaxMessageBytes != DefaultMaxMessageBytes {
		t.Fatalf("defaults %q %d %v", c.OversizePolicy, c.MaxMessageBytes, err)
	}
	_, err = Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "p", Codec: testCodec{}, OversizePolicy: "drop"}.withDefaults()
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("error %v, want ErrConfig", err)
	}
}

// A dead letter too large itself keeps table, op, key, source and error.
func TestDeadLetterOversizeBodyIsSummary(t *testing.T) {
	cfg, err := Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "p"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	d := &DeadLetter{cfg: cfg, topic: DeadLetterTopic("p")}
	r := bigRec(9, 5<<20, 0, 1)
	r.Source = schema.Source{Connector: "mysql", File: "bin.000003", Pos: 1234}
	msg := d.message(&r, errors.New("too big"))
	if messageSize(msg) > cfg.MaxMessageBytes {
		t.Fatalf("dead letter of %d bytes", messageSize(msg))
	}
	var body map[string]any
	if err := json.Unmarshal(msg.Body, &body); err != nil {
		t.Fatalf("body %.200q: %v", msg.Body, err)
	}
	if body["table"] != "db.t" || body["key"] != r.KeyString() || body["error"] != "too big" || !strings.Contains(string(msg.Body), "bin.000003") {
		t.Fatalf("body %s", msg.Body)
	}
	// A small record keeps the codec's body.
	small := bigRec(10, 10, 10, 1)
	if m := d.message(&small, errors.New("x")); !bytes.Contains(m.Body, []byte(`"payload"`)) {
		t.Fatalf("small dead letter body %.200s", m.Body)
	}
}
