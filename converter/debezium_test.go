package converter

import (
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// Shaped after the create event of Debezium's MySQL connector documentation
// (3.x: source with ts_us/ts_ns and sequence, envelope ts_us/ts_ns, and
// "snapshot" written as a boolean as the documentation shows it), plus a
// DECIMAL, a DATETIME(3) as io.debezium.time.Timestamp (milliseconds) and a
// TIMESTAMP with an offset, as Debezium emits them under its defaults.
const debeziumKey = `{
  "schema": {"type": "struct", "name": "mysql-server-1.inventory.customers.Key", "optional": false,
    "fields": [{"field": "id", "type": "int32", "optional": false}]},
  "payload": {"id": 1004}
}`

const debeziumValue = `{
  "schema": {
    "type": "struct",
    "fields": [
      {"type": "struct", "fields": [
          {"type": "int32", "optional": false, "field": "id"},
          {"type": "string", "optional": false, "field": "first_name"},
          {"type": "string", "optional": false, "field": "last_name"},
          {"type": "string", "optional": false, "field": "email"},
          {"type": "bytes", "optional": true, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
           "parameters": {"scale": "2", "connect.decimal.precision": "8"}, "field": "balance"},
          {"type": "int64", "optional": true, "name": "io.debezium.time.Timestamp", "version": 1, "field": "created"},
          {"type": "string", "optional": true, "name": "io.debezium.time.ZonedTimestamp", "version": 1, "field": "seen"}
        ], "optional": true, "name": "mysql-server-1.inventory.customers.Value", "field": "before"},
      {"type": "struct", "fields": [
          {"type": "int32", "optional": false, "field": "id"},
          {"type": "string", "optional": false, "field": "first_name"},
          {"type": "string", "optional": false, "field": "last_name"},
          {"type": "string", "optional": false, "field": "email"},
          {"type": "bytes", "optional": true, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
           "parameters": {"scale": "2", "connect.decimal.precision": "8"}, "field": "balance"},
          {"type": "int64", "optional": true, "name": "io.debezium.time.Timestamp", "version": 1, "field": "created"},
          {"type": "string", "optional": true, "name": "io.debezium.time.ZonedTimestamp", "version": 1, "field": "seen"}
        ], "optional": true, "name": "mysql-server-1.inventory.customers.Value", "field": "after"},
      {"type": "struct", "fields": [
          {"type": "string", "optional": false, "field": "version"},
          {"type": "string", "optional": false, "field": "connector"},
          {"type": "string", "optional": false, "field": "name"},
          {"type": "int64", "optional": false, "field": "ts_ms"},
          {"type": "string", "optional": true, "name": "io.debezium.data.Enum", "version": 1,
           "parameters": {"allowed": "true,last,false,incremental"}, "default": "false", "field": "snapshot"},
          {"type": "string", "optional": false, "field": "db"},
          {"type": "string", "optional": true, "field": "sequence"},
          {"type": "int64", "optional": true, "field": "ts_us"},
          {"type": "int64", "optional": true, "field": "ts_ns"},
          {"type": "string", "optional": true, "field": "table"},
          {"type": "int64", "optional": false, "field": "server_id"},
          {"type": "string", "optional": true, "field": "gtid"},
          {"type": "string", "optional": false, "field": "file"},
          {"type": "int64", "optional": false, "field": "pos"},
          {"type": "int32", "optional": false, "field": "row"},
          {"type": "int64", "optional": true, "field": "thread"},
          {"type": "string", "optional": true, "field": "query"}
        ], "optional": false, "name": "io.debezium.connector.mysql.Source", "field": "source"},
      {"type": "string", "optional": false, "field": "op"},
      {"type": "int64", "optional": true, "field": "ts_ms"},
      {"type": "int64", "optional": true, "field": "ts_us"},
      {"type": "int64", "optional": true, "field": "ts_ns"},
      {"type": "struct", "fields": [
          {"type": "string", "optional": false, "field": "id"},
          {"type": "int64", "optional": false, "field": "total_order"},
          {"type": "int64", "optional": false, "field": "data_collection_order"}
        ], "optional": true, "name": "event.block", "version": 1, "field": "transaction"}
    ],
    "optional": false,
    "name": "mysql-server-1.inventory.customers.Envelope",
    "version": 2
  },
  "payload": {
    "op": "c",
    "ts_ms": 1465491411815,
    "ts_us": 1465491411815437,
    "ts_ns": 1465491411815437158,
    "before": null,
    "after": {
      "id": 1004,
      "first_name": "Anne",
      "last_name": "Kretchmar",
      "email": "annek@noanswer.org",
      "balance": "MDk=",
      "created": 1529476623123,
      "seen": "2018-06-20T15:37:03.5+02:00"
    },
    "source": {
      "version": "3.0.0.Final",
      "connector": "mysql",
      "name": "mysql-server-1",
      "ts_ms": 0,
      "ts_us": 0,
      "ts_ns": 0,
      "snapshot": false,
      "db": "inventory",
      "table": "customers",
      "server_id": 0,
      "gtid": null,
      "file": "mysql-bin.000003",
      "pos": 154,
      "row": 0,
      "thread": 7,
      "query": "INSERT INTO customers (first_name, last_name, email) VALUES ('Anne', 'Kretchmar', 'annek@noanswer.org')"
    },
    "transaction": null
  }
}`

func TestDecodeDebeziumDocumentedEvent(t *testing.T) {
	r, err := NewJSON(DefaultOptions()).Decode([]byte(debeziumKey), []byte(debeziumValue))
	if err != nil {
		t.Fatal(err)
	}
	str := &schema.Schema{Type: schema.String}
	wantValue := &schema.Schema{Type: schema.Struct, Name: "mysql-server-1.inventory.customers.Value", Optional: true, Fields: []schema.Field{
		{Name: "id", Schema: &schema.Schema{Type: schema.Int32}},
		{Name: "first_name", Schema: str}, {Name: "last_name", Schema: str}, {Name: "email", Schema: str},
		{Name: "balance", Schema: schema.DecimalSchema(8, 2, true)},
		{Name: "created", Schema: &schema.Schema{Type: schema.Int64, Logical: schema.Timestamp, Optional: true}},
		{Name: "seen", Schema: &schema.Schema{Type: schema.Int64, Logical: schema.ZonedTimestamp, Optional: true}},
	}}
	wantKey := &schema.Schema{Type: schema.Struct, Name: "mysql-server-1.inventory.customers.Key", Fields: []schema.Field{
		{Name: "id", Schema: &schema.Schema{Type: schema.Int32}}}}
	want := schema.Record{
		Op:          schema.OpCreate,
		Table:       schema.TableID{Database: "inventory", Table: "customers"},
		KeySchema:   wantKey,
		Key:         schema.Row{int64(1004)},
		ValueSchema: wantValue,
		After: schema.Row{int64(1004), "Anne", "Kretchmar", "annek@noanswer.org", schema.MustDec("123.45"),
			int64(1529476623123000), int64(1529501823500000)},
		Source: schema.Source{Version: "3.0.0.Final", Connector: "mysql", Name: "mysql-server-1", File: "mysql-bin.000003",
			Pos: 154, Thread: 7, Query: "INSERT INTO customers (first_name, last_name, email) VALUES ('Anne', 'Kretchmar', 'annek@noanswer.org')"},
		TsMs: 1465491411815,
	}
	if d := recordDiff(&want, &r); d != "" {
		t.Fatal(d)
	}
	// Re-encoding gives an event that decodes to the same record.
	c := NewJSON(DefaultOptions())
	k, v, err := c.Encode(&r)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.Decode(k, v)
	if err != nil {
		t.Fatal(err)
	}
	if d := recordDiff(&r, &r2); d != "" {
		t.Fatal(d)
	}
}

// TestDecodeForeignDebeziumTypes: types Debezium emits under other settings
// decode to sluice's representation (µs, Dec).
func TestDecodeForeignDebeziumTypes(t *testing.T) {
	for _, tc := range []struct {
		field, value string
		want         any
		logical      schema.Logical
	}{
		{`{"type":"int32","name":"io.debezium.time.Time","field":"v"}`, `45296789`, int64(45296789000), schema.Time},
		{`{"type":"int64","name":"io.debezium.time.NanoTime","field":"v"}`, `-1500`, int64(-2), schema.Time},
		{`{"type":"int64","name":"io.debezium.time.NanoTimestamp","field":"v"}`, `1529476623123456789`, int64(1529476623123456), schema.Timestamp},
		{`{"type":"int64","name":"org.apache.kafka.connect.data.Timestamp","field":"v"}`, `1529476623123`, int64(1529476623123000), schema.Timestamp},
		{`{"type":"int32","name":"org.apache.kafka.connect.data.Date","field":"v"}`, `17702`, int32(17702), schema.Date},
		{`{"type":"struct","name":"io.debezium.data.VariableScaleDecimal","fields":[{"type":"int32","field":"scale"},{"type":"bytes","field":"value"}],"field":"v"}`,
			`{"scale":3,"value":"/zg="}`, schema.MustDec("-0.200"), schema.Decimal},
		{`{"type":"string","name":"io.debezium.time.ZonedTimestamp","field":"v"}`, `"1969-12-31T23:00:00-01:00"`, int64(0), schema.ZonedTimestamp},
	} {
		value := `{"schema":{"type":"struct","fields":[{"type":"struct","fields":[` + tc.field +
			`],"optional":true,"name":"x.Value","field":"after"}],"name":"x.Envelope"},"payload":{"after":{"v":` + tc.value + `},"op":"r"}}`
		r, err := NewJSON(DefaultOptions()).Decode(nil, []byte(value))
		if err != nil {
			t.Errorf("%s: %v", tc.field, err)
			continue
		}
		if got := r.After[0]; !valueEqual(tc.want, got) || r.ValueSchema.Fields[0].Schema.Logical != tc.logical {
			t.Errorf("%s: got %#v %s, want %#v %s", tc.field, got, r.ValueSchema.Fields[0].Schema, tc.want, tc.logical)
		}
	}
}
