package binlog

import (
	"context"
	"runtime"
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
