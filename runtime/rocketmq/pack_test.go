package rocketmq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/schema"
)

// sentMessages splits what f sent into the schema messages and the data
// messages of each queue of each topic, in send order, as a consumer would
// read them (QueueOffset counting per queue).
func sentMessages(t *testing.T, f *fakeSender) (stored []schemaEntry, data map[pk][]*primitive.MessageExt) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	data = map[pk][]*primitive.MessageExt{}
	for q, ms := range f.sent {
		for _, m := range ms {
			if m.Topic == SchemaTopic("t") {
				var e schemaEntry
				if err := json.Unmarshal(m.Body, &e); err != nil {
					t.Fatalf("schema message %s: %v", m.Body, err)
				}
				stored = append(stored, e)
				continue
			}
			k := pk{m.Topic, queue{"b", q}}
			ext := extOf(m)
			ext.QueueOffset = int64(len(data[k]))
			ext.Queue = &primitive.MessageQueue{Topic: m.Topic, BrokerName: "b", QueueId: q}
			data[k] = append(data[k], ext)
		}
	}
	return stored, data
}

func TestPackedFormatRoundTrip(t *testing.T) {
	codec := converter.NewJSON(converter.DefaultOptions())
	f := newFakeSender()
	p := testPublisher(t, f, func(c *Config) { c.Codec, c.Format = codec, FormatPacked })
	defer p.Close(context.Background())
	recs := compactRecords()
	recs[3].Headers = map[string]string{"trace": "a \"quoted\"\nline é", "k": "v"}
	// One source transaction per Publish: each queue's last record of it
	// carries the transaction end mark, inside the pack.
	for n, part := range [][]schema.Record{recs[:10], recs[10:]} {
		tx := &schema.Transaction{ID: "tx" + strconv.Itoa(n)}
		for i := range part {
			part[i].Transaction = tx
		}
		batch := append([]schema.Record{{Op: schema.OpBegin, Transaction: tx}}, part...)
		batch = append(batch, schema.Record{Op: schema.OpCommit, Position: []byte("x"), Transaction: tx})
		publishAcked(t, p, batch)
	}
	stored, data := sentMessages(t, f)
	if len(stored) != 2 {
		t.Fatalf("%d schema messages, want one per table", len(stored))
	}
	byID := map[schema.ID]schema.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	plain := converter.NewJSON(converter.Options{Schemas: false})
	packs, lines := 0, 0
	for _, ms := range data {
		for _, m := range ms {
			packs++
			if m.GetProperty(FormatProperty) != FormatPacked || m.GetKeys() != "" {
				t.Errorf("pack with properties %v", m.GetProperties())
			}
			// A plain consumer: a JSON object per line, the value being
			// Debezium's payload-only JSON.
			body := strings.TrimSuffix(string(m.Body), "\n")
			n := 0
			for _, line := range strings.Split(body, "\n") {
				n++
				lines++
				var l struct {
					ID, Keys, Schema string
					Key, Value       json.RawMessage
					Headers          map[string]string
				}
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				id, err := schema.ParseID(l.ID)
				if err != nil {
					t.Fatal(err)
				}
				want := byID[id]
				k, v, _ := plain.Encode(&want)
				if !bytes.Equal(l.Value, v) || !bytes.Equal(l.Key, k) || l.Schema == "" || l.Keys != want.KeyString() {
					t.Errorf("line %s, want value %s key %s keys %q and a schema", line, v, k, want.KeyString())
				}
				if m.GetTags() != want.Table.Table {
					t.Errorf("pack tagged %q holds a record of %s", m.GetTags(), want.Table)
				}
			}
			if m.GetProperty(RecordsProperty) != strconv.Itoa(n) {
				t.Errorf("%s = %s, %d lines", RecordsProperty, m.GetProperty(RecordsProperty), n)
			}
		}
	}
	if lines != len(recs) || packs >= len(recs)/2 {
		t.Fatalf("%d records in %d packs, want all %d in fewer than half as many messages", lines, packs, len(recs))
	}

	// The subscriber unpacks the records exactly, in each queue's order,
	// with their headers and the pack's place as their delivery.
	s := testSubscriber(t)
	s.cfg.Codec = codec
	s.schemas = newSchemaLookup(s.cfg)
	s.schemas.read = func(context.Context) ([]schemaEntry, error) { return stored, nil }
	full := converter.NewJSON(converter.DefaultOptions())
	got := 0
	txEnds := 0
	for q, ms := range data {
		var last schema.ID
		for _, m := range ms {
			rs, err := s.decodeAll(context.Background(), m, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				got++
				want := byID[r.ID]
				k, v, _ := full.Encode(&want)
				gk, gv, err := full.Encode(&r)
				if err != nil || !bytes.Equal(k, gk) || !bytes.Equal(v, gv) {
					t.Errorf("decoded %s / %s, want %s / %s (%v)", gk, gv, k, v, err)
				}
				if r.ID.Compare(last) <= 0 {
					t.Errorf("queue %v: record %v after %v", q, r.ID, last)
				}
				last = r.ID
				if r.Delivery == nil || r.Delivery.Topic != q.topic || r.Delivery.Queue != q.q.ID || r.Delivery.Offset != m.QueueOffset {
					t.Errorf("delivery %+v, want %v offset %d", r.Delivery, q, m.QueueOffset)
				}
				if r.Headers[schema.HeaderTxEnd] == "true" {
					txEnds++
				}
				h := maps.Clone(r.Headers)
				delete(h, schema.HeaderTxEnd)
				if len(want.Headers) > 0 && !reflect.DeepEqual(h, want.Headers) {
					t.Errorf("headers %v, want %v", r.Headers, want.Headers)
				}
			}
		}
	}
	if got != len(recs) {
		t.Fatalf("unpacked %d records, want %d", got, len(recs))
	}
	if txEnds == 0 {
		t.Error("no record carries the transaction end mark")
	}

	// Bodies that do not parse, and a count that does not match, are
	// ErrDecode, naming where the message is.
	var m *primitive.MessageExt
	for _, ms := range data {
		m = ms[0]
	}
	for name, mut := range map[string]func(*primitive.MessageExt){
		"no newline":   func(m *primitive.MessageExt) { m.Body = bytes.TrimSuffix(m.Body, []byte("\n")) },
		"truncated":    func(m *primitive.MessageExt) { m.Body = append(m.Body[:len(m.Body)/2:len(m.Body)/2], '\n') },
		"empty":        func(m *primitive.MessageExt) { m.Body = nil },
		"junk value":   func(m *primitive.MessageExt) { m.Body = []byte(`{"id":"1-1","value":{"x":}` + "\n") },
		"wrong count":  func(m *primitive.MessageExt) { m.WithProperty(RecordsProperty, "999") },
		"no id":        func(m *primitive.MessageExt) { m.Body = []byte(`{"value":{}}` + "\n") },
		"extra object": func(m *primitive.MessageExt) { m.Body = []byte(`{"id":"1-1","value":{}}{}` + "\n") },
	} {
		c := &primitive.MessageExt{QueueOffset: m.QueueOffset}
		c.Topic, c.Queue = m.Topic, m.Queue
		c.WithProperties(m.GetProperties())
		c.Body = append([]byte(nil), m.Body...)
		mut(c)
		if _, err := s.decodeAll(context.Background(), c, nil); !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), "offset") {
			t.Errorf("%s: err %v, want ErrDecode naming the offset", name, err)
		}
	}
}

// Parts queued for one queue while a send is in flight go out packed
// together, and each Publish is acked, in order, once its records are.
func TestPackedPartsShareAPackAndAckInOrder(t *testing.T) {
	codec := converter.NewJSON(converter.DefaultOptions())
	f := newFakeSender()
	f.gate = make(chan struct{})
	p := testPublisher(t, f, func(c *Config) { c.Codec, c.Format = codec, FormatPacked })
	defer p.Close(context.Background())
	recs := compactRecords()
	var one []schema.Record // records of one key: one queue
	for _, r := range recs {
		if r.Table.Table == "items" {
			r.Key, r.After[0] = schema.Row{int64(1)}, int64(1)
			one = append(one, r)
		}
	}
	acks := make(chan int, len(one))
	go func() { f.gate <- struct{}{} }() // the schema message
	for i := range one {
		if err := p.Publish(context.Background(), one[i:i+1], func(err error) {
			if err != nil {
				t.Error(err)
			}
			acks <- i
		}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // the rest queue behind the first send
	go func() {
		for range 100 {
			select {
			case f.gate <- struct{}{}:
			case <-time.After(5 * time.Second):
				return
			}
		}
	}()
	for want := range one {
		select {
		case got := <-acks:
			if got != want {
				t.Fatalf("ack of Publish %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Publish %d not acked", want)
		}
	}
	_, data := sentMessages(t, f)
	if len(data) != 1 {
		t.Fatalf("records of one key went to %d queues", len(data))
	}
	for _, ms := range data {
		if len(ms) >= len(one) {
			t.Errorf("%d Publish calls queued together went in %d messages, want fewer", len(one), len(ms))
		}
	}
}

func TestPackLineRoundTrip(t *testing.T) {
	for _, e := range []packEntry{
		{ID: "1-2", Value: []byte(`{"a":1}`), hasID: true},
		{ID: "1-3", Keys: "k\"\\\n\x01é\xff", Schema: "abc", Key: []byte(`{"id":"x,}\"y"}`), Value: []byte(`["}",{"b":[1,2]}]`),
			Headers: map[string]string{"h": "v\t\"", "é": ""}, hasID: true, hasSchema: true},
		{ID: "1-4", Key: []byte(`null`), Value: []byte(`"s,}"`), hasID: true},
	} {
		line := appendPackLine(nil, &e)
		if bytes.Count(line, []byte("\n")) != 1 || !json.Valid(bytes.TrimSuffix(line, []byte("\n"))) {
			t.Fatalf("line %q is not one line of JSON", line)
		}
		got, err := parsePackLine(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		want := e
		want.Keys = jsonRoundTrip(e.Keys) // invalid UTF-8 becomes U+FFFD
		if len(want.Headers) == 0 {
			want.Headers = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %+v, want %+v", line, got, want)
		}
	}
	// Another writer's spacing and field order, and fields it adds, read too.
	got, err := parsePackLine([]byte(` { "value" : {"x": 1} , "extra": [1, {"y": "}"}], "id" : "7-8" } `))
	if err != nil || got.ID != "7-8" || string(got.Value) != `{"x": 1}` {
		t.Errorf("got %+v, %v", got, err)
	}
}

// FuzzUnpack: any body unpacks without panicking, and what it yields
// packs and unpacks to the same entries.
func FuzzUnpack(f *testing.F) {
	var seed []byte
	seed = appendPackLine(seed, &packEntry{ID: "1-2", Keys: "5", Schema: "ab", Key: []byte(`{"id":5}`), Value: []byte(`{"id":5,"v":"x"}`), hasID: true, hasSchema: true})
	seed = appendPackLine(seed, &packEntry{ID: "1-3", Value: []byte(`{"schema":{},"payload":null}`), Headers: map[string]string{"a": "b"}, hasID: true})
	f.Add(seed)
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"id":"\u0041","value":[{"a":"\"}"}]}` + "\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var first []packEntry
		if _, err := unpack(body, func(_ int, e packEntry) error { first = append(first, e); return nil }); err != nil {
			return
		}
		var again []byte
		for i := range first {
			again = appendPackLine(again, &first[i])
		}
		var second []packEntry
		if _, err := unpack(again, func(_ int, e packEntry) error { second = append(second, e); return nil }); err != nil {
			t.Fatalf("repacked %q does not unpack: %v", again, err)
		}
		if len(first) != len(second) {
			t.Fatalf("%d entries, %d after repacking", len(first), len(second))
		}
		for i := range first {
			a, b := first[i], second[i]
			if jsonRoundTrip(a.ID) != b.ID || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || a.hasSchema != b.hasSchema {
				t.Fatalf("entry %d: %+v, after repacking %+v", i, a, b)
			}
		}
	})
}

// jsonRoundTrip is s as a JSON string reads back.
func jsonRoundTrip(s string) string {
	q, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(q, &out)
	return out
}

// Under the packed format a record is refused when a pack of it alone
// could be over MaxMessageBytes: every pack sent fits, records just under
// the limit included.
func TestPackedRecordNearTheLimitFits(t *testing.T) {
	const limit = 64 << 10
	f := newFakeSender()
	p := testPublisher(t, f, func(c *Config) { withCodec(c); c.Format, c.MaxMessageBytes = FormatPacked, limit })
	defer p.Close(context.Background())
	sent, refused := 0, 0
	for doc := limit - 1200; doc < limit; doc += 7 {
		perr, aerr := publishWait(t, p, []schema.Record{bigRec(int64(doc), 0, doc, 1)})
		switch {
		case errors.Is(perr, ErrOversize):
			refused++
		case perr != nil || aerr != nil:
			t.Fatal(perr, aerr)
		default:
			sent++
		}
	}
	for _, m := range f.all() {
		if size := messageSize(m); size > limit {
			t.Errorf("a %d-byte message sent over the %d-byte limit", size, limit)
		}
	}
	if sent == 0 || refused == 0 {
		t.Fatalf("%d records sent, %d refused: the sizes tried must straddle the limit", sent, refused)
	}
}

// The publisher makes a packed record's line straight from the record
// (packedEntry); it must be the line of the record's own message
// (messageEntry of message), with and without the transaction end mark:
// the same bytes reach the brokers either way.
func TestPackedEntryIsTheMessageEntry(t *testing.T) {
	codec := converter.NewJSON(converter.DefaultOptions())
	p := testPublisher(t, newFakeSender(), func(c *Config) { c.Codec, c.Format = codec, FormatPacked })
	defer p.Close(context.Background())
	recs := compactRecords()
	recs[1].Headers = map[string]string{"trace": "a \"quoted\"\nline é", "k": "v", "empty": "", "": "x"}
	recs[2].Headers = map[string]string{"one": "1"}
	long := strings.Repeat("k", maxIndexKey+1)
	recs[3].Key, recs[3].After = schema.Row{long}, schema.Row{long, int64(3)}
	recs[5].Table.Table = "" // no tag
	// A table-level record: its whole envelope, no schema reference.
	recs = append(recs, schema.Record{Op: schema.OpTruncate, Table: recs[0].Table, KeySchema: recs[0].KeySchema, ValueSchema: recs[0].ValueSchema, ID: nextTestID()})
	for i := range recs {
		r := &recs[i]
		e, size, ok, err := p.packedEntry(context.Background(), r, "topic_x")
		if err != nil || !ok {
			t.Fatalf("record %d: packedEntry ok %v, %v", i, ok, err)
		}
		msg, wantSize, err := p.message(context.Background(), r, "topic_x")
		if err != nil {
			t.Fatal(err)
		}
		if size != wantSize {
			t.Errorf("record %d: size %d, the message's %d", i, size, wantSize)
		}
		for _, end := range []bool{false, true} {
			got, want := e, messageEntry(msg.GetProperties(), msg.Body)
			if end {
				got.markTxEnd()
				m := primitive.NewMessage(msg.Topic, msg.Body)
				m.WithProperties(msg.GetProperties())
				m.WithProperty(HeaderPropertyPrefix+schema.HeaderTxEnd, "true")
				want = messageEntry(m.GetProperties(), m.Body)
			}
			if g, w := appendPackLine(nil, &got), appendPackLine(nil, &want); !bytes.Equal(g, w) || got.Tag != want.Tag {
				t.Errorf("record %d (end %v): line\n%s tag %q\nwant\n%s tag %q", i, end, g, got.Tag, w, want.Tag)
			}
		}
	}
	// The shared end-mark headers are never written to.
	e := packEntry{}
	e.markTxEnd()
	e.markTxEnd()
	if len(txEndHeaders) != 1 {
		t.Fatalf("txEndHeaders written to: %v", txEndHeaders)
	}
}

// A pack's record count sizes the consumer's batch of records before the
// pack is read: a count the body can't hold sizes nothing.
func TestPackCountBoundedByBody(t *testing.T) {
	line := `{"id":"","value":0}` + "\n"
	if len(line) != minPackLine {
		t.Fatalf("shortest line %d bytes, minPackLine %d", len(line), minPackLine)
	}
	body := []byte(strings.Repeat(line, 3))
	for _, c := range []struct {
		prop string
		want int
	}{{"3", 3}, {"4", 0}, {"1048576", 0}, {"0", 0}, {"-1", 0}, {"x", 0}, {"", 0}} {
		if got := packCount(c.prop, body); got != c.want {
			t.Errorf("packCount(%q, 3 lines) = %d, want %d", c.prop, got, c.want)
		}
	}
	m := &primitive.MessageExt{Message: primitive.Message{Body: body}}
	m.WithProperty(RecordsProperty, "1000000")
	if n := recordCount([]*primitive.MessageExt{m, m}); n != 2 {
		t.Errorf("recordCount of two packs claiming a million records each in 60 bytes: %d, want 2", n)
	}
}
