package converter

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/sluicecdc/sluice/schema"
)

// maxDepth bounds nesting in payloads.
const maxDepth = 128

// maxCachedSchemaBytes: larger schema texts are decoded but not cached.
const maxCachedSchemaBytes = 1 << 20

// envDec is the cached decoder of one envelope schema.
type envDec struct {
	change bool  // a schema-change envelope
	value  *plan // struct plan of before/after; nil when absent
	raw    []byte
}

// recentLen schemas per kind are tried by prefix comparison before the
// schema text is scanned and looked up: a memcmp instead of a parse.
const recentLen = 8

// recent is a small lock-free ring of recently decoded schemas.
type recent[T any] struct {
	slots [recentLen]atomic.Pointer[recentEntry[T]]
	next  atomic.Uint32
}

type recentEntry[T any] struct {
	raw []byte
	v   T
}

// match returns the entry whose schema text b starts with, followed by the
// end of the member (',' or '}'): a complete JSON value is self-delimiting,
// so the schema member is exactly that text.
func (r *recent[T]) match(b []byte) (*recentEntry[T], bool) {
	for i := range r.slots {
		e := r.slots[i].Load()
		if e == nil {
			return nil, false
		}
		if len(b) > len(e.raw) && string(b[:len(e.raw)]) == string(e.raw) {
			return e, true
		}
	}
	return nil, false
}

// exact returns the entry whose schema text is b.
func (r *recent[T]) exact(b []byte) (*recentEntry[T], bool) {
	for i := range r.slots {
		e := r.slots[i].Load()
		if e == nil {
			return nil, false
		}
		if string(b) == string(e.raw) {
			return e, true
		}
	}
	return nil, false
}

func (r *recent[T]) add(raw []byte, v T) {
	i := (r.next.Add(1) - 1) % recentLen // the first in slot 0: lookups stop at the first empty slot
	r.slots[i].Store(&recentEntry[T]{raw: raw, v: v})
}

// Decode is the inverse of Encode. key may be nil (a record without key).
// Events with schemas decode exactly (see the package doc); payload-only
// events get an inferred schema.
func (c *JSON) Decode(key, value []byte) (schema.Record, error) {
	r, ok := c.decodeEnvelope(value)
	if !ok {
		var err error
		if r, err = c.decodeAnyValue(value); err != nil {
			return schema.Record{}, err
		}
	}
	if len(key) == 0 || r.Op == schema.OpSchemaChange {
		return r, nil
	}
	if err := c.decodeKey(&r, key); err != nil {
		return schema.Record{}, schema.Wrapf("converter", err, "key")
	}
	return r, nil
}

// decodeEnvelope decodes value when it is `{"schema":S,"payload":P}` as
// Encode writes it, S a schema decoded lately: P is decoded straight
// away, with neither S nor P scanned first to find where they end (P is
// read once, by the decoder, which refuses text after it). ok false
// leaves value to decodeAnyValue, for every other text and every error.
func (c *JSON) decodeEnvelope(value []byte) (r schema.Record, ok bool) {
	e, payload, ok := recentEnvelope(&c.recentValue, value)
	if !ok || decodeValue(&r, e.v, payload) != nil {
		return schema.Record{}, false
	}
	return r, true
}

// recentEnvelope splits b, when it is `{"schema":S,"payload":P}` without
// spaces and S a schema text of rc, into S's entry and what P must be if
// b is such an envelope (the text up to the last brace). The caller
// decodes P as one JSON value, which proves the split: S is a whole
// value, then comes the payload member and P, then the envelope's end.
func recentEnvelope[T any](rc *recent[T], b []byte) (e *recentEntry[T], payload []byte, ok bool) {
	const head, mid = `{"schema":`, `,"payload":`
	if len(b) < len(head)+len(mid)+1 || string(b[:len(head)]) != head || b[len(b)-1] != '}' {
		return nil, nil, false
	}
	if e, ok = rc.match(b[len(head):]); !ok {
		return nil, nil, false
	}
	rest := b[len(head)+len(e.raw) : len(b)-1]
	if len(rest) < len(mid) || string(rest[:len(mid)]) != mid {
		return nil, nil, false
	}
	return e, rest[len(mid):], true
}

// decodeAnyValue decodes a value of any shape Decode accepts.
func (c *JSON) decodeAnyValue(value []byte) (schema.Record, error) {
	var r schema.Record
	var hit *recentEntry[*envDec]
	sch, payload, err := splitEnvelope(value, func(b []byte) int {
		hit = nil // a repeated "schema" member replaces an earlier hit
		if e, ok := c.recentValue.match(b); ok {
			hit = e
			return len(e.raw)
		}
		return 0
	})
	if err != nil {
		return r, schema.Wrapf("converter", err, "value")
	}
	if sch == nil {
		err = decodeSchemaless(&r, payload)
	} else {
		var ed *envDec
		if hit != nil && len(hit.raw) == len(sch) {
			ed = hit.v
		} else {
			ed, err = c.envDecoder(sch)
		}
		if err == nil {
			err = decodeValue(&r, ed, payload)
		}
	}
	if err != nil {
		return schema.Record{}, schema.Wrapf("converter", err, "value")
	}
	return r, nil
}

// DecodeParts decodes a record whose schemas travel apart from its
// payloads (RocketMQ's compact format names them by reference): the same
// record and errors as Decode of {"schema":valueSchema,"payload":value}
// and {"schema":keySchema,"payload":key}, without building those texts or
// scanning the schemas again. keySchema nil: key is decoded as Decode
// decodes a whole key (an envelope or a payload-only key); key nil or
// empty: no key. Unlike the texts Decode would get, a payload here must
// be one JSON value: text after it is an error, not another member.
func (c *JSON) DecodeParts(keySchema, key, valueSchema, value []byte) (schema.Record, error) {
	var r schema.Record
	var ed *envDec
	var err error
	if e, ok := c.recentValue.exact(valueSchema); ok {
		ed = e.v
	} else {
		ed, err = c.envDecoder(valueSchema)
	}
	if err == nil {
		err = decodeValue(&r, ed, value)
	}
	if err != nil {
		return schema.Record{}, schema.Wrapf("converter", err, "value")
	}
	if len(key) == 0 || r.Op == schema.OpSchemaChange {
		return r, nil
	}
	if keySchema == nil {
		err = c.decodeKey(&r, key)
	} else {
		var p *plan
		if e, ok := c.recentKey.exact(keySchema); ok {
			p = e.v
		} else {
			p, err = c.keyPlan(keySchema)
		}
		if err == nil {
			err = decodeKeyPayload(&r, p, key)
		}
	}
	if err != nil {
		return schema.Record{}, schema.Wrapf("converter", err, "key")
	}
	return r, nil
}

// decodeValue decodes a value envelope's payload with its schema's decoder.
func decodeValue(r *schema.Record, ed *envDec, payload []byte) error {
	d := decoder{b: payload}
	var err error
	if ed.change {
		err = d.schemaChange(r)
	} else {
		err = d.envelope(r, ed.value)
	}
	if err != nil {
		return err
	}
	return d.end()
}

func (c *JSON) decodeKey(r *schema.Record, key []byte) error {
	if e, payload, ok := recentEnvelope(&c.recentKey, key); ok {
		kr := *r
		if decodeKeyPayload(&kr, e.v, payload) == nil {
			*r = kr
			return nil
		}
	}
	var hit *recentEntry[*plan]
	sch, payload, err := splitEnvelope(key, func(b []byte) int {
		hit = nil
		if e, ok := c.recentKey.match(b); ok {
			hit = e
			return len(e.raw)
		}
		return 0
	})
	if err != nil {
		return err
	}
	if sch == nil {
		row, s, err := inferRow(payload, "")
		if err != nil {
			return err
		}
		r.Key, r.KeySchema = row, s
		return nil
	}
	var p *plan
	if hit != nil && len(hit.raw) == len(sch) {
		p = hit.v
	} else if p, err = c.keyPlan(sch); err != nil {
		return err
	}
	return decodeKeyPayload(r, p, payload)
}

// keyPlan returns the cached decoding plan of a key schema text, making
// and caching it on first use.
func (c *JSON) keyPlan(sch []byte) (*plan, error) {
	c.mu.RLock()
	p := c.decKey[string(sch)]
	c.mu.RUnlock()
	if p != nil {
		c.recentKey.add(p.raw, p)
		return p, nil
	}
	var j jschema
	if err := json.Unmarshal(sch, &j); err != nil {
		return nil, fmt.Errorf("%w: key schema: %v", ErrSyntax, err)
	}
	p, err := fromConnect(&j, 0)
	if err != nil {
		return nil, err
	}
	if p.kind != kStruct {
		return nil, fmt.Errorf("%w: key schema is %s, not a struct", ErrSyntax, j.Type)
	}
	if len(sch) <= maxCachedSchemaBytes {
		p.raw = append([]byte(nil), sch...)
		c.mu.Lock()
		c.bump()
		c.decKey[string(sch)] = p
		c.mu.Unlock()
		c.recentKey.add(p.raw, p)
	}
	return p, nil
}

// decodeKeyPayload decodes a key envelope's payload with its schema's plan.
func decodeKeyPayload(r *schema.Record, p *plan, payload []byte) error {
	d := decoder{b: payload}
	if d.null() {
		r.KeySchema = p.s
		return d.end()
	}
	row, err := d.row(p)
	if err != nil {
		return err
	}
	r.KeySchema, r.Key = p.s, row
	return d.end()
}

func (c *JSON) envDecoder(sch []byte) (*envDec, error) {
	c.mu.RLock()
	ed := c.decValue[string(sch)]
	c.mu.RUnlock()
	if ed != nil {
		c.recentValue.add(ed.raw, ed)
		return ed, nil
	}
	var j jschema
	if err := json.Unmarshal(sch, &j); err != nil {
		return nil, fmt.Errorf("%w: schema: %v", ErrSyntax, err)
	}
	if j.Type != "struct" {
		return nil, fmt.Errorf("%w: envelope schema is %q, not a struct", ErrSyntax, j.Type)
	}
	ed = &envDec{}
	if strings.HasSuffix(j.Name, ".SchemaChangeValue") {
		ed.change = true
	} else {
		var img *jschema
		for i := range j.Fields {
			switch j.Fields[i].Field {
			case "after":
				img = &j.Fields[i]
			case "before":
				if img == nil {
					img = &j.Fields[i]
				}
			}
		}
		if img == nil {
			return nil, fmt.Errorf("%w: envelope schema has neither before nor after", ErrSyntax)
		}
		if img.Parameters[paramSluiceNil] != "true" {
			p, err := fromConnect(img, 0)
			if err != nil {
				return nil, err
			}
			if p.kind != kStruct {
				return nil, fmt.Errorf("%w: row schema is %s, not a struct", ErrSyntax, img.Type)
			}
			ed.value = p
		}
	}
	if len(sch) <= maxCachedSchemaBytes {
		ed.raw = append([]byte(nil), sch...)
		c.mu.Lock()
		c.bump()
		c.decValue[string(sch)] = ed
		c.mu.Unlock()
		c.recentValue.add(ed.raw, ed)
	}
	return ed, nil
}

// splitEnvelope finds "schema" and "payload" in {"schema":…,"payload":…}.
// Without both it returns the whole input as payload and a nil schema.
// probe, given the input at the schema member's value, may return the
// length of a known schema text found there (0: none) to skip scanning it.
func splitEnvelope(b []byte, probe func([]byte) int) (sch, payload []byte, err error) {
	d := decoder{b: b}
	if err := d.open('{'); err != nil {
		return nil, nil, err
	}
	var other bool
	for first := true; ; first = false {
		k, ok, err := d.key(first)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			break
		}
		start := d.ws()
		if n := 0; string(k) == "schema" && probe != nil {
			if n = probe(b[start:]); n > 0 {
				d.i = start + n
				if d.ws() < len(b) && (b[d.i] == ',' || b[d.i] == '}') {
					sch = b[start : start+n]
					continue
				}
				d.i = start
			}
		}
		if err := d.skip(); err != nil {
			return nil, nil, err
		}
		switch string(k) {
		case "schema":
			sch = b[start:d.i]
		case "payload":
			payload = b[start:d.i]
		default:
			other = true
		}
	}
	if err := d.end(); err != nil {
		return nil, nil, err
	}
	if sch == nil || payload == nil || other || string(sch) == "null" {
		return nil, b, nil
	}
	return sch, payload, nil
}

// decoder is a small JSON reader over b.
type decoder struct {
	b     []byte
	i     int
	depth int
}

func (d *decoder) errf(format string, a ...any) error {
	return fmt.Errorf("%w at byte %d: %s", ErrSyntax, d.i, fmt.Sprintf(format, a...))
}

func (d *decoder) ws() int {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return d.i
		}
	}
	return d.i
}

func (d *decoder) end() error {
	if d.ws() != len(d.b) {
		return d.errf("trailing data")
	}
	return nil
}

func (d *decoder) open(c byte) error {
	if d.ws() >= len(d.b) || d.b[d.i] != c {
		return d.errf("want %q", c)
	}
	d.i++
	return nil
}

// null consumes a null literal if one is next.
func (d *decoder) null() bool {
	d.ws()
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// key reads the next object key and its colon; ok is false at '}'.
// The returned slice may alias the input or a scratch buffer.
func (d *decoder) key(first bool) (k []byte, ok bool, err error) {
	if d.ws() >= len(d.b) {
		return nil, false, d.errf("unterminated object")
	}
	if d.b[d.i] == '}' {
		d.i++
		return nil, false, nil
	}
	if !first {
		if d.b[d.i] != ',' {
			return nil, false, d.errf("want ',' or '}'")
		}
		d.i++
		d.ws()
	}
	k, err = d.rawString()
	if err != nil {
		return nil, false, err
	}
	if d.ws() >= len(d.b) || d.b[d.i] != ':' {
		return nil, false, d.errf("want ':'")
	}
	d.i++
	return k, true, nil
}

// rawString reads a string; without escapes it aliases the input.
func (d *decoder) rawString() ([]byte, error) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, d.errf("want a string")
	}
	start := d.i + 1
	hi := false
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			d.i = j + 1
			if hi && !utf8.Valid(d.b[start:j]) {
				return validUTF8(d.b[start:j]), nil
			}
			return d.b[start:j], nil
		}
		if c >= 0x80 {
			hi = true
		}
		if c == '\\' {
			return d.unescape(start)
		}
		if c < 0x20 {
			d.i = j
			return nil, d.errf("control character in string")
		}
	}
	return nil, d.errf("unterminated string")
}

func (d *decoder) unescape(start int) ([]byte, error) {
	out := make([]byte, 0, 32)
	j := start
	for j < len(d.b) {
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			if !utf8.Valid(out) {
				return validUTF8(out), nil
			}
			return out, nil
		case c < 0x20:
			d.i = j
			return nil, d.errf("control character in string")
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(d.b) {
			break
		}
		e := d.b[j+1]
		j += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(d.b, j)
			if !ok {
				d.i = j
				return nil, d.errf("bad \\u escape")
			}
			j += 4
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(d.b, j+2); ok && j+1 < len(d.b) && d.b[j] == '\\' && d.b[j+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						j += 6
						out = utf8.AppendRune(out, dec)
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			d.i = j - 1
			return nil, d.errf("bad escape")
		}
	}
	return nil, d.errf("unterminated string")
}

func hex4(b []byte, j int) (rune, bool) {
	if j+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[j : j+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func (d *decoder) str() (string, error) {
	d.ws()
	b, err := d.rawString()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// internStr is str for text that repeats from record to record: the
// string is sourceStrings' when it holds the same text.
func (d *decoder) internStr() (string, error) {
	d.ws()
	b, err := d.rawString()
	if err != nil {
		return "", err
	}
	return sourceStrings.get(b), nil
}

// optInternStr is optStr, interned as internStr.
func (d *decoder) optInternStr() (string, error) {
	if d.null() {
		return "", nil
	}
	return d.internStr()
}

// optStr reads a string or null ("").
func (d *decoder) optStr() (string, error) {
	if d.null() {
		return "", nil
	}
	return d.str()
}

// number returns the raw token of a JSON number.
func (d *decoder) number() ([]byte, error) {
	start := d.ws()
	j := start
	if j < len(d.b) && d.b[j] == '-' {
		j++
	}
	digits := j
	for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
		j++
	}
	if j == digits {
		return nil, d.errf("want a number")
	}
	if j < len(d.b) && d.b[j] == '.' {
		j++
		f := j
		for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
		}
		if j == f {
			return nil, d.errf("bad number")
		}
	}
	if j < len(d.b) && (d.b[j] == 'e' || d.b[j] == 'E') {
		j++
		if j < len(d.b) && (d.b[j] == '+' || d.b[j] == '-') {
			j++
		}
		f := j
		for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
		}
		if j == f {
			return nil, d.errf("bad number")
		}
	}
	d.i = j
	return d.b[start:j], nil
}

func (d *decoder) int64() (int64, error) {
	tok, err := d.number()
	if err != nil {
		return 0, err
	}
	neg := tok[0] == '-'
	digits := tok
	if neg {
		digits = tok[1:]
	}
	var u uint64
	for _, c := range digits {
		if c < '0' || c > '9' || u > (math.MaxUint64-9)/10 {
			return 0, d.errf("integer %q", truncate(tok))
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, d.errf("integer %q out of range", truncate(tok))
		}
		return -int64(u), nil
	}
	if u > math.MaxInt64 {
		return 0, d.errf("integer %q out of range", truncate(tok))
	}
	return int64(u), nil
}

func (d *decoder) uint64() (uint64, error) {
	tok, err := d.number()
	if err != nil {
		return 0, err
	}
	u, err := strconv.ParseUint(string(tok), 10, 64)
	if err != nil {
		return 0, d.errf("unsigned integer %q", truncate(tok))
	}
	return u, nil
}

func (d *decoder) float(bits int) (float64, error) {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '"' {
		s, err := d.rawString()
		if err != nil {
			return 0, err
		}
		switch string(s) {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		return 0, d.errf("float %q", truncate(s))
	}
	tok, err := d.number()
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(unsafe.String(&tok[0], len(tok)), bits)
	if err != nil {
		return 0, d.errf("float %q", truncate(tok))
	}
	return f, nil
}

func (d *decoder) bool() (bool, error) {
	d.ws()
	switch {
	case len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		d.i += 4
		return true, nil
	case len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		d.i += 5
		return false, nil
	}
	return false, d.errf("want a boolean")
}

func (d *decoder) base64() ([]byte, error) {
	d.ws()
	s, err := d.rawString()
	if err != nil {
		return nil, err
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(out, s)
	if err != nil {
		return nil, d.errf("base64: %v", err)
	}
	return out[:n], nil
}

// skip passes over one value, checking its syntax.
func (d *decoder) skip() error {
	if d.ws() >= len(d.b) {
		return d.errf("want a value")
	}
	switch c := d.b[d.i]; {
	case c == '{' || c == '[':
		d.depth++
		if d.depth > maxDepth {
			return d.errf("nested deeper than %d", maxDepth)
		}
		defer func() { d.depth-- }()
		d.i++
		if c == '{' {
			for first := true; ; first = false {
				_, ok, err := d.key(first)
				if err != nil {
					return err
				}
				if !ok {
					return nil
				}
				if err := d.skip(); err != nil {
					return err
				}
			}
		}
		for first := true; ; first = false {
			if d.ws() >= len(d.b) {
				return d.errf("unterminated array")
			}
			if d.b[d.i] == ']' {
				d.i++
				return nil
			}
			if !first {
				if d.b[d.i] != ',' {
					return d.errf("want ',' or ']'")
				}
				d.i++
			}
			if err := d.skip(); err != nil {
				return err
			}
		}
	case c == '"':
		_, err := d.rawString()
		return err
	case c == 't' || c == 'f':
		_, err := d.bool()
		return err
	case c == 'n':
		if !d.null() {
			return d.errf("want null")
		}
		return nil
	default:
		_, err := d.number()
		return err
	}
}

// row reads a struct value into a Row aligned with p's fields. Missing
// fields are NULL; unknown ones are skipped.
func (d *decoder) row(p *plan) (schema.Row, error) {
	if err := d.open('{'); err != nil {
		return nil, err
	}
	d.depth++
	if d.depth > maxDepth {
		return nil, d.errf("nested deeper than %d", maxDepth)
	}
	row := make(schema.Row, len(p.fields))
	hint := 0
	for first := true; ; first = false {
		k, ok, err := d.key(first)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		i := p.field(k, hint)
		if i < 0 {
			if err := d.skip(); err != nil {
				return nil, err
			}
			continue
		}
		if row[i], err = d.value(p.fields[i]); err != nil {
			return nil, fmt.Errorf("field %s: %w", p.names[i], err)
		}
		hint = i + 1
	}
	d.depth--
	return row, nil
}

// value reads one value per its plan; null is nil.
func (d *decoder) value(p *plan) (any, error) {
	if d.null() {
		return nil, nil
	}
	switch p.kind {
	case kInt:
		return d.int64()
	case kDate, kDaysI32:
		v, err := d.int64()
		if err != nil {
			return nil, err
		}
		if v < math.MinInt32 || v > math.MaxInt32 {
			return nil, d.errf("date %d out of range", v)
		}
		return int32(v), nil
	case kMsToUs:
		v, err := d.int64()
		return v * 1000, err
	case kUintLong:
		v, err := d.int64()
		return uint64(v), err // bigint.unsigned.handling.mode=long wrapped it
	case kBytesText:
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		raw, err := decodeBinaryText(s, p.binary)
		if err != nil {
			return nil, d.errf("%s bytes: %v", p.binary, err)
		}
		return raw, nil
	case kNsToUs:
		v, err := d.int64()
		if v < 0 && v%1000 != 0 {
			return v/1000 - 1, err
		}
		return v / 1000, err
	case kUintDec:
		raw, err := d.base64()
		if err != nil {
			return nil, err
		}
		if len(raw) > 0 && raw[0] >= 0x80 {
			return nil, d.errf("negative value for an unsigned column")
		}
		for len(raw) > 1 && raw[0] == 0 {
			raw = raw[1:]
		}
		if len(raw) > 8 {
			return nil, d.errf("unsigned value wider than 64 bits")
		}
		var u uint64
		for _, c := range raw {
			u = u<<8 | uint64(c)
		}
		return u, nil
	case kFloat32:
		f, err := d.float(32)
		return float32(f), err
	case kFloat64:
		return d.float(64)
	case kBool:
		return d.bool()
	case kString:
		return d.str()
	case kBytes:
		return d.base64()
	case kDecBytes:
		raw, err := d.base64()
		if err != nil {
			return nil, err
		}
		return schema.Dec{Unscaled: fromTwosComplement(raw), Scale: p.scale}, nil
	case kDecString:
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		dec, err := schema.ParseDec(s)
		if err != nil {
			return nil, d.errf("%v", err)
		}
		if p.s.Param(schema.ParamScale) != "" && dec.Scale < p.scale {
			dec = dec.Rescale(p.scale)
		}
		return dec, nil
	case kDecDouble:
		f, err := d.float(64)
		if err != nil {
			return nil, err
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, d.errf("decimal %v", f)
		}
		prec := int(max(p.scale, 0))
		if p.s.Param(schema.ParamScale) == "" {
			prec = -1
		}
		dec, err := schema.ParseDec(strconv.FormatFloat(f, 'f', prec, 64))
		if err != nil {
			return nil, d.errf("decimal %v out of range", f)
		}
		return dec, nil
	case kDecVar:
		return d.varDecimal()
	case kZoned:
		d.ws()
		s, err := d.rawString()
		if err != nil {
			return nil, err
		}
		return parseZoned(s)
	case kBitsBytes:
		raw, err := d.base64()
		if err != nil {
			return nil, err
		}
		var u uint64
		for i, c := range raw {
			if i >= 8 {
				if c != 0 {
					return nil, d.errf("bits wider than 64")
				}
				continue
			}
			u |= uint64(c) << (8 * i)
		}
		return u, nil
	case kBitsBool:
		b, err := d.bool()
		if b {
			return uint64(1), err
		}
		return uint64(0), err
	case kGeometry:
		return d.geometry()
	case kStruct:
		return d.row(p)
	case kArray:
		return d.array(p)
	case kMap:
		return d.mapValue(p)
	}
	return nil, d.errf("no decoder for %s", p.s)
}

func (d *decoder) varDecimal() (any, error) {
	if err := d.open('{'); err != nil {
		return nil, err
	}
	var dec schema.Dec
	for first := true; ; first = false {
		k, ok, err := d.key(first)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		switch string(k) {
		case "scale":
			v, err := d.int64()
			if err != nil {
				return nil, err
			}
			if v < -maxDecimalScale || v > maxDecimalScale {
				return nil, d.errf("decimal scale %d", v)
			}
			dec.Scale = int32(v)
		case "value":
			raw, err := d.base64()
			if err != nil {
				return nil, err
			}
			dec.Unscaled = fromTwosComplement(raw)
		default:
			if err := d.skip(); err != nil {
				return nil, err
			}
		}
	}
	if dec.Unscaled == nil {
		return nil, d.errf("VariableScaleDecimal without value")
	}
	return dec, nil
}

func (d *decoder) geometry() (any, error) {
	if err := d.open('{'); err != nil {
		return nil, err
	}
	var g schema.Geom
	for first := true; ; first = false {
		k, ok, err := d.key(first)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		switch string(k) {
		case "wkb":
			if !d.null() {
				if g.WKB, err = d.base64(); err != nil {
					return nil, err
				}
			}
			continue
		case "srid":
			if !d.null() {
				n, err := d.int64()
				if err != nil {
					return nil, err
				}
				if n < math.MinInt32 || n > math.MaxInt32 {
					return nil, d.errf("srid %d out of int32 range", n)
				}
				g.SRID = uint32(int32(n))
			}
			continue
		}
		if err := d.skip(); err != nil {
			return nil, err
		}
	}
	if g.WKB == nil {
		g.WKB = []byte{}
	}
	return g, nil
}

func (d *decoder) array(p *plan) (any, error) {
	if err := d.open('['); err != nil {
		return nil, err
	}
	d.depth++
	if d.depth > maxDepth {
		return nil, d.errf("nested deeper than %d", maxDepth)
	}
	out := []any{}
	for first := true; ; first = false {
		if d.ws() >= len(d.b) {
			return nil, d.errf("unterminated array")
		}
		if d.b[d.i] == ']' {
			d.i++
			break
		}
		if !first {
			if d.b[d.i] != ',' {
				return nil, d.errf("want ',' or ']'")
			}
			d.i++
		}
		v, err := d.value(p.elem)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	d.depth--
	return out, nil
}

func (d *decoder) mapValue(p *plan) (any, error) {
	if err := d.open('{'); err != nil {
		return nil, err
	}
	d.depth++
	if d.depth > maxDepth {
		return nil, d.errf("nested deeper than %d", maxDepth)
	}
	out := map[string]any{}
	for first := true; ; first = false {
		k, ok, err := d.key(first)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		ks := string(k)
		if out[ks], err = d.value(p.elem); err != nil {
			return nil, err
		}
	}
	d.depth--
	return out, nil
}

// envelope reads a data-change payload.
func (d *decoder) envelope(r *schema.Record, p *plan) error {
	if err := d.open('{'); err != nil {
		return err
	}
	var haveOp bool
	for first := true; ; first = false {
		k, ok, err := d.key(first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(k) {
		case "before", "after":
			var row schema.Row
			if !d.null() {
				if p == nil {
					return d.errf("row image without a row schema")
				}
				if row, err = d.row(p); err != nil {
					return fmt.Errorf("%s: %w", k, err)
				}
			}
			if k[0] == 'b' {
				r.Before = row
			} else {
				r.After = row
			}
		case "source":
			err = d.source(r)
		case "transaction":
			err = d.transaction(r)
		case "op":
			var s string
			if s, err = d.str(); err == nil {
				if r.Op, err = schema.ParseOp(s); err == nil && !r.Op.IsData() {
					err = d.errf("op %q is not a data change", s)
				}
			}
			haveOp = true
		case "ts_ms":
			if !d.null() {
				r.TsMs, err = d.int64()
			}
		default:
			err = d.skip()
		}
		if err != nil {
			return err
		}
	}
	if !haveOp {
		return d.errf("event without op")
	}
	if p != nil {
		r.ValueSchema = p.s
	}
	return nil
}

func (d *decoder) schemaChange(r *schema.Record) error {
	if err := d.open('{'); err != nil {
		return err
	}
	r.Op = schema.OpSchemaChange
	var ch schema.SchemaChange
	var hasDDL bool
	var dbName string
	for first := true; ; first = false {
		k, ok, err := d.key(first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(k) {
		case "source":
			err = d.source(r)
		case "transaction":
			err = d.transaction(r)
		case "ts_ms":
			if !d.null() {
				r.TsMs, err = d.int64()
			}
		case "databaseName":
			dbName, err = d.optStr()
		case "ddl":
			if !d.null() {
				hasDDL = true
				ch.DDL, err = d.str()
			}
		case "kind":
			if !d.null() {
				hasDDL = true
				ch.Kind, err = d.str()
			}
		case "changes":
			if !d.null() {
				var s string
				if s, err = d.str(); err == nil {
					if ch.Tables, err = readChanges(s); err != nil {
						err = d.errf("schema change: changes: %v", err)
					}
				}
			}
		default:
			err = d.skip()
		}
		if err != nil {
			return err
		}
	}
	if r.Table.Database == "" {
		r.Table.Database = dbName
	}
	if hasDDL {
		r.Change = &ch
	}
	return nil
}

func (d *decoder) source(r *schema.Record) error {
	if d.null() {
		return nil
	}
	if err := d.open('{'); err != nil {
		return err
	}
	s := &r.Source
	for first := true; ; first = false {
		k, ok, err := d.key(first)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if d.null() {
			continue
		}
		switch string(k) {
		case "version":
			s.Version, err = d.internStr()
		case "connector":
			s.Connector, err = d.internStr()
		case "name":
			s.Name, err = d.internStr()
		case "ts_ms":
			s.TsMs, err = d.int64()
		case "snapshot":
			if d.ws() < len(d.b) && d.b[d.i] != '"' {
				var b bool
				b, err = d.bool()
				s.Snapshot = strconv.FormatBool(b)
				if !b {
					s.Snapshot = "" // streaming, as written for ""
				}
			} else if s.Snapshot, err = d.internStr(); s.Snapshot == "false" {
				// Streaming: what "" is written as once Kafka Connect has
				// applied the field's default.
				s.Snapshot = ""
			}
		case "db":
			r.Table.Database, err = d.internStr()
		case "table":
			r.Table.Table, err = d.internStr()
		case "server_id":
			var v uint64
			v, err = d.uint64()
			s.ServerID = uint32(v)
			if v > math.MaxUint32 {
				err = d.errf("server_id %d", v)
			}
		case "gtid":
			s.GTID, err = d.internStr()
		case "file":
			s.File, err = d.internStr()
		case "pos":
			s.Pos, err = d.uint64()
		case "row":
			var v int64
			v, err = d.int64()
			s.Row = int(v)
		case "thread":
			s.Thread, err = d.uint64()
		case "query":
			s.Query, err = d.str()
		default:
			err = d.skip()
		}
		if err != nil {
			return fmt.Errorf("source.%s: %w", k, err)
		}
	}
}

func (d *decoder) transaction(r *schema.Record) error {
	if d.null() {
		return nil
	}
	if err := d.open('{'); err != nil {
		return err
	}
	t := &schema.Transaction{}
	for first := true; ; first = false {
		k, ok, err := d.key(first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		switch string(k) {
		case "id":
			t.ID, err = d.optInternStr()
		case "total_order":
			t.TotalOrder, err = d.int64()
		case "data_collection_order":
			t.DataCollectionOrder, err = d.int64()
		default:
			err = d.skip()
		}
		if err != nil {
			return fmt.Errorf("transaction.%s: %w", k, err)
		}
	}
	r.Transaction = t
	return nil
}

// validUTF8 replaces each byte of an invalid UTF-8 sequence with U+FFFD,
// as the encoder (and encoding/json) does, so decoded strings re-encode
// to the same text.
func validUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}
