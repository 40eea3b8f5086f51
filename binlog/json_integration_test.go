package binlog

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// compactServerJSON drops the space MySQL writes after ',' and ':' outside
// strings: the server's text in the form sluice emits (Debezium's binlog
// form), derived without sluice's JSON code.
func compactServerJSON(s string) string {
	var b strings.Builder
	inStr, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr:
			inStr = esc || c != '"'
			esc = !esc && c == '\\'
		case c == '"':
			inStr = true
		case c == ' ' && i > 0 && (s[i-1] == ',' || s[i-1] == ':'):
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// TestJSONTextMatchesServer streams and snapshots MySQL JSON documents
// (nested objects in the server's key order, doubles of every magnitude,
// decimals, big integers, escaped and non-BMP strings, dates and times,
// opaque values) and checks that both give the server's own text (SELECT)
// without the spaces after ',' and ':'.
func TestJSONTextMatchesServer(t *testing.T) {
	env := needServer(t)
	if env.flavor != FlavorMySQL {
		t.Skip("MariaDB's JSON is a LONGTEXT: its text passes verbatim (TestSnapshotTypeParity)")
	}
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE j (id INT PRIMARY KEY, js JSON)")
	docs := []string{
		`'{"k": [1, 2, null]}'`,
		`'{"bb": 1, "a": {"zz": [true, false, {}], "y": []}, "ccc": "x", "ab": -0.0}'`,
		`JSON_ARRAY(CONVERT(CONCAT('a', CHAR(1), CHAR(31), CHAR(127), '"\\/', CHAR(9), CHAR(10), CHAR(13), CHAR(8), CHAR(12), 'é😀') USING utf8mb4))`,
		`JSON_ARRAY(CAST('2020-01-02 03:04:05.5' AS DATETIME(2)), CAST('2020-01-02' AS DATE), CAST('-12:34:56.5' AS TIME(1)), TIMESTAMP('2020-01-01 00:00:00.123'))`,
		`JSON_ARRAY(CAST(1.50 AS DECIMAL(5,2)), CAST(-0.001 AS DECIMAL(6,3)), CAST(12 AS DECIMAL(4,0)), 18446744073709551615, -9223372036854775808, x'ab01')`,
		`JSON_OBJECT('d', CAST(1e15 AS DOUBLE), 'e', CAST(1.5e-5 AS DOUBLE), 'f', CAST(1234567890123456.8 AS DOUBLE), 'g', CAST(100 AS DOUBLE), 'h', CAST(1e-15 AS DOUBLE), 'i', CAST(1.5e-16 AS DOUBLE), 'j', CAST(1.7976931348623157e308 AS DOUBLE), 'k', CAST(5e-324 AS DOUBLE))`,
		`'[[[[[[[[[[["deep"]]]]]]]]]]]'`, `'"scalar"'`, `'3'`, `'null'`, `'{}'`,
	}
	rng := rand.New(rand.NewPCG(7, 26))
	for i := 0; i < 40; i++ {
		var items []string
		for j := 0; j < 20; j++ {
			f := math.Float64frombits(rng.Uint64())
			if math.IsNaN(f) || math.IsInf(f, 0) {
				f = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
			}
			if j%2 == 1 { // values near the switch to exponent notation
				f = math.Round(rng.Float64()*1e6) * math.Pow(10, float64(rng.IntN(40)-25))
			}
			items = append(items, "CAST("+strconv.FormatFloat(f, 'g', -1, 64)+" AS DOUBLE)")
		}
		docs = append(docs, "JSON_ARRAY("+strings.Join(items, ", ")+")")
	}
	s := openSource(t, testConfig(env, db), nil)
	for i, d := range docs {
		exec(t, c, fmt.Sprintf("INSERT INTO j VALUES (%d, %s)", i, d))
	}
	streamed := readUntil(t, s, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCreate) >= len(docs) })
	cfg := testConfig(env, db)
	cfg.Snapshot = SnapshotInitialOnly
	read, _ := readSnapshot(t, openSource(t, cfg, nil))

	r, err := c.Execute("SELECT id, js FROM j ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{}
	for i := 0; i < r.RowNumber(); i++ {
		id, _ := r.GetInt(i, 0)
		js, _ := r.GetString(i, 1)
		want[id] = compactServerJSON(js)
	}
	for name, recs := range map[string][]schema.Record{"stream": ownData(streamed, db), "snapshot": read} {
		n := 0
		for _, rec := range recs {
			if rec.Table.Database != db || rec.After == nil {
				continue
			}
			n++
			id := rec.After[0].(int64)
			if got := rec.After[1]; got != want[id] {
				t.Errorf("%s: row %d: %v\n want %s", name, id, got, want[id])
			}
		}
		if n != len(docs) {
			t.Errorf("%s: %d rows, want %d", name, n, len(docs))
		}
	}
}
