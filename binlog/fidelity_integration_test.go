package binlog

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// streamThenSnapshot creates a table (first column: INT id), streams the
// rows the inserts write, then reads the same rows with an initial_only
// snapshot. It returns the records of both paths by id, checking the two
// paths give the same schemas.
func streamThenSnapshot(t *testing.T, create string, inserts ...string) (streamed, read map[int64]schema.Record) {
	t.Helper()
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, create)
	stream := openSource(t, testConfig(env, db), nil)
	for _, q := range inserts {
		exec(t, c, q)
	}
	var n int
	if r, err := c.Execute("SELECT COUNT(*) FROM t"); err != nil {
		t.Fatal(err)
	} else {
		v, _ := r.GetInt(0, 0)
		n = int(v)
	}
	recs := readUntil(t, stream, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCreate) >= n })
	cfg := testConfig(env, db)
	cfg.Snapshot = SnapshotInitialOnly
	snapRecs, _ := readSnapshot(t, openSource(t, cfg, nil))
	byID := func(recs []schema.Record) map[int64]schema.Record {
		m := map[int64]schema.Record{}
		for _, r := range recs {
			if r.Table.Database == db && r.Op.IsData() && r.After != nil {
				m[r.After[0].(int64)] = r
			}
		}
		return m
	}
	streamed, read = byID(ownData(recs, db)), byID(snapRecs)
	if len(streamed) != n || len(read) != n {
		t.Fatalf("streamed %d rows, snapshot read %d, want %d each", len(streamed), len(read), n)
	}
	for id, s := range streamed {
		r := read[id]
		if !r.ValueSchema.Equal(s.ValueSchema) || !r.KeySchema.Equal(s.KeySchema) {
			for i, f := range s.ValueSchema.Fields {
				if i < len(r.ValueSchema.Fields) && !r.ValueSchema.Fields[i].Schema.Equal(f.Schema) {
					t.Errorf("column %s: snapshot schema %v %v, stream %v %v", f.Name, r.ValueSchema.Fields[i].Schema, r.ValueSchema.Fields[i].Schema.Params, f.Schema, f.Schema.Params)
				}
			}
			t.Fatalf("schemas differ between snapshot and stream")
		}
		break
	}
	return streamed, read
}

// column returns the value of the named column of r's after image.
func colValue(t *testing.T, r schema.Record, name string) any {
	t.Helper()
	i := r.ValueSchema.FieldIndex(name)
	if i < 0 {
		t.Fatalf("no column %s in %v", name, r.ValueSchema)
	}
	return r.After[i]
}

// TestBinaryPaddingStreamEqualsSnapshot: the server writes BINARY(n) to the
// binlog without its trailing 0x00 bytes; the stream must restore them, so
// that a BINARY(16) key ending in 0x00 (one random UUID in 256) is the same
// key on both paths and in the updates and deletes that follow.
func TestBinaryPaddingStreamEqualsSnapshot(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE t (k BINARY(16) NOT NULL PRIMARY KEY, id INT NOT NULL, b4 BINARY(4), vb VARBINARY(4))")
	s := openSource(t, testConfig(env, db), nil)
	exec(t, c, `INSERT INTO t VALUES
  (x'01000000000000000000000000000000', 1, x'01000000', x'0100'),
  (x'00000000000000000000000000000000', 2, x'00000000', x'00'),
  (x'0102030405060708090a0b0c0d0e0f10', 3, x'', x''),
  (x'ffffffffffffffffffffffffffffff00', 4, NULL, NULL)`)
	exec(t, c, "UPDATE t SET id = id + 10 WHERE k = x'01000000000000000000000000000000'")
	exec(t, c, "DELETE FROM t WHERE k = x'00000000000000000000000000000000'")
	recs := ownData(readUntil(t, s, func(r []schema.Record) bool {
		return countOps(ownData(r, db), schema.OpDelete) >= 1
	}), db)
	want := map[int64][3][]byte{
		1: {{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {1, 0, 0, 0}, {1, 0}},
		2: {make([]byte, 16), {0, 0, 0, 0}, {0}},
		3: {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {0, 0, 0, 0}, {}},
		4: {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0}, nil, nil},
	}
	keys := map[int64]string{}
	for _, r := range recs {
		switch r.Op {
		case schema.OpCreate:
			id := r.After[1].(int64)
			w := want[id]
			for j, name := range []string{"k", "b4", "vb"} {
				g, _ := colValue(t, r, name).([]byte)
				if !bytes.Equal(g, w[j]) || (g == nil) != (w[j] == nil) {
					t.Errorf("row %d %s: streamed %x, want %x", id, name, g, w[j])
				}
			}
			keys[id] = r.KeyString()
		case schema.OpUpdate:
			if r.KeyString() != keys[1] || !bytes.Equal(r.Before[0].([]byte), want[1][0]) {
				t.Errorf("update key %s (before %x), want the insert's key %s", r.KeyString(), r.Before[0], keys[1])
			}
		case schema.OpDelete:
			if r.KeyString() != keys[2] {
				t.Errorf("delete key %s, want the insert's key %s", r.KeyString(), keys[2])
			}
		}
	}

	cfg := testConfig(env, db)
	cfg.Snapshot = SnapshotInitialOnly
	read, _ := readSnapshot(t, openSource(t, cfg, nil))
	for _, r := range read {
		id := r.After[1].(int64)
		if id == 11 {
			id = 1
		}
		if got := r.KeyString(); got != keys[id] {
			t.Errorf("row %d: snapshot key %s, stream key %s", id, got, keys[id])
		}
		for j, name := range []string{"k", "b4", "vb"} {
			g, _ := colValue(t, r, name).([]byte)
			if !reflect.DeepEqual(g, want[id][j]) && !(len(g) == 0 && len(want[id][j]) == 0 && (g == nil) == (want[id][j] == nil)) {
				t.Errorf("row %d %s: snapshot %x, want %x", id, name, g, want[id][j])
			}
		}
	}
	if len(read) != 3 {
		t.Errorf("snapshot read %d rows, want 3", len(read))
	}
}

// TestCharsetColumnsStreamAndSnapshot: text in columns of many character
// sets arrives as the exact UTF-8 text written, on both paths, including
// ENUM labels and a key in a non-UTF-8 charset.
func TestCharsetColumnsStreamAndSnapshot(t *testing.T) {
	texts := map[string]string{
		"cp1250":   "Příliš žluťoučký kůň úpěl ďábelské ódy „“ €",
		"cp1251":   "Съешь же ещё этих мягких французских булок № €",
		"latin1":   "café déjà vu ÿ € Ÿ œ",
		"latin2":   "Zażółć gęślą jaźń ŐŰ",
		"greek":    "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία",
		"hebrew":   "דג סקרן שט בים מאוכזב",
		"koi8r":    "Широкая электрификация южных губерний",
		"koi8u":    "Чуєш їх, доцю, га? ґанок",
		"cp866":    "Эх, чужак, общий съём цен шляп ╔═╗",
		"gbk":      "我能吞下玻璃而不伤身体 龘",
		"gb2312":   "我能吞下玻璃而不伤身体",
		"big5":     "我能吞下玻璃而不傷身體 資訊",
		"sjis":     "いろはにほへと ちりぬるを ｱｲｳ 漢字",
		"cp932":    "いろはにほへと ①Ⅹ ㈱ 髙",
		"ujis":     "色は匂へど 散りぬるを ｱｲ",
		"euckr":    "다람쥐 헌 쳇바퀴에 타고파",
		"tis620":   "เป็นมนุษย์สุดประเสริฐเลิศคุณค่า",
		"cp1257":   "Įlinkdama fechtuotojo špaga",
		"macroman": "Äpfel über Öl ﬁ",
	}
	// MariaDB's uca1400 collations; MySQL has the 520 ones (and gb18030)
	u16, u32 := "utf16_uca1400_ai_ci", "utf32_uca1400_as_cs"
	if needServer(t).flavor == FlavorMySQL {
		u16, u32 = "utf16_unicode_520_ci", "utf32_unicode_520_ci"
		texts["gb18030"] = "我能吞下玻璃而不伤身体 € ḿ 🚀"
	}
	names := make([]string, 0, len(texts))
	for cs := range texts {
		names = append(names, cs)
	}
	slices.Sort(names)
	cols := []string{"id INT NOT NULL", "k VARCHAR(40) CHARACTER SET cp1251 NOT NULL", "e ENUM('ёлка','ель') CHARACTER SET koi8r", "tx TEXT CHARACTER SET gbk",
		"u16 VARCHAR(20) CHARACTER SET utf16 COLLATE " + u16, "u32 VARCHAR(20) CHARACTER SET utf32 COLLATE " + u32}
	vals := []string{"1", "'ключ'", "'ёлка'", "'文本'", "'utf16 🚀 ü'", "'utf32 🚀 ü'"}
	for _, cs := range names {
		cols = append(cols, fmt.Sprintf("c_%s VARCHAR(60) CHARACTER SET %s", cs, cs))
		vals = append(vals, "'"+texts[cs]+"'")
	}
	streamed, read := streamThenSnapshot(t, "CREATE TABLE t ("+strings.Join(cols, ", ")+", PRIMARY KEY (k))",
		"INSERT INTO t VALUES ("+strings.Join(vals, ", ")+")")
	for path, recs := range map[string]map[int64]schema.Record{"stream": streamed, "snapshot": read} {
		r := recs[1]
		for _, cs := range names {
			if got := colValue(t, r, "c_"+cs); got != texts[cs] {
				t.Errorf("%s %s: got %q, want %q", path, cs, got, texts[cs])
			}
		}
		for name, want := range map[string]string{"k": "ключ", "e": "ёлка", "tx": "文本", "u16": "utf16 🚀 ü", "u32": "utf32 🚀 ü"} {
			if got := colValue(t, r, name); got != want {
				t.Errorf("%s %s: got %q, want %q", path, name, got, want)
			}
		}
		if got := r.KeyString(); !strings.Contains(got, "ключ") {
			t.Errorf("%s: key %s lacks the decoded text", path, got)
		}
		if got := r.ValueSchema.Fields[r.ValueSchema.FieldIndex("c_gbk")].Schema.Param(schema.ParamLength); got != "60" {
			t.Errorf("%s: VARCHAR(60) in gbk has length %s", path, got)
		}
	}
}

// TestUndecodableCharsetFailsAtStart: a captured column in a charset sluice
// has no table for stops the source at Open with a fatal error naming the
// column, and Check reports it; excluding the column lets it start.
func TestUndecodableCharsetFailsAtStart(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10) CHARACTER SET armscii8, ok VARCHAR(10))")
	cfg := testConfig(env, db)
	s, err := NewSource(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = s.Open(ctx, nil)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded with an armscii8 column")
	}
	if schema.ClassOf(err) != schema.ClassFatal || !strings.Contains(err.Error(), db+".t.a (armscii8)") || !strings.Contains(err.Error(), "exclude_columns") {
		t.Fatalf("Open: %v (class %v), want a fatal error naming %s.t.a (armscii8)", err, schema.ClassOf(err), db)
	}
	found := false
	for _, p := range Check(ctx, cfg) {
		if p.Check == "charset" && !p.Warning && strings.Contains(p.Detail, db+".t.a (armscii8)") {
			found = true
		}
	}
	if !found {
		t.Errorf("Check does not report the armscii8 column: %v", Check(ctx, cfg))
	}
	cfg.ExcludeColumns = []string{db + ".t.a"}
	s2 := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO t VALUES (1, 'x', 'y')")
	recs := ownData(readUntil(t, s2, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCreate) >= 1 }), db)
	if len(recs) == 0 || recs[0].After == nil {
		t.Fatalf("no insert after excluding the column")
	}
}

// TestMariaDBExtTypesStreamAndSnapshot: MariaDB's UUID, INET6, INET4 and
// JSON columns (BINARY(16), BINARY(16), BINARY(4) and LONGTEXT in the
// binlog) arrive as the text the server prints for them, the same on both
// paths, with their own source types; a UUID key pages the snapshot.
func TestMariaDBExtTypesStreamAndSnapshot(t *testing.T) {
	if f := needServer(t).flavor; f != FlavorMariaDB {
		t.Skip("MariaDB types")
	}
	uuids := []string{"00000000-0000-0000-0000-000000000000", "6ccd780c-baba-1026-9564-5b8c656024db",
		"12345678-9abc-4def-8123-456789abcdef", "ffffffff-ffff-ffff-ffff-ffffffffffff", "01234567-89ab-4def-8123-456789abcd00"}
	inet6 := []string{"::", "::1", "::1.2.3.4", "::ffff:1.2.3.4", "1:0:2:0:0:3:0:4", "1:2:3:4:5:6:0:8", "::1:2", "::ffff:0:1",
		"ffff::", "2001:db8::ff00:42:8329", "fe80::1:0:0:0", "1::ffff:1.2.3.4", "0:0:0:0:0:1:0:1", "abcd:ef01:2345:6789:abcd:ef01:2345:6789"}
	inet4 := []string{"0.0.0.0", "1.2.3.4", "255.255.255.255", "10.0.0.0"}
	var vals []string
	n := max(len(uuids), len(inet6))
	for i := 0; i < n; i++ {
		u := "NULL"
		if i < len(uuids) {
			u = "'" + uuids[i] + "'"
		}
		i4 := "NULL"
		if i < len(inet4) {
			i4 = "'" + inet4[i] + "'"
		}
		i6 := "'" + inet6[i%len(inet6)] + "'"
		vals = append(vals, fmt.Sprintf("(%d, UUID(), %s, %s, %s, '{\"k\": [%d, \"é\"]}', %d, %d)", i+1, u, i6, i4, i, i%2, i))
	}
	streamed, read := streamThenSnapshot(t, "CREATE TABLE t (id INT NOT NULL, pk UUID NOT NULL PRIMARY KEY, u UUID, i6 INET6, i4 INET4, j JSON, b TINYINT(1), bu TINYINT(1) UNSIGNED)",
		"INSERT INTO t VALUES "+strings.Join(vals, ", "))
	env := needServer(t)
	c, _ := adminConn(t, env)
	for id, s := range streamed {
		r := read[id]
		for _, name := range []string{"pk", "u", "i6", "i4", "j", "b", "bu"} {
			sv, rv := colValue(t, s, name), colValue(t, r, name)
			if sv != rv {
				t.Errorf("row %d %s: stream %#v, snapshot %#v", id, name, sv, rv)
			}
		}
		i := s.ValueSchema.FieldIndex("pk")
		res, err := c.Execute(fmt.Sprintf("SELECT CAST(u AS CHAR), CAST(i6 AS CHAR), CAST(i4 AS CHAR), j FROM %s.t WHERE pk = '%s'", s.Table.Database, s.After[i]))
		if err != nil || res.RowNumber() != 1 {
			t.Fatalf("row %d pk %v: %v", id, s.After[i], err)
		}
		for j, name := range []string{"u", "i6", "i4", "j"} {
			want, _ := res.GetString(0, j)
			isNull, _ := res.IsNull(0, j)
			got := colValue(t, s, name)
			if isNull {
				if got != nil {
					t.Errorf("row %d %s: %#v, want NULL", id, name, got)
				}
				continue
			}
			if got != want {
				t.Errorf("row %d %s: %#v, the server prints %q", id, name, got, want)
			}
		}
	}
	r := streamed[1]
	for name, want := range map[string][2]string{"pk": {"string", "uuid"}, "u": {"string", "uuid"}, "i6": {"string", "inet6"}, "i4": {"string", "inet4"}, "j": {"string/json", "json"},
		"b": {"int8", "tinyint(1)"}, "bu": {"int16", "tinyint(1) unsigned"}} {
		sch := r.ValueSchema.Fields[r.ValueSchema.FieldIndex(name)].Schema
		if sch.String() != want[0] && !strings.HasPrefix(sch.String(), want[0]) || sch.Param(schema.ParamSourceType) != want[1] {
			t.Errorf("%s: schema %v source type %q, want %s %s", name, sch, sch.Param(schema.ParamSourceType), want[0], want[1])
		}
	}

	// a UUID key pages the snapshot through keyset queries
	cfg := testConfig(env, r.Table.Database)
	cfg.Snapshot, cfg.SnapshotChunk = SnapshotInitialOnly, 2
	paged, _ := readSnapshot(t, openSource(t, cfg, nil))
	if len(paged) != len(streamed) {
		t.Fatalf("paged snapshot read %d rows, want %d", len(paged), len(streamed))
	}
}

// TestExtTypesWithHistory: with a schema history the stream still knows
// MariaDB's UUID/INET (from the history's DDL) and JSON and TINYINT(1)
// (which the history sees as LONGTEXT and TINYINT: from the hints).
func TestExtTypesWithHistory(t *testing.T) {
	env := needServer(t)
	if env.flavor != FlavorMariaDB {
		t.Skip("MariaDB types")
	}
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, u UUID, i6 INET6, j JSON, b TINYINT(1))")
	cfg := testConfig(env, db)
	cfg.HistoryFile = t.TempDir() + "/history.jsonl"
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO t VALUES (1, '6ccd780c-baba-1026-9564-5b8c656024db', '::1', '[1]', 1)")
	exec(t, c, "ALTER TABLE t ADD COLUMN u2 UUID")
	exec(t, c, "INSERT INTO t VALUES (2, NULL, NULL, NULL, 0, '12345678-9abc-4def-8123-456789abcdef')")
	recs := ownData(readUntil(t, s, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCreate) >= 2 }), db)
	var rows []schema.Record
	for _, r := range recs {
		if r.Op == schema.OpCreate {
			rows = append(rows, r)
		}
	}
	want := map[string]string{"u": "uuid", "i6": "inet6", "j": "json", "b": "tinyint(1)"}
	for _, r := range rows {
		for name, st := range want {
			sch := r.ValueSchema.Fields[r.ValueSchema.FieldIndex(name)].Schema
			if sch.Param(schema.ParamSourceType) != st {
				t.Errorf("row %v %s: source type %q, want %q", r.After[0], name, sch.Param(schema.ParamSourceType), st)
			}
		}
	}
	if got := colValue(t, rows[0], "u"); got != "6ccd780c-baba-1026-9564-5b8c656024db" {
		t.Errorf("u: %#v", got)
	}
	if got := colValue(t, rows[1], "u2"); got != "12345678-9abc-4def-8123-456789abcdef" {
		t.Errorf("u2 (added by ALTER): %#v", got)
	}
}
