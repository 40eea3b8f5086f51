package schema

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Op is what a record does. Its text form follows Debezium's "op" field.
type Op uint8

// Operations. Begin, Commit and Heartbeat are markers: they carry a position
// and metadata but no row, and are not applied by sinks.
const (
	OpUnknown Op = iota
	OpCreate
	OpUpdate
	OpDelete
	OpRead // a row read by a snapshot
	OpTruncate
	OpSchemaChange
	OpBegin
	OpCommit
	OpHeartbeat
)

var opText = [...]string{"?", "c", "u", "d", "r", "t", "ddl", "BEGIN", "END", "heartbeat"}

func (o Op) String() string {
	if int(o) < len(opText) {
		return opText[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// ParseOp is the inverse of Op.String.
func ParseOp(s string) (Op, error) {
	for i, t := range opText {
		if i > 0 && t == s {
			return Op(i), nil
		}
	}
	return OpUnknown, fmt.Errorf("schema: unknown op %q", s)
}

// IsData reports whether the op changes rows of a table (c, u, d, r, t).
func (o Op) IsData() bool { return o >= OpCreate && o <= OpTruncate }

// IsMarker reports whether the op is a marker that carries no change.
func (o Op) IsMarker() bool { return o >= OpBegin }

// TableID names a source table.
type TableID struct {
	Database string
	Table    string
}

func (t TableID) String() string { return t.Database + "." + t.Table }

// Row is one row image, aligned with the fields of its struct schema.
type Row []any

// Source describes where a record came from (Debezium's "source" block).
type Source struct {
	Version   string
	Connector string // "mysql" or "mariadb"
	Name      string // logical server name, the topic prefix
	TsMs      int64  // when the change was made on the server
	Snapshot  string // "", "true", "first", "last", "false"
	ServerID  uint32
	GTID      string
	File      string
	Pos       uint64
	Row       int
	Thread    uint64
	Query     string
}

// Transaction places a record inside its source transaction.
type Transaction struct {
	ID                  string // GTID, or file:pos of the BEGIN
	TotalOrder          int64  // 1-based order of the event in the transaction
	DataCollectionOrder int64  // 1-based order among events of the same table
}

// SchemaChange is the payload of an OpSchemaChange record: the statement as
// the source ran it, and what it does to the shape of tables, read by the
// source's one DDL parser. Consumers apply Tables; they never parse DDL.
type SchemaChange struct {
	DDL  string
	Kind string // e.g. "CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE"
	// Tables is the statement's effect on table shapes, in statement order.
	// Empty for statements that change none (CREATE INDEX, CREATE VIEW …).
	Tables []TableChange
	// Captured lists every captured table the statement names (old and new
	// names of a rename), Record.Table first: the change is a barrier on
	// the queues of each (Record.BarrierTables). Set by the source for
	// routing; encodings do not carry it (a decoded record has none).
	Captured []TableID
}

// Kinds of TableChange.
const (
	CreateTable = "CREATE"
	AlterTable  = "ALTER"
	DropTable   = "DROP"
	RenameTable = "RENAME"
)

// TableChange is the effect of a statement on one table.
type TableChange struct {
	Kind     string  // CreateTable, AlterTable, DropTable or RenameTable
	Table    TableID // the table (its old name for RenameTable)
	NewTable TableID // RenameTable (and ALTER TABLE … RENAME TO, given as its own change)
	// Columns are the column changes in statement order: for CreateTable
	// one AddColumn per column, for AlterTable its clauses.
	Columns []ColumnChange
	// PrimaryKey is the key the statement sets (CREATE TABLE, ALTER TABLE
	// … ADD PRIMARY KEY); DropPrimaryKey says an ALTER drops the key.
	PrimaryKey     []string
	DropPrimaryKey bool
	// IfNotExists: CREATE TABLE IF NOT EXISTS; OrReplace: CREATE OR
	// REPLACE TABLE (drop the table first).
	IfNotExists bool
	OrReplace   bool
	// Shape is the whole table after the change (columns in order, key),
	// when the source knows it: always for CreateTable, for AlterTable and
	// RenameTable when the source keeps a schema history; for DropTable the
	// table's last shape (with a history). Nil otherwise.
	Shape *TableShape
}

// Kinds of ColumnChange.
const (
	AddColumn    = "ADD"
	DropColumn   = "DROP"
	RenameColumn = "RENAME"  // name only: Name to NewName
	ModifyColumn = "MODIFY"  // new definition; NewName set by CHANGE a b …
	AlterDefault = "DEFAULT" // ALTER COLUMN … SET/DROP DEFAULT: Column.Default
)

// ColumnChange is one change of a column.
type ColumnChange struct {
	Kind    string // AddColumn, DropColumn, RenameColumn, ModifyColumn, AlterDefault
	Name    string // the column (its old name for a rename or CHANGE)
	NewName string // RenameColumn, and ModifyColumn from CHANGE COLUMN a b
	// Column is the new definition (AddColumn, ModifyColumn; for
	// AlterDefault only Default is meaningful). Nil for DropColumn and
	// RenameColumn.
	Column *ColumnDef
	// First and After place an added or modified column (FIRST, AFTER c).
	First bool
	After string
	// IfExists / IfNotExists of MariaDB's ADD COLUMN IF NOT EXISTS, DROP
	// COLUMN IF EXISTS and the like.
	IfExists bool
}

// ColumnDef is a column as a DDL statement defines it.
type ColumnDef struct {
	Name string
	// Type is the column's value schema in the record model (the one its
	// rows carry): physical and logical type, parameters (precision,
	// scale, length, charset, allowed labels, source.type); Optional is
	// the column's nullability.
	Type          *Schema
	SourceType    string   // the type as declared, lower case: "decimal(3,1)", "int unsigned"
	Labels        []string // ENUM and SET labels, exact
	Charset       string   // text columns; "" otherwise
	Default       *Default // nil: no DEFAULT clause (or DEFAULT NULL)
	AutoIncrement bool
	Generated     bool // a generated (virtual or stored) column
	// Expression is a generated column's expression as the source's
	// parser restored it ("`a`+1"); "" when not known.
	Expression string `json:",omitempty"`
	Comment    string
	// Length and Scale are the declared dimensions Type's parameters do
	// not carry: an integer's display width (INT(11)), FLOAT(M,D)'s M and
	// D; 0 when not declared.
	Length int `json:",omitempty"`
	Scale  int `json:",omitempty"`
}

// Default is a column default. Literal defaults are Value as text (a
// number's digits, a string's unquoted characters); Expr marks an
// expression (CURRENT_TIMESTAMP, a function call), with Value its SQL text
// as the source's parser restored it.
type Default struct {
	Value string
	Expr  bool
}

// TableShape is a whole table's columns and key.
type TableShape struct {
	Columns    []ColumnDef
	PrimaryKey []string
	Charset    string `json:",omitempty"` // the table's default character set; "" when not known
}

// Record is one change event. It is a value: copy it freely; do not mutate
// Rows or Schemas that another component may hold.
type Record struct {
	Op          Op
	Table       TableID
	KeySchema   *Schema // struct of the primary-key columns; nil when the table has none
	Key         Row     // aligned with KeySchema.Fields
	ValueSchema *Schema // struct of the table's columns
	Before      Row     // nil when absent (inserts, snapshot reads)
	After       Row     // nil when absent (deletes)
	Source      Source
	Transaction *Transaction
	TsMs        int64 // when sluice processed the change
	// Position is the opaque source position at which reading may resume
	// once this record and all before it are delivered. Nil inside a
	// transaction: positions are only given at transaction boundaries.
	Position []byte
	// ID is the record's identity in its source's history (id.go), set by
	// the source for every record it makes, snapshot rows included.
	ID      ID
	Change  *SchemaChange
	Headers map[string]string
	// Delivery is set by a transport on records it hands to a sink: where the
	// record was read from, so a sink can store per-queue progress.
	Delivery *Delivery
}

// HeaderTxEnd, set to "true" by a transport on a data record, says it is
// the last record of its source transaction on its queue: the transaction's
// commit was published with it. Transports drop commit markers, so this is
// how a transaction-consistent sink knows a queue's tail is complete without
// waiting for the next transaction.
const HeaderTxEnd = "sluice.tx_end"

// Delivery locates a record on a transport (Kafka Connect's topic, partition
// and offset). A queue is named by (Topic, Broker, Queue): with several
// RocketMQ master brokers, queue numbers repeat per broker. Offset is the
// transport's own coordinate, for logs and tools; ordering and duplicate
// detection use Record.ID, never Offset.
type Delivery struct {
	Topic  string
	Broker string // "" on transports with one broker (embedded)
	Queue  int
	Offset int64
}

// KeyString renders the key as text, stable for equal keys: it is used as the
// message key, for partitioning and in error messages.
func (r *Record) KeyString() string {
	if len(r.Key) == 0 {
		return ""
	}
	var tmp [64]byte
	b := tmp[:0]
	for i, v := range r.Key {
		if i > 0 {
			b = append(b, '|')
		}
		b = appendKeyValue(b, v)
	}
	return string(b)
}

// KeyValuesEqual compares two keys column by column when every column of
// both is an int64, a uint64 or a string, the same type in both (what
// source keys almost always are): decided is then true and equal the
// answer. Otherwise (other types, mixed types, other lengths) decided is
// false and the caller compares the keys its own way (their texts).
func KeyValuesEqual(a, b Row) (equal, decided bool) {
	if len(a) != len(b) {
		return false, false
	}
	equal = true
	for i := range a {
		switch x := a[i].(type) {
		case int64:
			y, ok := b[i].(int64)
			if !ok {
				return false, false
			}
			equal = equal && x == y
		case uint64:
			y, ok := b[i].(uint64)
			if !ok {
				return false, false
			}
			equal = equal && x == y
		case string:
			y, ok := b[i].(string)
			if !ok {
				return false, false
			}
			equal = equal && x == y
		default:
			return false, false
		}
	}
	return equal, true
}

// keyEscaper escapes the separator in string key columns.
var keyEscaper = strings.NewReplacer("\\", "\\\\", "|", "\\|")

// appendKeyValue appends v's text in a key: fmt's %v (%x for bytes), written
// without fmt for the types keys usually have.
func appendKeyValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "\\N"...)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case Dec:
		return x.Append(b)
	case []byte:
		return hex.AppendEncode(b, x)
	case Geom:
		b = strconv.AppendUint(b, uint64(x.SRID), 10)
		b = append(b, ':')
		return hex.AppendEncode(b, x.WKB)
	case string:
		if !strings.ContainsAny(x, "\\|") {
			return append(b, x...)
		}
		return append(b, keyEscaper.Replace(x)...)
	default:
		return fmt.Append(b, x)
	}
}

// Image returns the row image a sink should write: After, or Before for deletes.
func (r *Record) Image() Row {
	if r.After != nil {
		return r.After
	}
	return r.Before
}
