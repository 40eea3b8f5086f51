package sink

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
	"github.com/sluicecdc/sluice/sink/mysql"
	"github.com/sluicecdc/sluice/sink/postgres"
)

func TestQuote(t *testing.T) {
	cases := []struct{ in, pg, my string }{
		{"plain", `"plain"`, "`plain`"},
		{`a"b`, `"a""b"`, "`a\"b`"},
		{"a`b", "\"a`b\"", "`a``b`"},
		{"with space", `"with space"`, "`with space`"},
		{"select", `"select"`, "`select`"},
		{"zähler 数", `"zähler 数"`, "`zähler 数`"},
		{`x"; DROP TABLE t; --`, `"x""; DROP TABLE t; --"`, "`x\"; DROP TABLE t; --`"},
	}
	for _, c := range cases {
		if got := (postgres.Dialect{}).Quote(c.in); got != c.pg {
			t.Errorf("pg quote(%q) = %s, want %s", c.in, got, c.pg)
		}
		if got := (mysql.Dialect{}).Quote(c.in); got != c.my {
			t.Errorf("mysql quote(%q) = %s, want %s", c.in, got, c.my)
		}
	}
}

func TestUpsertSQL(t *testing.T) {
	tg := target{Schema: "s", Table: "t"}
	cases := []struct {
		d    dialect.Dialect
		cols []string
		keys []string
		rows int
		want string
	}{
		{postgres.Dialect{}, []string{"id", "v"}, []string{"id"}, 2,
			`INSERT INTO "s"."t" ("id","v") VALUES ($1,$2),($3,$4) ON CONFLICT ("id") DO UPDATE SET "v"=EXCLUDED."v"`},
		{postgres.Dialect{}, []string{"a", "b"}, []string{"a", "b"}, 1,
			`INSERT INTO "s"."t" ("a","b") VALUES ($1,$2) ON CONFLICT ("a","b") DO NOTHING`},
		{mysql.Dialect{}, []string{"id", "v"}, []string{"id"}, 2,
			"INSERT INTO `s`.`t` (`id`,`v`) VALUES (?,?),(?,?) ON DUPLICATE KEY UPDATE `id`=VALUES(`id`),`v`=VALUES(`v`)"},
		{mysql.Dialect{}, []string{"a"}, []string{"a"}, 1,
			"INSERT INTO `s`.`t` (`a`) VALUES (?) ON DUPLICATE KEY UPDATE `a`=VALUES(`a`)"},
	}
	for _, c := range cases {
		if got := c.d.Upsert(tg, c.cols, c.keys, c.rows); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
	if got, want := deleteSQL(postgres.Dialect{}, tg, []string{"a", "b"}, 2), `DELETE FROM "s"."t" WHERE ("a","b") IN (($1,$2),($3,$4))`; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	if got, want := deleteSQL(mysql.Dialect{}, target{Table: "t"}, []string{"id"}, 3), "DELETE FROM `t` WHERE `id` IN (?,?,?)"; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	if got, want := (postgres.Dialect{}).UpsertFromSelect(tg, []string{"id", "v"}, []string{"id"}, `"stage"`),
		`INSERT INTO "s"."t" ("id","v") SELECT "id","v" FROM "stage" ON CONFLICT ("id") DO UPDATE SET "v"=EXCLUDED."v"`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestColumnTypes(t *testing.T) {
	withSrc := func(s *schema.Schema, src string) *schema.Schema {
		c := *s
		c.Params = map[string]string{schema.ParamSourceType: src}
		for k, v := range s.Params {
			c.Params[k] = v
		}
		return &c
	}
	bits := &schema.Schema{Type: schema.Int64, Logical: schema.Bits, Params: map[string]string{schema.ParamLength: "12"}}
	cases := []struct {
		s      *schema.Schema
		key    bool
		pg, my string
	}{
		{schema.Primitive(schema.Int8, true), false, "SMALLINT", "TINYINT"},
		{schema.Primitive(schema.Int32, true), false, "INTEGER", "INT"},
		{schema.Primitive(schema.Uint64, true), false, "NUMERIC(20)", "BIGINT UNSIGNED"},
		{schema.DecimalSchema(65, 30, true), false, "NUMERIC(65,30)", "DECIMAL(65,30)"},
		{schema.Primitive(schema.Float32, true), false, "REAL", "FLOAT"},
		{schema.Primitive(schema.String, true), false, "TEXT", "LONGTEXT"},
		{schema.Primitive(schema.String, false), true, "TEXT", "VARCHAR(255)"},
		{schema.Primitive(schema.Bytes, true), false, "BYTEA", "LONGBLOB"},
		{&schema.Schema{Type: schema.Int64, Logical: schema.Time}, false, "TIME(6)", "TIME(6)"},
		{&schema.Schema{Type: schema.Int64, Logical: schema.Timestamp}, false, "TIMESTAMP(6)", "DATETIME(6)"},
		{&schema.Schema{Type: schema.Int64, Logical: schema.ZonedTimestamp}, false, "TIMESTAMPTZ(6)", "TIMESTAMP(6) NULL"},
		{&schema.Schema{Type: schema.String, Logical: schema.Json}, false, "JSONB", "JSON"},
		{bits, false, "BIT VARYING(12)", "BIT(12)"},
		{withSrc(schema.Primitive(schema.String, true), "enum('a','it''s')"), false, "TEXT", "enum('','a','it''s')"},
		{withSrc(schema.Primitive(schema.String, true), "varchar(10); DROP TABLE x"), false, "TEXT", "LONGTEXT"},
		{withSrc(&schema.Schema{Type: schema.Bytes, Logical: schema.Geometry}, "geometry"), false, "BYTEA", "LONGBLOB"},
		{withSrc(schema.Primitive(schema.String, false), "mediumtext"), true, "TEXT", "VARCHAR(255)"},
		{withSrc(schema.Primitive(schema.String, false), "varchar(40)"), true, "TEXT", "varchar(40)"},
	}
	for _, c := range cases {
		pg, err := (postgres.Dialect{}).ColumnType("c", c.s, c.key)
		if err != nil || pg != c.pg {
			t.Errorf("pg %s: %q %v, want %q", c.s, pg, err, c.pg)
		}
		my, err := (mysql.Dialect{}).ColumnType("c", c.s, c.key)
		if err != nil || my != c.my {
			t.Errorf("mysql %s: %q %v, want %q", c.s, my, err, c.my)
		}
	}
}

func TestConvert(t *testing.T) {
	timeS := &schema.Schema{Type: schema.Int64, Logical: schema.Time}
	ts := &schema.Schema{Type: schema.Int64, Logical: schema.Timestamp}
	zts := &schema.Schema{Type: schema.Int64, Logical: schema.ZonedTimestamp}
	date := &schema.Schema{Type: schema.Int32, Logical: schema.Date}
	bits := &schema.Schema{Type: schema.Int64, Logical: schema.Bits, Params: map[string]string{schema.ParamLength: "5"}}
	cases := []struct {
		d    dialect.Dialect
		s    *schema.Schema
		in   any
		want any
	}{
		{postgres.Dialect{}, schema.Primitive(schema.Uint64, true), uint64(math.MaxUint64), "18446744073709551615"},
		{postgres.Dialect{}, schema.DecimalSchema(65, 30, true), schema.MustDec("-1.500000000000000000000000000000"), "-1.500000000000000000000000000000"},
		{postgres.Dialect{}, date, int32(-719162), "0001-01-01"},
		{postgres.Dialect{}, date, int32(2932896), "9999-12-31"},
		{postgres.Dialect{}, timeS, int64(86399_999999), "23:59:59.999999"},
		{mysql.Dialect{}, timeS, int64(-838*3600_000000 - 59*60_000000 - 59_000000), "-838:59:59.000000"},
		{postgres.Dialect{}, ts, int64(1), "1970-01-01 00:00:00.000001"},
		{postgres.Dialect{}, zts, int64(-1), "1969-12-31 23:59:59.999999+00"},
		{mysql.Dialect{}, zts, int64(1_000_000), "1970-01-01 00:00:01"},
		{postgres.Dialect{}, bits, uint64(5), "00101"},
		{mysql.Dialect{}, bits, uint64(5), uint64(5)},
		{postgres.Dialect{}, schema.Primitive(schema.Float32, true), float32(0.1), "0.1"},
		{postgres.Dialect{}, schema.Primitive(schema.Float64, true), math.Inf(-1), "-Infinity"},
		{postgres.Dialect{}, schema.Primitive(schema.String, true), "", ""},
		{postgres.Dialect{}, schema.Primitive(schema.String, true), nil, nil},
	}
	for _, c := range cases {
		got, err := c.d.Convert("c", c.s, c.in)
		if err != nil || got != c.want {
			t.Errorf("%T %s %v: got %#v %v, want %#v", c.d, c.s, c.in, got, err, c.want)
		}
	}
	bad := []struct {
		d  dialect.Dialect
		s  *schema.Schema
		in any
	}{
		{postgres.Dialect{}, timeS, int64(-1)},
		{postgres.Dialect{}, timeS, int64(25 * 3600_000000)},
		{mysql.Dialect{}, timeS, int64(839 * 3600_000000)},
		{postgres.Dialect{}, bits, uint64(32)},
		{mysql.Dialect{}, schema.Primitive(schema.Float64, true), math.NaN()},
		{postgres.Dialect{}, schema.Primitive(schema.Int64, true), "12"},
		{postgres.Dialect{}, schema.Primitive(schema.String, true), "nul\x00byte"},
		{postgres.Dialect{}, &schema.Schema{Type: schema.String, Logical: schema.Json}, `"\u0000"` + "\x00"},
	}
	for _, c := range bad {
		_, err := c.d.Convert("col_x", c.s, c.in)
		if !errors.Is(err, ErrValue) || !strings.Contains(err.Error(), `"col_x"`) {
			t.Errorf("%T %s %v: error %v, want ErrValue naming the column", c.d, c.s, c.in, err)
		}
	}
}

// sinkShape is runtime.Sink, restated here: the sink never imports runtime.
type sinkShape interface {
	Write(ctx context.Context, recs []schema.Record) error
	Close() error
}

var _ sinkShape = (*Sink)(nil)

func TestFormatTimestampMatchesTimeFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lo, hi := int64(-62135596800_000000), int64(253402300799_999999) // 0001-01-01 .. 9999-12-31 23:59:59.999999
	for i := 0; i < 100000; i++ {
		us := lo + r.Int64N(hi-lo)
		if i%3 == 0 {
			us -= us % 1_000_000 // whole seconds
		}
		got, ok := dialect.FormatTimestamp(us)
		want := time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.999999")
		if !ok || got != want {
			t.Fatalf("%d: got %q %v, want %q", us, got, ok, want)
		}
	}
	if _, ok := dialect.FormatTimestamp(lo - 1); ok {
		t.Fatal("year 0 accepted")
	}
}
