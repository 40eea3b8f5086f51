package binlog

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// TestSourceTypeMatrix inserts edge values of every supported column type
// and checks the exact Go values of the record.
func TestSourceTypeMatrix(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, `CREATE TABLE types (
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
  bi BIGINT, biu BIGINT UNSIGNED,
  d DECIMAL(65,30), d2 DECIMAL(10,2), f FLOAT, db DOUBLE,
  b1 BIT(1), b64 BIT(64),
  dt DATE, tm TIME(6), dtm DATETIME(6), ts TIMESTAMP(3) NULL, y YEAR,
  c CHAR(4), vc VARCHAR(100), tx TEXT, lat VARCHAR(20) CHARACTER SET latin1,
  bn BINARY(3), vb VARBINARY(10), bl BLOB,
  e ENUM('small','medium','large'), st SET('a','b','c','d'),
  js JSON, g GEOMETRY,
  zd DATE NOT NULL DEFAULT '2000-01-01')`)
	exec(t, c, "SET sql_mode = ''")
	s := openSource(t, testConfig(env, db), nil)
	exec(t, c, `INSERT INTO types VALUES (1, -128, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
  -9223372036854775808, 18446744073709551615,
  '-12345678901234567890123456789012345.123456789012345678901234567890', '-0.50', 1.5, -2.25,
  b'1', b'1111111111111111111111111111111111111111111111111111111111111111',
  '1969-07-20', '-838:59:59.000000', '1960-01-02 03:04:05.123456', '2038-01-19 03:14:07.999', 2155,
  'ab', 'héllo wörld ✓ 🚀', 'long text', _latin1 x'636166E920809F', x'000102', x'', x'DEADBEEF',
  'medium', 'a,c', '{"k": [1, 2, null]}', ST_GeomFromText('POINT(1 2)', 4326), '0000-00-00')`)
	exec(t, c, `INSERT INTO types (id, ti, tiu, bi, biu, d, d2, tm, dtm, ts, y, c, vc, tx, vb, e, st, dt)
  VALUES (2, 127, 0, 9223372036854775807, 0, '0', '99999999.99', '838:59:59.999999', '9999-12-31 23:59:59.999999',
  '1970-01-01 00:00:01.000', 1901, '', '', '', x'', '', '', '0000-00-00')`)
	exec(t, c, "INSERT INTO types (id) VALUES (3)")

	recs := readUntil(t, s, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCreate) >= 3 })
	rows := map[int64]schema.Record{}
	for _, r := range ownData(recs, db) {
		if r.Op == schema.OpCreate {
			rows[r.After[0].(int64)] = r
		}
	}
	dec := schema.MustDec
	js := `{"k": [1, 2, null]}` // MariaDB's JSON is text: as written
	// POINT(1 2) with SRID 4326: MariaDB keeps x=1 y=2; MySQL reads WKT in
	// the SRS's axis order (latitude 1, longitude 2) and stores, and writes
	// to the binlog and SELECT, x=longitude y=latitude: the bytes of
	// ST_AsBinary(g, 'axis-order=long-lat'), which Debezium emits too and
	// PostGIS reads as the same place.
	g := []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0x40}
	tmMax := int64((838*3600+59*60+59)*1e6 + 999999)
	if env.flavor == FlavorMySQL {
		js = `{"k":[1,2,null]}` // MySQL's text without the spaces (nativeJSON)
		g = []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}
		tmMax = (838*3600 + 59*60 + 59) * 1e6 // MySQL's TIME ends at 838:59:59.000000 and clips to it
	}
	want := map[int64]map[string]any{
		1: {"id": int64(1), "ti": int64(-128), "tiu": int64(255), "si": int64(-32768), "siu": int64(65535),
			"mi": int64(-8388608), "miu": int64(16777215), "i": int64(math.MinInt32), "iu": int64(math.MaxUint32),
			"bi": int64(math.MinInt64), "biu": uint64(math.MaxUint64),
			"d": dec("-12345678901234567890123456789012345.123456789012345678901234567890"), "d2": dec("-0.50"),
			"f": float32(1.5), "db": float64(-2.25), "b1": uint64(1), "b64": uint64(math.MaxUint64),
			"dt": int32(-165), "tm": int64(-(838*3600 + 59*60 + 59) * 1e6),
			"dtm": time.Date(1960, 1, 2, 3, 4, 5, 123456000, time.UTC).UnixMicro(),
			"ts":  time.Date(2038, 1, 19, 3, 14, 7, 999000000, time.UTC).UnixMicro(), "y": int64(2155),
			"c": "ab", "vc": "héllo wörld ✓ 🚀", "tx": "long text", "lat": "café €Ÿ",
			"bn": []byte{0, 1, 2}, "vb": []byte{}, "bl": []byte{0xde, 0xad, 0xbe, 0xef},
			"e": "medium", "st": "a,c", "js": js,
			"g":  schema.Geom{WKB: g, SRID: 4326},
			"zd": int32(0), // zero date in a NOT NULL column: the epoch
		},
		2: {"ti": int64(127), "tiu": int64(0), "bi": int64(math.MaxInt64), "biu": uint64(0), "d": dec("0.000000000000000000000000000000"),
			"d2": dec("99999999.99"), "tm": tmMax,
			"dtm": time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro(), "ts": int64(1e6), "y": int64(1901),
			"c": "", "vc": "", "tx": "", "vb": []byte{}, "e": "", "st": "", "dt": nil, "f": nil, "js": nil, "g": nil},
		3: {"ti": nil, "biu": nil, "d": nil, "dt": nil, "tm": nil, "ts": nil, "vc": nil, "bl": nil, "e": nil, "st": nil, "zd": int32(10957)},
	}
	for id, cols := range want {
		r, ok := rows[id]
		if !ok {
			t.Fatalf("no record for row %d", id)
		}
		for name, w := range cols {
			i := r.ValueSchema.FieldIndex(name)
			if i < 0 {
				t.Fatalf("no field %s", name)
			}
			got := r.After[i]
			if wd, ok := w.(schema.Dec); ok {
				if gd, ok := got.(schema.Dec); !ok || !gd.Equal(wd) {
					t.Errorf("row %d %s = %#v, want Dec %s", id, name, got, wd)
				}
				continue
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("row %d %s = %T(%v), want %T(%v)", id, name, got, got, w, w)
			}
		}
	}
}
