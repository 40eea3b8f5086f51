package sink

import (
	"context"
	"math"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// With TimeAsInterval, PostgreSQL TIME columns become INTERVAL and take the
// whole MySQL TIME range (negative, beyond 24 hours) with microseconds; the
// values read back exactly, through VALUES and through COPY.
func TestWriteTimeAsInterval(t *testing.T) {
	e := pgEnv(t)
	val := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "dur", Schema: lg(schema.Int64, schema.Time)},
	}}
	maxTime := int64(838*3600+59*60+59) * 1_000_000
	values := []int64{0, -1, 1, 86399_999999, 86400_000000, 100 * 3600_000000, -maxTime, maxTime, -maxTime + 1, 3_000_000_000 * 3600}
	for _, copyThreshold := range []int{-1, 1} {
		s := e.open(t, func(c *Config) { c.TimeAsInterval, c.CopyThreshold = true, copyThreshold })
		table := "dur_copy"
		if copyThreshold < 0 {
			table = "dur_values"
		}
		var recs []schema.Record
		for i, us := range values {
			id := int64(i)
			recs = append(recs, schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "src", Table: table}, KeySchema: tKey, Key: schema.Row{id}, ValueSchema: val, After: schema.Row{id, us}})
		}
		recs = append(recs, schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "src", Table: table}, KeySchema: tKey, Key: schema.Row{int64(99)}, ValueSchema: val, After: schema.Row{int64(99), nil}})
		write(t, s, recs...)
		var typ string
		if err := e.db.QueryRow("SELECT data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = 'dur'", e.schema, table).Scan(&typ); err != nil || typ != "interval" {
			t.Fatalf("%s.dur has type %q (%v), want interval", table, typ, err)
		}
		rows, err := e.db.Query("SELECT id, (EXTRACT(EPOCH FROM dur) * 1000000)::bigint FROM " + e.table(table) + " WHERE dur IS NOT NULL ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id, us int64
			if err := rows.Scan(&id, &us); err != nil {
				t.Fatal(err)
			}
			if us != values[id] {
				t.Errorf("%s id %d: read back %d µs, want %d", table, id, us, values[id])
			}
			n++
		}
		rows.Close()
		if n != len(values) {
			t.Fatalf("%s: %d non-NULL rows, want %d", table, n, len(values))
		}
	}
	// math.MinInt64 has no text form: refused as a value error, not wrapped.
	s := e.open(t, func(c *Config) { c.TimeAsInterval = true })
	err := s.Write(context.Background(), []schema.Record{{Op: schema.OpCreate, Table: schema.TableID{Database: "src", Table: "dur_values"}, KeySchema: tKey, Key: schema.Row{int64(100)}, ValueSchema: val, After: schema.Row{int64(100), int64(math.MinInt64)}}})
	if err == nil {
		t.Fatal("MinInt64 µs accepted")
	}
}
