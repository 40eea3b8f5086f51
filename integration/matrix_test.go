package integration

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/rocketmq"
)

// TestMatrixLandsExactly runs the type matrix (testdata/matrix/matrix.sql:
// every MySQL/MariaDB column type at its extremes, NULLs, nine character
// sets, hostile identifiers, a composite key) through the default config,
// no option set but snapshot: initial (which picks the paths, not how a
// value is written), into PostgreSQL and into a MariaDB target over the
// embedded transport, and into PostgreSQL over RocketMQ (every value through
// the topic's encoding and back), the snapshot
// part as snapshot reads and the rest from the binlog, and compares every
// cell of every table, source against target, in one canonical text form
// per column type. The same three runs go from the MySQL 9.7 source of
// scripts/servers.sh with its own matrix (testdata/matrix/matrix-mysql.sql:
// native JSON, 0900 collations, invisible and generated columns, SRID
// geometry, VECTOR, a GIPK table, BINARY(16) keys), the MySQL target being
// the MySQL 9.7 target server. A non-strict session adds invalid ENUM values (the
// error value ”) on both paths (issue 12, found 8).
//
// Rows from before an ADD COLUMN … DEFAULT read the default under
// schema_changes: ignore (the default) too (#28 item 7). The table without a key is compared as a multiset of rows (its updates
// and deletes find their row by the whole before image). Left out, refused
// with an error naming what to set: on PostgreSQL text with a NUL byte (no
// PostgreSQL text type holds U+0000; sink TestConvert).
func TestMatrixLandsExactly(t *testing.T) {
	for _, run := range []struct{ source, target, transport string }{
		{"mariadb", "postgres", "embedded"}, {"mariadb", "mysql", "embedded"}, {"mariadb", "postgres", "rocketmq"},
		{mysql97, "postgres", "embedded"}, {mysql97, "mysql", "embedded"}, {mysql97, "postgres", "rocketmq"},
	} {
		source, target, transport := run.source, run.target, run.transport
		name := target
		if transport != "embedded" {
			name = transport + "/" + target // every value through the topic's encoding too
		}
		file, tables := "matrix.sql", matrixTables
		if source == mysql97 {
			name = source + "/" + name // the MySQL 9.7 source and its matrix; the target is the MySQL 9.7 target
			file, tables = "matrix-mysql.sql", matrixMySQLTables
		}
		t.Run(name, func(t *testing.T) {
			need := []string{"SLUICE_MYSQL_PORT", "SLUICE_PG_DSN"}
			if transport == "rocketmq" {
				need = append(need, "SLUICE_ROCKETMQ_NAMESRV")
			}
			if source == mysql97 {
				need = append(need, "SLUICE_MYSQL97_PORT", "SLUICE_MYSQL97_TARGET_PORT")
			}
			e := servers(t, need...)
			if source == mysql97 {
				e = e.withMySQL97()
			}
			db := uniqueName("it_matrix")
			my := openDB(t, "mysql", e.mysqlDSN("")+"&time_zone=%27%2B00%3A00%27")
			pg := openDB(t, "postgres", e["SLUICE_PG_DSN"])
			tmy := openDB(t, "mysql", e.targetMySQLDSN("")+"&time_zone=%27%2B00%3A00%27")
			t.Cleanup(func() {
				pg.Exec(`DROP SCHEMA IF EXISTS "` + db + `" CASCADE`)
				my.Exec("DROP DATABASE IF EXISTS " + db)
				tmy.Exec("DROP DATABASE IF EXISTS " + db + "_target")
			})
			snapshot, streaming := matrixFileStatements(t, file)
			if target == "postgres" {
				// No PostgreSQL text type holds U+0000: the sink refuses such
				// a value with an error naming the column and the ways out
				// (sink TestConvert); the rest of the matrix must land.
				for _, part := range [][]string{snapshot, streaming} {
					for i := range part {
						part[i] = strings.ReplaceAll(part[i], "CHAR(0)", "CHAR(2)")
					}
				}
			}
			mustExec(t, my, "CREATE DATABASE "+db+" CHARACTER SET utf8mb4")
			execMatrix(t, my, db, snapshot)
			nonStrict(t, my, e, "INSERT INTO "+db+".others (id, e) VALUES (50, 'not a label')")

			var sink string
			if target == "postgres" {
				sink = fmt.Sprintf("  type: postgres\n  dsn: %s\n", e["SLUICE_PG_DSN"])
			} else {
				mustExec(t, tmy, "CREATE DATABASE "+db+"_target CHARACTER SET utf8mb4")
				t.Setenv("SLUICE_IT_TARGET_DB", db+"_target")
				sink = fmt.Sprintf("  type: mysql\n  dsn: %s\n  schema: ${SLUICE_IT_TARGET_DB}\n", e.targetMySQLDSN(db+"_target"))
			}
			dir := t.TempDir()
			tr := "  type: embedded\n"
			if transport == "rocketmq" {
				var topics []string
				for _, table := range tables {
					topics = append(topics, strconv.Quote(rocketmq.TopicName(db, db, table, "table")))
				}
				tr = fmt.Sprintf("  type: rocketmq\n  name_servers: [%q]\n  topic_prefix: %s\n  group: %s\n  topics: [%s]\n",
					e["SLUICE_ROCKETMQ_NAMESRV"], db, db+"_sink", strings.Join(topics, ", "))
			}
			cfg := fmt.Sprintf("name: %s\nsource:\n  type: %s\n  host: %s\n  port: %s\n  user: %s\n  password: ${SLUICE_IT_CDC_PASSWORD}\n  server_id: %d\n  include: [\"%s.*\"]\n  snapshot: initial\ntransport:\n%ssink:\n%spositions:\n  type: file\n  dir: %s\n",
				db, e["SLUICE_MYSQL_FLAVOR"], e["SLUICE_MYSQL_HOST"], e["SLUICE_MYSQL_PORT"], e["SLUICE_MYSQL_CDC_USER"],
				serverID(), db, tr, sink, filepath.Join(dir, "positions"))
			t.Setenv("SLUICE_IT_CDC_PASSWORD", e["SLUICE_MYSQL_CDC_PASSWORD"])
			path := filepath.Join(dir, "pipeline.yaml")
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			r := startPipeline(t, path)
			defer r.stop(t)

			tdb, quote := pg, func(s string) string { return `"` + db + `"."` + strings.ReplaceAll(s, `"`, `""`) + `"` }
			if target == "mysql" {
				tdb, quote = tmy, func(s string) string { return quoteMy(db+"_target") + "." + quoteMy(s) }
			}
			m := &matrixCmp{my: my, tdb: tdb, db: db, flavor: e["SLUICE_MYSQL_FLAVOR"], target: target, quote: quote}
			// The snapshot is done when every table has its rows.
			waitForOr(t, r, func() bool { return m.counted(t) == "" }, func() string { return "the snapshot of the matrix never reached the target: " + m.counted(t) })

			execMatrix(t, my, db, streaming)
			nonStrict(t, my, e, "INSERT INTO "+db+".others (id, e) VALUES (170, 'not a label either')")
			mustExec(t, my, "CREATE TABLE "+db+".zz_end (id INT PRIMARY KEY)")
			mustExec(t, my, "INSERT INTO "+db+".zz_end VALUES (1)")
			waitFor(t, r, func() bool {
				var n int
				return tdb.QueryRow("SELECT count(*) FROM "+quote("zz_end")).Scan(&n) == nil && n == 1
			}, "the end marker never reached the target")
			var diffs []string
			for deadline := time.Now().Add(60 * time.Second); ; {
				diffs = m.diffs(t)
				if len(diffs) == 0 || time.Now().After(deadline) {
					break
				}
				r.failIfStopped(t)
				time.Sleep(300 * time.Millisecond)
			}
			for _, d := range diffs {
				t.Error(d)
			}
			t.Logf("%d tables, %d cells compared, %d of them a documented difference", len(m.tables(t)), m.cells, m.known)
		})
	}
}

// matrixTables are the tables of matrix.sql and the test's end marker, for
// the topics a RocketMQ sink consumes (TestMatrixLandsExactly checks the
// list is complete: a table missing here never reaches the target).
var matrixTables = []string{"ints", "nums", "times", "strs", "bins", "others", "inets", "geo", `we"ird tåble`, "nokey", "dups", "late", "zz_end"}

// matrixMySQLTables are matrixTables for matrix-mysql.sql.
var matrixMySQLTables = []string{"ints", "nums", "times", "strs", "bins", "others", "jsons", "geo", "vecs", "gens", "bkeys", "bkeys2",
	"ckeys", `we"ird tåble`, "nokey", "dups", "gipk", "late_geo", "enums4", "late", "zz_end"}

// nonStrict runs q in a session without strict sql_mode, as an
// application on a lax server would.
func nonStrict(t *testing.T, my *sql.DB, e env, q string) {
	t.Helper()
	if e["SLUICE_MYSQL_FLAVOR"] == "mysql" {
		// MySQL 9.7 keeps strict mode for an INSERT under the hint
		// SET_VAR(sql_mode = ''): the session's mode it is.
		conn, err := my.Conn(t.Context())
		must(t, err)
		defer conn.Close()
		for _, s := range []string{"SET SESSION sql_mode = ''", q, "SET SESSION sql_mode = DEFAULT"} {
			if _, err := conn.ExecContext(t.Context(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		return
	}
	mustExec(t, my, "SET STATEMENT sql_mode = '' FOR "+q)
}

// matrixCmp compares the matrix's tables between the source and a target.
type matrixCmp struct {
	my, tdb *sql.DB
	db      string
	flavor  string // the source's: mariadb or mysql
	target  string
	quote   func(table string) string
	cells   int
	known   int // cells that differ as documented
}

type matrixCol struct {
	name, dataType, columnType string
	key                        bool
}

func (m *matrixCmp) tables(t *testing.T) []string {
	t.Helper()
	names, err := dump(m.my, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '"+m.db+"' AND TABLE_NAME <> 'zz_end' ORDER BY 1")
	must(t, err)
	for i, n := range names {
		names[i] = strings.Trim(n, "'")
	}
	return names
}

func (m *matrixCmp) columns(t *testing.T, table string) []matrixCol {
	t.Helper()
	rows, err := m.my.Query("SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COLUMN_KEY = 'PRI' FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", m.db, table)
	must(t, err)
	defer rows.Close()
	var out []matrixCol
	for rows.Next() {
		var c matrixCol
		must(t, rows.Scan(&c.name, &c.dataType, &c.columnType, &c.key))
		out = append(out, c)
	}
	must(t, rows.Err())
	return out
}

// counted names the tables whose row count differs between the source
// and the target; "" when none does.
func (m *matrixCmp) counted(t *testing.T) string {
	var out []string
	for _, table := range m.tables(t) {
		var a, b int
		must(t, m.my.QueryRow("SELECT count(*) FROM "+quoteMy(m.db)+"."+quoteMy(table)).Scan(&a))
		if err := m.tdb.QueryRow("SELECT count(*) FROM " + m.quote(table)).Scan(&b); err != nil || a != b {
			out = append(out, fmt.Sprintf("%s: source %d rows, target %d (%v)", table, a, b, err))
		}
	}
	return strings.Join(out, "; ")
}

var bitWidth = regexp.MustCompile(`^bit\((\d+)\)`)

// sourceExpr reads column c of the source as text.
func (m *matrixCmp) sourceExpr(c matrixCol) string {
	q := quoteMy(c.name)
	switch c.dataType {
	case "bit":
		return fmt.Sprintf("LPAD(BIN(%s), %s, '0')", q, bitWidth.FindStringSubmatch(c.columnType)[1])
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "vector":
		return "HEX(" + q + ")"
	case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection", "geomcollection":
		if m.flavor == "mysql" {
			// MySQL's binlog (and Debezium) has x = longitude for a
			// geographic SRID such as 4326; ST_AsWKB's default is the
			// SRS's axis order, latitude first.
			return "HEX(ST_AsWKB(" + q + ", 'axis-order=long-lat'))"
		}
		return "HEX(ST_AsWKB(" + q + "))"
	case "float":
		return "CAST(" + q + " AS DOUBLE)" // FLOAT's text has 6 digits; the stored float32 has up to 9
	}
	return "CAST(" + q + " AS CHAR CHARACTER SET utf8mb4)"
}

// targetExpr reads column c of the target as text of the same form.
func (m *matrixCmp) targetExpr(c matrixCol) string {
	if m.target == "mysql" {
		switch c.dataType {
		case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection", "geomcollection":
			return "HEX(" + quoteMy(c.name) + ")" // WKB in LONGBLOB
		}
		return m.sourceExpr(c)
	}
	q := `"` + strings.ReplaceAll(c.name, `"`, `""`) + `"`
	switch c.dataType {
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "vector",
		"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection", "geomcollection":
		return "upper(encode(" + q + ", 'hex'))"
	case "timestamp":
		return "(" + q + " AT TIME ZONE 'UTC')::text"
	case "set":
		return "array_to_string(" + q + ", ',')"
	case "inet4", "inet6":
		return "host(" + q + ")" // inet's text adds the mask: ::/128
	}
	return q + "::text"
}

var fraction = regexp.MustCompile(`\.(\d*?)0*$`)

// canonical normalises the text of a value of c: fraction digits without
// trailing zeros, floats by value, JSON by structure.
func canonical(c matrixCol, v sql.NullString) string {
	if !v.Valid {
		return "NULL"
	}
	s := v.String
	switch c.dataType {
	case "datetime", "timestamp", "time":
		s = fraction.ReplaceAllStringFunc(s, func(f string) string {
			f = strings.TrimRight(f, "0")
			if f == "." {
				return ""
			}
			return f
		})
	case "float", "double":
		bits := 64
		if c.dataType == "float" { // float32 storage, FLOAT(M,D) too
			bits = 32
		}
		f, err := strconv.ParseFloat(s, bits)
		if err != nil {
			return "unparsable " + s
		}
		if f == 0 && math.Signbit(f) {
			return "-0"
		}
		return strconv.FormatFloat(f, 'g', -1, bits)
	case "json", "longtext":
		if c.dataType == "longtext" && !strings.HasPrefix(strings.ToLower(c.columnType), "longtext") {
			break
		}
		var j any
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		if d.Decode(&j) == nil && c.dataType == "json" {
			b, _ := json.Marshal(jsonNumbersByValue(j))
			return string(b)
		}
	}
	return strconv.Quote(s)
}

// jsonNumbersByValue replaces every number in v by its exact value as a
// fraction: PostgreSQL's jsonb writes 1e300 and -0.0 as 1000…0 and 0.
func jsonNumbersByValue(v any) any {
	switch v := v.(type) {
	case json.Number:
		if r, ok := new(big.Rat).SetString(v.String()); ok {
			return "number " + r.RatString()
		}
	case []any:
		for i := range v {
			v[i] = jsonNumbersByValue(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = jsonNumbersByValue(v[k])
		}
	}
	return v
}

// readTable returns the rows of table as canonical text, keyed by their
// key columns (all columns for a table without a key; repeats counted).
func (m *matrixCmp) readTable(db *sql.DB, q string, cols []matrixCol) (map[string][]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	hasKey := false
	for _, c := range cols {
		hasKey = hasKey || c.key
	}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cols))
		var key []string
		for i, c := range cols {
			row[i] = canonical(c, vals[i])
			if c.key || !hasKey {
				key = append(key, row[i])
			}
		}
		k := strings.Join(key, ",")
		for n := 2; out[k] != nil; n++ {
			k = strings.Join(key, ",") + fmt.Sprintf(" (#%d)", n)
		}
		out[k] = row
	}
	return out, rows.Err()
}

// diffs names every cell that differs, and on a MySQL target every FLOAT
// or DOUBLE column whose declared type (FLOAT(M,D), DOUBLE(M,D)) differs.
func (m *matrixCmp) diffs(t *testing.T) []string {
	t.Helper()
	var out []string
	m.cells, m.known = 0, 0
	for _, table := range m.tables(t) {
		cols := m.columns(t, table)
		out = append(out, m.floatTypes(t, table, cols)...)
		var src, dst []string
		for _, c := range cols {
			src = append(src, m.sourceExpr(c))
			dst = append(dst, m.targetExpr(c))
		}
		a, err := m.readTable(m.my, "SELECT "+strings.Join(src, ", ")+" FROM "+quoteMy(m.db)+"."+quoteMy(table), cols)
		must(t, err)
		b, err := m.readTable(m.tdb, "SELECT "+strings.Join(dst, ", ")+" FROM "+m.quote(table), cols)
		if err != nil {
			out = append(out, fmt.Sprintf("table %s: read the target: %v", table, err))
			continue
		}
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		for k := range b {
			if _, ok := a[k]; !ok {
				out = append(out, fmt.Sprintf("table %s: row %s is on the target only: %v", table, k, b[k]))
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			brow, ok := b[k]
			if !ok {
				out = append(out, fmt.Sprintf("table %s: row %s is missing on the target", table, k))
				continue
			}
			for i, c := range cols {
				m.cells++
				if !reflect.DeepEqual(a[k][i], brow[i]) {
					out = append(out, fmt.Sprintf("table %s, row %s, column %s (%s): source %s, target %s", table, k, c.name, c.columnType, a[k][i], brow[i]))
				}
			}
		}
	}
	return out
}

// floatTypes compares the declared types of table's FLOAT and DOUBLE
// columns on a MySQL target: FLOAT(M,D) and DOUBLE(M,D) keep M and D.
func (m *matrixCmp) floatTypes(t *testing.T, table string, cols []matrixCol) []string {
	t.Helper()
	if m.target != "mysql" {
		return nil
	}
	var out []string
	for _, c := range cols {
		if c.dataType != "float" && c.dataType != "double" {
			continue
		}
		var got string
		err := m.tdb.QueryRow("SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?", m.db+"_target", table, c.name).Scan(&got)
		if err != nil || got != c.columnType {
			out = append(out, fmt.Sprintf("table %s, column %s: source type %s, target type %q (%v)", table, c.name, c.columnType, got, err))
		}
	}
	return out
}
