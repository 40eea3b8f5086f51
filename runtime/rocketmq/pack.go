package rocketmq

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/schema"
)

// FormatPacked: the compact format's payloads and schema references, with
// the records of one queue sent one after another packed into messages of
// about PackBytes each instead of one message per record. The broker and
// both clients pay per message (store, index, pull, decode), so a pack of
// dozens of records costs them about what one record did.
//
// A packed message has property FormatProperty "packed", RecordsProperty
// (how many records it holds) and the table's tag, and no KEYS. Its body is
// one line per record, each line a JSON object ending in "\n":
//
//	{"id":"<sluice_id>","keys":"<message key>","schema":"<sluice_schema>","key":<key payload>,"value":<value payload>,"headers":{"<name>":"<value>"}}
//
// with "id" and "value" always there and the others only when the record
// has them: the same fields a compact message carries in its body and
// properties (a record without a value schema carries its whole envelope
// in "value" and no "schema", as in the compact format). Lines of one pack
// are one table's, in the queue's order. A plain consumer splits the body
// at newlines and reads each line as JSON; the subscriber and
// `sluice tail` unpack them.
const (
	FormatPacked = "packed"
	// FormatProperty names the format of a message that is not one
	// record: "packed" (FormatPacked).
	FormatProperty = "sluice_format"
	// RecordsProperty is the number of records in a packed message.
	RecordsProperty = "sluice_records"
	// PackBytes is the size a pack is filled to (a single record larger
	// than it travels alone, up to MaxMessageBytes).
	PackBytes = 32 << 10
	// packOverhead bounds what packing one record adds to the size of its
	// own message: the line's field names and quotes (~50 bytes) and the
	// pack's format, count and tag properties (~60 bytes plus the tag,
	// which the record's message carried too).
	packOverhead = 256
)

// packEntry is one record of a packed message, as the fields of a compact
// message: ID and Schema are its sluice_id and sluice_schema properties,
// Keys its message key, Key and Value the key payload (nil: none) and body,
// Headers its headers by name (DroppedColumnsProperty included).
type packEntry struct {
	ID, Keys, Schema string
	Key, Value       []byte
	Headers          map[string]string
	// Tag is the record's message tag, the pack's (not in the line).
	Tag string
	// hasID and hasSchema: the ID and schema reference are there (a
	// message of one record may lack either; a line of a pack always has
	// its ID, and its schema reference when it is not "").
	hasID, hasSchema bool
}

// messageEntry takes the fields of a message of one record: its
// properties (a copy the caller owns) and body.
func messageEntry(props map[string]string, body []byte) packEntry {
	e := packEntry{Keys: props[primitive.PropertyKeys], Value: body, Tag: props[primitive.PropertyTags]}
	e.ID, e.hasID = props[IDProperty]
	e.Schema, e.hasSchema = props[SchemaProperty]
	if k, ok := props[KeyProperty]; ok {
		e.Key = []byte(k)
	}
	for k, v := range props {
		name, isHeader := strings.CutPrefix(k, HeaderPropertyPrefix)
		if !isHeader && k != DroppedColumnsProperty {
			continue
		}
		if !isHeader {
			name = k
		}
		if e.Headers == nil {
			e.Headers = map[string]string{}
		}
		e.Headers[name] = v
	}
	return e
}

// txEndHeaders are the headers of a transaction's last record that has no
// others: shared, never written to.
var txEndHeaders = map[string]string{schema.HeaderTxEnd: "true"}

// markTxEnd marks e as its transaction's last record in its queue, as
// the message property HeaderPropertyPrefix+HeaderTxEnd marks a message.
func (e *packEntry) markTxEnd() {
	if len(e.Headers) == 0 {
		e.Headers = txEndHeaders
		return
	}
	h := maps.Clone(e.Headers)
	h[schema.HeaderTxEnd] = "true"
	e.Headers = h
}

// appendPackLine appends e as one line of a packed body.
func appendPackLine(b []byte, e *packEntry) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, e.ID)
	if e.Keys != "" {
		b = append(b, `,"keys":`...)
		b = appendJSONString(b, e.Keys)
	}
	if e.hasSchema || e.Schema != "" {
		b = append(b, `,"schema":`...)
		b = appendJSONString(b, e.Schema)
	}
	if e.Key != nil {
		b = append(b, `,"key":`...)
		b = append(b, e.Key...)
	}
	b = append(b, `,"value":`...)
	b = append(b, e.Value...)
	if len(e.Headers) > 0 {
		b = append(b, `,"headers":{`...)
		names := make([]string, 0, len(e.Headers))
		for k := range e.Headers {
			names = append(names, k)
		}
		slices.Sort(names)
		for i, k := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, e.Headers[k])
		}
		b = append(b, '}')
	}
	return append(b, "}\n"...)
}

// appendJSONString appends s as a JSON string: printable ASCII as it is,
// anything else through encoding/json (invalid UTF-8 becomes U+FFFD, as
// json.Marshal does; IDs, schema references and header values are ASCII).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// packMessages packs msgs, the publisher's messages of one queue of topic
// in order (one record each), as packEntries packs their entries.
func packMessages(topic string, msgs []*primitive.Message, limit int) (packs []*primitive.Message, sizes []int, packOf []int) {
	if len(msgs) == 0 {
		return nil, nil, nil
	}
	es := make([]packEntry, len(msgs))
	for i, m := range msgs {
		es[i] = messageEntry(m.GetProperties(), m.Body)
	}
	return packEntries(topic, msgs[len(msgs)-1].Queue, es, limit)
}

// packEntries packs es, the records of queue mq of topic in order, into
// packed messages of up to limit bytes of body, a pack per run of one
// table's (tag's) records. It returns the packs, their sizes (as
// messageSize) and, for each entry, the index of its pack.
func packEntries(topic string, mq *primitive.MessageQueue, es []packEntry, limit int) (packs []*primitive.Message, sizes []int, packOf []int) {
	packOf = make([]int, len(es))
	var body []byte
	var tag string
	n := 0
	flush := func() {
		if n == 0 {
			return
		}
		pm := primitive.NewMessage(topic, body)
		pm.Queue = mq
		pm.WithProperty(FormatProperty, FormatPacked)
		pm.WithProperty(RecordsProperty, strconv.Itoa(n))
		if tag != "" {
			pm.WithTag(tag)
		}
		packs = append(packs, pm)
		sizes = append(sizes, messageSize(pm))
		body, n = nil, 0
	}
	for i := range es {
		e := &es[i]
		if n > 0 && (e.Tag != tag || len(body)+len(e.Value)+len(e.Key)+64 > limit) {
			flush()
		}
		if n == 0 {
			// Sized for what is left, up to a full pack: a queue's
			// backlog of a few records gets a few records' buffer.
			left := 0
			for j := i; j < len(es); j++ {
				if left += len(es[j].Value) + 160; left > limit+limit/8 {
					break
				}
			}
			body = make([]byte, 0, min(left, limit+limit/8))
			tag = e.Tag
		}
		body = appendPackLine(body, e)
		n++
		packOf[i] = len(packs)
	}
	flush()
	return packs, sizes, packOf
}

// isPacked tells whether m's properties name the packed format.
func isPacked(props map[string]string) bool { return props[FormatProperty] == FormatPacked }

// errPack is a packed body that does not parse.
var errPack = errors.New("malformed packed message")

// unpack calls each with the entries of a packed body, in order, and
// returns how many there were.
func unpack(body []byte, each func(i int, e packEntry) error) (int, error) {
	n := 0
	for len(body) > 0 {
		line, rest, found := bytes.Cut(body, []byte{'\n'})
		if !found {
			return n, fmt.Errorf("%w: record %d does not end in a newline", errPack, n)
		}
		e, err := parsePackLine(line)
		if err != nil {
			return n, fmt.Errorf("%w: record %d: %w", errPack, n, err)
		}
		if err := each(n, e); err != nil {
			return n, err
		}
		n++
		body = rest
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: no record", errPack)
	}
	return n, nil
}

// parsePackLine reads one line of a packed body: a JSON object whose
// "key" and "value" are kept as raw JSON (their decoder checks them) and
// whose other known fields are strings; unknown fields are skipped.
func parsePackLine(b []byte) (packEntry, error) {
	var e packEntry
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return e, errors.New("not a JSON object")
	}
	i = skipSpace(b, i+1)
	hasValue := false
	for first := true; ; first = false {
		if i < len(b) && b[i] == '}' && first {
			i++
			break
		}
		name, j, err := jsonString(b, i)
		if err != nil {
			return e, fmt.Errorf("field name: %w", err)
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return e, fmt.Errorf("no ':' after %q", name)
		}
		i = skipSpace(b, i+1)
		switch name {
		case "id", "keys", "schema":
			s, j, err := jsonString(b, i)
			if err != nil {
				return e, fmt.Errorf("%s: %w", name, err)
			}
			switch name {
			case "id":
				e.ID, e.hasID = s, true
			case "keys":
				e.Keys = s
			default:
				e.Schema, e.hasSchema = s, true
			}
			i = j
		case "key", "value":
			j := converter.SkipValue(b, i)
			if j < 0 {
				return e, fmt.Errorf("%s: not a JSON value", name)
			}
			if name == "key" {
				e.Key = b[i:j:j]
			} else {
				e.Value, hasValue = b[i:j:j], true
			}
			i = j
		case "headers":
			h, j, err := jsonStringMap(b, i)
			if err != nil {
				return e, fmt.Errorf("headers: %w", err)
			}
			e.Headers, i = h, j
		default:
			j := converter.SkipValue(b, i)
			if j < 0 {
				return e, fmt.Errorf("%s: not a JSON value", name)
			}
			i = j
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			i++
			break
		}
		return e, fmt.Errorf("expected ',' or '}' after %q", name)
	}
	if skipSpace(b, i) != len(b) {
		return e, errors.New("data after the object")
	}
	if !e.hasID {
		return e, errors.New(`no "id"`)
	}
	if !hasValue {
		return e, errors.New(`no "value"`)
	}
	return e, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// jsonString reads the JSON string at b[i] and returns it and the index
// after it.
func jsonString(b []byte, i int) (string, int, error) {
	end, escaped := converter.StringEnd(b, i)
	if end < 0 {
		return "", i, errors.New("not a string, or not terminated")
	}
	if !escaped {
		return string(b[i+1 : end-1]), end, nil
	}
	var s string
	if err := json.Unmarshal(b[i:end], &s); err != nil {
		return "", i, err
	}
	return s, end, nil
}

// jsonStringMap reads the JSON object of strings at b[i].
func jsonStringMap(b []byte, i int) (map[string]string, int, error) {
	if i >= len(b) || b[i] != '{' {
		return nil, i, errors.New("not an object")
	}
	out := map[string]string{}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return out, i + 1, nil
	}
	for {
		k, j, err := jsonString(b, i)
		if err != nil {
			return nil, i, err
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return nil, i, fmt.Errorf("no ':' after %q", k)
		}
		v, j, err := jsonString(b, skipSpace(b, i+1))
		if err != nil {
			return nil, i, fmt.Errorf("%q: %w", k, err)
		}
		out[k] = v
		i = skipSpace(b, j)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return out, i + 1, nil
		}
		return nil, i, errors.New("expected ',' or '}'")
	}
}
