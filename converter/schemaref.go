package converter

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

	"github.com/sluicecdc/sluice/schema"
)

// Schemas by reference: the transports' compact formats send a record's
// payloads alone (what Debezium's JsonConverter writes with
// schemas.enable=false) and name the key and value schemas by an ID; the
// schemas are stored once where consumers find them (a topic of their
// own). SchemaRefs is the publishing side, SchemaBook the consuming side;
// the transports say where the schemas are stored and how they are read.

// SchemaEntry is one stored schema pair: the body of a schema message is
// {"id":…,"key":<key schema>,"value":<value schema>} (Connect schema JSON;
// key null when the table has none).
type SchemaEntry struct {
	ID    string          `json:"id"`
	Key   json.RawMessage `json:"key"`
	Value json.RawMessage `json:"value"`
}

// SchemaID names a schema pair: the first 12 bytes, in hex, of the SHA-256
// of the key schema's JSON, a newline and the value schema's JSON (key
// empty when the table has no key).
func SchemaID(key, value []byte) string {
	h := sha256.New()
	h.Write(key)
	h.Write([]byte{'\n'})
	h.Write(value)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// SplitEnvelope splits `{"schema":S,"payload":P}` as the JSON converter
// writes it (no spaces) into S and P; ok false for anything else.
func SplitEnvelope(b []byte) (sch, payload []byte, ok bool) {
	const head, mid = `{"schema":`, `,"payload":`
	if !bytes.HasPrefix(b, []byte(head)) || len(b) < len(head)+len(mid)+2 || b[len(b)-1] != '}' {
		return nil, nil, false
	}
	end := SkipValue(b, len(head))
	if end < 0 || !bytes.HasPrefix(b[end:], []byte(mid)) {
		return nil, nil, false
	}
	return b[len(head):end], b[end+len(mid) : len(b)-1], true
}

// SkipValue returns the index after the JSON value at b[i], or -1. It
// finds the value's end (strings, nesting), not its validity.
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		j, _ := StringEnd(b, i)
		return j
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				j, _ := StringEnd(b, i)
				if j < 0 {
					return -1
				}
				i = j - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	default: // a number, true, false, null
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// StringEnd returns the index after the JSON string at b[i] (-1 when b[i]
// starts none or it is not terminated) and whether it holds an escape.
func StringEnd(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return -1, false
	}
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, false
}

// ErrNotEnvelope: a compact format met a value that is not the JSON
// codec's {"schema":…,"payload":…} envelope.
var ErrNotEnvelope = errors.New(`the compact format needs the JSON codec with schemas ({"schema":…,"payload":…} keys and values)`)

// SchemaStore stores one schema message: body under the key id. It
// returns once the broker has it.
type SchemaStore func(ctx context.Context, id string, body []byte) error

// SchemaRefs turns the JSON codec's envelopes into payloads and schema
// IDs, storing each schema pair before the first record naming it (and
// again when Resend has passed since, when Resend is above zero). Safe
// for concurrent use.
type SchemaRefs struct {
	store  SchemaStore
	resend time.Duration

	mu     sync.Mutex
	splits map[splitKey]*schemaSplit
	sent   map[string]time.Time // schema ID -> when last stored
}

// splitKey names the split of a record: its schemas and whether it has a
// key.
type splitKey struct {
	key, value *schema.Schema
	hasKey     bool
}

type schemaSplit struct {
	keyPrefix, valuePrefix []byte // `{"schema":S,"payload":`
	id                     string
}

// maxCachedSplits bounds the caches; past it they start over.
const maxCachedSplits = 4096

// NewSchemaRefs returns a SchemaRefs storing schemas with store, again
// each resend (0: once per SchemaRefs, for a store that keeps them, such
// as a compacted topic).
func NewSchemaRefs(store SchemaStore, resend time.Duration) *SchemaRefs {
	return &SchemaRefs{store: store, resend: resend, splits: map[splitKey]*schemaSplit{}, sent: map[string]time.Time{}}
}

// Compact returns the payloads of key and value and the schema ID, storing
// the schemas first when needed; ok false leaves the record whole (it has
// no value schema).
func (c *SchemaRefs) Compact(ctx context.Context, rec *schema.Record, key, value []byte) (k, v []byte, id string, ok bool, err error) {
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
		vs, _, vok := SplitEnvelope(value)
		if !vok {
			return nil, nil, "", false, ErrNotEnvelope
		}
		var ks []byte
		sp = &schemaSplit{valuePrefix: bytes.Clone(value[:len(`{"schema":`)+len(vs)+len(`,"payload":`)])}
		if key != nil {
			var kok bool
			if ks, _, kok = SplitEnvelope(key); !kok {
				return nil, nil, "", false, ErrNotEnvelope
			}
			sp.keyPrefix = bytes.Clone(key[:len(`{"schema":`)+len(ks)+len(`,"payload":`)])
		}
		sp.id = SchemaID(ks, vs)
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

// Cached returns the schema ID of rec's split, hasKey telling whether rec
// encodes with a key, storing the schemas again when due; ok false when
// Compact has not split a record of these schemas yet (the caller then
// encodes the whole envelopes and calls Compact, which makes the split).
// The split holds for every record of the same schema objects: the codec
// writes one schema envelope per schema object (schemas are not mutated
// once used), which is what Compact checked it against.
func (c *SchemaRefs) Cached(ctx context.Context, rec *schema.Record, hasKey bool) (id string, ok bool, err error) {
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

// storeDueLocked stores sp's schemas unless they were stored already (less
// than resend ago, when resend is set); c.mu held.
func (c *SchemaRefs) storeDueLocked(ctx context.Context, rec *schema.Record, sp *schemaSplit) error {
	last, done := c.sent[sp.id]
	if done && (c.resend <= 0 || time.Since(last) <= c.resend) {
		return nil
	}
	var ks []byte
	if sp.keyPrefix != nil {
		ks = sp.keyPrefix[len(`{"schema":`) : len(sp.keyPrefix)-len(`,"payload":`)]
	}
	vs := sp.valuePrefix[len(`{"schema":`) : len(sp.valuePrefix)-len(`,"payload":`)]
	// By hand, not json.Marshal: that would escape <, > and & in the
	// schemas, and the ID is over their exact bytes.
	body := append([]byte(`{"id":"`+sp.id+`","key":`), nullIfEmpty(ks)...)
	body = append(append(append(body, `,"value":`...), vs...), '}')
	if err := c.store(ctx, sp.id, body); err != nil {
		return fmt.Errorf("store schema %s of %s: %w", sp.id, rec.Table, err)
	}
	if len(c.sent) >= maxCachedSplits {
		clear(c.sent)
	}
	c.sent[sp.id] = time.Now()
	return nil
}

func nullIfEmpty(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// ErrSchemaMissing: a compact message names a schema its store lacks.
var ErrSchemaMissing = errors.New("schema not found")

// SchemaBook finds the schemas of compact messages, reading the store
// (Read) when it meets an ID it does not know. Safe for concurrent use.
type SchemaBook struct {
	// Read returns the store's entries (all of them, or at least every
	// one stored so far).
	Read func(ctx context.Context) ([]SchemaEntry, error)
	// Where names the store in errors ("topic \"x\"").
	Where string

	mu    sync.Mutex
	known map[string]SchemaEntry
}

// Get returns the entry of id, reading the store (up to three times, since
// a broker may index a stored message a moment after confirming it) when
// id is not known yet. An entry whose ID does not match its schemas is
// ignored.
func (l *SchemaBook) Get(ctx context.Context, id string) (SchemaEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.known[id]; ok {
		return e, nil
	}
	if l.known == nil {
		l.known = map[string]SchemaEntry{}
	}
	for attempt, wait := 0, 100*time.Millisecond; attempt < 3; attempt, wait = attempt+1, 3*wait {
		if attempt > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return SchemaEntry{}, ctx.Err()
			}
		}
		entries, err := l.Read(ctx)
		if err != nil {
			return SchemaEntry{}, fmt.Errorf("read the schemas in %s: %w", l.Where, err)
		}
		l.keepLocked(entries)
		if e, ok := l.known[id]; ok {
			return e, nil
		}
	}
	return SchemaEntry{}, fmt.Errorf("%w: schema %s is not in %s (the publisher stores it there before the first message using it): was it deleted or its messages expired, or do publisher and sink use different topic_prefix settings?", ErrSchemaMissing, id, l.Where)
}

func keyOrNil(k json.RawMessage) []byte {
	if string(k) == "null" {
		return nil
	}
	return k
}

// Expand rebuilds the JSON format's key and value of a compact message
// from its payloads.
func (e SchemaEntry) Expand(key, value []byte) (k, v []byte) {
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

// PayloadEncoder is an optional capability of a codec (JSON has it): the
// payloads of a data record's envelopes, byte for byte, without writing
// their schemas.
type PayloadEncoder interface {
	EncodePayloads(r *schema.Record) (key, value []byte, err error)
}

// KeySchema returns the entry's key schema, nil when the table has none.
func (e SchemaEntry) KeySchema() []byte { return keyOrNil(e.Key) }

// PartsDecoder is an optional capability of a codec (JSON has it): it
// decodes a compact message's payloads with their schemas, without
// rebuilt envelopes.
type PartsDecoder interface {
	DecodeParts(keySchema, key, valueSchema, value []byte) (schema.Record, error)
}

// Preload reads the store once and keeps what it holds, so that the
// first records naming known schemas need not wait for a read. An error
// (a store that does not exist yet) leaves the book as it was.
func (l *SchemaBook) Preload(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	entries, err := l.Read(ctx)
	if err != nil {
		return err
	}
	l.keepLocked(entries)
	return nil
}

// keepLocked adds the entries whose ID matches their schemas, starting the
// cache over when it would grow past its bound; l.mu held.
func (l *SchemaBook) keepLocked(entries []SchemaEntry) {
	if l.known == nil {
		l.known = map[string]SchemaEntry{}
	}
	if len(l.known)+len(entries) > maxCachedSplits {
		clear(l.known)
	}
	for _, e := range entries {
		if SchemaID(keyOrNil(e.Key), e.Value) == e.ID {
			l.known[e.ID] = e
		}
	}
}
