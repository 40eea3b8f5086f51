package binlog

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/sluicecdc/sluice/binlog/charset"
	"github.com/sluicecdc/sluice/binlog/ddl"
	"github.com/sluicecdc/sluice/schema"
)

// kind says how a column's decoded value becomes a schema value.
type kind uint8

const (
	kInt    kind = iota + 1 // signed or small unsigned integer -> int64
	kUint64                 // BIGINT UNSIGNED -> uint64
	kFloat32
	kFloat64
	kDecimal
	kBits
	kYear
	kDate
	kTime
	kDatetime
	kTimestamp
	kString
	kBytes
	kEnum
	kSet
	kJSON
	kGeometry
	kUUID  // MariaDB UUID (BINARY(16) in the binlog) -> its text
	kInet6 // MariaDB INET6 (BINARY(16)) -> its text
	kInet4 // MariaDB INET4 (BINARY(4)) -> its text
)

// column is what the mapper needs to convert one column's values.
type column struct {
	name     string
	kind     kind
	scale    int32    // kDecimal
	charset  string   // kString
	labels   []string // kEnum, kSet
	pad      int      // kBytes of BINARY(n): n (the binlog drops trailing 0x00 bytes)
	optional bool
}

// tableInfo is the cached shape of one table map.
type tableInfo struct {
	tm          *replication.TableMapEvent // the event the shape was built from
	id          schema.TableID
	table       *schema.Table
	cols        []column
	keyIdx      []int
	keySchema   *schema.Schema
	valueSchema *schema.Schema
	// Column rules (columns.go): the source columns emitted, in order (nil:
	// all, unmasked), the mask of each emitted column, and the key's
	// positions in an emitted row.
	keep   []int
	masks  []*MaskRule
	outKey []int
}

// sameShape reports whether two table maps describe the same table shape,
// so that a cached tableInfo can be reused under a new table map event.
func sameShape(a, b *replication.TableMapEvent) bool {
	return bytes.Equal(a.Schema, b.Schema) && bytes.Equal(a.Table, b.Table) &&
		a.ColumnCount == b.ColumnCount &&
		bytes.Equal(a.ColumnType, b.ColumnType) && slices.Equal(a.ColumnMeta, b.ColumnMeta) &&
		bytes.Equal(a.NullBitmap, b.NullBitmap) && bytes.Equal(a.SignednessBitmap, b.SignednessBitmap) &&
		slices.Equal(a.DefaultCharset, b.DefaultCharset) && slices.Equal(a.ColumnCharset, b.ColumnCharset) &&
		slices.Equal(a.EnumSetDefaultCharset, b.EnumSetDefaultCharset) && slices.Equal(a.EnumSetColumnCharset, b.EnumSetColumnCharset) &&
		slices.EqualFunc(a.ColumnName, b.ColumnName, bytes.Equal) &&
		slices.EqualFunc(a.EnumStrValue, b.EnumStrValue, equalBytesList) &&
		slices.EqualFunc(a.SetStrValue, b.SetStrValue, equalBytesList) &&
		slices.Equal(a.PrimaryKey, b.PrimaryKey) && slices.Equal(a.GeometryType, b.GeometryType)
}

func equalBytesList(a, b [][]byte) bool { return slices.EqualFunc(a, b, bytes.Equal) }

// buildTable derives the columns, key and schemas of a table map. Column
// names, keys, signedness, charsets and ENUM/SET labels come from the
// table map's optional metadata (binlog_row_metadata=FULL); what it lacks
// comes from ht, the schema history's shape of the table (nil: none).
// When both are present the table map wins, and a different column count
// gives a warning. useHist says a history is kept (for messages).
//
// hints (column name -> extUUID, extInet6, extInet4, extJSON, extTinyint1;
// nil: none) name the types the table map shows only as their storage; a
// history shape overrides them, except where it cannot tell (JSON is
// LONGTEXT to it, and it keeps no TINYINT(1) width).
func buildTable(tm *replication.TableMapEvent, serverName string, collations, collNames map[uint64]string, ht *ddl.Table, useHist bool, hints map[string]colHint, flavor string) (*tableInfo, string, error) {
	id := schema.TableID{Database: string(tm.Schema), Table: string(tm.Table)}
	n := int(tm.ColumnCount)
	names := tm.ColumnNameString()
	warn := ""
	if len(tm.ColumnType) != n || len(tm.ColumnMeta) != n {
		return nil, "", fmt.Errorf("%w: table map of %s is malformed", ErrUnsupported, id)
	}
	fromHist := false
	if len(names) != n {
		switch {
		case ht != nil && len(ht.Cols) == n:
			names, fromHist = make([]string, n), true
			for i, c := range ht.Cols {
				names[i] = c.Name
			}
		case ht != nil:
			return nil, "", fmt.Errorf("%w (table %s: the table map has %d columns and no names, the schema history has %d columns: fix the history file or set binlog_row_metadata=FULL)", ErrMissingMetadata, id, n, len(ht.Cols))
		case useHist:
			return nil, "", fmt.Errorf("%w (table %s has no column names in the table map and none in the schema history: it was created or renamed in a way the history did not see)", ErrMissingMetadata, id)
		default:
			return nil, "", fmt.Errorf("%w (table %s has %d columns, the table map names %d); events the server logged without it carry no column names: set history_file in the source section so that a schema history supplies them", ErrMissingMetadata, id, n, len(names))
		}
	} else if ht != nil && len(ht.Cols) != n {
		warn = fmt.Sprintf("the table map has %d columns, the schema history %d: using the table map", n, len(ht.Cols))
		ht = nil
	}
	unsigned := tm.UnsignedMap()
	charsets := tm.CollationMap()
	enumSetCharsets := tm.EnumSetCollationMap()
	enums := tm.EnumStrValueMap()
	sets := tm.SetStrValueMap()
	charsetOf := func(m map[uint64]string, id uint64, ok bool) string {
		if !ok {
			return csUTF8MB4
		}
		if cs, ok := m[id]; ok {
			return cs
		}
		if cs, ok := charset.OfCollation(id); ok {
			return cs
		}
		return fmt.Sprintf("unknown (collation id %d)", id) // refused by checkCharsets
	}

	specs := make([]colSpec, n)
	for i := 0; i < n; i++ {
		_, nullable := tm.Nullable(i)
		coll, hasColl := charsets[i]
		cs := charsetOf(collations, coll, hasColl)
		uns := unsigned[i]
		if ht != nil {
			hc := ht.Cols[i]
			if unsigned == nil {
				uns = hc.Unsigned
			}
			if !hasColl && charsets == nil && hc.Charset != "" {
				cs = hc.Charset
			}
		}
		h := hints[names[i]]
		sp := colSpec{name: names[i], typ: tm.ColumnType[i], meta: tm.ColumnMeta[i], unsigned: uns,
			charset: cs, nullable: nullable, ext: h.ext, colType: h.colType, def: h.def, flavor: flavor}
		if hasColl {
			sp.collation = collNames[coll]
		}
		if ht != nil { // the history's type wins: it is the shape at this position
			switch t := ht.Cols[i].Type; {
			case t == extUUID || t == extInet6 || t == extInet4 || t == extJSON:
				sp.ext = t
			case sp.ext == extJSON && t == "longtext", sp.ext == extTinyint1 && t == "tinyint":
				// what the history cannot say: MariaDB's JSON is LONGTEXT
				// with a CHECK, and it keeps no display widths
			default:
				sp.ext = ""
			}
		}
		labels, isSet := enums[i], false
		if l, ok := sets[i]; ok {
			labels, isSet = l, true
		}
		if labels != nil || isSet {
			ecoll, ok := enumSetCharsets[i]
			ecs := charsetOf(collations, ecoll, ok)
			if ok {
				sp.collation = collNames[ecoll]
			}
			if !charset.Supported(ecs) {
				sp.charset = ecs // reported by checkCharsets unless excluded
			}
			sp.labels = make([]string, len(labels))
			for j, l := range labels {
				sp.labels[j] = charset.Decode([]byte(l), ecs)
			}
		} else if ht != nil && ht.Cols[i].Labels != nil {
			sp.labels = ht.Cols[i].Labels
		}
		specs[i] = sp
	}
	pk := make([]int, 0, len(tm.PrimaryKey))
	for _, k := range tm.PrimaryKey {
		pk = append(pk, int(k))
	}
	if fromHist && len(pk) == 0 {
		for _, name := range ht.PK {
			k := ht.Index(name)
			if k < 0 {
				return nil, "", fmt.Errorf("%w: schema history of %s: primary key column %s is not a column", ErrUnsupported, id, name)
			}
			pk = append(pk, k)
		}
	}
	ti, err := buildTableSpecs(id, specs, pk, serverName)
	if err != nil {
		return nil, warn, err
	}
	ti.tm = tm
	return ti, warn, nil
}

// colSpec is one column as the binlog describes it: the table map's type
// byte and metadata, or the same rebuilt from information_schema by the
// snapshot, so that both paths share one schema builder.
type colSpec struct {
	name     string
	typ      byte
	meta     uint16
	unsigned bool
	charset  string
	// collation is the column's collation name, "" when not known; text,
	// ENUM and SET columns carry it as schema.ParamCollation.
	collation string
	nullable  bool
	labels    []string // ENUM/SET labels, decoded; nil when absent
	ext       string   // MariaDB type the storage stands for (extUUID, ...); "" none
	colType   string   // information_schema's COLUMN_TYPE, lower case; "" unknown
	def       *string  // information_schema's COLUMN_DEFAULT; nil: none or unknown
	flavor    string   // of the server def comes from (MariaDB quotes literals)
}

// buildTableSpecs derives the columns, key and schemas of a table from its
// column specs and the positions of its primary-key columns (in key order).
func buildTableSpecs(id schema.TableID, specs []colSpec, pk []int, serverName string) (*tableInfo, error) {
	n := len(specs)
	ti := &tableInfo{id: id, cols: make([]column, n)}
	t := &schema.Table{ID: id, Columns: make([]schema.Column, n)}
	for i, sp := range specs {
		c := column{name: sp.name, optional: sp.nullable}
		sch, srcType, err := columnSchema(&c, sp.typ, sp.meta, sp.unsigned, sp.charset)
		if err != nil {
			return nil, fmt.Errorf("table %s column %s: %w", id, c.name, err)
		}
		if sp.ext != "" {
			applyExt(&c, sch, &srcType, sp.ext)
		}
		if c.kind == kEnum || c.kind == kSet {
			if sp.labels == nil {
				return nil, fmt.Errorf("%w (table %s column %s has no ENUM/SET labels)", ErrMissingMetadata, id, c.name)
			}
			c.labels = sp.labels
			quoted := make([]string, len(c.labels))
			for j, l := range c.labels {
				quoted[j] = "'" + strings.ReplaceAll(l, "'", "''") + "'"
			}
			srcType += "(" + strings.Join(quoted, ",") + ")"
			sch.Params[schema.ParamAllowed] = strings.Join(c.labels, ",")
		}
		if (c.kind == kString || c.kind == kEnum || c.kind == kSet) && !charset.Supported(sp.charset) {
			c.charset = sp.charset
		}
		if (c.kind == kString || c.kind == kEnum || c.kind == kSet) && sp.collation != "" && sp.ext == "" {
			sch.Params[schema.ParamCollation] = sp.collation
		}
		srcType = refineSourceType(&c, srcType, sp.colType)
		if sp.def != nil {
			if v, ok := columnDefault(&c, *sp.def, sp.flavor); ok {
				sch.Default = v
			}
		}
		sch.Optional = sp.nullable
		sch.Params[schema.ParamSourceType] = srcType
		ti.cols[i] = c
		t.Columns[i] = schema.Column{Name: c.name, Schema: sch, SourceType: srcType}
	}
	for _, k := range pk {
		if k < 0 || k >= n {
			return nil, fmt.Errorf("%w: table %s primary key names column %d of %d", ErrUnsupported, id, k, n)
		}
		t.PrimaryKey = append(t.PrimaryKey, specs[k].name)
		ti.keyIdx = append(ti.keyIdx, k)
	}
	ti.outKey = ti.keyIdx
	ti.table = t
	prefix := schemaName(serverName + "." + id.Database + "." + id.Table)
	ti.valueSchema = t.ValueSchema(prefix + ".Value")
	ti.keySchema = t.KeySchema(prefix + ".Key")
	return ti, nil
}

// columnSchema fills c.kind (and scale, charset) and returns the column's
// schema (with a non-nil Params map) and its source type text.
func columnSchema(c *column, typ byte, meta uint16, unsigned bool, cs string) (*schema.Schema, string, error) {
	p := map[string]string{}
	s := func(t schema.Type, l schema.Logical) *schema.Schema {
		return &schema.Schema{Type: t, Logical: l, Params: p}
	}
	un := ""
	if unsigned {
		un = " unsigned"
	}
	if typ == mysql.MYSQL_TYPE_STRING && meta >= 256 {
		b0, b1 := byte(meta>>8), byte(meta&0xFF)
		switch {
		case b0 == mysql.MYSQL_TYPE_ENUM:
			c.kind = kEnum
			return s(schema.String, schema.Enum), "enum", nil
		case b0 == mysql.MYSQL_TYPE_SET:
			c.kind = kSet
			return s(schema.String, schema.Set), "set", nil
		case b0&0x30 != 0x30:
			meta = uint16(b1) | uint16((b0&0x30)^0x30)<<4
		default:
			meta = uint16(b1)
		}
	}
	switch typ {
	case mysql.MYSQL_TYPE_TINY:
		c.kind = kInt
		if unsigned {
			return s(schema.Int16, schema.None), "tinyint unsigned", nil
		}
		return s(schema.Int8, schema.None), "tinyint", nil
	case mysql.MYSQL_TYPE_SHORT:
		c.kind = kInt
		if unsigned {
			return s(schema.Int32, schema.None), "smallint unsigned", nil
		}
		return s(schema.Int16, schema.None), "smallint", nil
	case mysql.MYSQL_TYPE_INT24:
		c.kind = kInt
		return s(schema.Int32, schema.None), "mediumint" + un, nil
	case mysql.MYSQL_TYPE_LONG:
		c.kind = kInt
		if unsigned {
			return s(schema.Int64, schema.None), "int unsigned", nil
		}
		return s(schema.Int32, schema.None), "int", nil
	case mysql.MYSQL_TYPE_LONGLONG:
		if unsigned {
			c.kind = kUint64
			return s(schema.Uint64, schema.None), "bigint unsigned", nil
		}
		c.kind = kInt
		return s(schema.Int64, schema.None), "bigint", nil
	case mysql.MYSQL_TYPE_FLOAT:
		c.kind = kFloat32
		return s(schema.Float32, schema.None), "float" + un, nil
	case mysql.MYSQL_TYPE_DOUBLE:
		c.kind = kFloat64
		return s(schema.Float64, schema.None), "double" + un, nil
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		prec, scale := int(meta>>8), int(meta&0xFF)
		c.kind, c.scale = kDecimal, int32(scale)
		sch := schema.DecimalSchema(prec, scale, false)
		for k, v := range sch.Params {
			p[k] = v
		}
		sch.Params = p
		return sch, fmt.Sprintf("decimal(%d,%d)%s", prec, scale, un), nil
	case mysql.MYSQL_TYPE_BIT:
		n := int(meta>>8)*8 + int(meta&0xFF)
		c.kind = kBits
		p[schema.ParamLength] = strconv.Itoa(n)
		return s(schema.Uint64, schema.Bits), fmt.Sprintf("bit(%d)", n), nil
	case mysql.MYSQL_TYPE_YEAR:
		c.kind = kYear
		return s(schema.Int32, schema.Year), "year", nil
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		c.kind = kDate
		return s(schema.Int32, schema.Date), "date", nil
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		c.kind = kTime
		return s(schema.Int64, schema.Time), withFsp("time", typ == mysql.MYSQL_TYPE_TIME2, meta), nil
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		c.kind = kDatetime
		return s(schema.Int64, schema.Timestamp), withFsp("datetime", typ == mysql.MYSQL_TYPE_DATETIME2, meta), nil
	case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		c.kind = kTimestamp
		return s(schema.Int64, schema.ZonedTimestamp), withFsp("timestamp", typ == mysql.MYSQL_TYPE_TIMESTAMP2, meta), nil
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING:
		name := "varchar"
		if typ == mysql.MYSQL_TYPE_STRING {
			name = "char"
		}
		if cs == csBinary {
			c.kind = kBytes
			bin := map[string]string{"varchar": "varbinary", "char": "binary"}[name]
			if bin == "binary" {
				c.pad = int(meta)
			}
			p[schema.ParamLength] = strconv.Itoa(int(meta))
			return s(schema.Bytes, schema.None), fmt.Sprintf("%s(%d)", bin, meta), nil
		}
		c.kind, c.charset = kString, cs
		n := int(meta) / charset.MaxBytesPerChar(cs)
		p[schema.ParamLength] = strconv.Itoa(n)
		p[schema.ParamCharset] = cs
		return s(schema.String, schema.None), fmt.Sprintf("%s(%d)", name, n), nil
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB:
		size := map[uint16]string{1: "tiny", 2: "", 3: "medium", 4: "long"}[meta]
		if cs == csBinary {
			c.kind = kBytes
			return s(schema.Bytes, schema.None), size + "blob", nil
		}
		c.kind, c.charset = kString, cs
		p[schema.ParamCharset] = cs
		return s(schema.String, schema.None), size + "text", nil
	case mysql.MYSQL_TYPE_JSON:
		c.kind = kJSON
		return s(schema.String, schema.Json), "json", nil
	case mysql.MYSQL_TYPE_GEOMETRY:
		c.kind = kGeometry
		return s(schema.Bytes, schema.Geometry), "geometry", nil
	case mysql.MYSQL_TYPE_VECTOR:
		c.kind = kBytes
		return s(schema.Bytes, schema.None), "vector", nil
	}
	return nil, "", schema.Fatal(fmt.Errorf("%w: column type %d; leave the column out with exclude_columns or the table with exclude", ErrUnsupported, typ))
}

func withFsp(name string, v2 bool, fsp uint16) string {
	if v2 && fsp > 0 {
		return fmt.Sprintf("%s(%d)", name, fsp)
	}
	return name
}

// schemaName is Debezium's topic-derived schema name of a table: every
// character but ASCII letters, digits, '.', '_' and '-' becomes '_'
// (`we"ird tåble` is we_ird_t_ble).
func schemaName(s string) string {
	ok := true
	for i := 0; i < len(s); i++ {
		if !nameChar(s[i]) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && nameChar(byte(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}
