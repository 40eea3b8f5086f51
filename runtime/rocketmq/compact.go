package rocketmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/converter"
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

// The transport-neutral part of schemas by reference is the converter's
// (SchemaRefs, SchemaBook); what follows is where RocketMQ keeps them.
type (
	schemaEntry    = converter.SchemaEntry
	payloadEncoder = converter.PayloadEncoder
)

var errSchemaMissing = converter.ErrSchemaMissing

func splitEnvelope(b []byte) (sch, payload []byte, ok bool) { return converter.SplitEnvelope(b) }

// compactEncoder turns the codec's envelopes into compact messages and
// stores their schemas in the schema topic, as messages keyed by their
// ID, again every schemaResend. Safe for concurrent use.
type compactEncoder struct {
	topic string
	refs  *converter.SchemaRefs
}

func newCompactEncoder(topic string, store func(ctx context.Context, msg *primitive.Message) error) *compactEncoder {
	return &compactEncoder{topic: topic, refs: converter.NewSchemaRefs(func(ctx context.Context, id string, body []byte) error {
		msg := primitive.NewMessage(topic, body)
		msg.WithKeys([]string{id})
		msg.WithProperty(SchemaProperty, id)
		return store(ctx, msg)
	}, schemaResend)}
}

// compact is converter.SchemaRefs.Compact with this transport's errors.
func (c *compactEncoder) compact(ctx context.Context, rec *schema.Record, key, value []byte) (k, v []byte, id string, ok bool, err error) {
	k, v, id, ok, err = c.refs.Compact(ctx, rec, key, value)
	return k, v, id, ok, c.wrap(err)
}

// cached is converter.SchemaRefs.Cached with this transport's errors.
func (c *compactEncoder) cached(ctx context.Context, rec *schema.Record, hasKey bool) (id string, ok bool, err error) {
	id, ok, err = c.refs.Cached(ctx, rec, hasKey)
	return id, ok, c.wrap(err)
}

func (c *compactEncoder) wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, converter.ErrNotEnvelope):
		return fmt.Errorf("%w: format %q: %w", ErrConfig, FormatCompact, err)
	default:
		return fmt.Errorf("rocketmq: topic %q: %w", c.topic, err)
	}
}

// schemaLookup finds the schemas of compact messages, reading the schema
// topic from its start when it meets an ID it does not know. Safe for
// concurrent use.
type schemaLookup struct {
	cfg  Config
	read func(ctx context.Context) ([]schemaEntry, error) // the topic's entries
	book converter.SchemaBook
}

func newSchemaLookup(cfg Config) *schemaLookup {
	l := &schemaLookup{cfg: cfg}
	l.read = l.readTopic
	l.book.Read = func(ctx context.Context) ([]schemaEntry, error) { return l.read(ctx) }
	l.book.Where = fmt.Sprintf("topic %q", SchemaTopic(cfg.TopicPrefix))
	return l
}

func (l *schemaLookup) get(ctx context.Context, id string) (schemaEntry, error) {
	e, err := l.book.Get(ctx, id)
	if err != nil {
		return e, fmt.Errorf("rocketmq: %w", err)
	}
	return e, nil
}

func (l *schemaLookup) readTopic(ctx context.Context) ([]schemaEntry, error) {
	var out []schemaEntry
	err := Tail(ctx, l.cfg, TailOptions{Topics: []string{SchemaTopic(l.cfg.TopicPrefix)}, From: TailFromBeginning, Group: l.cfg.Pipeline + "-schemas"}, func(m TailMessage) error {
		var e schemaEntry
		if json.Unmarshal(m.Value, &e) == nil && e.ID != "" {
			out = append(out, e)
		}
		return nil
	})
	return out, err
}
