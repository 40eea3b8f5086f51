package converter

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/sluicecdc/sluice/schema"
)

// Connect schema names used by Debezium.
const (
	nameDecimal       = "org.apache.kafka.connect.data.Decimal"
	nameVarDecimal    = "io.debezium.data.VariableScaleDecimal"
	nameDate          = "io.debezium.time.Date"
	nameMicroTime     = "io.debezium.time.MicroTime"
	nameMicroTS       = "io.debezium.time.MicroTimestamp"
	nameZonedTS       = "io.debezium.time.ZonedTimestamp"
	nameJSON          = "io.debezium.data.Json"
	nameEnum          = "io.debezium.data.Enum"
	nameEnumSet       = "io.debezium.data.EnumSet"
	nameBits          = "io.debezium.data.Bits"
	nameYear          = "io.debezium.time.Year"
	nameGeometry      = "io.debezium.data.geometry.Geometry"
	namePoint         = "io.debezium.data.geometry.Point"
	nameUUID          = "io.debezium.data.Uuid"
	nameTimeMs        = "io.debezium.time.Time"
	nameTimestampMs   = "io.debezium.time.Timestamp"
	nameNanoTime      = "io.debezium.time.NanoTime"
	nameNanoTS        = "io.debezium.time.NanoTimestamp"
	nameConnectDate   = "org.apache.kafka.connect.data.Date"
	nameConnectTime   = "org.apache.kafka.connect.data.Time"
	nameConnectTS     = "org.apache.kafka.connect.data.Timestamp"
	paramConnectPrec  = "connect.decimal.precision"
	sluicePrefix      = "__sluice."
	paramSluiceType   = sluicePrefix + "type"
	paramSluiceLog    = sluicePrefix + "logical"
	paramSluiceName   = sluicePrefix + "name"
	paramSluiceNil    = sluicePrefix + "nil"
	paramSluiceBinary = sluicePrefix + "binary" // binary.handling.mode of a bytes column written as a string
	maxDecimalScale   = 1000
	maxSchemaDepth    = 64
	uint64DecimalPrec = "20"
)

// kind says how a value is written in JSON.
type kind uint8

const (
	kInvalid kind = iota
	kInt          // int64 number
	kDate         // int32 number
	kUintDec      // uint64 as Decimal bytes, scale 0
	kFloat32
	kFloat64
	kBool
	kString
	kBytes
	kDecBytes  // Dec as Decimal bytes
	kDecVar    // Dec as VariableScaleDecimal struct
	kDecString // Dec as string
	kDecDouble // Dec as double
	kZoned     // int64 µs as ISO-8601 string
	kBitsBytes // uint64 as little-endian bytes
	kBitsBool  // uint64 0/1 as boolean
	kGeometry  // []byte as {wkb,srid}
	kStruct    // Row
	kArray     // []any
	kMap       // map[string]any
	// decode-only conversions of foreign Debezium time types
	kMsToUs  // int64 ms -> µs
	kNsToUs  // int64 ns -> µs
	kDaysI32 // same as kDate but from a foreign name
	// modes (Options)
	kUintLong  // uint64 as int64, wrapping (bigint.unsigned.handling.mode=long)
	kUsToMs    // int64 µs written as ms (io.debezium.time.Timestamp, Connect Timestamp)
	kUsToMsI32 // int64 µs written as int32 ms (Connect Time)
	kBytesText // []byte as a string (binary.handling.mode base64, base64-url-safe, hex)
)

// logicalNames maps a Connect name that a logical type owns to its sluice
// types. Names found here do not become Schema.Name on decode.
var logicalNames = map[string]struct {
	t schema.Type
	l schema.Logical
}{
	nameDecimal:     {schema.Bytes, schema.Decimal},
	nameVarDecimal:  {schema.Bytes, schema.Decimal},
	nameDate:        {schema.Int32, schema.Date},
	nameMicroTime:   {schema.Int64, schema.Time},
	nameMicroTS:     {schema.Int64, schema.Timestamp},
	nameZonedTS:     {schema.Int64, schema.ZonedTimestamp},
	nameJSON:        {schema.String, schema.Json},
	nameEnum:        {schema.String, schema.Enum},
	nameEnumSet:     {schema.String, schema.Set},
	nameBits:        {schema.Uint64, schema.Bits},
	nameYear:        {schema.Int32, schema.Year},
	nameGeometry:    {schema.Bytes, schema.Geometry},
	namePoint:       {schema.Bytes, schema.Geometry},
	nameTimeMs:      {schema.Int64, schema.Time},
	nameTimestampMs: {schema.Int64, schema.Timestamp},
	nameNanoTime:    {schema.Int64, schema.Time},
	nameNanoTS:      {schema.Int64, schema.Timestamp},
	nameConnectDate: {schema.Int32, schema.Date},
	nameConnectTime: {schema.Int64, schema.Time},
	nameConnectTS:   {schema.Int64, schema.Timestamp},
}

var connectTypes = map[string]schema.Type{
	"int8": schema.Int8, "int16": schema.Int16, "int32": schema.Int32, "int64": schema.Int64,
	"float": schema.Float32, "float32": schema.Float32, "double": schema.Float64, "float64": schema.Float64,
	"boolean": schema.Bool, "string": schema.String, "bytes": schema.Bytes,
	"struct": schema.Struct, "array": schema.Array, "map": schema.Map,
}

// cschema is a Kafka Connect schema as written in JSON.
type cschema struct {
	typ      string
	name     string
	version  int
	optional bool
	params   [][2]string // in output order
	doc      string
	def      any // sluice Go value of the default, nil when none
	fields   []cfield
	items    *cschema
	keys     *cschema
	values   *cschema
	kind     kind
	src      *schema.Schema
}

type cfield struct {
	name string
	s    *cschema
}

// defaultModes are the options decoding compares with.
var defaultModes = Options{DecimalMode: DecimalPrecise}

// shape picks the Connect type, name and value kind of s.
func shape(s *schema.Schema, o *Options) (typ, name string, version int, k kind) {
	switch s.Logical {
	case schema.Decimal:
		switch o.DecimalMode {
		case DecimalString:
			return "string", "", 0, kDecString
		case DecimalDouble:
			return "double", "", 0, kDecDouble
		}
		if s.Param(schema.ParamScale) == "" {
			return "struct", nameVarDecimal, 1, kDecVar
		}
		return "bytes", nameDecimal, 1, kDecBytes
	case schema.Date:
		if o.TimePrecisionMode == TimeConnect {
			return "int32", nameConnectDate, 1, kDate
		}
		return "int32", nameDate, 1, kDate
	case schema.Time:
		if o.TimePrecisionMode == TimeConnect {
			return "int32", nameConnectTime, 1, kUsToMsI32
		}
		return "int64", nameMicroTime, 1, kInt
	case schema.Timestamp:
		if o.TimePrecisionMode == TimeConnect {
			return "int64", nameConnectTS, 1, kUsToMs
		}
		if p := fsp(s); p >= 0 && p <= 3 {
			return "int64", nameTimestampMs, 1, kUsToMs // adaptive: DATETIME(0..3)
		}
		return "int64", nameMicroTS, 1, kInt
	case schema.ZonedTimestamp:
		return "string", nameZonedTS, 1, kZoned
	case schema.Json:
		return "string", nameJSON, 1, kString
	case schema.Enum:
		return "string", nameEnum, 1, kString
	case schema.Set:
		return "string", nameEnumSet, 1, kString
	case schema.Bits:
		if s.Param(schema.ParamLength) == "1" {
			return "boolean", "", 0, kBitsBool
		}
		return "bytes", nameBits, 1, kBitsBytes
	case schema.Year:
		return "int32", nameYear, 1, kInt
	case schema.Geometry:
		if sourceTypeIs(s, "point") {
			return "struct", namePoint, 1, kGeometry
		}
		return "struct", nameGeometry, 1, kGeometry
	}
	switch s.Type {
	case schema.Int8:
		return "int16", "", 0, kInt // Debezium: TINYINT is int16
	case schema.Int16, schema.Int32, schema.Int64:
		return s.Type.String(), "", 0, kInt
	case schema.Uint64:
		if o.BigintUnsignedMode == BigintLong {
			return "int64", "", 0, kUintLong
		}
		return "bytes", nameDecimal, 1, kUintDec
	case schema.Float32:
		if floatWithScale(s) {
			return "double", "", 0, kFloat32 // Debezium: FLOAT(M,D) is a double
		}
		return "float", "", 0, kFloat32
	case schema.Float64:
		return "double", "", 0, kFloat64
	case schema.Bool:
		return "boolean", "", 0, kBool
	case schema.String:
		return "string", "", 0, kString
	case schema.Bytes:
		switch o.BinaryMode {
		case BinaryBase64, BinaryBase64URLSafe, BinaryHex:
			return "string", "", 0, kBytesText
		}
		return "bytes", "", 0, kBytes
	case schema.Struct:
		return "struct", "", 0, kStruct
	case schema.Array:
		return "array", "", 0, kArray
	case schema.Map:
		return "map", "", 0, kMap
	}
	return "", "", 0, kInvalid
}

// decodeKind is the kind of a decoded schema s written as Connect type typ
// with Connect name name; it mirrors shape.
func decodeKind(s *schema.Schema, typ, name string) kind {
	switch name {
	case nameTimeMs, nameTimestampMs, nameConnectTime, nameConnectTS:
		if s.Logical == schema.Time || s.Logical == schema.Timestamp {
			return kMsToUs
		}
	case nameNanoTime, nameNanoTS:
		if s.Logical == schema.Time || s.Logical == schema.Timestamp {
			return kNsToUs
		}
	}
	switch {
	case s.Type == schema.Uint64 && s.Logical == schema.None && typ == "int64":
		return kUintLong
	case s.Type == schema.Bytes && s.Logical == schema.None && typ == "string":
		return kBytesText
	case s.Type == schema.Int8 && s.Logical == schema.None && (typ == "int16" || typ == "int8"):
		return kInt
	case s.Type == schema.Float32 && s.Logical == schema.None && (typ == "double" || typ == "float64"):
		return kFloat32
	}
	switch s.Logical {
	case schema.Decimal:
		switch typ {
		case "string":
			return kDecString
		case "double":
			return kDecDouble
		case "struct":
			return kDecVar
		case "bytes":
			return kDecBytes
		}
		return kInvalid
	case schema.Bits:
		if typ == "boolean" {
			return kBitsBool
		}
		if typ == "bytes" {
			return kBitsBytes
		}
		return kInvalid
	}
	_, _, _, k := shape(s, &defaultModes)
	if want := connectTypeOf(s, k); want != "" && want != typ && !(typ == "float32" && want == "float") && !(typ == "float64" && want == "double") {
		return kInvalid
	}
	return k
}

// connectTypeOf is the Connect type a kind is written as ("" when several).
func connectTypeOf(s *schema.Schema, k kind) string {
	switch k {
	case kInt, kDate:
		switch s.Type {
		case schema.Int8, schema.Int16, schema.Int32, schema.Int64:
			return s.Type.String()
		}
		return ""
	case kUintDec, kBytes:
		return "bytes"
	case kFloat32:
		return "float"
	case kFloat64:
		return "double"
	case kBool:
		return "boolean"
	case kString, kZoned:
		return "string"
	case kGeometry, kStruct:
		return "struct"
	case kArray:
		return "array"
	case kMap:
		return "map"
	}
	return ""
}

// toConnect maps a sluice schema to its Connect form.
func toConnect(s *schema.Schema, mode *Options, depth int) (*cschema, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: nil schema", ErrSchema)
	}
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("%w: schema nested deeper than %d", ErrSchema, maxSchemaDepth)
	}
	typ, name, version, k := shape(s, mode)
	if k == kInvalid {
		return nil, fmt.Errorf("%w: type %s", ErrSchema, s.Type)
	}
	c := &cschema{typ: typ, name: name, version: version, optional: s.Optional, kind: k, src: s}
	if name == "" {
		c.name = s.Name
		if s.Name == nameUUID {
			c.version = 1 // Debezium's io.debezium.data.Uuid (MariaDB UUID)
		}
	}
	// Native parameters.
	native := map[string]bool{}
	addNative := func(connectKey, sluiceKey string) {
		if v, ok := s.Params[sluiceKey]; ok {
			c.params = append(c.params, [2]string{connectKey, v})
			native[sluiceKey] = true
		}
	}
	switch k {
	case kDecBytes, kDecVar:
		addNative(schema.ParamScale, schema.ParamScale)
		addNative(paramConnectPrec, schema.ParamPrecision)
	case kUintDec:
		c.params = append(c.params, [2]string{schema.ParamScale, "0"}, [2]string{paramConnectPrec, uint64DecimalPrec})
	case kBitsBytes:
		addNative(schema.ParamLength, schema.ParamLength)
	case kBytesText:
		c.params = append(c.params, [2]string{paramSluiceBinary, mode.BinaryMode})
	}
	if s.Logical == schema.Enum || s.Logical == schema.Set {
		addNative(schema.ParamAllowed, schema.ParamAllowed)
	}
	// What the decoder would infer, and overrides where it would be wrong.
	dt, dl, dname := inferFromConnect(typ, c.name)
	var extra [][2]string
	if dt != s.Type {
		extra = append(extra, [2]string{paramSluiceType, s.Type.String()})
	}
	if dl != s.Logical {
		extra = append(extra, [2]string{paramSluiceLog, string(s.Logical)})
	}
	if dname != s.Name {
		extra = append(extra, [2]string{paramSluiceName, s.Name})
	}
	for key, v := range s.Params {
		if !native[key] {
			extra = append(extra, [2]string{sluicePrefix + key, v})
		}
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i][0] < extra[j][0] })
	c.params = append(c.params, extra...)
	if s.Default != nil {
		c.def = s.Default
	}
	switch k {
	case kStruct:
		c.fields = make([]cfield, len(s.Fields))
		for i, f := range s.Fields {
			fs, err := toConnect(f.Schema, mode, depth+1)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			c.fields[i] = cfield{f.Name, fs}
		}
	case kGeometry:
		c.fields = []cfield{{"wkb", &cschema{typ: "bytes", kind: kBytes}}, {"srid", &cschema{typ: "int32", optional: true, kind: kInt}}}
		c.doc = "Geometry"
		if name == namePoint {
			c.doc = "Geometry (POINT)"
			c.fields = append([]cfield{{"x", &cschema{typ: "double", kind: kFloat64}}, {"y", &cschema{typ: "double", kind: kFloat64}},
				{"wkb", &cschema{typ: "bytes", optional: true, kind: kBytes}}}, c.fields[1])
		}
	case kDecVar:
		c.fields = []cfield{{"scale", &cschema{typ: "int32", kind: kInt}}, {"value", &cschema{typ: "bytes", kind: kBytes}}}
	case kArray:
		e, err := toConnect(s.Elem, mode, depth+1)
		if err != nil {
			return nil, fmt.Errorf("array element: %w", err)
		}
		c.items = e
	case kMap:
		if s.Key == nil || s.Key.Type != schema.String || s.Key.Logical != schema.None {
			return nil, fmt.Errorf("%w: map keys must be plain strings", ErrSchema)
		}
		kk, err := toConnect(s.Key, mode, depth+1)
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		v, err := toConnect(s.Elem, mode, depth+1)
		if err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
		c.keys, c.values = kk, v
	}
	return c, nil
}

// inferFromConnect is what a Connect type and name mean without overrides.
func inferFromConnect(typ, name string) (schema.Type, schema.Logical, string) {
	if ln, ok := logicalNames[name]; ok {
		return ln.t, ln.l, ""
	}
	return connectTypes[typ], schema.None, name
}

// jschema is a Connect schema as parsed from JSON.
type jschema struct {
	Type       string            `json:"type"`
	Name       string            `json:"name"`
	Optional   bool              `json:"optional"`
	Parameters map[string]string `json:"parameters"`
	Default    rawJSON           `json:"default"`
	Fields     []jschema         `json:"fields"`
	Field      string            `json:"field"`
	Items      *jschema          `json:"items"`
	Keys       *jschema          `json:"keys"`
	Values     *jschema          `json:"values"`
}

// rawJSON is json.RawMessage without the import in this file's API.
type rawJSON []byte

func (r *rawJSON) UnmarshalJSON(b []byte) error { *r = append((*r)[:0], b...); return nil }

// fromConnect maps a parsed Connect schema back to a sluice schema and the
// plan that decodes its values.
func fromConnect(j *jschema, depth int) (*plan, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("%w: schema nested deeper than %d", ErrSyntax, maxSchemaDepth)
	}
	t, l, name := inferFromConnect(j.Type, j.Name)
	if t == schema.Invalid {
		return nil, fmt.Errorf("%w: unknown Connect type %q", ErrSyntax, j.Type)
	}
	s := &schema.Schema{Type: t, Logical: l, Name: name, Optional: j.Optional}
	params := map[string]string{}
	nativeLogical := l
	for k, v := range j.Parameters {
		switch {
		case k == paramSluiceType:
			pt, err := schema.ParseType(v)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
			}
			s.Type = pt
		case k == paramSluiceLog:
			s.Logical = schema.Logical(v)
		case k == paramSluiceName:
			s.Name = v
		case k == paramSluiceNil, k == paramSluiceBinary:
		case len(k) > len(sluicePrefix) && k[:len(sluicePrefix)] == sluicePrefix:
			params[k[len(sluicePrefix):]] = v
		}
	}
	// Native parameters count only for the logical type that owns them.
	if s.Logical == nativeLogical || (nativeLogical == schema.None && j.Name == "") {
		switch s.Logical {
		case schema.Decimal:
			if v, ok := j.Parameters[schema.ParamScale]; ok {
				params[schema.ParamScale] = v
			}
			if v, ok := j.Parameters[paramConnectPrec]; ok {
				params[schema.ParamPrecision] = v
			}
		case schema.Enum, schema.Set:
			if v, ok := j.Parameters[schema.ParamAllowed]; ok {
				params[schema.ParamAllowed] = v
			}
		case schema.Bits:
			if v, ok := j.Parameters[schema.ParamLength]; ok {
				params[schema.ParamLength] = v
			}
		}
	}
	if len(params) > 0 {
		s.Params = params
	}
	p := &plan{s: s, kind: decodeKind(s, j.Type, j.Name), binary: j.Parameters[paramSluiceBinary]}
	if p.kind == kInvalid {
		return nil, fmt.Errorf("%w: Connect type %q cannot carry %s", ErrSyntax, j.Type, s)
	}
	if err := p.prepare(); err != nil {
		return nil, err
	}
	switch p.kind {
	case kStruct:
		s.Fields = make([]schema.Field, len(j.Fields))
		p.fields = make([]*plan, len(j.Fields))
		for i := range j.Fields {
			fp, err := fromConnect(&j.Fields[i], depth+1)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", j.Fields[i].Field, err)
			}
			s.Fields[i] = schema.Field{Name: j.Fields[i].Field, Schema: fp.s}
			p.fields[i] = fp
		}
		p.index()
	case kArray:
		if j.Items == nil {
			return nil, fmt.Errorf("%w: array schema without items", ErrSyntax)
		}
		e, err := fromConnect(j.Items, depth+1)
		if err != nil {
			return nil, err
		}
		s.Elem, p.elem = e.s, e
	case kMap:
		if j.Keys == nil || j.Values == nil {
			return nil, fmt.Errorf("%w: map schema without keys or values", ErrSyntax)
		}
		kp, err := fromConnect(j.Keys, depth+1)
		if err != nil {
			return nil, err
		}
		if kp.kind != kString {
			return nil, fmt.Errorf("%w: map keys must be strings", ErrSyntax)
		}
		v, err := fromConnect(j.Values, depth+1)
		if err != nil {
			return nil, err
		}
		s.Key, s.Elem, p.elem = kp.s, v.s, v
	}
	if len(j.Default) > 0 && string(j.Default) != "null" {
		d := &decoder{b: j.Default}
		v, err := d.value(p)
		if err != nil {
			return nil, fmt.Errorf("default: %w", err)
		}
		s.Default = v
	}
	return p, nil
}

// plan is a schema compiled for encoding and decoding values.
type plan struct {
	s      *schema.Schema
	kind   kind
	scale  int32  // kDecBytes, kDecString, kDecDouble
	fsp    int    // kZoned: fraction digits written, -1: as many as needed
	point  bool   // kGeometry: io.debezium.data.geometry.Point (x, y first)
	binary string // kBytesText: binary.handling.mode
	nbytes int    // kBitsBytes
	nbits  int    // kBitsBytes, kBitsBool
	fields []*plan
	names  []string       // field names
	keys   [][]byte       // `"name":` JSON, for encoding
	byName map[string]int // field positions, for decoding out of order
	elem   *plan          // array element, map value
	c      *cschema       // encoding only
	raw    []byte         // the schema text it was decoded from, when cached
}

func (p *plan) prepare() error {
	switch p.kind {
	case kZoned:
		p.fsp = fsp(p.s)

	case kDecBytes, kDecString, kDecDouble:
		if v := p.s.Param(schema.ParamScale); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < -maxDecimalScale || n > maxDecimalScale {
				return fmt.Errorf("%w: decimal scale %q", ErrSchema, v)
			}
			p.scale = int32(n)
		} else if p.kind == kDecBytes {
			return fmt.Errorf("%w: Decimal without scale", ErrSchema)
		}
	case kBitsBytes, kBitsBool:
		p.nbytes, p.nbits = 8, 64
		if v := p.s.Param(schema.ParamLength); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 64 {
				return fmt.Errorf("%w: bits length %q (at most 64)", ErrSchema, v)
			}
			p.nbytes, p.nbits = (n+7)/8, n
		}
	}
	return nil
}

func (p *plan) index() {
	p.names = make([]string, len(p.s.Fields))
	p.keys = make([][]byte, len(p.s.Fields))
	for i, f := range p.s.Fields {
		p.names[i] = f.Name
		k := appendString(nil, f.Name)
		p.keys[i] = append(k, ':')
	}
	if len(p.names) > 8 {
		p.byName = make(map[string]int, len(p.names))
		for i, n := range p.names {
			if _, dup := p.byName[n]; !dup {
				p.byName[n] = i
			}
		}
	}
}

// field finds the field named key, trying position hint first.
func (p *plan) field(key []byte, hint int) int {
	if hint < len(p.names) && p.names[hint] == string(key) {
		return hint
	}
	if p.byName != nil {
		if i, ok := p.byName[string(key)]; ok {
			return i
		}
		return -1
	}
	for i, n := range p.names {
		if n == string(key) {
			return i
		}
	}
	return -1
}

// planFor compiles a sluice schema for encoding.
func planFor(s *schema.Schema, mode *Options) (*plan, error) {
	c, err := toConnect(s, mode, 0)
	if err != nil {
		return nil, err
	}
	return planOf(c)
}

func planOf(c *cschema) (*plan, error) {
	p := &plan{s: c.src, kind: c.kind, c: c, point: c.name == namePoint}
	for _, kv := range c.params {
		if kv[0] == paramSluiceBinary {
			p.binary = kv[1]
		}
	}
	if p.s == nil {
		p.s = &schema.Schema{}
	}
	if err := p.prepare(); err != nil {
		return nil, err
	}
	switch c.kind {
	case kStruct:
		p.fields = make([]*plan, len(c.fields))
		for i, f := range c.fields {
			fp, err := planOf(f.s)
			if err != nil {
				return nil, err
			}
			p.fields[i] = fp
		}
		p.index()
	case kArray:
		e, err := planOf(c.items)
		if err != nil {
			return nil, err
		}
		p.elem = e
	case kMap:
		e, err := planOf(c.values)
		if err != nil {
			return nil, err
		}
		p.elem = e
	}
	return p, nil
}
