package schema

import (
	"fmt"
	"strings"
)

// Type is the physical type of a value.
type Type uint8

// Physical types.
const (
	Invalid Type = iota
	Int8
	Int16
	Int32
	Int64
	Uint64
	Float32
	Float64
	Bool
	String
	Bytes
	Struct
	Array
	Map
)

var typeNames = [...]string{"invalid", "int8", "int16", "int32", "int64", "uint64", "float32", "float64", "boolean", "string", "bytes", "struct", "array", "map"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// ParseType is the inverse of Type.String.
func ParseType(s string) (Type, error) {
	for i, n := range typeNames {
		if n == s && i != 0 {
			return Type(i), nil
		}
	}
	return Invalid, fmt.Errorf("schema: unknown type %q", s)
}

// Logical names a semantic type carried on a physical one.
type Logical string

// Logical types. The Go value of each is documented in the package doc.
const (
	None           Logical = ""
	Decimal        Logical = "decimal"         // Params: precision, scale; value Dec
	Date           Logical = "date"            // int32 days
	Time           Logical = "time"            // int64 µs
	Timestamp      Logical = "timestamp"       // int64 µs, no zone
	ZonedTimestamp Logical = "zoned_timestamp" // int64 µs UTC
	Json           Logical = "json"            // string
	Enum           Logical = "enum"            // string; Params: allowed
	Set            Logical = "set"             // string; Params: allowed
	Bits           Logical = "bits"            // uint64; Params: length
	Year           Logical = "year"            // int64
	Geometry       Logical = "geometry"        // Geom: WKB and SRID
)

// Parameter names used in Schema.Params.
const (
	ParamPrecision  = "precision"
	ParamScale      = "scale"
	ParamAllowed    = "allowed" // comma-separated labels of an ENUM or SET
	ParamLength     = "length"  // BIT(n), CHAR(n), VARCHAR(n)
	ParamSourceType = "source.type"
	ParamCharset    = "charset"
	// ParamCollation is a MySQL/MariaDB text, ENUM or SET column's
	// collation, when the source knows it: what makes its values, and so
	// its keys, equal or distinct.
	ParamCollation = "collation"
)

// Field is a named member of a struct schema.
type Field struct {
	Name   string
	Schema *Schema
}

// Schema describes a value. Schemas are immutable once built and may be
// shared between records.
type Schema struct {
	Type     Type
	Logical  Logical
	Name     string
	Optional bool
	Default  any
	Params   map[string]string
	Fields   []Field // Struct
	Elem     *Schema // Array element, Map value
	Key      *Schema // Map key
}

// Param returns a parameter or "".
func (s *Schema) Param(k string) string {
	if s == nil || s.Params == nil {
		return ""
	}
	return s.Params[k]
}

// FieldIndex returns the position of the named field, or -1.
func (s *Schema) FieldIndex(name string) int {
	for i, f := range s.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// Equal reports whether two schemas describe the same values.
func (s *Schema) Equal(o *Schema) bool {
	if s == nil || o == nil {
		return s == o
	}
	if s.Type != o.Type || s.Logical != o.Logical || s.Name != o.Name || s.Optional != o.Optional || len(s.Params) != len(o.Params) || len(s.Fields) != len(o.Fields) {
		return false
	}
	for k, v := range s.Params {
		if ov, ok := o.Params[k]; !ok || ov != v {
			return false
		}
	}
	for i := range s.Fields {
		if s.Fields[i].Name != o.Fields[i].Name || !s.Fields[i].Schema.Equal(o.Fields[i].Schema) {
			return false
		}
	}
	return s.Elem.Equal(o.Elem) && s.Key.Equal(o.Key) && fmt.Sprint(s.Default) == fmt.Sprint(o.Default)
}

// String renders a compact description, for logs and errors.
func (s *Schema) String() string {
	if s == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString(s.Type.String())
	if s.Logical != None {
		b.WriteString("/" + string(s.Logical))
	}
	if s.Optional {
		b.WriteString("?")
	}
	if s.Type == Struct {
		b.WriteString("{")
		for i, f := range s.Fields {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(f.Name + ":" + f.Schema.String())
		}
		b.WriteString("}")
	}
	return b.String()
}

// Primitive returns a schema of a physical type.
func Primitive(t Type, optional bool) *Schema { return &Schema{Type: t, Optional: optional} }

// DecimalSchema returns the schema of DECIMAL(precision, scale).
func DecimalSchema(precision, scale int, optional bool) *Schema {
	return &Schema{Type: Bytes, Logical: Decimal, Optional: optional, Params: map[string]string{
		ParamPrecision: fmt.Sprint(precision), ParamScale: fmt.Sprint(scale)}}
}
