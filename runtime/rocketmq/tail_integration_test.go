package rocketmq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"

	"github.com/sluicecdc/sluice/schema"
)

// publishAll publishes recs in one batch and waits for its ack.
func publishAll(t *testing.T, ctx context.Context, cfg Config, recs []schema.Record) {
	t.Helper()
	p, err := NewPublisher(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	acked := make(chan error, 1)
	if err := p.Publish(ctx, recs, func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-acked:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("publish not acked")
	}
}

func deleteTopicAfter(t *testing.T, ns []string, topic string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ci, err := fetchClusterInfo(ctx, ns)
		if err != nil {
			return
		}
		adm, err := newAdmin(Config{NameServers: ns})
		if err != nil {
			return
		}
		defer adm.Close()
		for _, addr := range ci.masters(DefaultCluster) {
			_ = adm.DeleteTopic(ctx, admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(addr), admin.WithNameSrvAddr(ns))
		}
	})
}

// TestIntegrationTail publishes versions of several keys of two tables and
// reads them back with Tail: all of them, then one table and key only, then
// with a limit, then from "now" (nothing old); and checks Tail stored no
// offset for its group.
func TestIntegrationTail(t *testing.T) {
	a := schema.TableID{Database: "db", Table: "a"}
	b := schema.TableID{Database: "db", Table: "b"}
	cfg := itConfig(t, a, b)
	cfg.Queues = 2
	cfg.TopicPrefix = cfg.Pipeline
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var recs []schema.Record
	for v := int64(1); v <= 3; v++ {
		for k := int64(1); k <= 4; k++ {
			recs = append(recs, testRecord(a, k, v), testRecord(b, k, v))
		}
	}
	publishAll(t, ctx, cfg, recs)

	collect := func(opts TailOptions) []TailMessage {
		t.Helper()
		var got []TailMessage
		if err := Tail(ctx, cfg, opts, func(m TailMessage) error { got = append(got, m); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := collect(TailOptions{}); len(got) != len(recs) {
		t.Fatalf("tail of everything: %d messages, want %d", len(got), len(recs))
	}

	got := collect(TailOptions{Topics: []string{TopicName(cfg.TopicPrefix, "db", "a", TopicPerTable)}, Table: "a", Key: "3"})
	if len(got) != 3 {
		t.Fatalf("tail of a key 3: %d messages, want 3: %+v", len(got), got)
	}
	for i, m := range got {
		rec, err := cfg.Codec.Decode(m.Key, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Table != a || rec.KeyString() != "3" || rec.After[1] != int64(i+1) {
			t.Errorf("message %d: %s key %s after %v, want %s key 3 version %d", i, rec.Table, rec.KeyString(), rec.After, a, i+1)
		}
		if i > 0 && (m.Queue != got[0].Queue || m.Offset <= got[i-1].Offset) {
			t.Errorf("message %d at queue %d offset %d after queue %d offset %d: one key must stay on one queue, in order", i, m.Queue, m.Offset, got[i-1].Queue, got[i-1].Offset)
		}
	}
	if got := collect(TailOptions{Table: "b", Limit: 5}); len(got) != 5 {
		t.Fatalf("tail with limit 5: %d messages", len(got))
	}
	if got := collect(TailOptions{From: TailFromNow}); len(got) != 0 {
		t.Fatalf("tail from now without follow: %d old messages", len(got))
	}

	// Follow from now sees a message published after it started.
	followed := make(chan TailMessage, 1)
	done := make(chan error, 1)
	go func() {
		done <- Tail(ctx, cfg, TailOptions{From: TailFromNow, Follow: true, Limit: 1}, func(m TailMessage) error { followed <- m; return nil })
	}()
	time.Sleep(time.Second) // let it take the end offsets first
	publishAll(t, ctx, cfg, []schema.Record{testRecord(b, 9, 1)})
	select {
	case m := <-followed:
		if m.Properties["KEYS"] != "9" {
			t.Errorf("followed message has key %q, want 9", m.Properties["KEYS"])
		}
	case <-time.After(30 * time.Second):
		t.Fatal("tail --follow did not see a new message")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Tail never commits: for the queue of key 3 (3 or more messages read)
	// the broker has no offset for the tail group (it answers "not found",
	// or 0 for a queue that still starts at 0).
	keyQueue := strconv.Itoa(got[0].Queue)
	r, err := fetchRoute(ctx, cfg.NameServers, TopicName(cfg.TopicPrefix, "db", "a", TopicPerTable))
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := invoke(ctx, r.BrokerDatas[0].BrokerAddrs["0"], 14, map[string]string{ // QUERY_CONSUMER_OFFSET
		"consumerGroup": sanitizeName(cfg.Pipeline + "-tail"), "topic": TopicName(cfg.TopicPrefix, "db", "a", TopicPerTable), "queueId": keyQueue})
	if err != nil {
		t.Fatal(err)
	}
	if h.Code == 0 && h.ExtFields["offset"] != "0" && h.ExtFields["offset"] != "-1" {
		t.Errorf("the tail group has a stored offset %q: Tail must not commit", h.ExtFields["offset"])
	}
}

// TestIntegrationDeadLetter sends a record with a cause and its delivery
// and reads it back from the dead-letter topic with Tail.
func TestIntegrationDeadLetter(t *testing.T) {
	id := schema.TableID{Database: "db", Table: "t1"}
	cfg := itConfig(t, id)
	cfg.TopicPrefix = cfg.Pipeline
	deleteTopicAfter(t, cfg.NameServers, DeadLetterTopic(cfg.TopicPrefix))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := NewDeadLetter(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rec := testRecord(id, 42, 7)
	rec.Delivery = &schema.Delivery{Topic: "orig_topic", Queue: 3, Offset: 1234}
	cause := fmt.Errorf("value too long for type character varying(4)")
	if err := d.Send(ctx, rec, cause); err != nil {
		t.Fatal(err)
	}
	plain := testRecord(id, 43, 1) // no delivery
	if err := d.Send(ctx, plain, errors.New("second")); err != nil {
		t.Fatal(err)
	}
	var got []TailMessage
	if err := Tail(ctx, cfg, TailOptions{Topics: []string{d.Topic()}}, func(m TailMessage) error { got = append(got, m); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("dead-letter topic has %d messages, want 2", len(got))
	}
	byKey := map[string]TailMessage{}
	for _, m := range got {
		byKey[m.Properties["KEYS"]] = m
	}
	m := byKey["42"]
	want := map[string]string{DeadLetterErrorProperty: cause.Error(), DeadLetterTableProperty: "db.t1",
		DeadLetterTopicProperty: "orig_topic", DeadLetterQueueProperty: "3", DeadLetterOffsetProperty: strconv.Itoa(1234), "TAGS": "t1"}
	for k, v := range want {
		if m.Properties[k] != v {
			t.Errorf("property %s = %q, want %q", k, m.Properties[k], v)
		}
	}
	back, err := cfg.Codec.Decode(m.Key, m.Value)
	if err != nil {
		t.Fatal(err)
	}
	if back.KeyString() != "42" || back.After[1] != int64(7) {
		t.Errorf("dead letter decodes to key %s after %v", back.KeyString(), back.After)
	}
	p := byKey["43"].Properties
	if p[DeadLetterErrorProperty] != "second" || p[DeadLetterTopicProperty] != "" || p[DeadLetterOffsetProperty] != "" {
		t.Errorf("record without delivery: properties %v", p)
	}
}
