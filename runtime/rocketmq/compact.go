package rocketmq

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/schema"
)

// Message formats (Config.Format).
const (
	// FormatJSON: the body is the codec's value, a
	// {"schema":…,"payload":…} envelope, and property sluice_key its key.
	FormatJSON = "json"
	// FormatCompact: schemas by reference. The body is the envelope's
	// payload only (what Debezium writes with schemas.enable=false) and
	// sluice_key the key's payload; property sluice_schema names the
	// record's key and value schemas, which the publisher stores once in
	// the topic SchemaTopic(TopicPrefix) before the first message using
	// them (and again every schemaResend, so that the broker's retention
	// never drops a schema still in use). A plain consumer reads the body
	// as JSON; the subscriber and `sluice tail --schemas` look the schemas
	// up. A message is about a quarter of the JSON format's size for a
	// narrow table. Records without a value schema stay in the JSON format.
	FormatCompact = "compact"
	// DefaultFormat is the format of a Config without one: compact, the
	// payload Debezium's JsonConverter writes with schemas.enable=false
	// (what many Debezium users run), its schema still at hand by
	// reference. Sending each record's schema with it (FormatJSON) cost
	// sluice 7.5x the raw clients' CPU per event in `sluice bench
	// --transport rocketmq` (200k rows, a loaded 2-core machine: 218.8
	// against 29.0 CPU s per million events, 4,463 bytes a record, peak
	// RSS 221 MiB); compact 1.83x (27.5 against 15.0 s, 827 bytes,
	// 175 MiB).
	DefaultFormat = FormatCompact
	// SchemaProperty names the schemas of a compact message: 24 hex
	// digits of the SHA-256 of its key schema JSON, a newline and its
	// value schema JSON.
	SchemaProperty = "sluice_schema"
	// schemaResend: a publisher stores a schema again when it last did so
	// this long ago (the broker keeps messages 72 hours by default).
	schemaResend = time.Hour
)

// SchemaTopic is the topic holding the schemas of compact messages: one
// message per schema, body {"id":…,"key":<key schema>,"value":<value
// schema>} (Connect schema JSON; key null when the table has none).
func SchemaTopic(prefix string) string { return sanitizeName(prefix + "_schemas") }

// schemaEntry is one stored schema pair.
type schemaEntry struct {
	ID    string          `json:"id"`
	Key   json.RawMessage `json:"key"`
	Value json.RawMessage `json:"value"`
}

func schemaID(key, value []byte) string {
	h := sha256.New()
	h.Write(key)
	h.Write([]byte{'\n'})
	h.Write(value)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// splitEnvelope splits `{"schema":S,"payload":P}` as the JSON converter
// writes it (no spaces) into S and P; ok false for anything else.
func splitEnvelope(b []byte) (sch, payload []byte, ok bool) {
	const head, mid = `{"schema":`, `,"payload":`
	if !bytes.HasPrefix(b, []byte(head)) || len(b) < len(head)+len(mid)+2 || b[len(b)-1] != '}' {
		return nil, nil, false
	}
	end := skipValue(b, len(head))
	if end < 0 || !bytes.HasPrefix(b[end:], []byte(mid)) {
		return nil, nil, false
	}
	return b[len(head):end], b[end+len(mid) : len(b)-1], true
}

// compactEncoder turns the codec's envelopes into compact messages and
// stores their schemas. Safe for concurrent use.
type compactEncoder struct {
	topic string
	store func(ctx context.Context, msg *primitive.Message) error // sends one message to topic

	mu     sync.Mutex
	splits map[splitKey]*compactSplit
	sent   map[string]time.Time // schema ID -> when last stored
}

// splitKey names the split of a record: its schemas and whether it has a
// key.
type splitKey struct {
	key, value *schema.Schema
	hasKey     bool
}

type compactSplit struct {
	keyPrefix, valuePrefix []byte // `{"schema":S,"payload":`
	id                     string
}

func newCompactEncoder(topic string, store func(ctx context.Context, msg *primitive.Message) error) *compactEncoder {
	return &compactEncoder{topic: topic, store: store, splits: map[splitKey]*compactSplit{}, sent: map[string]time.Time{}}
}

// compact returns the payloads of key and value and the schema ID, storing
// the schemas first when needed; ok false leaves the record in the JSON
// format (no value schema).
func (c *compactEncoder) compact(ctx context.Context, rec *schema.Record, key, value []byte) (k, v []byte, id string, ok bool, err error) {
	if rec.ValueSchema == nil {
		return key, value, "", false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A record of the table without a key (a TRUNCATE carries the table's
	// schemas but no key) has a split of its own: one made from it has no
	// key prefix, and cutting a later record's key by that prefix would
	// leave its whole envelope, less the last brace, as the payload.
	sk := splitKey{rec.KeySchema, rec.ValueSchema, key != nil}
	sp := c.splits[sk]
	if sp == nil || !bytes.HasPrefix(value, sp.valuePrefix) || (key != nil && !bytes.HasPrefix(key, sp.keyPrefix)) {
		vs, _, vok := splitEnvelope(value)
		if !vok {
			return nil, nil, "", false, fmt.Errorf("%w: format %q needs the JSON codec with schemas ({\"schema\":…,\"payload\":…} values)", ErrConfig, FormatCompact)
		}
		var ks []byte
		sp = &compactSplit{valuePrefix: bytes.Clone(value[:len(`{"schema":`)+len(vs)+len(`,"payload":`)])}
		if key != nil {
			var kok bool
			if ks, _, kok = splitEnvelope(key); !kok {
				return nil, nil, "", false, fmt.Errorf("%w: format %q needs the JSON codec with schemas (keys too)", ErrConfig, FormatCompact)
			}
			sp.keyPrefix = bytes.Clone(key[:len(`{"schema":`)+len(ks)+len(`,"payload":`)])
		}
		sp.id = schemaID(ks, vs)
		if len(c.splits) >= maxCachedSplits {
			clear(c.splits)
		}
		c.splits[sk] = sp
	}
	if err := c.storeDueLocked(ctx, rec, sp); err != nil {
		return nil, nil, "", false, err
	}
	// Copies: the message then holds the payload, not the whole envelope.
	v = bytes.Clone(value[len(sp.valuePrefix) : len(value)-1])
	if key != nil {
		k = bytes.Clone(key[len(sp.keyPrefix) : len(key)-1])
	}
	return k, v, sp.id, true, nil
}

// payloadEncoder is an optional capability of a Codec (converter.JSON has
// it): the payloads of a data record's envelopes, byte for byte, without
// writing their schemas.
type payloadEncoder interface {
	EncodePayloads(r *schema.Record) (key, value []byte, err error)
}

// cached returns the schema ID of rec's split, hasKey telling whether rec
// encodes with a key, storing the schemas again when due; ok false when
// compact has not split a record of these schemas yet (the caller then
// encodes the whole envelopes and calls compact, which makes the split).
// The split holds for every record of the same schema objects: the codec
// writes one schema envelope per schema object (schemas are not mutated
// once used), which is what compact checked it against.
func (c *compactEncoder) cached(ctx context.Context, rec *schema.Record, hasKey bool) (id string, ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sp := c.splits[splitKey{rec.KeySchema, rec.ValueSchema, hasKey}]
	if sp == nil {
		return "", false, nil
	}
	if err := c.storeDueLocked(ctx, rec, sp); err != nil {
		return "", false, err
	}
	return sp.id, true, nil
}

// storeDueLocked stores sp's schemas unless they were stored less than
// schemaResend ago; c.mu held.
func (c *compactEncoder) storeDueLocked(ctx context.Context, rec *schema.Record, sp *compactSplit) error {
	if last, done := c.sent[sp.id]; !done || time.Since(last) > schemaResend {
		var ks []byte
		if sp.keyPrefix != nil {
			ks = sp.keyPrefix[len(`{"schema":`) : len(sp.keyPrefix)-len(`,"payload":`)]
		}
		vs := sp.valuePrefix[len(`{"schema":`) : len(sp.valuePrefix)-len(`,"payload":`)]
		// By hand, not json.Marshal: that would escape <, > and & in the
		// schemas, and the ID is over their exact bytes.
		body := append([]byte(`{"id":"`+sp.id+`","key":`), nullIfEmpty(ks)...)
		body = append(append(append(body, `,"value":`...), vs...), '}')
		msg := primitive.NewMessage(c.topic, body)
		msg.WithKeys([]string{sp.id})
		msg.WithProperty(SchemaProperty, sp.id)
		if err := c.store(ctx, msg); err != nil {
			return fmt.Errorf("rocketmq: store schema %s of %s in topic %q: %w", sp.id, rec.Table, c.topic, err)
		}
		if len(c.sent) >= maxCachedSplits {
			clear(c.sent)
		}
		c.sent[sp.id] = time.Now()
	}
	return nil
}

// maxCachedSplits bounds the encoder's caches; past it they start over.
const maxCachedSplits = 4096

func nullIfEmpty(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// schemaLookup finds the schemas of compact messages, reading the schema
// topic when it meets an ID it does not know. Safe for concurrent use.
type schemaLookup struct {
	cfg   Config
	topic string
	read  func(ctx context.Context) ([]schemaEntry, error) // the topic's entries

	mu    sync.Mutex
	known map[string]schemaEntry
}

func newSchemaLookup(cfg Config) *schemaLookup {
	l := &schemaLookup{cfg: cfg, topic: SchemaTopic(cfg.TopicPrefix), known: map[string]schemaEntry{}}
	l.read = l.readTopic
	return l
}

// errSchemaMissing: a compact message names a schema its topic lacks.
var errSchemaMissing = errors.New("schema not found")

func (l *schemaLookup) get(ctx context.Context, id string) (schemaEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.known[id]; ok {
		return e, nil
	}
	// The schema was confirmed before the message naming it was sent, but
	// the broker indexes a stored message a moment later: look again
	// before calling it missing.
	for attempt, wait := 0, 100*time.Millisecond; attempt < 3; attempt, wait = attempt+1, 3*wait {
		if attempt > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return schemaEntry{}, ctx.Err()
			}
		}
		entries, err := l.read(ctx)
		if err != nil {
			return schemaEntry{}, fmt.Errorf("rocketmq: read schema topic %q: %w", l.topic, err)
		}
		if len(l.known)+len(entries) > maxCachedSplits {
			clear(l.known)
		}
		for _, e := range entries {
			if schemaID(keyOrNil(e.Key), e.Value) == e.ID {
				l.known[e.ID] = e
			}
		}
		if e, ok := l.known[id]; ok {
			return e, nil
		}
	}
	return schemaEntry{}, fmt.Errorf("%w: schema %s is not in topic %q (the publisher stores it there before the first message using it): was the topic deleted or its messages expired, or do publisher and sink use different topic_prefix settings?", errSchemaMissing, id, l.topic)
}

func keyOrNil(k json.RawMessage) []byte {
	if string(k) == "null" {
		return nil
	}
	return k
}

func (l *schemaLookup) readTopic(ctx context.Context) ([]schemaEntry, error) {
	var out []schemaEntry
	err := Tail(ctx, l.cfg, TailOptions{Topics: []string{l.topic}, From: TailFromBeginning, Group: l.cfg.Pipeline + "-schemas"}, func(m TailMessage) error {
		var e schemaEntry
		if json.Unmarshal(m.Value, &e) == nil && e.ID != "" {
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// expand rebuilds the JSON format's key and value of a compact message.
func (e schemaEntry) expand(key, value []byte) (k, v []byte) {
	v = make([]byte, 0, len(`{"schema":,"payload":}`)+len(e.Value)+len(value))
	v = append(append(append(append(append(v, `{"schema":`...), e.Value...), `,"payload":`...), value...), '}')
	if key != nil {
		ks := keyOrNil(e.Key)
		if ks == nil {
			return key, v
		}
		k = make([]byte, 0, len(`{"schema":,"payload":}`)+len(ks)+len(key))
		k = append(append(append(append(append(k, `{"schema":`...), ks...), `,"payload":`...), key...), '}')
	}
	return k, v
}
