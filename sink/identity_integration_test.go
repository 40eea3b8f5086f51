package sink

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// onQueue delivers r at (topic, broker, queue) with ID testID(off).
func onQueue(r schema.Record, broker string, queue int, off int64) schema.Record {
	r.Delivery, r.ID = deliveredAt("ident", queue, off)
	r.Delivery.Broker = broker
	return r
}

// Issue 10, problem 9: a batch holding a record and its replay (published
// again by a restarted source) keeps the newer version, and the newer
// record arriving again in the next batch is then harmlessly skipped.
// Before record IDs the reducer kept the replayed older version and the
// next batch's newer record was skipped as applied: the row stayed behind.
func TestSinkBatchWithRecordAndReplayKeepsNewest(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		write(t, s, onQueue(cIns("rp", 1, "v1"), "", 0, 1), onQueue(cUpd("rp", 1, 1, "v1", "v2"), "", 0, 2), onQueue(cIns("rp", 1, "v1"), "", 0, 1))
		write(t, s, onQueue(cUpd("rp", 1, 1, "v1", "v2"), "", 0, 2))
		wantRows(t, e, "rp", map[int64]string{1: "v2"})
		write(t, s, onQueue(cUpd("rp", 1, 1, "v2", "v3"), "", 0, 3))
		wantRows(t, e, "rp", map[int64]string{1: "v3"})
	})
}

// Issue 10, problem 4: queue 0 of broker-a and queue 0 of broker-b are two
// queues: the progress of one does not skip the other's records, in this
// sink or in a fresh one reading the progress table.
func TestSinkProgressKeyedByBroker(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		write(t, s, onQueue(cIns("br", 1, "a"), "broker-a", 0, 100))
		write(t, s, onQueue(cIns("br", 2, "b"), "broker-b", 0, 50))
		wantRows(t, e, "br", map[int64]string{1: "a", 2: "b"})
		fresh := e.open(t, nil)
		write(t, fresh, onQueue(cIns("br", 3, "b"), "broker-b", 0, 60), onQueue(cIns("br", 4, "a"), "broker-a", 0, 90))
		wantRows(t, e, "br", map[int64]string{1: "a", 2: "b", 3: "b"})
	})
}

// A delivered record without an ID is refused, not guessed about.
func TestSinkRefusesRecordWithoutID(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, nil)
		r := cIns("noid", 1, "a")
		r.Delivery = &schema.Delivery{Topic: "ident", Queue: 0, Offset: 3}
		err := s.Write(context.Background(), []schema.Record{r})
		if err == nil || !isFatal(err) || !strings.Contains(err.Error(), "no record ID") {
			t.Fatalf("Write = %v, want a fatal error about the missing ID", err)
		}
	})
}

// Issue 10, problem 6: a captured table that maps onto the sink's own
// progress table (a source database creating sluice_progress and inserting a
// large offset) must not overwrite it, nor make the sink skip later changes:
// the record is refused with an error naming both.
func TestSinkRefusesSourceTableOnControlTable(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		// The control tables are in the default schema: public on
		// PostgreSQL, the DSN's database on MySQL (the schema of e).
		hostileDB := e.schema
		if e.dialect == DialectPostgres {
			hostileDB = "public"
		}
		s := e.open(t, func(c *Config) { c.SchemaTemplate = "${db}" })
		ok := func(id int64, off int64) schema.Record {
			r := onQueue(cIns("t", id, "x"), "", 0, off)
			r.Table.Database = e.schema
			return r
		}
		write(t, s, ok(1, 1))
		hostile := onQueue(schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: hostileDB, Table: "sluice_progress"},
			KeySchema: progressKeySchema, Key: schema.Row{e.cfg.Pipeline, "ident", int64(0)}, ValueSchema: progressValueSchema,
			After: schema.Row{e.cfg.Pipeline, "ident", int64(0), strings.Repeat("f", 60), int64(1) << 62}}, "", 1, 2)
		err := s.Write(context.Background(), []schema.Record{hostile})
		if err == nil || !isFatal(err) || !strings.Contains(err.Error(), hostileDB+".sluice_progress") || !strings.Contains(err.Error(), "progress table") {
			t.Fatalf("Write = %v, want a fatal error naming the source table and the progress table", err)
		}
		// a new sink (the restarted pipeline) refuses it too, and applies
		// the changes after the first
		s2 := e.open(t, func(c *Config) { c.SchemaTemplate = "${db}" })
		if err := s2.Write(context.Background(), []schema.Record{ok(2, 3), hostile}); err == nil {
			t.Fatal("a fresh sink wrote the source's sluice_progress over its own")
		}
		write(t, s2, ok(2, 3))
		if got := e.rows(t, "t"); len(got) != 2 {
			t.Fatalf("target rows %v, want 2: a later change was skipped", got)
		}
	})
}

var (
	progressKeySchema = &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
		{Name: "pipeline", Schema: schema.Primitive(schema.String, false)},
		{Name: "topic", Schema: schema.Primitive(schema.String, false)},
		{Name: "queue", Schema: schema.Primitive(schema.Int64, false)}}}
	progressValueSchema = &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
		{Name: "pipeline", Schema: schema.Primitive(schema.String, false)},
		{Name: "topic", Schema: schema.Primitive(schema.String, false)},
		{Name: "queue", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "last_id", Schema: schema.Primitive(schema.String, false)},
		{Name: "last_offset", Schema: schema.Primitive(schema.Int64, false)}}}
)

// A progress table of the shape before record IDs (int last_offset) is
// migrated in place (ALTER TABLE ADD COLUMN last_id): its offsets are no
// IDs, so a huge stored offset does not make the sink skip anything.
func TestSinkMigratesOldProgressTable(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		old := "old_progress_" + suffix()
		ddl := "CREATE TABLE " + e.quote(old) + " (pipeline VARCHAR(255) NOT NULL, topic VARCHAR(255) NOT NULL, queue INT NOT NULL, last_offset BIGINT NOT NULL, updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (pipeline, topic, queue))"
		ins := "INSERT INTO " + e.quote(old) + " (pipeline, topic, queue, last_offset) VALUES ($1, 'ident', 0, 9000000000000000000)"
		if e.dialect == DialectMySQL {
			ins = strings.Replace(ins, "$1", "?", 1)
		}
		db := e.db // its default schema holds the progress table
		if _, err := db.Exec(ddl); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Exec("DROP TABLE " + e.quote(old)) })
		if _, err := db.Exec(ins, e.cfg.Pipeline); err != nil {
			t.Fatal(err)
		}
		s := e.open(t, func(c *Config) { c.ProgressTable = old })
		write(t, s, onQueue(cIns("mig", 1, "a"), "", 0, 5))
		wantRows(t, e, "mig", map[int64]string{1: "a"})
		write(t, s, onQueue(cIns("mig", 2, "b"), "", 0, 4)) // at or below: skipped
		wantRows(t, e, "mig", map[int64]string{1: "a"})
		// and a second start finds the table migrated
		s2 := e.open(t, func(c *Config) { c.ProgressTable = old })
		write(t, s2, onQueue(cIns("mig", 3, "c"), "", 0, 6), onQueue(cIns("mig", 2, "b"), "", 0, 5))
		wantRows(t, e, "mig", map[int64]string{1: "a", 3: "c"})
	})
}
