package rocketmq

import (
	"bytes"
	"context"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/sluicecdc/sluice/schema"
)

// TestMarshalBatchIsTheClients: the batch body the publisher encodes is
// the client's, byte for byte, for messages with no property or one (the
// client writes several in its map's order, which differs between calls),
// empty and large bodies and flags.
func TestMarshalBatchIsTheClients(t *testing.T) {
	var msgs []*primitive.Message
	for i, body := range []string{"{}", "", strings.Repeat("x", 70000), `{"schema":{},"payload":{"id":1}}`} {
		m := primitive.NewMessage("t", []byte(body))
		m.Flag = int32(i)
		if i%2 == 0 {
			m.WithProperty(KeyProperty, strings.Repeat("k", i*100+1))
		}
		msgs = append(msgs, m)
	}
	want := producer.MarshalMessageBatch(msgs...)
	got := marshalBatch(nil, msgs)
	if !bytes.Equal(got, want) {
		t.Fatalf("marshalBatch differs from the client's: %d bytes against %d", len(got), len(want))
	}
	// Into a reused buffer, larger than the batch and holding an older one.
	old := append(make([]byte, 0, 2*len(want)), want[:100]...)
	if again := marshalBatch(old[:0], msgs); !bytes.Equal(again, want) || &again[0] != &old[:1][0] {
		t.Fatalf("marshalBatch into a reused buffer: equal %v, same buffer %v", bytes.Equal(again, want), &again[0] == &old[:1][0])
	}
}

// TestMarshalBatchManyProperties: messages of several properties, as the
// publisher makes them (keys, tag, key, ID, headers), are written as the
// client writes them: each message's header and body byte for byte, and
// its properties the same set, whose order the client does not fix.
func TestMarshalBatchManyProperties(t *testing.T) {
	var msgs []*primitive.Message
	for i := range 5 {
		m := primitive.NewMessage("t", []byte(strings.Repeat("v", 100*i)))
		m.WithProperty(primitive.PropertyKeys, strings.Repeat("1", i+1))
		m.WithProperty(primitive.PropertyTags, "events")
		m.WithProperty(KeyProperty, `{"schema":{"type":"struct"},"payload":{"id":`+strings.Repeat("9", 300*i+1)+`}}`)
		m.WithProperty(IDProperty, "1-"+strings.Repeat("2", i+1))
		if i%2 == 1 {
			m.WithProperty(HeaderPropertyPrefix+schema.HeaderTxEnd, "true")
		}
		msgs = append(msgs, m)
	}
	got, want := splitBatch(t, marshalBatch(nil, msgs)), splitBatch(t, producer.MarshalMessageBatch(msgs...))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("marshalBatch differs from the client's:\n%q\n%q", got, want)
	}
}

// batchMessage is one message of a batch body: everything before its
// properties, and its properties as a set.
type batchMessage struct {
	head  []byte
	props map[string]string
}

func splitBatch(t *testing.T, b []byte) []batchMessage {
	t.Helper()
	var out []batchMessage
	for len(b) > 0 {
		if len(b) < 22 {
			t.Fatalf("short batch rest: %q", b)
		}
		total := int(binary.BigEndian.Uint32(b))
		bodyLen := int(binary.BigEndian.Uint32(b[16:]))
		propsAt := 20 + bodyLen
		propsLen := int(binary.BigEndian.Uint16(b[propsAt:]))
		if total != propsAt+2+propsLen || total > len(b) {
			t.Fatalf("message sizes do not add up: total %d, body %d, properties %d", total, bodyLen, propsLen)
		}
		m := primitive.NewMessage("t", nil)
		m.UnmarshalProperties(b[propsAt+2 : total])
		if m.MarshallProperties() == "" && propsLen != 0 {
			t.Fatalf("properties %q do not parse", b[propsAt+2:total])
		}
		out = append(out, batchMessage{head: b[:propsAt+2], props: m.GetProperties()})
		b = b[total:]
	}
	return out
}

// TestBatchSenderSendsOneBatch: several messages of a topic go to the
// client as one batch message of their queue holding what the client's
// own batch would; one message, or messages of two topics, go as they are.
func TestBatchSenderSendsOneBatch(t *testing.T) {
	f := &callRecorder{}
	s := batchSender{f}
	mq := &primitive.MessageQueue{Topic: "t", BrokerName: "b", QueueId: 2}
	var msgs []*primitive.Message
	for _, body := range []string{"a", "bb", "ccc"} {
		m := primitive.NewMessage("t", []byte(body))
		m.Queue = mq
		m.WithProperty(IDProperty, body)
		msgs = append(msgs, m)
	}
	if _, err := s.SendSync(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendSync(context.Background(), msgs[0]); err != nil {
		t.Fatal(err)
	}
	other := primitive.NewMessage("u", []byte("d"))
	if _, err := s.SendSync(context.Background(), msgs[1], other); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 3 {
		t.Fatalf("%d sends, want 3", len(f.calls))
	}
	b := f.calls[0]
	if len(b) != 1 || !b[0].Batch || b[0].Topic != "t" || b[0].Queue != mq || !bytes.Equal(b[0].Body, producer.MarshalMessageBatch(msgs...)) {
		t.Fatalf("batch sent as %+v", b)
	}
	if len(f.calls[1]) != 1 || f.calls[1][0] != msgs[0] || f.calls[1][0].Batch {
		t.Fatalf("one message sent as %+v", f.calls[1])
	}
	if len(f.calls[2]) != 2 || f.calls[2][1] != other {
		t.Fatalf("two topics sent as %+v", f.calls[2])
	}
}

// callRecorder records the messages of every send.
type callRecorder struct{ calls [][]*primitive.Message }

func (r *callRecorder) SendSync(_ context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error) {
	r.calls = append(r.calls, msgs)
	return &primitive.SendResult{Status: primitive.SendOK}, nil
}
