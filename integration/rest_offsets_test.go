package integration

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRESTOffsetsGuarantees is PATCH /connectors/{name}/offsets of `sluice
// run --rest` against sluice's guarantees: an offset moved back is taken,
// and the source reads the changes after it again (the target keeps each
// row once); an offset moved forward would skip changes, so it is refused
// (400, the saved offset unchanged) unless the request says ?skip=true,
// and then the changes between are indeed never applied.
func TestRESTOffsetsGuarantees(t *testing.T) {
	bin := buildSluice(t)
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	name, my, pg := faultTables(t, e)
	r := startSluice(t, bin, faultConfig(t, e, name, "embedded", ""))
	must := func(method, path, body string, want int) string {
		t.Helper()
		code, got := r.call(t, method, path, body)
		if code != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, code, got, want)
		}
		return got
	}
	base := "/connectors/" + name
	stop := func() string {
		t.Helper()
		must("PUT", base+"/stop", "", 202)
		r.waitState(t, name, "STOPPED")
		return must("GET", base+"/offsets", "", 200)
	}
	restart := func() {
		t.Helper()
		must("POST", base+"/restart", "", 204)
		r.waitState(t, name, "RUNNING")
	}
	r.waitState(t, name, "RUNNING")
	waitRows(t, r, my, pg, name, 1)
	first := stop()
	restart()
	mustExec(t, my, "INSERT INTO `"+name+"`.t VALUES (2, 2), (3, 3)")
	waitRows(t, r, my, pg, name, 3)
	stop()

	// back: taken without a flag; rows 2 and 3 are read again
	must("PATCH", base+"/offsets", first, 200)
	restart()
	deadline := time.Now().Add(30 * time.Second)
	for read := int64(0); read < 2; {
		var st struct {
			Read int64 `json:"records_read"`
		}
		_ = json.Unmarshal([]byte(must("GET", base+"/status", "", 200)), &st)
		if read = st.Read; time.Now().After(deadline) {
			t.Fatalf("records read after the offset moved back: %d, want the 2 changes after it again", read)
		}
		time.Sleep(100 * time.Millisecond)
	}
	assertIDs(t, pg, name, 1, 2, 3)

	// forward: refused, then taken with ?skip=true; rows 4 and 5 never arrive
	saved := stop()
	mustExec(t, my, "INSERT INTO `"+name+"`.t VALUES (4, 4), (5, 5)")
	later := laterOffset(t, my, e, saved)
	if body := must("PATCH", base+"/offsets", later, 400); !strings.Contains(body, "skip=true") || !strings.Contains(body, `"error_code":400`) {
		t.Fatalf("forward PATCH: %s, want a 400 naming ?skip=true", body)
	}
	if now := must("GET", base+"/offsets", "", 200); now != saved {
		t.Fatalf("a refused PATCH changed the offsets: %s, was %s", now, saved)
	}
	must("PATCH", base+"/offsets?skip=true", later, 200)
	restart()
	mustExec(t, my, "INSERT INTO `"+name+"`.t VALUES (6, 6)")
	waitRows(t, r, my, pg, name, 4)
	assertIDs(t, pg, name, 1, 2, 3, 6)
	if code := r.stop(t); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
}

// laterOffset is the PATCH body of saved (a GET .../offsets answer) moved to
// the server's current binlog position and GTID set.
func laterOffset(t *testing.T, my *sql.DB, e env, saved string) string {
	t.Helper()
	var body struct {
		Offsets []struct {
			Partition map[string]any `json:"partition"`
			Offset    map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	dec := json.NewDecoder(strings.NewReader(saved))
	dec.UseNumber() // the epoch does not fit a float64
	if err := dec.Decode(&body); err != nil || len(body.Offsets) != 1 {
		t.Fatalf("offsets %s: %v", saved, err)
	}
	off := body.Offsets[0].Offset
	rows, err := my.Query("SHOW MASTER STATUS")
	if err != nil {
		rows, err = my.Query("SHOW BINARY LOG STATUS") // MySQL 8.4 and later
	}
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if !rows.Next() {
		t.Fatal("no binlog status")
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	var pos int64
	fmt.Sscan(string(vals[1]), &pos)
	off["file"], off["pos"] = string(vals[0]), pos
	rows.Close()
	if _, ok := off["gtid"]; ok {
		q := "SELECT @@gtid_binlog_pos"
		if e["SLUICE_MYSQL_FLAVOR"] == "mysql" {
			q = "SELECT @@gtid_executed"
		}
		var g string
		if err := my.QueryRow(q).Scan(&g); err != nil {
			t.Fatal(err)
		}
		off["gtid"] = g
	}
	b, _ := json.Marshal(body)
	return string(b)
}

// assertIDs checks the target table holds exactly the rows ids.
func assertIDs(t *testing.T, pg *sql.DB, name string, ids ...int) {
	t.Helper()
	rows, err := pg.Query(`SELECT id FROM "` + name + `".t ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Fatalf("target rows %v, want %v", got, ids)
	}
}
