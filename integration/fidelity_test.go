package integration

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// fidelityTexts are written into columns of their charset; the target must
// hold exactly this text.
var fidelityTexts = map[string]string{
	"cp1250": "Příliš žluťoučký kůň „“ €",
	"cp1251": "Съешь же ещё этих булок № €",
	"latin1": "café déjà vu Ÿ œ €",
	"latin2": "Zażółć gęślą jaźń",
	"greek":  "Ξεσκεπάζω την ψυχοφθόρα",
	"hebrew": "דג סקרן שט בים",
	"koi8r":  "Широкая электрификация",
	"gbk":    "我能吞下玻璃而不伤身体",
	"big5":   "我能吞下玻璃而不傷身體",
	"sjis":   "いろはにほへと ｱｲｳ 漢字",
	"cp932":  "いろは ①Ⅹ ㈱",
	"ujis":   "色は匂へど ｱｲ",
	"euckr":  "다람쥐 헌 쳇바퀴에",
	"tis620": "เป็นมนุษย์สุดประเสริฐ",
}

func fidelityCharsets() []string {
	names := make([]string, 0, len(fidelityTexts))
	for cs := range fidelityTexts {
		names = append(names, cs)
	}
	sort.Strings(names)
	return names
}

// fidelityWrite writes rows first..last of the three tables: BINARY(16)
// keys ending in 0x00 (and all zero), text in many charsets, and MariaDB's
// UUID, INET6, INET4, JSON and TINYINT(1).
func fidelityWrite(t *testing.T, my *sql.DB, db string, first, last int) {
	t.Helper()
	inet6 := []string{"::", "::1", "::1.2.3.4", "::ffff:1.2.3.4", "1:0:2:0:0:3:0:4", "1:2:3:4:5:6:0:8", "2001:db8::ff00:42:8329", "fe80::1:0:0:0"}
	for i := first; i <= last; i++ {
		mustExec(t, my, fmt.Sprintf("INSERT INTO %s.bin VALUES (x'%02x000000000000000000000000000000', %d), (x'%030x00', %d)", db, i, i, i, -i))
		var cols, vals []string
		for _, cs := range fidelityCharsets() {
			cols = append(cols, "c_"+cs)
			vals = append(vals, "'"+fidelityTexts[cs]+fmt.Sprint(i)+"'")
		}
		mustExec(t, my, fmt.Sprintf("INSERT INTO %s.cs (k, id, %s) VALUES ('ключ %d', %d, %s)", db, strings.Join(cols, ", "), i, i, strings.Join(vals, ", ")))
		mustExec(t, my, fmt.Sprintf(`INSERT INTO %s.ext VALUES (UUID(), %d, '%08x-0000-4000-8000-000000000000', '%s', '10.0.%d.%d', '{"k": [%d, "é", null]}', %d)`,
			db, i, i, inet6[i%len(inet6)], i/256, i%256, i, i%2))
	}
	mustExec(t, my, "INSERT INTO "+db+".bin VALUES (x'00000000000000000000000000000000', 0) ON DUPLICATE KEY UPDATE id = 0")
}

// TestTypeFidelityEndToEnd runs the default config (snapshot, then stream)
// from MariaDB into PostgreSQL and into a MySQL-protocol target (MariaDB)
// and checks every value lands exactly: BINARY(16) keys ending in 0x00 are
// updated and deleted on the target, text of 14 charsets is the text
// written, UUID/INET6/INET4 are the server's text (PostgreSQL: uuid and
// inet), JSON is JSONB on PostgreSQL and keeps json_valid on MariaDB, and
// TINYINT(1) stays tinyint(1) on the MySQL target.
func TestTypeFidelityEndToEnd(t *testing.T) {
	for _, target := range []string{"postgres", "mysql"} {
		t.Run(target, func(t *testing.T) {
			e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
			db := uniqueName("it_types")
			my := openDB(t, "mysql", e.mysqlDSN(""))
			pg := openDB(t, "postgres", e["SLUICE_PG_DSN"])
			t.Cleanup(func() {
				pg.Exec(`DROP SCHEMA IF EXISTS "` + db + `" CASCADE`)
				my.Exec("DROP DATABASE IF EXISTS " + db)
				my.Exec("DROP DATABASE IF EXISTS " + db + "_target")
			})
			mustExec(t, my, "CREATE DATABASE "+db+" CHARACTER SET utf8mb4")
			mustExec(t, my, "CREATE TABLE "+db+".bin (k BINARY(16) NOT NULL PRIMARY KEY, id INT NOT NULL)")
			cols := []string{"k VARCHAR(40) CHARACTER SET cp1251 NOT NULL PRIMARY KEY", "id INT NOT NULL"}
			for _, cs := range fidelityCharsets() {
				cols = append(cols, fmt.Sprintf("c_%s VARCHAR(60) CHARACTER SET %s", cs, cs))
			}
			mustExec(t, my, "CREATE TABLE "+db+".cs ("+strings.Join(cols, ", ")+")")
			mustExec(t, my, "CREATE TABLE "+db+".ext (pk UUID NOT NULL PRIMARY KEY, id INT NOT NULL, u UUID, i6 INET6, i4 INET4, j JSON, b TINYINT(1))")
			fidelityWrite(t, my, db, 1, 5) // read by the snapshot

			var sink string
			if target == "postgres" {
				sink = fmt.Sprintf("  type: postgres\n  dsn: %s\n", e["SLUICE_PG_DSN"])
			} else {
				mustExec(t, my, "CREATE DATABASE "+db+"_target CHARACTER SET utf8mb4")
				t.Setenv("SLUICE_IT_TARGET_DB", db+"_target") // the YAML expands ${...} itself
				sink = fmt.Sprintf("  type: mysql\n  dsn: %s:%s@tcp(%s:%s)/%s_target\n  schema: ${SLUICE_IT_TARGET_DB}\n",
					e["SLUICE_MYSQL_USER"], e["SLUICE_MYSQL_PASSWORD"], e["SLUICE_MYSQL_HOST"], e["SLUICE_MYSQL_PORT"], db)
			}
			dir := t.TempDir()
			cfg := fmt.Sprintf("name: %s\nsource:\n  type: %s\n  host: %s\n  port: %s\n  user: %s\n  password: ${SLUICE_IT_CDC_PASSWORD}\n  server_id: %d\n  include: [\"%s.*\"]\n  snapshot: initial\ntransport:\n  type: embedded\n  queues: 4\nsink:\n%spositions:\n  type: file\n  dir: %s\n",
				db, e["SLUICE_MYSQL_FLAVOR"], e["SLUICE_MYSQL_HOST"], e["SLUICE_MYSQL_PORT"], e["SLUICE_MYSQL_CDC_USER"],
				serverID(), db, sink, filepath.Join(dir, "positions"))
			t.Setenv("SLUICE_IT_CDC_PASSWORD", e["SLUICE_MYSQL_CDC_PASSWORD"])
			path := filepath.Join(dir, "pipeline.yaml")
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			r := startPipeline(t, path)
			defer r.stop(t)

			fidelityWrite(t, my, db, 6, 12) // streamed
			for _, q := range []string{
				"UPDATE %s.bin SET id = id + 1000 WHERE k = x'03000000000000000000000000000000'", // snapshot row
				"UPDATE %s.bin SET id = id + 1000 WHERE k = x'09000000000000000000000000000000'", // streamed row
				"DELETE FROM %s.bin WHERE k = x'04000000000000000000000000000000'",
				"DELETE FROM %s.bin WHERE k = x'0a000000000000000000000000000000'",
				"UPDATE %s.bin SET k = x'ff000000000000000000000000000000' WHERE k = x'00000000000000000000000000000000'",
				"UPDATE %s.cs SET c_gbk = '更新', c_cp1251 = 'обновлено' WHERE k = 'ключ 2'",
				"DELETE FROM %s.cs WHERE k = 'ключ 7'",
				"UPDATE %s.ext SET i6 = '::ffff:9.9.9.9', j = '[1]' WHERE id = 3",
				"DELETE FROM %s.ext WHERE id = 8",
				"INSERT INTO %s.bin VALUES (x'ee000000000000000000000000000000', 99999)", // the end marker
			} {
				mustExec(t, my, fmt.Sprintf(q, db))
			}

			tdb, quote := pg, func(s string) string { return `"` + db + `"."` + s + `"` }
			hexK := "upper(encode(k, 'hex'))"
			if target == "mysql" {
				tdb, quote, hexK = my, func(s string) string { return db + "_target." + s }, "HEX(k)"
			}
			waitFor(t, r, func() bool {
				var n int
				return tdb.QueryRow("SELECT count(*) FROM "+quote("bin")+" WHERE id = 99999").Scan(&n) == nil && n == 1
			}, "the end marker never reached the target")
			// the tables travel on different queues: compare until equal
			var diffs []string
			for deadline := time.Now().Add(60 * time.Second); ; {
				diffs = fidelityDiffs(t, my, tdb, db, target, quote, hexK)
				if len(diffs) == 0 || time.Now().After(deadline) {
					break
				}
				r.failIfStopped(t)
				time.Sleep(300 * time.Millisecond)
			}
			for _, d := range diffs {
				t.Error(d)
			}
		})
	}
}

// fidelityDiffs compares the three tables of the source with the target.
func fidelityDiffs(t *testing.T, my, tdb *sql.DB, db, target string, quote func(string) string, hexK string) []string {
	t.Helper()
	var out []string
	same := func(what string, src, dst []string) {
		if strings.Join(src, "\n") != strings.Join(dst, "\n") {
			out = append(out, fmt.Sprintf("%s differ:\nsource %q\ntarget %q", what, src, dst))
		}
	}
	src, err := dump(my, "SELECT HEX(k), id FROM "+db+".bin ORDER BY 1")
	must(t, err)
	dst, err := dump(tdb, "SELECT "+hexK+", id FROM "+quote("bin")+" ORDER BY 1")
	must(t, err)
	same("BINARY(16) rows", src, dst)

	list := "k, id"
	for _, cs := range fidelityCharsets() {
		list += ", c_" + cs
	}
	src, err = dump(my, "SELECT "+list+" FROM "+db+".cs ORDER BY id")
	must(t, err)
	dst, err = dump(tdb, "SELECT "+list+" FROM "+quote("cs")+" ORDER BY id")
	if err != nil {
		return append(out, err.Error())
	}
	same("charset rows", src, dst)

	src, err = dump(my, "SELECT id, CAST(pk AS CHAR), CAST(u AS CHAR), CAST(i6 AS CHAR), CAST(i4 AS CHAR), j, b FROM "+db+".ext ORDER BY id")
	must(t, err)
	if target == "mysql" {
		dst, err = dump(tdb, "SELECT id, pk, u, i6, i4, j, b FROM "+quote("ext")+" ORDER BY id")
		if err != nil {
			return append(out, err.Error())
		}
		same("UUID/INET/JSON rows", src, dst)
		var ddl, name string
		if err := tdb.QueryRow("SHOW CREATE TABLE "+quote("ext")).Scan(&name, &ddl); err != nil {
			return append(out, err.Error())
		}
		if !strings.Contains(ddl, "json_valid(`j`)") || !strings.Contains(ddl, "`b` tinyint(1)") {
			out = append(out, "target table lacks json_valid on j or tinyint(1) on b:\n"+ddl)
		}
		return out
	}
	// PostgreSQL: uuid and inet compare as values; JSON as jsonb
	rows, err := my.Query("SELECT id, CAST(pk AS CHAR), CAST(u AS CHAR), CAST(i6 AS CHAR), CAST(i4 AS CHAR), j, b FROM " + db + ".ext ORDER BY id")
	must(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, b int
		var pk, u, i6, i4, j string
		must(t, rows.Scan(&id, &pk, &u, &i6, &i4, &j, &b))
		var ok bool
		if err := tdb.QueryRow(`SELECT pk = $2::uuid AND u = $3::uuid AND i6 = $4::inet AND i4 = $5::inet AND j = $6::jsonb AND b = $7 AND pk::text = $8
  FROM `+quote("ext")+` WHERE id = $1`, id, pk, u, i6, i4, j, b, pk).Scan(&ok); err != nil || !ok {
			out = append(out, fmt.Sprintf("ext row %d differs on PostgreSQL from %s %s %s %s %s %d (%v)", id, pk, u, i6, i4, j, b, err))
		}
		n++
	}
	must(t, rows.Err())
	var m int
	if err := tdb.QueryRow("SELECT count(*) FROM " + quote("ext")).Scan(&m); err != nil || m != n {
		out = append(out, fmt.Sprintf("PostgreSQL has %d ext rows, the source %d (%v)", m, n, err))
	}
	types, err := dump(tdb, `SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_schema = '`+db+`' AND table_name = 'ext' AND column_name IN ('pk', 'u', 'i6', 'i4', 'j') ORDER BY 1`)
	must(t, err)
	same("PostgreSQL column types", []string{"'i4 inet'", "'i6 inet'", "'j jsonb'", "'pk uuid'", "'u uuid'"}, types)
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
