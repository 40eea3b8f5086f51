package binlog

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// TestBigTransactionBoundedMemory: one transaction of 1,000,000 rows
// streams with a bounded heap. The bound, 200 MiB, is several times what
// the pipeline holds by design (16 queued batches of ~512 records, go-mysql's
// 256 cached events of at most ~8 KiB of rows each, one Read batch) and far
// below the ~1 GiB that holding the transaction's records would take; the
// test keeps nothing it reads. On MySQL the transaction is also written
// compressed (binlog_transaction_compression, a session setting): one
// TRANSACTION_PAYLOAD event that holds all of its rows. On the scratch
// server: it writes a big binlog.
func TestBigTransactionBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 1,000,000-row transaction")
	}
	for _, compressed := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "compressed"}[compressed], func(t *testing.T) {
			env := needScratchServer(t, false)
			if compressed && env.flavor != FlavorMySQL {
				t.Skip("binlog_transaction_compression is MySQL's")
			}
			testBigTransaction(t, env, compressed)
		})
	}
}

func testBigTransaction(t *testing.T, env serverEnv, compressed bool) {
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(40), n BIGINT)")
	s := openSource(t, testConfig(env, db), nil)
	const rows = 1_000_000
	if env.flavor == FlavorMySQL {
		exec(t, c, "SET SESSION cte_max_recursion_depth = 2000000")
		if compressed {
			exec(t, c, "SET SESSION binlog_transaction_compression = ON")
		}
		exec(t, c, `INSERT INTO big WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < 1000000)
  SELECT i, CONCAT('value-', i, '-padding-padding'), i * 7 FROM seq`)
	} else {
		exec(t, c, "INSERT INTO big SELECT seq, CONCAT('value-', seq, '-padding-padding'), seq * 7 FROM seq_1_to_1000000")
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n, reads := 0, 0
	for n < rows {
		recs, err := s.Read(ctx)
		if err != nil {
			t.Fatalf("Read after %d rows: %v", n, err)
		}
		for _, r := range recs {
			if r.Op == schema.OpCreate && r.Table.Database == db {
				n++
			}
		}
		if reads++; reads%64 == 0 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	runtime.ReadMemStats(&ms)
	peak = max(peak, ms.HeapAlloc)
	t.Logf("1,000,000 rows in one transaction (compressed: %v): heap before %d MiB, high-water %d MiB", compressed, base>>20, peak>>20)
	if peak > 200<<20 {
		t.Fatalf("heap high-water %d MiB above the 200 MiB bound", peak>>20)
	}
}

// TestCompressedTransactionsStreamExactly: transactions MySQL writes
// compressed (one TRANSACTION_PAYLOAD event each, decoded by sluice as a
// stream) give the records the same statements give uncompressed, with a
// commit position to resume from after each: a source opened at the first
// one's commit reads the second only.
func TestCompressedTransactionsStreamExactly(t *testing.T) {
	env := needServer(t)
	if env.flavor != FlavorMySQL {
		t.Skip("binlog_transaction_compression is MySQL's")
	}
	c, db := adminConn(t, env)
	work := func(tbl string) []string {
		return []string{
			"BEGIN",
			"INSERT INTO " + tbl + " VALUES (1, 'a', '{\"k\": [1, 2]}', 1.5), (2, REPEAT('é', 300), NULL, -2), (3, 'c', '[]', 0)",
			"UPDATE " + tbl + " SET v = 'b', j = JSON_SET(j, '$.k[0]', 'x') WHERE id = 1",
			"DELETE FROM " + tbl + " WHERE id = 3",
			"COMMIT",
			"INSERT INTO " + tbl + " VALUES (4, 'd', '{}', 4)",
		}
	}
	s := openSource(t, testConfig(env, db), nil)
	for _, tbl := range []string{"plain", "packed"} {
		exec(t, c, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, v VARCHAR(400), j JSON, d DECIMAL(10,2))")
	}
	for _, q := range work("plain") {
		exec(t, c, q)
	}
	exec(t, c, "SET SESSION binlog_transaction_compression = ON")
	for _, q := range work("packed") {
		exec(t, c, q)
	}
	exec(t, c, "SET SESSION binlog_transaction_compression = OFF")
	payloads := countBinlogEvents(t, c, "Transaction_payload")
	if payloads < 2 {
		t.Fatalf("the server wrote %d transaction payload events, want 2", payloads)
	}
	recs := readUntil(t, s, func(rs []schema.Record) bool {
		n := 0
		for _, r := range ownData(rs, db) {
			if r.Op.IsData() && r.Table.Table == "packed" {
				n++
			}
		}
		return n == 6
	})
	render := func(tbl string) (rows []string, commits [][]byte) {
		for _, r := range ownData(recs, db) {
			switch {
			case r.Op == schema.OpCommit && r.Table.Table == "" && len(rows) > 0 && strings.HasPrefix(rows[len(rows)-1], tbl):
				commits = append(commits, r.Position)
			case r.Op.IsData() && r.Table.Table == tbl:
				rows = append(rows, fmt.Sprintf("%s %v %v %v", tbl, r.Op, r.Before, r.After))
			}
		}
		return rows, commits
	}
	plain, _ := render("plain")
	packed, commits := render("packed")
	if len(plain) != 6 || len(packed) != 6 {
		t.Fatalf("%d plain and %d compressed records, want 6 each", len(plain), len(packed))
	}
	for i := range plain {
		if strings.TrimPrefix(plain[i], "plain") != strings.TrimPrefix(packed[i], "packed") {
			t.Errorf("record %d:\n plain      %s\n compressed %s", i, plain[i], packed[i])
		}
	}
	if len(commits) != 2 {
		t.Fatalf("%d commits after compressed transactions, want 2", len(commits))
	}
	s2 := openSource(t, testConfig(env, db), commits[0])
	again := readUntil(t, s2, func(rs []schema.Record) bool { return countOps(ownData(rs, db), schema.OpCreate) >= 1 })
	for _, r := range ownData(again, db) {
		if r.Op.IsData() && (r.Table.Table != "packed" || r.After[0] != int64(4)) {
			t.Errorf("resumed after the first compressed transaction, got %v %s %v", r.Op, r.Table, r.After)
		}
	}
}

// TestRestartGivesTheSameIDs (issue 26, the kill_source_and_sink
// investigation): a source restarted from any commit position it handed on
// makes every record after it again with the ID it had, on MySQL's raw-mode
// stream resumed by GTID too: plain transactions, compressed ones (one
// payload event) and one transaction of many rows events, so a sink's
// per-queue progress skips exactly what it applied.
func TestRestartGivesTheSameIDs(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	cfg := testConfig(env, db)
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO t VALUES (1,1),(2,2),(3,3)")
	for i := 0; i < 5; i++ {
		exec(t, c, fmt.Sprintf("UPDATE t SET v = v + 1 WHERE id = %d", 1+i%3))
	}
	if env.flavor == FlavorMySQL {
		exec(t, c, "SET SESSION binlog_transaction_compression = ON")
		exec(t, c, "UPDATE t SET v = v + 10")
		exec(t, c, "UPDATE t SET v = v + 10 WHERE id = 2")
		exec(t, c, "SET SESSION binlog_transaction_compression = OFF")
	}
	exec(t, c, "BEGIN")
	for i := 0; i < 40; i++ { // a rows event each
		exec(t, c, fmt.Sprintf("UPDATE t SET v = v + 1 WHERE id = %d", 1+i%3))
	}
	exec(t, c, "COMMIT")
	exec(t, c, "INSERT INTO t VALUES (4,4)")
	own := func(recs []schema.Record) []schema.Record {
		var out []schema.Record
		for _, r := range recs {
			if r.Op.IsData() && r.Table.Database == db || r.Op == schema.OpCommit {
				out = append(out, r)
			}
		}
		return out
	}
	last := func(recs []schema.Record) bool {
		for _, r := range recs {
			if r.Op == schema.OpCreate && r.Table.Database == db && r.KeyString() == "4" {
				return true
			}
		}
		return false
	}
	all := own(readUntil(t, s, last))
	s.Close()
	var data []schema.Record
	for _, r := range all {
		if r.Op.IsData() {
			data = append(data, r)
		}
	}
	restarts := 0
	for i, r := range all {
		if r.Op != schema.OpCommit || r.Position == nil || i%3 != 0 {
			continue
		}
		s2 := openSource(t, cfg, r.Position)
		again := readUntil(t, s2, last)
		s2.Close()
		var got []schema.Record
		for _, x := range again {
			if x.Op.IsData() && x.Table.Database == db {
				got = append(got, x)
			}
		}
		var want []schema.Record
		for _, x := range data {
			if x.ID.Compare(r.ID) > 0 {
				want = append(want, x)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("restart at commit %v: %d records, want %d", r.ID, len(got), len(want))
		}
		for j := range got {
			if got[j].ID != want[j].ID || fmt.Sprint(got[j].After) != fmt.Sprint(want[j].After) {
				t.Fatalf("restart at commit %v: record %d is %v %v, was %v %v", r.ID, j, got[j].ID, got[j].After, want[j].ID, want[j].After)
			}
		}
		restarts++
	}
	if restarts < 3 {
		t.Fatalf("only %d restarts", restarts)
	}
}
