package rocketmq

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/schema"
)

// compactRecords are records of two tables; the second's name holds
// characters json.Marshal would escape, so the schema bytes must be stored
// as they are.
func compactRecords() []schema.Record {
	tabs := []*schema.Table{
		{ID: schema.TableID{Database: "shop", Table: "items"}, PrimaryKey: []string{"id"}, Columns: []schema.Column{
			{Name: "id", Schema: schema.Primitive(schema.Int32, false)},
			{Name: "price", Schema: schema.DecimalSchema(8, 2, true)},
			{Name: "note", Schema: schema.Primitive(schema.String, true)}}},
		{ID: schema.TableID{Database: "shop", Table: "a<b>&c"}, PrimaryKey: []string{"k"}, Columns: []schema.Column{
			{Name: "k", Schema: schema.Primitive(schema.String, false)},
			{Name: "n", Schema: schema.Primitive(schema.Int64, true)}}},
	}
	ks := []*schema.Schema{tabs[0].KeySchema("srv.shop.items.Key"), tabs[1].KeySchema("srv.shop.a<b>&c.Key")}
	vs := []*schema.Schema{tabs[0].ValueSchema("srv.shop.items.Value"), tabs[1].ValueSchema("srv.shop.a<b>&c.Value")}
	var out []schema.Record
	for i := range int64(20) {
		t := i % 2
		r := schema.Record{Op: schema.OpCreate, Table: tabs[t].ID, KeySchema: ks[t], ValueSchema: vs[t], ID: nextTestID(),
			Source: schema.Source{Connector: "mariadb", Name: "srv", File: "bin.000001", Pos: 4 + uint64(i)}}
		if t == 0 {
			r.Key, r.After = schema.Row{i}, schema.Row{i, schema.MustDec("9.99"), "x <&> y"}
		} else {
			r.Key, r.After = schema.Row{"k<&>"}, schema.Row{"k<&>", i}
		}
		if i == 4 { // an update: both images
			r.Op, r.Before = schema.OpUpdate, schema.Row{i, schema.MustDec("1.00"), nil}
		}
		out = append(out, r)
	}
	return out
}

func publishAcked(t *testing.T, p *Publisher, recs []schema.Record) {
	t.Helper()
	done := make(chan error, 1)
	if err := p.Publish(context.Background(), recs, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no ack")
	}
}

func TestCompactFormatRoundTrip(t *testing.T) {
	codec := converter.NewJSON(converter.DefaultOptions())
	f := newFakeSender()
	p := testPublisher(t, f, func(c *Config) { c.Codec, c.Format = codec, FormatCompact })
	defer p.Close(context.Background())
	recs := compactRecords()
	publishAcked(t, p, recs[:10])
	publishAcked(t, p, recs[10:])

	stored, byQueue := sentMessages(t, f)
	var data []*primitive.MessageExt
	for _, ms := range byQueue {
		data = append(data, ms...)
	}
	if len(stored) != 2 {
		t.Fatalf("%d schema messages, want one per table: %+v", len(stored), stored)
	}
	if len(data) != len(recs) {
		t.Fatalf("%d data messages, want %d", len(data), len(recs))
	}

	// A plain consumer gets Debezium's payload-only JSON.
	plain := converter.NewJSON(converter.Options{Schemas: false})
	byID := map[schema.ID]schema.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	for _, m := range data {
		id, err := schema.ParseID(m.GetProperty(IDProperty))
		if err != nil {
			t.Fatal(err)
		}
		want := byID[id]
		k, v, err := plain.Encode(&want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Body, v) || m.GetProperty(KeyProperty) != string(k) {
			t.Errorf("body %s key %s, want the payloads %s and %s", m.Body, m.GetProperty(KeyProperty), v, k)
		}
		if m.GetProperty(SchemaProperty) == "" {
			t.Errorf("message without %s", SchemaProperty)
		}
	}

	// The subscriber looks the schemas up and decodes the records exactly.
	s := testSubscriber(t)
	s.cfg.Codec = codec
	s.schemas = newSchemaLookup(s.cfg)
	reads := 0
	s.schemas.read = func(context.Context) ([]schemaEntry, error) { reads++; return stored, nil }
	full := converter.NewJSON(converter.DefaultOptions())
	for _, m := range data {
		got, err := s.decode(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		want := byID[got.ID]
		k, v, _ := full.Encode(&want)
		gk, gv, err := full.Encode(&got)
		if err != nil || !bytes.Equal(k, gk) || !bytes.Equal(v, gv) {
			t.Errorf("decoded %s / %s, want %s / %s (%v)", gk, gv, k, v, err)
		}
		if !reflect.DeepEqual(got.After, want.After) || got.Op != want.Op {
			t.Errorf("decoded %v %v, want %v %v", got.Op, got.After, want.Op, want.After)
		}
	}
	if reads != 1 {
		t.Errorf("schema topic read %d times, want once (then cached)", reads)
	}
	// A payload that does not decode with its schema is ErrDecode.
	data[0].Body = append(append([]byte(nil), data[0].Body...), `,"x":1`...)
	if _, err := s.decode(context.Background(), data[0]); !errors.Is(err, ErrDecode) {
		t.Errorf("payload followed by junk: err %v, want ErrDecode", err)
	}
}

func TestCompactFormatMissingSchema(t *testing.T) {
	codec := converter.NewJSON(converter.DefaultOptions())
	f := newFakeSender()
	p := testPublisher(t, f, func(c *Config) { c.Codec, c.Format = codec, FormatCompact })
	defer p.Close(context.Background())
	publishAcked(t, p, compactRecords()[:1])
	var m *primitive.MessageExt
	f.mu.Lock()
	for q, ms := range f.sent {
		for _, sm := range ms {
			if sm.Topic != SchemaTopic("t") {
				m = extOf(sm)
				m.Queue = &primitive.MessageQueue{Topic: sm.Topic, BrokerName: "b", QueueId: q}
			}
		}
	}
	f.mu.Unlock()
	s := testSubscriber(t)
	s.cfg.Codec = codec

	// Not in the topic (after looking again): a decode error, fatal.
	s.schemas = newSchemaLookup(s.cfg)
	s.schemas.read = func(context.Context) ([]schemaEntry, error) { return nil, nil }
	if _, err := s.decode(context.Background(), m); !errors.Is(err, ErrDecode) || !errors.Is(err, errSchemaMissing) {
		t.Errorf("missing schema: %v", err)
	}
	// The topic cannot be read: retried, not fatal.
	s.schemas = newSchemaLookup(s.cfg)
	s.schemas.read = func(context.Context) ([]schemaEntry, error) { return nil, errors.New("broker down") }
	var retry errRetrySchema
	if _, err := s.decode(context.Background(), m); errors.Is(err, ErrDecode) || !errors.As(err, &retry) {
		t.Errorf("unreadable schema topic: %v", err)
	}
}

// A Config without a format publishes compact messages: payloads only,
// naming their schemas, which are stored in the schema topic.
func TestCompactFormatIsTheDefault(t *testing.T) {
	codec := converter.NewJSON(converter.DefaultOptions())
	f := newFakeSender()
	p := testPublisher(t, f, func(c *Config) { c.Codec = codec })
	defer p.Close(context.Background())
	if p.cfg.Format != FormatCompact {
		t.Errorf("format %q, want %q", p.cfg.Format, FormatCompact)
	}
	publishAcked(t, p, compactRecords()[:4])
	f.mu.Lock()
	defer f.mu.Unlock()
	var data, schemas int
	for _, ms := range f.sent {
		for _, m := range ms {
			if m.Topic == SchemaTopic("t") {
				schemas++
				continue
			}
			data++
			if bytes.HasPrefix(m.Body, []byte(`{"schema":`)) || len(m.GetProperty(SchemaProperty)) != 24 {
				t.Errorf("default format sent %s %s (%s %q)", m.Topic, m.Body, SchemaProperty, m.GetProperty(SchemaProperty))
			}
		}
	}
	if data != 4 || schemas != 2 {
		t.Errorf("%d data messages and %d schema messages, want 4 and 2 (two tables)", data, schemas)
	}
}

// format: json sends the whole envelope, schema included, in every message.
func TestJSONFormatSendsEnvelopes(t *testing.T) {
	codec := converter.NewJSON(converter.DefaultOptions())
	f := newFakeSender()
	p := testPublisher(t, f, func(c *Config) { c.Codec, c.Format = codec, FormatJSON })
	defer p.Close(context.Background())
	publishAcked(t, p, compactRecords()[:4])
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ms := range f.sent {
		for _, m := range ms {
			if !bytes.HasPrefix(m.Body, []byte(`{"schema":`)) || m.GetProperty(SchemaProperty) != "" || m.Topic == SchemaTopic("t") {
				t.Errorf("json format sent %s %s", m.Topic, m.Body)
			}
		}
	}
}

func TestSplitEnvelope(t *testing.T) {
	for _, c := range []struct{ in, sch, payload string }{
		{`{"schema":{"a":"}\"{"},"payload":{"x":1}}`, `{"a":"}\"{"}`, `{"x":1}`},
		{`{"schema":[1,{"b":[2]}],"payload":null}`, `[1,{"b":[2]}]`, `null`},
		{`{"schema":null,"payload":{}}`, `null`, `{}`},
	} {
		s, p, ok := splitEnvelope([]byte(c.in))
		if !ok || string(s) != c.sch || string(p) != c.payload {
			t.Errorf("%s: %q %q %v", c.in, s, p, ok)
		}
	}
	for _, in := range []string{`{"payload":{}}`, `{"schema":{"a":1}`, `{"schema":{"a":1},"x":2}`, ``} {
		if _, _, ok := splitEnvelope([]byte(in)); ok {
			t.Errorf("%s: split", in)
		}
	}
}

func extOf(m *primitive.Message) *primitive.MessageExt {
	ext := &primitive.MessageExt{}
	ext.Topic, ext.Body = m.Topic, m.Body
	ext.WithProperties(m.GetProperties())
	return ext
}

// A TRUNCATE carries its table's schemas but no key; the data records of
// the table after it keep their key payloads exact (a split made from the
// TRUNCATE, with no key prefix, once cut their keys wrongly), in both
// formats that send schemas by reference.
func TestCompactKeyAfterTruncate(t *testing.T) {
	for _, format := range []string{FormatCompact, FormatPacked} {
		t.Run(format, func(t *testing.T) {
			codec := converter.NewJSON(converter.DefaultOptions())
			f := newFakeSender()
			p := testPublisher(t, f, func(c *Config) { c.Codec, c.Format = codec, format })
			defer p.Close(context.Background())
			recs := compactRecords()[:6]
			trunc := schema.Record{Op: schema.OpTruncate, Table: recs[0].Table, KeySchema: recs[0].KeySchema, ValueSchema: recs[0].ValueSchema,
				ID: nextTestID(), Source: recs[0].Source}
			var all []schema.Record
			all = append(all, trunc)
			for _, r := range recs {
				r.ID = nextTestID()
				all = append(all, r)
			}
			publishAcked(t, p, all)
			stored, data := sentMessages(t, f)
			s := testSubscriber(t)
			s.cfg.Codec = codec
			s.schemas = newSchemaLookup(s.cfg)
			s.schemas.read = func(context.Context) ([]schemaEntry, error) { return stored, nil }
			byID := map[schema.ID]schema.Record{}
			for _, r := range all {
				byID[r.ID] = r
			}
			n := 0
			for _, ms := range data {
				for _, m := range ms {
					got, err := s.decodeAll(context.Background(), m, nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range got {
						n++
						if want := byID[r.ID]; r.Op != want.Op || !reflect.DeepEqual(r.Key, want.Key) || !reflect.DeepEqual(r.After, want.After) {
							t.Errorf("decoded %v key %v after %v, want %v key %v after %v", r.Op, r.Key, r.After, want.Op, want.Key, want.After)
						}
					}
				}
			}
			if n < len(all) { // the TRUNCATE goes to every queue of its topic
				t.Fatalf("%d records decoded, want at least %d", n, len(all))
			}
		})
	}
}

// envelopeOnly hides the converter's EncodePayloads: the publisher then
// cuts every record's payloads out of its whole envelopes.
type envelopeOnly struct{ *converter.JSON }

func (envelopeOnly) EncodePayloads() {} // not payloadEncoder's signature

// countingPayloads counts the converter's EncodePayloads calls.
type countingPayloads struct {
	*converter.JSON
	n *atomic.Int64
}

func (c countingPayloads) EncodePayloads(r *schema.Record) (key, value []byte, err error) {
	c.n.Add(1)
	return c.JSON.EncodePayloads(r)
}

// TestCompactPayloadsAsCutFromEnvelopes: the compact formats' messages,
// bodies and properties, and the schemas stored, are the same whether the
// publisher writes payloads alone (converter.JSON's EncodePayloads) or cuts
// them out of whole envelopes, for records of two tables, with and
// without a key (TRUNCATEs among them), update images included.
func TestCompactPayloadsAsCutFromEnvelopes(t *testing.T) {
	var _ payloadEncoder = converter.NewJSON(converter.DefaultOptions())
	if _, ok := any(envelopeOnly{}).(payloadEncoder); ok {
		t.Fatal("envelopeOnly must not be a payloadEncoder")
	}
	recs := compactRecords()
	var all []schema.Record
	for i, r := range recs {
		if i == 0 || i == 7 {
			all = append(all, schema.Record{Op: schema.OpTruncate, Table: r.Table, KeySchema: r.KeySchema, ValueSchema: r.ValueSchema,
				ID: nextTestID(), Source: r.Source})
		}
		all = append(all, r)
	}
	for _, format := range []string{FormatCompact, FormatPacked} {
		t.Run(format, func(t *testing.T) {
			sent := func(codec Codec) ([]schemaEntry, map[pk][]*primitive.MessageExt) {
				f := newFakeSender()
				p := testPublisher(t, f, func(c *Config) { c.Codec, c.Format = codec, format })
				defer p.Close(context.Background())
				publishAcked(t, p, all)
				publishAcked(t, p, all) // the splits cached: payloads alone
				return sentMessages(t, f)
			}
			wantStored, want := sent(envelopeOnly{converter.NewJSON(converter.DefaultOptions())})
			var calls atomic.Int64
			gotStored, got := sent(countingPayloads{converter.NewJSON(converter.DefaultOptions()), &calls})
			if n := calls.Load(); n < int64(len(all)) { // at least the second Publish's
				t.Fatalf("EncodePayloads ran %d times for two Publish calls of %d records: the payload path was not taken", n, len(all))
			}
			if !reflect.DeepEqual(gotStored, wantStored) {
				t.Fatalf("schemas stored %v, want %v", gotStored, wantStored)
			}
			if len(got) != len(want) {
				t.Fatalf("%d queues sent to, want %d", len(got), len(want))
			}
			n := 0
			for q, ms := range want {
				if len(got[q]) != len(ms) {
					t.Fatalf("queue %v: %d messages, want %d", q, len(got[q]), len(ms))
				}
				for i, m := range ms {
					g := got[q][i]
					if !bytes.Equal(g.Body, m.Body) || !reflect.DeepEqual(g.GetProperties(), m.GetProperties()) {
						t.Fatalf("queue %v message %d:\n%s %v\nwant\n%s %v", q, i, g.Body, g.GetProperties(), m.Body, m.GetProperties())
					}
					n++
				}
			}
			if n == 0 {
				t.Fatal("no message compared")
			}
		})
	}
}

type twoBrokers struct{}

func (twoBrokers) queues(context.Context, string) ([]queue, error) {
	return []queue{{"a", 0}, {"a", 1}, {"b", 2}, {"b", 3}}, nil
}

// A schema is stored on every broker; one that refuses (a broker just
// back from an outage whose route the client has not caught up with, CI
// of December 7) does not fail the publish while another broker has the
// copy, and when every broker refuses the publish fails.
func TestSchemaStoredWhereABrokerTakesIt(t *testing.T) {
	for _, refuse := range [][]string{{"a"}, {"a", "b"}} {
		t.Run(strings.Join(refuse, "+"), func(t *testing.T) {
			f := newFakeSender()
			f.fail = func(msgs []*primitive.Message) error {
				if msgs[0].Topic == SchemaTopic("t") && slices.Contains(refuse, msgs[0].Queue.BrokerName) {
					return errors.New("the topic route info not found")
				}
				return nil
			}
			cfg := Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "t", Codec: converter.NewJSON(converter.DefaultOptions()), SendRetries: 1}
			cfg, err := cfg.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			p := newPublisher(cfg, quietLog(), f, twoBrokers{}, nil)
			defer p.Close(context.Background())
			acked := make(chan error, 1)
			err = p.Publish(context.Background(), compactRecords()[:1], func(err error) { acked <- err })
			if err == nil {
				err = <-acked
			}
			if all := len(refuse) == 2; (err != nil) != all {
				t.Fatalf("brokers %v refusing the schema: publish error %v, want an error only when every broker refuses", refuse, err)
			}
			if len(refuse) == 1 {
				f.mu.Lock()
				defer f.mu.Unlock()
				stored := 0
				for _, m := range append(f.sent[2], f.sent[3]...) {
					if m.Topic == SchemaTopic("t") {
						stored++
					}
				}
				if stored != 1 {
					t.Errorf("%d copies of the schema on broker b, want 1", stored)
				}
			}
		})
	}
}
