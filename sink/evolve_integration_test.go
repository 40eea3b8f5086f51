package sink

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/postgres"
)

// logCapture is a slog.Handler that keeps Info and above for assertions.
type logCapture struct {
	mu   sync.Mutex
	recs []capturedLog
}

type capturedLog struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (c *logCapture) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler           { return c }
func (c *logCapture) WithGroup(string) slog.Handler                { return c }
func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	l := capturedLog{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.String()
		return true
	})
	c.mu.Lock()
	c.recs = append(c.recs, l)
	c.mu.Unlock()
	return nil
}

// find returns the records whose message starts with prefix.
func (c *logCapture) find(level slog.Level, prefix string) []capturedLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []capturedLog
	for _, l := range c.recs {
		if l.level == level && strings.HasPrefix(l.msg, prefix) {
			out = append(out, l)
		}
	}
	return out
}

func (c *logCapture) warnings() []capturedLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []capturedLog
	for _, l := range c.recs {
		// The test MariaDB trades durability for speed
		// (TestMySQLDurabilityReportsLazyCommits checks this warning).
		if l.level >= slog.LevelWarn && !strings.HasPrefix(l.msg, "sink: the target's commits are not durable") {
			out = append(out, l)
		}
	}
	return out
}

func (e *tenv) openCaptured(t testing.TB, mod func(*Config)) (*Sink, *logCapture) {
	t.Helper()
	c := &logCapture{}
	return e.openLog(t, mod, slog.New(c)), c
}

func structOf(fields ...schema.Field) *schema.Schema {
	return &schema.Schema{Type: schema.Struct, Fields: fields}
}

// withParams returns a copy of s with params (pairs) added.
func withParams(s *schema.Schema, params ...string) *schema.Schema {
	c := *s
	c.Params = map[string]string{}
	for k, v := range s.Params {
		c.Params[k] = v
	}
	for i := 0; i+1 < len(params); i += 2 {
		c.Params[params[i]] = params[i+1]
	}
	return &c
}

// insertInto makes an insert of row into table, keyed by its first field.
func insertInto(table string, val *schema.Schema, row ...any) schema.Record {
	key := structOf(schema.Field{Name: val.Fields[0].Name, Schema: val.Fields[0].Schema})
	return schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "src", Table: table}, KeySchema: key, Key: schema.Row{row[0]},
		ValueSchema: val, After: row}
}

// columnType reads a column's type as the database reports it.
func (e *tenv) columnType(t *testing.T, table, col string) string {
	t.Helper()
	var typ string
	var err error
	if e.dialect == DialectPostgres {
		err = e.db.QueryRow("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped", e.table(table), col).Scan(&typ)
	} else {
		err = e.db.QueryRow("SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?", e.schema, table, col).Scan(&typ)
	}
	if err != nil {
		t.Fatalf("type of %s.%s: %v", table, col, err)
	}
	return typ
}

// readText reads col of the row with key id as text.
func (e *tenv) readText(t *testing.T, table, col string, id int64) sql.NullString {
	t.Helper()
	expr := e.quote(col) + "::text"
	if e.dialect == DialectMySQL {
		expr = "CAST(" + e.quote(col) + " AS CHAR)"
	}
	var v sql.NullString
	if err := e.db.QueryRow(fmt.Sprintf("SELECT %s FROM %s WHERE id = %d", expr, e.table(table), id)).Scan(&v); err != nil {
		t.Fatalf("read %s.%s id %d: %v", table, col, id, err)
	}
	return v
}

// A table made before SETs became TEXT[] keeps its text column and gets
// the joined labels, on both PostgreSQL write paths, without warnings; a
// new table gets TEXT[] and its deletes by a SET key work.
func TestWriteSetIntoExistingTextColumn(t *testing.T) {
	e := pgEnv(t)
	if _, err := e.db.Exec("CREATE TABLE " + e.table("legacy_set") + " (id BIGINT PRIMARY KEY, s TEXT)"); err != nil {
		t.Fatal(err)
	}
	val := structOf(schema.Field{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		schema.Field{Name: "s", Schema: lg(schema.String, schema.Set, schema.ParamAllowed, "a,b,c")})
	for i, copyThreshold := range []int{-1, 1} {
		s, logs := e.openCaptured(t, func(c *Config) { c.CopyThreshold = copyThreshold })
		id := int64(i*10 + 1)
		write(t, s, insertInto("legacy_set", val, id, "a,c"), insertInto("legacy_set", val, id+1, ""))
		if got := e.readText(t, "legacy_set", "s", id); got.String != "a,c" {
			t.Errorf("copy %d: read back %q, want a,c", copyThreshold, got.String)
		}
		if got := e.readText(t, "legacy_set", "s", id+1); !got.Valid || got.String != "" {
			t.Errorf("copy %d: empty set read back %v, want ''", copyThreshold, got)
		}
		if w := logs.warnings(); len(w) > 0 {
			t.Errorf("copy %d: warnings %+v", copyThreshold, w)
		}
	}
	if typ := e.columnType(t, "legacy_set", "s"); typ != "text" {
		t.Fatalf("legacy column became %s", typ)
	}
	// A SET key on a new table: TEXT[], and deleting by it works.
	kval := structOf(schema.Field{Name: "k", Schema: lg(schema.String, schema.Set, schema.ParamAllowed, "a,b")},
		schema.Field{Name: "v", Schema: schema.Primitive(schema.String, true)})
	s := e.open(t, nil)
	write(t, s, insertInto("set_key", kval, "a", "1"), insertInto("set_key", kval, "a,b", "2"), insertInto("set_key", kval, "", "3"))
	del := insertInto("set_key", kval, "a,b", "2")
	del.Op, del.Before, del.After = schema.OpDelete, del.After, nil
	write(t, s, del)
	if typ := e.columnType(t, "set_key", "k"); typ != "text[]" {
		t.Fatalf("SET key column is %s, want text[]", typ)
	}
	var got []string
	rs, err := e.db.Query("SELECT k::text FROM " + e.table("set_key") + " ORDER BY v")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var k string
		if err := rs.Scan(&k); err != nil {
			t.Fatal(err)
		}
		got = append(got, k)
	}
	if !slices.Equal(got, []string{"{a}", "{}"}) {
		t.Fatalf("keys after delete %q, want {a} and {}", got)
	}
}

// With EnumCheck, PostgreSQL ENUM columns get a CHECK constraint with the
// labels (quotes, backslashes and commas included); other labels are
// rejected and go through OnError; NULL passes; added columns get one too;
// labels the source adds replace the constraint, labels it removes do not.
func TestWriteEnumCheck(t *testing.T) {
	e := pgEnv(t)
	enumE := lg(schema.String, schema.Enum, schema.ParamAllowed, "a,it's,x,y", schema.ParamSourceType, "enum('a','it''s','x,y')")
	enumF := lg(schema.String, schema.Enum, schema.ParamAllowed, `q"d,back\slash,it's`)
	val := structOf(schema.Field{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		schema.Field{Name: "e", Schema: enumE}, schema.Field{Name: "f", Schema: enumF})
	for _, copyThreshold := range []int{-1, 1} {
		table := fmt.Sprintf("enum_%d", max(copyThreshold, 0))
		s := e.open(t, func(c *Config) { c.EnumCheck, c.OnError, c.CopyThreshold = true, OnErrorSkip, copyThreshold })
		write(t, s,
			insertInto(table, val, int64(1), "a", `q"d`),
			insertInto(table, val, int64(2), "it's", `back\slash`),
			insertInto(table, val, int64(3), "x,y", nil),
			insertInto(table, val, int64(4), nil, "it's"),
			insertInto(table, val, int64(5), "zzz", "it's"),
			insertInto(table, val, int64(6), "a", "nope"),
			insertInto(table, val, int64(7), "A", "it's"))
		if got := e.ids(t, table); !slices.Equal(got, []int64{1, 2, 3, 4}) {
			t.Fatalf("copy %d: ids %v, want 1..4 (5, 6, 7 rejected)", copyThreshold, got)
		}
		if got := e.readText(t, table, "f", 2); got.String != `back\slash` {
			t.Fatalf("copy %d: read back %q", copyThreshold, got.String)
		}
	}
	// The constraint is named after the column.
	var n int
	if err := e.db.QueryRow("SELECT count(*) FROM pg_constraint WHERE conrelid = to_regclass($1) AND conname IN ($2, $3)", e.table("enum_0"), postgres.EnumCheckName("e"), postgres.EnumCheckName("f")).Scan(&n); err != nil || n != 2 {
		t.Fatalf("named constraints: %d %v, want 2", n, err)
	}
	// OnError fail: the rejected row fails the Write, naming the constraint.
	fail := e.open(t, func(c *Config) { c.EnumCheck = true })
	err := fail.Write(context.Background(), []schema.Record{insertInto("enum_0", val, int64(8), "zzz", nil)})
	if err == nil || !isFatal(err) || !strings.Contains(err.Error(), postgres.EnumCheckName("e")) || !strings.Contains(err.Error(), "id=8") {
		t.Fatalf("rejected label with OnError fail: %v, want a fatal error naming the constraint and the key", err)
	}
	// An added ENUM column gets its constraint.
	s, logs := e.openCaptured(t, func(c *Config) { c.EnumCheck, c.OnError = true, OnErrorSkip })
	val2 := structOf(append(slices.Clone(val.Fields), schema.Field{Name: "g", Schema: lg(schema.String, schema.Enum, schema.ParamAllowed, "p,q")})...)
	write(t, s, insertInto("enum_0", val2, int64(10), "a", nil, "q"), insertInto("enum_0", val2, int64(11), "a", nil, "r"))
	if got := e.ids(t, "enum_0"); !slices.Equal(got, []int64{1, 2, 3, 4, 10}) {
		t.Fatalf("ids %v after the added column: 11 should be rejected", got)
	}
	// The source adds a label at the end: the constraint follows.
	val3 := structOf(val.Fields[0], schema.Field{Name: "e", Schema: withParams(enumE, schema.ParamAllowed, "a,it's,x,y,new", schema.ParamSourceType, "enum('a','it''s','x,y','new')")}, val.Fields[2])
	write(t, s, insertInto("enum_0", val3, int64(12), "new", nil))
	if got := e.readText(t, "enum_0", "e", 12); got.String != "new" {
		t.Fatalf("label added by the source: read back %v", got)
	}
	if added := logs.find(slog.LevelInfo, "ENUM labels added"); len(added) != 1 || added[0].attrs["column"] != "e" {
		t.Fatalf("log of the replaced constraint: %+v", added)
	}
	// A fresh Sink reads the replaced constraint back (quotes, comma) and
	// finds nothing to do.
	s2, logs2 := e.openCaptured(t, func(c *Config) { c.EnumCheck = true })
	write(t, s2, insertInto("enum_0", val3, int64(13), "it's", `q"d`))
	if w := logs2.warnings(); len(w) > 0 {
		t.Fatalf("fresh Sink on an unchanged table warned: %+v", w)
	}
	// The source drops a label: the constraint stays, with one warning.
	val4 := structOf(val.Fields[0], schema.Field{Name: "e", Schema: withParams(enumE, schema.ParamAllowed, "a", schema.ParamSourceType, "enum('a')")}, val.Fields[2])
	write(t, s2, insertInto("enum_0", val4, int64(14), "a", nil))
	val4b := structOf(val4.Fields...) // as decoded: another schema pointer
	write(t, s2, insertInto("enum_0", val4b, int64(15), "a", nil), insertInto("enum_0", val3, int64(16), "new", nil))
	w := logs2.warnings()
	if len(w) != 1 || w[0].attrs["column"] != "e" || !strings.Contains(w[0].msg, "by hand") {
		t.Fatalf("warnings after labels were removed: %+v, want one naming column e", w)
	}
	// Without EnumCheck there is no constraint.
	plain := e.open(t, nil)
	write(t, plain, insertInto("enum_plain", val, int64(1), "zzz", "anything"))
	if got := e.readText(t, "enum_plain", "e", 1); got.String != "zzz" {
		t.Fatalf("without EnumCheck: %v", got)
	}
}

// With AutoEvolve the source widening INT→BIGINT, DECIMAL(5,2)→(10,2) and
// VARCHAR(10)→VARCHAR(50) widens the target, so values that only fit the
// wider types arrive exactly; a narrowing is not applied and is logged once;
// an incompatible type is logged and the database's refusal goes through
// OnError.
func TestWriteWidenColumns(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s, logs := e.openCaptured(t, func(c *Config) { c.OnError = OnErrorSkip })
		intS := func(typ schema.Type, src string) *schema.Schema {
			return withParams(schema.Primitive(typ, false), schema.ParamSourceType, src)
		}
		decS := func(p, sc int) *schema.Schema {
			return withParams(schema.DecimalSchema(p, sc, true), schema.ParamSourceType, fmt.Sprintf("decimal(%d,%d)", p, sc))
		}
		strS := func(n int) *schema.Schema {
			return withParams(schema.Primitive(schema.String, true), schema.ParamLength, fmt.Sprint(n), schema.ParamCharset, "utf8mb4", schema.ParamSourceType, fmt.Sprintf("varchar(%d)", n))
		}
		v1 := structOf(schema.Field{Name: "id", Schema: intS(schema.Int32, "int")},
			schema.Field{Name: "i", Schema: intS(schema.Int32, "int")},
			schema.Field{Name: "d", Schema: decS(5, 2)}, schema.Field{Name: "s", Schema: strS(10)})
		v2 := structOf(schema.Field{Name: "id", Schema: intS(schema.Int64, "bigint")},
			schema.Field{Name: "i", Schema: intS(schema.Int64, "bigint")},
			schema.Field{Name: "d", Schema: decS(10, 2)}, schema.Field{Name: "s", Schema: strS(50)})
		write(t, s, insertInto("widen", v1, int64(1), int64(7), schema.MustDec("123.45"), "short"))
		long := strings.Repeat("ü", 50)
		big := int64(1) << 40
		write(t, s, insertInto("widen", v2, big, big+1, schema.MustDec("12345678.91"), long))
		for col, want := range map[string]string{"id": fmt.Sprint(big), "i": fmt.Sprint(big + 1), "d": "12345678.91", "s": long} {
			if got := e.readText(t, "widen", col, big); got.String != want {
				t.Errorf("%s: read back %q, want %q", col, got.String, want)
			}
		}
		wantTypes := map[string]string{"id": "bigint", "i": "bigint", "d": "numeric(10,2)", "s": "text"}
		switch e.flavor {
		case "mariadb":
			wantTypes = map[string]string{"id": "bigint(20)", "i": "bigint(20)", "d": "decimal(10,2)", "s": "varchar(50)"}
		case "mysql": // no display widths since MySQL 8.0.19
			wantTypes = map[string]string{"id": "bigint", "i": "bigint", "d": "decimal(10,2)", "s": "varchar(50)"}
		}
		for col, want := range wantTypes {
			if got := e.columnType(t, "widen", col); got != want {
				t.Errorf("%s is %s, want %s", col, got, want)
			}
		}
		widened := logs.find(slog.LevelInfo, "widened column")
		if want := map[string]int{DialectPostgres: 3, DialectMySQL: 4}[e.dialect]; len(widened) != want {
			t.Errorf("widened %d columns, want %d: %+v", len(widened), want, widened)
		}
		if w := logs.warnings(); len(w) > 0 {
			t.Fatalf("warnings while widening: %+v", w)
		}
		// The key is still the key: an update of row big by upsert.
		write(t, s, insertInto("widen", v2, big, int64(2), schema.MustDec("0.01"), "again"))
		if got := e.readText(t, "widen", "i", big); got.String != "2" {
			t.Fatalf("upsert after widening the key: i = %q", got.String)
		}
		// The source narrows i back to INT: not applied, one warning.
		v3 := structOf(v2.Fields[0], schema.Field{Name: "i", Schema: intS(schema.Int32, "int")}, v2.Fields[2], v2.Fields[3])
		write(t, s, insertInto("widen", v3, int64(3), int64(5), nil, nil))
		write(t, s, insertInto("widen", structOf(v3.Fields...), int64(4), int64(6), nil, nil))
		if got := e.columnType(t, "widen", "i"); got != wantTypes["i"] {
			t.Fatalf("narrowing applied: i is %s", got)
		}
		w := logs.warnings()
		if len(w) != 1 || w[0].attrs["column"] != "i" || w[0].attrs["current"] != wantTypes["i"] || !strings.Contains(strings.ToLower(w[0].attrs["wanted"]), "int") || !strings.Contains(w[0].msg, "by hand") {
			t.Fatalf("warnings after narrowing: %+v, want one naming column i, its type and the wanted one", w)
		}
		if got := e.ids(t, "widen"); !slices.Equal(got, []int64{1, 3, 4, big}) {
			t.Fatalf("ids %v", got)
		}
		// An incompatible column made by hand: logged, and the value the
		// database refuses goes through OnError (skip).
		if _, err := e.db.Exec("CREATE TABLE " + e.table("byhand") + " (id BIGINT PRIMARY KEY, v INTEGER)"); err != nil {
			t.Fatal(err)
		}
		write(t, s, cIns("byhand", 1, "12"), cIns("byhand", 2, "not a number"))
		wantRows(t, e, "byhand", map[int64]string{1: "12"})
		if w := logs.warnings(); len(w) < 3 || w[1].attrs["column"] != "v" || w[1].attrs["table"] != e.schema+".byhand" {
			t.Fatalf("warnings after an incompatible column: %+v", w)
		}
	})
}

// A VARCHAR column made by hand is widened to what the sink maps strings
// to; MySQL keeps the column's character set and nullability.
func TestWriteWidenKeepsColumn(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		ddl := "CREATE TABLE " + e.table("hand") + " (id BIGINT PRIMARY KEY, v VARCHAR(10) NOT NULL)"
		if e.dialect == DialectMySQL {
			ddl = "CREATE TABLE " + e.table("hand") + " (id BIGINT PRIMARY KEY, v VARCHAR(10) CHARACTER SET latin1 COLLATE latin1_bin NOT NULL)"
		}
		if _, err := e.db.Exec(ddl); err != nil {
			t.Fatal(err)
		}
		s := e.open(t, nil)
		val := structOf(schema.Field{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
			schema.Field{Name: "v", Schema: withParams(schema.Primitive(schema.String, false), schema.ParamSourceType, "varchar(40)")})
		long := strings.Repeat("é", 40) // in latin1 too
		write(t, s, insertInto("hand", val, int64(1), long))
		if got := e.readText(t, "hand", "v", 1); got.String != long {
			t.Fatalf("read back %q", got.String)
		}
		want := map[string]string{DialectPostgres: "text", DialectMySQL: "varchar(40)"}[e.dialect]
		if got := e.columnType(t, "hand", "v"); got != want {
			t.Fatalf("v is %s, want %s", got, want)
		}
		if e.dialect == DialectMySQL {
			var cs, coll, nullable string
			if err := e.db.QueryRow("SELECT CHARACTER_SET_NAME, COLLATION_NAME, IS_NULLABLE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'hand' AND COLUMN_NAME = 'v'", e.schema).Scan(&cs, &coll, &nullable); err != nil {
				t.Fatal(err)
			}
			if cs != "latin1" || coll != "latin1_bin" || nullable != "NO" {
				t.Fatalf("after MODIFY: %s %s nullable %s, want latin1 latin1_bin NO", cs, coll, nullable)
			}
		} else {
			var notNull bool
			if err := e.db.QueryRow("SELECT attnotnull FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'v'", e.table("hand")).Scan(&notNull); err != nil || !notNull {
				t.Fatalf("NOT NULL lost: %v %v", notNull, err)
			}
		}
	})
}
