package converter

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// Schema-change events carry their structure twice: Debezium's
// tableChanges (the whole table after a CREATE or ALTER, or a DROP), for
// Debezium consumers, filled from schema.SchemaChange.Tables; and "changes",
// the exact ordered column and table changes as JSON text, which Decode
// reads back (renames cannot be told from Debezium's table snapshots).

// schemaChangeKeySchema is Debezium's key of schema-change events.
// schemaChangeKeySchema is Debezium's SchemaChangeKey of the connector
// ("mysql" or "mariadb").
func schemaChangeKeySchema(connector string) string {
	return `{"type":"struct","fields":[{"type":"string","optional":false,"field":"databaseName"}],"optional":false,"name":"io.debezium.connector.` +
		connectorPackage(connector) + `.SchemaChangeKey","version":1}`
}

// connectorPackage is the Debezium package of a connector's schema names:
// "mariadb" for MariaDB, "mysql" for everything else.
func connectorPackage(connector string) string {
	if connector == "mariadb" {
		return "mariadb"
	}
	return "mysql"
}

func (c *JSON) encodeSchemaChangeKey(r *schema.Record) []byte {
	var b []byte
	if c.opts.Schemas {
		b = append(b, `{"schema":`...)
		b = append(b, schemaChangeKeySchema(r.Source.Connector)...)
		b = append(b, `,"payload":`...)
	}
	b = append(b, `{"databaseName":`...)
	b = appendString(b, r.Table.Database)
	b = append(b, '}')
	if c.opts.Schemas {
		b = append(b, '}')
	}
	return b
}

const columnSchemaJSON = `{"type":"struct","fields":[` +
	`{"type":"string","optional":false,"field":"name"},` +
	`{"type":"int32","optional":false,"field":"jdbcType"},` +
	`{"type":"int32","optional":true,"field":"nativeType"},` +
	`{"type":"string","optional":false,"field":"typeName"},` +
	`{"type":"string","optional":true,"field":"typeExpression"},` +
	`{"type":"string","optional":true,"field":"charsetName"},` +
	`{"type":"int32","optional":true,"field":"length"},` +
	`{"type":"int32","optional":true,"field":"scale"},` +
	`{"type":"int32","optional":false,"field":"position"},` +
	`{"type":"boolean","optional":true,"field":"optional"},` +
	`{"type":"boolean","optional":true,"field":"autoIncremented"},` +
	`{"type":"boolean","optional":true,"field":"generated"},` +
	`{"type":"string","optional":true,"field":"comment"},` +
	`{"type":"string","optional":true,"field":"defaultValueExpression"},` +
	`{"type":"array","items":{"type":"string","optional":false},"optional":true,"field":"enumValues"}` +
	`],"optional":false,"name":"io.debezium.connector.schema.Column","version":1}`

// tableChangesSchemaJSON is Debezium's io.debezium.connector.schema.Change.
const tableChangesSchemaJSON = `{"type":"array","items":{"type":"struct","fields":[` +
	`{"type":"string","optional":false,"field":"type"},` +
	`{"type":"string","optional":false,"field":"id"},` +
	`{"type":"struct","fields":[` +
	`{"type":"string","optional":true,"field":"defaultCharsetName"},` +
	`{"type":"array","items":{"type":"string","optional":false},"optional":true,"field":"primaryKeyColumnNames"},` +
	`{"type":"array","items":` + columnSchemaJSON + `,"optional":false,"field":"columns"},` +
	`{"type":"string","optional":true,"field":"comment"}` +
	`],"optional":true,"name":"io.debezium.connector.schema.Table","version":1,"field":"table"}` +
	`],"optional":false,"name":"io.debezium.connector.schema.Change","version":1},"optional":false,"field":"tableChanges"}`

// appendTableChanges writes Debezium's tableChanges (its
// ConnectTableChangeSerializer's shape): one entry per table change whose
// result the source knows (a DROP always, with the table's last shape when
// known; CREATE, ALTER and RENAME with the table's shape).
func appendTableChanges(b []byte, ch *schema.SchemaChange) []byte {
	b = append(b, '[')
	n := 0
	if ch != nil {
		for _, tc := range ch.Tables {
			typ, id := "ALTER", tc.Table
			switch tc.Kind {
			case schema.CreateTable:
				typ = "CREATE"
			case schema.DropTable:
				typ = "DROP"
			case schema.RenameTable:
				id = tc.NewTable
			}
			if typ != "DROP" && tc.Shape == nil {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"type":"`+typ+`","id":`...)
			b = appendString(b, strconv.Quote(id.Database)+"."+strconv.Quote(id.Table))
			b = append(b, `,"table":`...)
			shape := tc.Shape
			if shape == nil { // a DROP of a table whose shape the source does not know
				shape = &schema.TableShape{}
			}
			b = appendShape(b, shape)
			b = append(b, '}')
		}
	}
	return append(b, ']')
}

func appendShape(b []byte, s *schema.TableShape) []byte {
	b = append(b, `{"defaultCharsetName":`...)
	b = appendOptString(b, s.Charset)
	b = append(b, `,"primaryKeyColumnNames":[`...)
	for i, k := range s.PrimaryKey {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
	}
	b = append(b, `],"columns":[`...)
	for i, c := range s.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendColumn(b, c, i+1)
	}
	return append(b, `],"comment":null}`...)
}

func appendColumn(b []byte, c schema.ColumnDef, pos int) []byte {
	base, _, _ := strings.Cut(c.SourceType, "(")
	base = strings.TrimSpace(base)
	unsigned := strings.Contains(c.SourceType, "unsigned")
	typeName := strings.ToUpper(base)
	if unsigned && !strings.Contains(typeName, "UNSIGNED") {
		typeName += " UNSIGNED"
	}
	b = append(b, `{"name":`...)
	b = appendString(b, c.Name)
	b = append(b, `,"jdbcType":`...)
	b = appendInt(b, int64(jdbcType(strings.Fields(base))))
	b = append(b, `,"nativeType":null,"typeName":`...)
	b = appendString(b, typeName)
	b = append(b, `,"typeExpression":`...)
	b = appendString(b, typeName)
	b = append(b, `,"charsetName":`...)
	b = appendOptString(b, c.Charset)
	length, scale := "", ""
	if c.Type != nil {
		length, scale = c.Type.Param(schema.ParamLength), c.Type.Param(schema.ParamScale)
		if p := c.Type.Param(schema.ParamPrecision); p != "" {
			length = p
		}
	}
	if length == "" && c.Length > 0 {
		length = strconv.Itoa(c.Length)
	}
	if scale == "" && c.Length > 0 && c.Scale > 0 {
		scale = strconv.Itoa(c.Scale)
	}
	b = append(b, `,"length":`...)
	b = appendOptNumber(b, length)
	b = append(b, `,"scale":`...)
	b = appendOptNumber(b, scale)
	b = append(b, `,"position":`...)
	b = appendInt(b, int64(pos))
	b = append(b, `,"optional":`...)
	b = strconv.AppendBool(b, c.Type == nil || c.Type.Optional)
	b = append(b, `,"autoIncremented":`...)
	b = strconv.AppendBool(b, c.AutoIncrement)
	b = append(b, `,"generated":`...)
	b = strconv.AppendBool(b, c.Generated)
	b = append(b, `,"comment":`...)
	b = appendOptString(b, c.Comment)
	b = append(b, `,"defaultValueExpression":`...)
	if c.Default == nil {
		b = append(b, "null"...)
	} else {
		b = appendString(b, c.Default.Value)
	}
	b = append(b, `,"enumValues":`...)
	if len(c.Labels) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, l := range c.Labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, "'"+strings.ReplaceAll(l, "'", "''")+"'")
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendOptNumber(b []byte, s string) []byte {
	if n, err := strconv.Atoi(s); err == nil {
		return appendInt(b, int64(n))
	}
	return append(b, "null"...)
}

// jdbcType is java.sql.Types of a MySQL base type, as Debezium reports it.
func jdbcType(words []string) int {
	if len(words) == 0 {
		return 1111
	}
	switch words[0] {
	case "bit":
		return -7
	case "tinyint", "smallint": // Debezium's MySQL DDL parser: both SMALLINT
		return 5
	case "mediumint", "int", "integer":
		return 4
	case "bigint":
		return -5
	case "float":
		return 6
	case "double":
		return 8
	case "decimal":
		return 3
	case "char", "enum", "set":
		return 1
	case "varchar", "tinytext", "text", "mediumtext", "longtext":
		return 12
	case "date":
		return 91
	case "time":
		return 92
	case "datetime":
		return 93
	case "timestamp":
		return 2014
	case "year":
		return 4
	case "binary":
		return -2
	case "varbinary":
		return -3
	case "tinyblob", "blob", "mediumblob", "longblob":
		return 2004
	case "bool", "boolean":
		return 16
	}
	return 1111
}

// appendChanges writes the structured changes as JSON text (null: none).
func appendChanges(b []byte, ch *schema.SchemaChange) ([]byte, error) {
	if ch == nil || len(ch.Tables) == 0 {
		return append(b, "null"...), nil
	}
	j, err := json.Marshal(ch.Tables)
	if err != nil {
		return nil, fmt.Errorf("%w: schema change: %v", ErrValue, err)
	}
	return appendString(b, string(j)), nil
}

// readChanges parses the "changes" text back.
func readChanges(s string) ([]schema.TableChange, error) {
	var out []schema.TableChange
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, err
	}
	return out, nil
}
