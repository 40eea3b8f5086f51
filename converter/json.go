package converter

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicecdc/sluice/schema"
)

// DecimalMode is Debezium's decimal.handling.mode.
type DecimalMode string

// Decimal modes.
const (
	DecimalPrecise DecimalMode = "precise" // Connect Decimal: exact (the default)
	DecimalString  DecimalMode = "string"  // "123.4500": exact text, readable
	DecimalDouble  DecimalMode = "double"  // a JSON number: may lose digits
)

// Options configure a JSON converter. The zero value is not the default:
// use DefaultOptions, or set Schemas explicitly.
type Options struct {
	// Schemas writes {"schema":…,"payload":…} envelopes (Kafka Connect's
	// schemas.enable=true). Without it only payloads are written.
	Schemas bool
	// DecimalMode is decimal.handling.mode; it defaults to DecimalPrecise
	// (Debezium's default too).
	DecimalMode DecimalMode
	// BigintUnsignedMode is bigint.unsigned.handling.mode: BigintPrecise
	// (the default, "" too) or BigintLong. Debezium's default is long, but
	// long writes values above 2^63-1 as negative numbers (18446744073709551615
	// as -1), which every consumer that does not know the column is
	// unsigned stores wrong; so sluice keeps precise unless asked. Under
	// long sluice's own decoder restores the unsigned value.
	BigintUnsignedMode string
	// TimePrecisionMode is time.precision.mode: TimeAdaptiveMicros (the
	// default, "" too, as in Debezium: DATETIME(0..3) as
	// io.debezium.time.Timestamp in ms, DATETIME(4..6) as MicroTimestamp,
	// TIME as MicroTime) or TimeConnect (Kafka Connect's Date, Time in ms as
	// int32 and Timestamp in ms: sub-millisecond digits are cut as in
	// Debezium, and TIME beyond ±596h fails).
	TimePrecisionMode string
	// BinaryMode is binary.handling.mode for BINARY, VARBINARY and BLOB
	// columns: BinaryBytes (the default, "" too), or a string in
	// BinaryBase64, BinaryBase64URLSafe or BinaryHex.
	BinaryMode string
	// OmitTransaction is provide.transaction.metadata=false: the
	// "transaction" member of every event is null. Debezium's default is
	// false (no metadata); sluice writes it unless asked, because its sink's
	// transactional mode needs the transaction ids from the topic.
	OmitTransaction bool
}

// DefaultOptions are sluice's defaults: schemas on, precise decimals, and
// every other option at its zero value (see Options for where that differs
// from Debezium's defaults, and why).
func DefaultOptions() Options { return Options{Schemas: true, DecimalMode: DecimalPrecise} }

// maxCached bounds each schema cache; past it the cache starts over.
const maxCached = 4096

// JSON is the Debezium-compatible JSON converter. It is safe for concurrent
// use; create one per configuration and share it.
type JSON struct {
	opts Options

	mu        sync.RWMutex
	encValue  map[envKey]*envEnc         // by value schema and what else its envelope names
	encKey    map[*schema.Schema]*keyEnc // by key schema
	decValue  map[string]*envDec         // by schema JSON
	decKey    map[string]*plan           // by key schema JSON
	cacheSize int

	recentValue recent[*envDec]
	recentKey   recent[*plan]
}

// NewJSON returns a converter. An empty DecimalMode means DecimalPrecise.
func NewJSON(opts Options) *JSON {
	if opts.DecimalMode == "" {
		opts.DecimalMode = DecimalPrecise
	}
	return &JSON{opts: opts, encValue: map[envKey]*envEnc{}, encKey: map[*schema.Schema]*keyEnc{},
		decValue: map[string]*envDec{}, decKey: map[string]*plan{}}
}

// Options returns the converter's options.
func (c *JSON) Options() Options { return c.opts }

// Encode returns the key (nil when the record has none) and the value of r.
func (c *JSON) Encode(r *schema.Record) (key, value []byte, err error) {
	key, err = c.EncodeKey(r)
	if err != nil {
		return nil, nil, err
	}
	value, err = c.EncodeValue(r)
	if err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

// EncodePayloads returns what Encode returns for the data record r less
// the schemas: where Encode writes {"schema":S,"payload":P}, P, byte for
// byte (without Options.Schemas, what Encode writes). The compact RocketMQ
// formats, which send schemas by reference, use it so that no record pays
// for writing and then cutting off its schemas (about 4 KiB a record for
// the five columns of `sluice bench`). Records other than data records are
// refused (ErrValue).
func (c *JSON) EncodePayloads(r *schema.Record) (key, value []byte, err error) {
	if !r.Op.IsData() {
		return nil, nil, fmt.Errorf("%w: payloads of a %s record: only data records have them", ErrValue, r.Op)
	}
	if key, err = c.encodeKey(r, false); err != nil {
		return nil, nil, err
	}
	if value, err = c.encodeValue(r, false); err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

// EncodeKey returns the key of r, or nil, nil when r has no key schema.
func (c *JSON) EncodeKey(r *schema.Record) ([]byte, error) {
	return c.encodeKey(r, c.opts.Schemas)
}

// encodeKey is EncodeKey, with the key's schema envelope when schemas
// (which needs Options.Schemas: the envelope is cached only then).
func (c *JSON) encodeKey(r *schema.Record, schemas bool) ([]byte, error) {
	if err := checkOp(r); err != nil {
		return nil, err
	}
	if r.Op == schema.OpSchemaChange {
		return c.encodeSchemaChangeKey(r), nil
	}
	if r.Op == schema.OpTruncate {
		return nil, nil // Debezium's truncate event has no key
	}
	if r.KeySchema == nil {
		if len(r.Key) > 0 {
			return nil, fmt.Errorf("%w: record of %s has a key but no key schema", ErrValue, r.Table)
		}
		return nil, nil
	}
	ke, err := c.keyEncoder(r.KeySchema)
	if err != nil {
		return nil, schema.Wrapf("converter", err, "key schema of %s", r.Table)
	}
	prefix := ke.prefix
	if !schemas {
		prefix = nil
	}
	b := make([]byte, 0, len(prefix)+16*len(r.Key)+16)
	b = append(b, prefix...)
	if r.Key == nil {
		b = append(b, "null"...)
	} else if b, err = appendRow(b, ke.p, r.Key); err != nil {
		return nil, schema.Wrapf("converter", err, "key of %s", r.Table)
	}
	if schemas {
		b = append(b, '}')
	}
	return b, nil
}

func checkOp(r *schema.Record) error {
	switch {
	case r.Op.IsMarker():
		return ErrNotData
	case r.Op.IsData(), r.Op == schema.OpSchemaChange:
		return nil
	}
	return fmt.Errorf("%w: op %s", ErrValue, r.Op)
}

type keyEnc struct {
	prefix []byte // `{"schema":…,"payload":` or empty
	p      *plan
}

// envEnc is the cached encoder of one value schema.
type envEnc struct {
	prefix []byte // `{"schema":…,"payload":{` or `{`
	p      *plan  // nil when the record has no value schema
	vs     *schema.Schema
	last   atomic.Int64 // size of the last payload, to size the next buffer
}

func (c *JSON) keyEncoder(ks *schema.Schema) (*keyEnc, error) {
	c.mu.RLock()
	ke := c.encKey[ks]
	c.mu.RUnlock()
	if ke != nil {
		return ke, nil
	}
	p, err := planFor(ks, &c.opts)
	if err != nil {
		return nil, err
	}
	if p.kind != kStruct {
		return nil, fmt.Errorf("%w: key schema must be a struct, not %s", ErrSchema, ks.Type)
	}
	ke = &keyEnc{p: p}
	if c.opts.Schemas {
		b := append([]byte(nil), `{"schema":`...)
		b = appendCSchema(b, p.c, "")
		ke.prefix = append(b, `,"payload":`...)
	}
	c.mu.Lock()
	c.bump()
	c.encKey[ks] = ke
	c.mu.Unlock()
	return ke, nil
}

// bump counts a cache entry; c.mu must be held.
func (c *JSON) bump() {
	c.cacheSize++
	if c.cacheSize > maxCached {
		clear(c.encKey)
		clear(c.encValue)
		clear(c.decKey)
		clear(c.decValue)
		c.cacheSize = 1
	}
}

func envelopeName(r *schema.Record) string {
	if vs := r.ValueSchema; vs != nil && vs.Name != "" {
		return strings.TrimSuffix(vs.Name, ".Value") + ".Envelope"
	}
	return r.Source.Name + "." + r.Table.Database + "." + r.Table.Table + ".Envelope"
}

// envKey is what an envelope's schema text depends on besides the
// options: the value schema, the connector (the source block's schema
// names it) and, for a value schema without a name, the envelope name
// made from the record's server and table (a value schema with a name
// names the envelope itself).
type envKey struct {
	vs       *schema.Schema
	mariadb  bool
	envelope string
}

func (c *JSON) valueEncoder(r *schema.Record) (*envEnc, error) {
	vs := r.ValueSchema
	var key envKey
	if vs != nil {
		key = envKey{vs: vs, mariadb: r.Source.Connector == "mariadb"}
		if vs.Name == "" {
			key.envelope = envelopeName(r)
		}
		c.mu.RLock()
		ee := c.encValue[key]
		c.mu.RUnlock()
		if ee != nil {
			return ee, nil
		}
	}
	ee := &envEnc{vs: vs}
	var vc *cschema
	if vs != nil {
		p, err := planFor(vs, &c.opts)
		if err != nil {
			return nil, err
		}
		if p.kind != kStruct {
			return nil, fmt.Errorf("%w: value schema must be a struct, not %s", ErrSchema, vs.Type)
		}
		ee.p, vc = p, p.c
	} else {
		vc = &cschema{typ: "struct", name: r.Source.Name + "." + r.Table.Database + "." + r.Table.Table + ".Value",
			optional: true, params: [][2]string{{paramSluiceNil, "true"}}}
	}
	if c.opts.Schemas {
		b := append([]byte(nil), `{"schema":{"type":"struct","fields":[`...)
		b = appendCSchema(b, vc, "before")
		b = append(b, ',')
		b = appendCSchema(b, vc, "after")
		b = append(b, ',')
		b = append(b, sourceSchema(r.Source.Connector)...)
		b = append(b, ',')
		b = append(b, txSchemaJSON...)
		b = append(b, `,{"type":"string","optional":false,"field":"op"},{"type":"int64","optional":true,"field":"ts_ms"},{"type":"int64","optional":true,"field":"ts_us"},{"type":"int64","optional":true,"field":"ts_ns"}],"optional":false,"name":`...)
		b = appendString(b, envelopeName(r))
		b = append(b, `,"version":2},"payload":{`...)
		ee.prefix = b
	} else {
		ee.prefix = []byte{'{'}
	}
	if vs != nil {
		c.mu.Lock()
		c.bump()
		c.encValue[key] = ee
		c.mu.Unlock()
	}
	return ee, nil
}

// EncodeValue returns the value of r: the Debezium envelope of a data
// record, a schema-change envelope, or ErrNotData for markers.
func (c *JSON) EncodeValue(r *schema.Record) ([]byte, error) {
	return c.encodeValue(r, c.opts.Schemas)
}

// encodeValue is EncodeValue, with the envelope's schema when schemas
// (which needs Options.Schemas, as encodeKey).
func (c *JSON) encodeValue(r *schema.Record, schemas bool) ([]byte, error) {
	if err := checkOp(r); err != nil {
		return nil, err
	}
	if r.Op == schema.OpSchemaChange {
		return c.encodeSchemaChange(r)
	}
	ee, err := c.valueEncoder(r)
	if err != nil {
		return nil, schema.Wrapf("converter", err, "value schema of %s", r.Table)
	}
	n := ee.last.Load()
	if n == 0 {
		n = 400
		if ee.p != nil {
			n += 24 * int64(len(ee.p.fields)) * 2
		}
	}
	prefix := ee.prefix
	if !schemas {
		prefix = prefix[len(prefix)-1:] // the payload's opening brace (all of it without Options.Schemas)
	}
	b := make([]byte, 0, len(prefix)+int(n+n/8))
	b = append(b, prefix...)
	b = append(b, `"before":`...)
	if b, err = appendImage(b, ee.p, r.Before); err != nil {
		return nil, schema.Wrapf("converter", err, "before image of %s", r.Table)
	}
	b = append(b, `,"after":`...)
	if b, err = appendImage(b, ee.p, r.After); err != nil {
		return nil, schema.Wrapf("converter", err, "after image of %s", r.Table)
	}
	b = append(b, `,"source":`...)
	b = appendSource(b, r)
	b = append(b, `,"transaction":`...)
	b = c.appendTx(b, r.Transaction)
	b = append(b, `,"op":"`...)
	b = append(b, r.Op.String()...)
	b = append(b, `","ts_ms":`...)
	b = appendTs(b, r.TsMs)
	b = append(b, '}')
	if schemas {
		b = append(b, '}')
	}
	ee.last.Store(int64(len(b) - len(prefix)))
	return b, nil
}

func appendImage(b []byte, p *plan, row schema.Row) ([]byte, error) {
	if row == nil {
		return append(b, "null"...), nil
	}
	if p == nil {
		return nil, fmt.Errorf("%w: row image without a value schema", ErrValue)
	}
	return appendRow(b, p, row)
}

func (c *JSON) encodeSchemaChange(r *schema.Record) ([]byte, error) {
	b := make([]byte, 0, 2048)
	if c.opts.Schemas {
		b = append(b, `{"schema":{"type":"struct","fields":[`...)
		b = append(b, sourceSchema(r.Source.Connector)...)
		b = append(b, ',')
		b = append(b, txSchemaJSON...)
		b = append(b, `,{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":true,"field":"databaseName"},{"type":"string","optional":true,"field":"schemaName"},{"type":"string","optional":true,"field":"ddl"},`...)
		b = append(b, tableChangesSchemaJSON...)
		b = append(b, `,{"type":"string","optional":true,"field":"kind"},{"type":"string","optional":true,"field":"changes"}],"optional":false,"name":"io.debezium.connector.`...)
		b = append(b, connectorPackage(r.Source.Connector)...)
		b = append(b, `.SchemaChangeValue","version":1},"payload":`...)
	}
	b = append(b, `{"source":`...)
	b = appendSource(b, r)
	b = append(b, `,"transaction":`...)
	b = c.appendTx(b, r.Transaction)
	b = append(b, `,"ts_ms":`...)
	b = appendInt(b, r.TsMs)
	b = append(b, `,"databaseName":`...)
	b = appendString(b, r.Table.Database)
	b = append(b, `,"schemaName":null,"ddl":`...)
	if r.Change != nil {
		b = appendString(b, r.Change.DDL)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"tableChanges":`...)
	b = appendTableChanges(b, r.Change)
	b = append(b, `,"kind":`...)
	if r.Change != nil {
		b = appendString(b, r.Change.Kind)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"changes":`...)
	var err error
	if b, err = appendChanges(b, r.Change); err != nil {
		return nil, err
	}
	b = append(b, '}')
	if c.opts.Schemas {
		b = append(b, '}')
	}
	return b, nil
}

// snapshotAllowed is Debezium 3's snapshot enum.
const snapshotAllowed = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"

var sourceSchemaJSON = `{"type":"struct","fields":[` +
	`{"type":"string","optional":false,"field":"version"},` +
	`{"type":"string","optional":false,"field":"connector"},` +
	`{"type":"string","optional":false,"field":"name"},` +
	`{"type":"int64","optional":false,"field":"ts_ms"},` +
	`{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"` + snapshotAllowed + `"},"default":"false","field":"snapshot"},` +
	`{"type":"string","optional":false,"field":"db"},` +
	`{"type":"string","optional":true,"field":"sequence"},` +
	`{"type":"int64","optional":true,"field":"ts_us"},` +
	`{"type":"int64","optional":true,"field":"ts_ns"},` +
	`{"type":"string","optional":true,"field":"table"},` +
	`{"type":"int64","optional":false,"field":"server_id"},` +
	`{"type":"string","optional":true,"field":"gtid"},` +
	`{"type":"string","optional":false,"field":"file"},` +
	`{"type":"int64","optional":false,"field":"pos"},` +
	`{"type":"int32","optional":false,"field":"row"},` +
	`{"type":"int64","optional":true,"field":"thread"},` +
	`{"type":"string","optional":true,"field":"query"}` +
	`],"optional":false,"name":"io.debezium.connector.mysql.Source","version":1,"field":"source"}`

// sourceSchemaMariaDB is the same under the MariaDB connector's name.
var sourceSchemaMariaDB = strings.Replace(sourceSchemaJSON, ".mysql.Source", ".mariadb.Source", 1)

// sourceSchema is the source block's schema of a connector.
func sourceSchema(connector string) string {
	if connector == "mariadb" {
		return sourceSchemaMariaDB
	}
	return sourceSchemaJSON
}

var txSchemaJSON = `{"type":"struct","fields":[` +
	`{"type":"string","optional":false,"field":"id"},` +
	`{"type":"int64","optional":false,"field":"total_order"},` +
	`{"type":"int64","optional":false,"field":"data_collection_order"}` +
	`],"optional":true,"name":"event.block","version":1,"field":"transaction"}`

func appendSource(b []byte, r *schema.Record) []byte {
	s := &r.Source
	b = append(b, `{"version":`...)
	b = appendString(b, s.Version)
	b = append(b, `,"connector":`...)
	b = appendString(b, s.Connector)
	b = append(b, `,"name":`...)
	b = appendString(b, s.Name)
	b = append(b, `,"ts_ms":`...)
	b = appendInt(b, s.TsMs)
	b = append(b, `,"snapshot":`...)
	if s.Snapshot == "" {
		b = append(b, `"false"`...) // streaming, as Debezium writes it
	} else {
		b = appendString(b, s.Snapshot)
	}
	b = append(b, `,"db":`...)
	b = appendString(b, r.Table.Database)
	b = append(b, `,"sequence":null,"ts_us":`...)
	b = appendInt(b, s.TsMs*1000)
	b = append(b, `,"ts_ns":`...)
	b = appendInt(b, s.TsMs*1000000)
	b = append(b, `,"table":`...)
	b = appendOptString(b, r.Table.Table)
	b = append(b, `,"server_id":`...)
	b = appendUint(b, uint64(s.ServerID))
	b = append(b, `,"gtid":`...)
	b = appendOptString(b, s.GTID)
	b = append(b, `,"file":`...)
	b = appendString(b, s.File)
	b = append(b, `,"pos":`...)
	b = appendUint(b, s.Pos)
	b = append(b, `,"row":`...)
	b = appendInt(b, int64(s.Row))
	b = append(b, `,"thread":`...)
	if s.Thread == 0 {
		b = append(b, "null"...) // unknown, as Debezium writes it
	} else {
		b = appendUint(b, s.Thread)
	}
	b = append(b, `,"query":`...)
	b = appendOptString(b, s.Query)
	return append(b, '}')
}

func (c *JSON) appendTx(b []byte, t *schema.Transaction) []byte {
	if t == nil || c.opts.OmitTransaction {
		return append(b, "null"...)
	}
	b = append(b, `{"id":`...)
	b = appendString(b, t.ID)
	b = append(b, `,"total_order":`...)
	b = appendInt(b, t.TotalOrder)
	b = append(b, `,"data_collection_order":`...)
	b = appendInt(b, t.DataCollectionOrder)
	return append(b, '}')
}

func appendTs(b []byte, ms int64) []byte {
	b = appendInt(b, ms)
	b = append(b, `,"ts_us":`...)
	b = appendInt(b, ms*1000)
	b = append(b, `,"ts_ns":`...)
	return appendInt(b, ms*1000000)
}

func appendOptString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}
