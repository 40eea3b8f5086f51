package sink

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

type typeCase struct {
	name   string
	s      *schema.Schema
	v      any
	pg, my string // expected text read back ("" = same as pg)
}

func lg(t schema.Type, l schema.Logical, params ...string) *schema.Schema {
	s := &schema.Schema{Type: t, Logical: l, Optional: true}
	if len(params) > 0 {
		s.Params = map[string]string{}
		for i := 0; i+1 < len(params); i += 2 {
			s.Params[params[i]] = params[i+1]
		}
	}
	return s
}

func typeCases() []typeCase {
	day := func(y, m, d int) int32 {
		// days since epoch via the same library the sink uses
		return int32(mustDays(y, m, d))
	}
	wkb, _ := hex.DecodeString("0101000000000000000000f03f0000000000000040") // POINT(1 2)
	return []typeCase{
		{"i8", schema.Primitive(schema.Int8, true), int64(-128), "-128", ""},
		{"i16", schema.Primitive(schema.Int16, true), int64(-32768), "-32768", ""},
		{"i32", schema.Primitive(schema.Int32, true), int64(math.MinInt32), "-2147483648", ""},
		{"i64", schema.Primitive(schema.Int64, true), int64(math.MinInt64), "-9223372036854775808", ""},
		{"u64", schema.Primitive(schema.Uint64, true), uint64(math.MaxUint64), "18446744073709551615", ""},
		{"dec", schema.DecimalSchema(65, 30, true), schema.MustDec("-12345678901234567890123456789012345.123456789012345678901234567890"),
			"-12345678901234567890123456789012345.123456789012345678901234567890", ""},
		{"dec_small", schema.DecimalSchema(5, 2, true), schema.MustDec("0.50"), "0.50", ""},
		{"f32", schema.Primitive(schema.Float32, true), float32(3.4028235e38), "3.4028235e+38", ""},
		{"f64", schema.Primitive(schema.Float64, true), math.SmallestNonzeroFloat64, "5e-324", ""},
		{"bool", schema.Primitive(schema.Bool, true), true, "true", "1"},
		{"str", schema.Primitive(schema.String, true), "héllo 'q' \"dq\" \\ `bt` 数 😀\t\n\r\\N", "héllo 'q' \"dq\" \\ `bt` 数 😀\t\n\r\\N", ""},
		{"str_empty", schema.Primitive(schema.String, true), "", "", ""},
		{"bytes", schema.Primitive(schema.Bytes, true), []byte{0x00, 0xff, 0xfe, '\'', '\\', 0x80}, "00fffe275c80", ""},
		{"date_min", lg(schema.Int32, schema.Date), day(1000, 1, 1), "1000-01-01", ""},
		{"date_max", lg(schema.Int32, schema.Date), day(9999, 12, 31), "9999-12-31", ""},
		{"time", lg(schema.Int64, schema.Time), int64(86399_999999), "23:59:59.999999", ""},
		{"ts", lg(schema.Int64, schema.Timestamp), int64(1709210096_123456), "2024-02-29 12:34:56.123456", ""},
		{"ts_old", lg(schema.Int64, schema.Timestamp), int64(-30610224000_000000 + 1), "1000-01-01 00:00:00.000001", ""},
		{"zts", lg(schema.Int64, schema.ZonedTimestamp), int64(2147483647_999999), "2038-01-19 03:14:07.999999", ""},
		// The source's fractional precision becomes the target's.
		{"ts3", lg(schema.Int64, schema.Timestamp, schema.ParamSourceType, "datetime(3)"), int64(1709210096_123000), "2024-02-29 12:34:56.123", ""},
		{"ts0", lg(schema.Int64, schema.Timestamp, schema.ParamSourceType, "datetime"), int64(1709210096_000000), "2024-02-29 12:34:56", ""},
		{"zts2", lg(schema.Int64, schema.ZonedTimestamp, schema.ParamSourceType, "timestamp(2)"), int64(2147483647_990000), "2038-01-19 03:14:07.99", ""},
		{"time3", lg(schema.Int64, schema.Time, schema.ParamSourceType, "time(3)"), int64(86399_999000), "23:59:59.999", ""},
		{"json", lg(schema.String, schema.Json), `{"a": [1, 2.5, "x"], "b": null}`, `{"a": [1, 2.5, "x"], "b": null}`, ""},
		{"enum", lg(schema.String, schema.Enum, schema.ParamAllowed, "a,b"), "b", "b", ""},
		// SETs are TEXT[] on PostgreSQL (read back as type:array text),
		// the joined labels on MySQL (read back in brackets).
		{"set", lg(schema.String, schema.Set, schema.ParamAllowed, "a,b,c"), "a,c", "text[]:{a,c}", "[a,c]"},
		{"set_quotes", lg(schema.String, schema.Set, schema.ParamAllowed, `it's,say "hi",back\slash,x y,{b}`), `it's,say "hi",back\slash,x y,{b}`,
			`text[]:{it's,"say \"hi\"","back\\slash","x y","{b}"}`, `[it's,say "hi",back\slash,x y,{b}]`},
		{"set_empty", lg(schema.String, schema.Set, schema.ParamAllowed, "a,b"), "", "text[]:{}", "[]"},
		{"bits", lg(schema.Int64, schema.Bits, schema.ParamLength, "12"), uint64(0xABC), "101010111100", "2748"},
		{"bits64", lg(schema.Int64, schema.Bits, schema.ParamLength, "64"), uint64(math.MaxUint64), strings.Repeat("1", 64), "18446744073709551615"},
		{"year", lg(schema.Int64, schema.Year), int64(2155), "2155", ""},
		{"geo", lg(schema.Bytes, schema.Geometry), schema.Geom{WKB: wkb, SRID: 4326}, "0101000000000000000000f03f0000000000000040", ""},
		// Source types kept on MySQL targets.
		{"src_enum", lg(schema.String, schema.Enum, schema.ParamSourceType, "enum('a','it''s')"), "it's", "it's", ""},
		{"src_u64", lg(schema.Uint64, schema.None, schema.ParamSourceType, "bigint(20) unsigned"), uint64(math.MaxUint64), "18446744073709551615", ""},
	}
}

func mustDays(y, m, d int) int64 {
	// Days from civil (Howard Hinnant's algorithm).
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}

// readExpr renders a column as comparable text on each target.
func readExpr(e *tenv, c typeCase) string {
	q := e.quote(c.name)
	if e.dialect == DialectPostgres {
		switch {
		case c.s.Type == schema.Bytes && c.s.Logical != schema.Decimal:
			return "encode(" + q + ", 'hex')"
		case c.s.Logical == schema.ZonedTimestamp:
			return "(" + q + " AT TIME ZONE 'UTC')::text"
		case c.s.Logical == schema.Set:
			return "format_type(pg_typeof(" + q + "), NULL) || ':' || " + q + "::text"
		}
		return q + "::text"
	}
	switch {
	case c.s.Type == schema.Bytes && c.s.Logical != schema.Decimal:
		return "LOWER(HEX(" + q + "))"
	case c.s.Type == schema.Float32:
		return "CAST(CAST(" + q + " AS DOUBLE) AS CHAR)"
	case c.s.Logical == schema.Bits:
		return "CAST(" + q + "+0 AS CHAR)"
	case c.s.Logical == schema.Set:
		return "CONCAT('[', " + q + ", ']')"
	}
	return "CAST(" + q + " AS CHAR)"
}

func TestWriteTypeMatrix(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		t.Run("values", func(t *testing.T) { typeMatrix(t, e, -1, "") })
		if e.dialect == DialectPostgres {
			t.Run("copy", func(t *testing.T) { typeMatrix(t, e, 1, "") })
			// Updates (upserts) merge: through a rowset document, and
			// through a staging table as before it; both must land the
			// same values as VALUES and COPY.
			t.Run("rowset", func(t *testing.T) { typeMatrix(t, e, 1, "rowset") })
			t.Run("staging", func(t *testing.T) { typeMatrix(t, e, 1, "staging") })
		}
	})
}

func typeMatrix(t *testing.T, e *tenv, copyThreshold int, merge string) {
	{
		s := e.open(t, func(c *Config) { c.CopyThreshold, c.TimeAsInterval = copyThreshold, false }) // TIME(fsp) columns
		s.applier.stagingMerge = merge == "staging"
		op := schema.OpCreate
		if merge != "" {
			op = schema.OpUpdate
		}
		table := "types_" + strconv.Itoa(max(copyThreshold, 0)) + merge
		cases := typeCases()
		if merge == "rowset" {
			// A JSON column merges through a staging table (RowsetColumnOK):
			// leave it out here, so the rowset path takes the group.
			cases = slices.DeleteFunc(cases, func(c typeCase) bool { return c.name == "json" })
		}
		fields := []schema.Field{{Name: "id", Schema: schema.Primitive(schema.Int64, false)}}
		full, nulls := schema.Row{int64(1)}, schema.Row{int64(2)}
		for _, c := range cases {
			fields = append(fields, schema.Field{Name: c.name, Schema: c.s})
			full = append(full, c.v)
			nulls = append(nulls, nil)
		}
		val := &schema.Schema{Type: schema.Struct, Fields: fields}
		mk := func(row schema.Row) schema.Record {
			return schema.Record{Op: op, Table: schema.TableID{Database: "src", Table: table}, KeySchema: tKey, Key: schema.Row{row[0]}, ValueSchema: val, After: row}
		}
		write(t, s, mk(full), mk(nulls))
		if got := s.applier.rowsetMerges.Load(); (merge == "rowset") != (got > 0) {
			t.Fatalf("%d rowset merges in mode %q", got, merge)
		}
		if e.dialect == DialectPostgres {
			for col, want := range map[string]string{"ts3": "timestamp(3) without time zone", "ts0": "timestamp(0) without time zone",
				"zts2": "timestamp(2) with time zone", "time3": "time(3) without time zone", "ts": "timestamp(6) without time zone"} {
				if got := e.columnType(t, table, col); got != want {
					t.Errorf("column %s is %s, want %s (the source's fractional precision)", col, got, want)
				}
			}
		}
		exprs := make([]string, len(cases))
		for i, c := range cases {
			exprs[i] = readExpr(e, c)
		}
		for _, id := range []int{1, 2} {
			got := make([]sql.NullString, len(cases))
			ptrs := make([]any, len(cases))
			for i := range got {
				ptrs[i] = &got[i]
			}
			err := e.db.QueryRow("SELECT " + strings.Join(exprs, ", ") + " FROM " + e.table(table) + " WHERE id = " + strconv.Itoa(id)).Scan(ptrs...)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range cases {
				if id == 2 {
					if got[i].Valid {
						t.Errorf("%s: NULL read back as %q", c.name, got[i].String)
					}
					continue
				}
				want := c.pg
				if e.dialect == DialectMySQL && c.my != "" {
					want = c.my
				}
				if !got[i].Valid {
					t.Errorf("%s: read back NULL, want %q", c.name, want)
					continue
				}
				if c.s.Type == schema.Float32 || c.s.Type == schema.Float64 {
					bits := 64
					if c.s.Type == schema.Float32 {
						bits = 32
					}
					g, err1 := strconv.ParseFloat(got[i].String, bits)
					w, _ := strconv.ParseFloat(want, bits)
					if err1 != nil || g != w {
						t.Errorf("%s: read back %q, want %v", c.name, got[i].String, w)
					}
					continue
				}
				if got[i].String != want {
					t.Errorf("%s: read back %q, want %q", c.name, got[i].String, want)
				}
			}
		}
		// A fresh Sink finds every column as it would create it: nothing
		// to widen, nothing to warn about.
		s2, logs := e.openCaptured(t, func(c *Config) { c.CopyThreshold, c.TimeAsInterval = copyThreshold, false })
		third := slices.Clone(full)
		third[0] = int64(3)
		write(t, s2, mk(third))
		if l := logs.warnings(); len(l) > 0 {
			t.Errorf("warnings on a table the sink made: %+v", l)
		}
		if l := logs.find(slog.LevelInfo, "widened"); len(l) > 0 {
			t.Errorf("widened columns of a table the sink made: %+v", l)
		}
	}
}

func TestWriteTimeOutOfRange(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, func(c *Config) { c.TimeAsInterval = false })
		val := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
			{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
			{Name: "dur", Schema: lg(schema.Int64, schema.Time)},
		}}
		mk := func(id, us int64) schema.Record {
			return schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "src", Table: "dur"}, KeySchema: tKey, Key: schema.Row{id}, ValueSchema: val, After: schema.Row{id, us}}
		}
		long := int64(-(838*3600 + 59*60 + 59) * 1_000_000) // MySQL's TIME minimum
		err := s.Write(context.Background(), []schema.Record{mk(1, 3600_000000), mk(2, long)})
		if e.dialect == DialectMySQL {
			if err != nil {
				t.Fatalf("MySQL TIME -838:59:59: %v", err)
			}
			var got string
			if err := e.db.QueryRow("SELECT CAST(dur AS CHAR) FROM " + e.table("dur") + " WHERE id = 2").Scan(&got); err != nil || got != "-838:59:59.000000" {
				t.Fatalf("read back %q %v", got, err)
			}
			return
		}
		if !errors.Is(err, ErrValue) || !strings.Contains(err.Error(), `"dur"`) || !isFatal(err) {
			t.Fatalf("error %v: want a fatal ErrValue naming column dur", err)
		}
		if !strings.Contains(err.Error(), "id=2") {
			t.Errorf("error %v does not name the key", err)
		}
		if !strings.Contains(err.Error(), "time_as_interval: true") {
			t.Errorf("error %v does not name the YAML key to set", err)
		}

		// time_as_interval set afterwards: the TIME column made before
		// becomes INTERVAL (auto_evolve), keeping its rows, and takes the
		// value that stopped the pipeline.
		write(t, s, mk(3, 7200_000000))
		s2 := e.open(t, func(c *Config) { c.TimeAsInterval = true })
		write(t, s2, mk(1, 3600_000000), mk(2, long))
		var typ string
		if err := e.db.QueryRow("SELECT data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'dur' AND column_name = 'dur'", e.schema).Scan(&typ); err != nil || typ != "interval" {
			t.Fatalf("dur has type %q (%v) after time_as_interval, want interval", typ, err)
		}
		got := map[int64]int64{}
		rows, err := e.db.Query("SELECT id, (EXTRACT(EPOCH FROM dur) * 1000000)::bigint FROM " + e.table("dur"))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, us int64
			if err := rows.Scan(&id, &us); err != nil {
				t.Fatal(err)
			}
			got[id] = us
		}
		rows.Close()
		if want := map[int64]int64{1: 3600_000000, 2: long, 3: 7200_000000}; !maps.Equal(got, want) {
			t.Errorf("after time_as_interval: %v, want %v", got, want)
		}

		// without auto_evolve the sink says what to run instead of
		// letting PostgreSQL fail on the INTERVAL text
		other := schema.TableID{Database: "src", Table: "dur_fixed"}
		mk2 := func(id, us int64) schema.Record {
			r := mk(id, us)
			r.Table = other
			return r
		}
		write(t, e.open(t, func(c *Config) { c.TimeAsInterval = false }), mk2(1, 3600_000000))
		s3 := e.open(t, func(c *Config) { c.TimeAsInterval, c.AutoEvolve = true, false })
		err = s3.Write(context.Background(), []schema.Record{mk2(2, long)})
		if !isFatal(err) || !strings.Contains(err.Error(), "ALTER TABLE") || !strings.Contains(err.Error(), "TYPE INTERVAL") {
			t.Fatalf("TIME column without auto_evolve: %v, want a fatal error with the ALTER TABLE to run", err)
		}
	})
}
