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
		if got := (postgres{}).quote(c.in); got != c.pg {
			t.Errorf("pg quote(%q) = %s, want %s", c.in, got, c.pg)
		}
		if got := (mysql{}).quote(c.in); got != c.my {
			t.Errorf("mysql quote(%q) = %s, want %s", c.in, got, c.my)
		}
	}
}

func TestUpsertSQL(t *testing.T) {
	tg := target{Schema: "s", Table: "t"}
	cases := []struct {
		d    dialect
		cols []string
		keys []string
		rows int
		want string
	}{
		{postgres{}, []string{"id", "v"}, []string{"id"}, 2,
			`INSERT INTO "s"."t" ("id","v") VALUES ($1,$2),($3,$4) ON CONFLICT ("id") DO UPDATE SET "v"=EXCLUDED."v"`},
		{postgres{}, []string{"a", "b"}, []string{"a", "b"}, 1,
			`INSERT INTO "s"."t" ("a","b") VALUES ($1,$2) ON CONFLICT ("a","b") DO NOTHING`},
		{mysql{}, []string{"id", "v"}, []string{"id"}, 2,
			"INSERT INTO `s`.`t` (`id`,`v`) VALUES (?,?),(?,?) ON DUPLICATE KEY UPDATE `id`=VALUES(`id`),`v`=VALUES(`v`)"},
		{mysql{}, []string{"a"}, []string{"a"}, 1,
			"INSERT INTO `s`.`t` (`a`) VALUES (?) ON DUPLICATE KEY UPDATE `a`=VALUES(`a`)"},
	}
	for _, c := range cases {
		if got := c.d.upsert(tg, c.cols, c.keys, c.rows); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
	if got, want := deleteSQL(postgres{}, tg, []string{"a", "b"}, 2), `DELETE FROM "s"."t" WHERE ("a","b") IN (($1,$2),($3,$4))`; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	if got, want := deleteSQL(mysql{}, target{Table: "t"}, []string{"id"}, 3), "DELETE FROM `t` WHERE `id` IN (?,?,?)"; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	if got, want := upsertFromSelect(postgres{}, tg, []string{"id", "v"}, []string{"id"}, `"stage"`),
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
		{withSrc(schema.Primitive(schema.String, true), "enum('a','it''s')"), false, "TEXT", "enum('a','it''s')"},
		{withSrc(schema.Primitive(schema.String, true), "varchar(10); DROP TABLE x"), false, "TEXT", "LONGTEXT"},
		{withSrc(&schema.Schema{Type: schema.Bytes, Logical: schema.Geometry}, "geometry"), false, "BYTEA", "LONGBLOB"},
		{withSrc(schema.Primitive(schema.String, false), "mediumtext"), true, "TEXT", "VARCHAR(255)"},
		{withSrc(schema.Primitive(schema.String, false), "varchar(40)"), true, "TEXT", "varchar(40)"},
	}
	for _, c := range cases {
		pg, err := (postgres{}).columnType("c", c.s, c.key)
		if err != nil || pg != c.pg {
			t.Errorf("pg %s: %q %v, want %q", c.s, pg, err, c.pg)
		}
		my, err := (mysql{}).columnType("c", c.s, c.key)
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
		d    dialect
		s    *schema.Schema
		in   any
		want any
	}{
		{postgres{}, schema.Primitive(schema.Uint64, true), uint64(math.MaxUint64), "18446744073709551615"},
		{postgres{}, schema.DecimalSchema(65, 30, true), schema.MustDec("-1.500000000000000000000000000000"), "-1.500000000000000000000000000000"},
		{postgres{}, date, int32(-719162), "0001-01-01"},
		{postgres{}, date, int32(2932896), "9999-12-31"},
		{postgres{}, timeS, int64(86399_999999), "23:59:59.999999"},
		{mysql{}, timeS, int64(-838*3600_000000 - 59*60_000000 - 59_000000), "-838:59:59.000000"},
		{postgres{}, ts, int64(1), "1970-01-01 00:00:00.000001"},
		{postgres{}, zts, int64(-1), "1969-12-31 23:59:59.999999+00"},
		{mysql{}, zts, int64(1_000_000), "1970-01-01 00:00:01"},
		{postgres{}, bits, uint64(5), "00101"},
		{mysql{}, bits, uint64(5), uint64(5)},
		{postgres{}, schema.Primitive(schema.Float32, true), float32(0.1), "0.1"},
		{postgres{}, schema.Primitive(schema.Float64, true), math.Inf(-1), "-Infinity"},
		{postgres{}, schema.Primitive(schema.String, true), "", ""},
		{postgres{}, schema.Primitive(schema.String, true), nil, nil},
	}
	for _, c := range cases {
		got, err := c.d.convert("c", c.s, c.in)
		if err != nil || got != c.want {
			t.Errorf("%T %s %v: got %#v %v, want %#v", c.d, c.s, c.in, got, err, c.want)
		}
	}
	bad := []struct {
		d  dialect
		s  *schema.Schema
		in any
	}{
		{postgres{}, timeS, int64(-1)},
		{postgres{}, timeS, int64(25 * 3600_000000)},
		{mysql{}, timeS, int64(839 * 3600_000000)},
		{postgres{}, bits, uint64(32)},
		{mysql{}, schema.Primitive(schema.Float64, true), math.NaN()},
		{postgres{}, schema.Primitive(schema.Int64, true), "12"},
	}
	for _, c := range bad {
		_, err := c.d.convert("col_x", c.s, c.in)
		if !errors.Is(err, ErrValue) || !strings.Contains(err.Error(), `"col_x"`) {
			t.Errorf("%T %s %v: error %v, want ErrValue naming the column", c.d, c.s, c.in, err)
		}
	}
}

func TestSafeSourceType(t *testing.T) {
	for _, ok := range []string{"bigint(20) unsigned", "varchar(255)", "enum('a','b c','it''s')", "decimal(65,30)", "datetime(6)", "json", "set('x','y')"} {
		if !safeSourceType(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "int; drop table x", "enum('a)", "enum('a\\')", "int -- c", "int/*x*/", "int(1)(2", "enum('a'),x", "varchar(10) default 'x'"} {
		if safeSourceType(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzSafeSourceType checks that an accepted source type never lets text
// escape a column definition: outside single-quoted strings it holds only
// letters, digits, spaces, underscores, commas and one level of parentheses.
func FuzzSafeSourceType(f *testing.F) {
	for _, s := range []string{"enum('a','b')", "int; drop", "varchar(3)", "enum('it''s')", "set(''')", "a(1)b(2)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !safeSourceType(s) {
			return
		}
		inQuote, depth := false, 0
		for i := 0; i < len(s); i++ {
			c := s[i]
			if inQuote {
				if c == '\\' || c == 0 {
					t.Fatalf("%q: backslash or NUL inside quotes accepted", s)
				}
				if c == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' {
						i++
						continue
					}
					inQuote = false
				}
				continue
			}
			switch {
			case c == '\'':
				if depth == 0 {
					t.Fatalf("%q: quote outside parentheses", s)
				}
				inQuote = true
			case c == '(':
				depth++
			case c == ')':
				depth--
			case c == ',' || c == ' ' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			default:
				t.Fatalf("%q: byte %q accepted outside quotes", s, c)
			}
			if depth < 0 || depth > 1 {
				t.Fatalf("%q: parentheses unbalanced or nested", s)
			}
		}
		if inQuote || depth != 0 {
			t.Fatalf("%q: unterminated", s)
		}
	})
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
		got, ok := formatTimestamp(us)
		want := time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.999999")
		if !ok || got != want {
			t.Fatalf("%d: got %q %v, want %q", us, got, ok, want)
		}
	}
	if _, ok := formatTimestamp(lo - 1); ok {
		t.Fatal("year 0 accepted")
	}
}
