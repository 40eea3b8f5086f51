package sink

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/sluicecdc/sluice/schema"
)

// benchRows builds n upserts of a 6-column table (id, name, amount,
// created, flag, payload) whose values depend on round, so every round
// really updates.
func benchRows(table string, n, round int) []schema.Record {
	val := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "name", Schema: schema.Primitive(schema.String, true)},
		{Name: "amount", Schema: schema.DecimalSchema(12, 2, true)},
		{Name: "created", Schema: lg(schema.Int64, schema.Timestamp)},
		{Name: "flag", Schema: schema.Primitive(schema.Bool, true)},
		{Name: "payload", Schema: schema.Primitive(schema.Bytes, true)},
	}}
	recs := make([]schema.Record, n)
	for i := range recs {
		id := int64(i)
		recs[i] = schema.Record{Op: schema.OpUpdate, Table: schema.TableID{Database: "src", Table: table}, KeySchema: tKey, Key: schema.Row{id},
			ValueSchema: val, After: schema.Row{id, fmt.Sprintf("name %d/%d", i, round), schema.MustDec(fmt.Sprintf("%d.%02d", i, round%100)),
				int64(1_700_000_000_000_000 + i*1000 + round), (i+round)%2 == 0, []byte(fmt.Sprintf("payload-%d-%d", i, round))}}
	}
	return recs
}

// driverRows gives benchRows' after images in driver form, for the raw
// baselines (values pre-converted outside their timing).
func driverRows(recs []schema.Record) [][]any {
	rows := make([][]any, len(recs))
	for j, r := range recs {
		rows[j] = []any{r.After[0], r.After[1], r.After[2].(schema.Dec).String(),
			time.UnixMicro(r.After[3].(int64)).UTC().Format("2006-01-02 15:04:05.999999"), r.After[4], r.After[5]}
	}
	return rows
}

// rawUpsert is the baseline: the same rows written with hand-written
// multi-row INSERT … ON CONFLICT statements of 500 rows through lib/pq in one
// transaction, values pre-converted outside the timed region's sink logic.
func rawUpsert(ctx context.Context, db *sql.DB, qualified string, rows [][]any) error {
	const per = 500
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for start := 0; start < len(rows); start += per {
		end := min(start+per, len(rows))
		var b strings.Builder
		b.WriteString("INSERT INTO " + qualified + " (id, name, amount, created, flag, payload) VALUES ")
		args := make([]any, 0, (end-start)*6)
		for i, r := range rows[start:end] {
			if i > 0 {
				b.WriteByte(',')
			}
			n := len(args)
			fmt.Fprintf(&b, "($%d,$%d,$%d,$%d,$%d,$%d)", n+1, n+2, n+3, n+4, n+5, n+6)
			args = append(args, r...)
		}
		b.WriteString(" ON CONFLICT (id) DO UPDATE SET name=EXCLUDED.name, amount=EXCLUDED.amount, created=EXCLUDED.created, flag=EXCLUDED.flag, payload=EXCLUDED.payload")
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// rawCopy writes rows with COPY: into the table itself when merge is false
// (the caller empties it first: PostgreSQL's plain ingest ceiling, not an
// upsert), or into a temporary table merged with one INSERT … SELECT … ON
// CONFLICT (the fastest hand-written upsert).
func rawCopy(ctx context.Context, db *sql.DB, qualified string, rows [][]any, merge bool) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	cols := []string{"id", "name", "amount", "created", "flag", "payload"}
	target := qualified
	if merge {
		target = "raw_stage"
		if _, err := tx.ExecContext(ctx, "CREATE TEMP TABLE raw_stage (LIKE "+qualified+") ON COMMIT DROP"); err != nil {
			return err
		}
	}
	schemaName, table := "", target
	if !merge {
		parts := strings.SplitN(qualified, ".", 2)
		schemaName, table = strings.Trim(parts[0], `"`), strings.Trim(parts[1], `"`)
	}
	copyStmt := pq.CopyIn(table, cols...)
	if schemaName != "" {
		copyStmt = pq.CopyInSchema(schemaName, table, cols...)
	}
	stmt, err := tx.PrepareContext(ctx, copyStmt)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, r...); err != nil {
			return err
		}
	}
	if _, err := stmt.ExecContext(ctx); err != nil {
		return err
	}
	if err := stmt.Close(); err != nil {
		return err
	}
	if merge {
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+qualified+" SELECT * FROM raw_stage ON CONFLICT (id) DO UPDATE SET name=EXCLUDED.name, amount=EXCLUDED.amount, created=EXCLUDED.created, flag=EXCLUDED.flag, payload=EXCLUDED.payload"); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// BenchmarkApplyPostgres measures rows/s of Sink.Write (multi-row VALUES
// upserts, and the COPY fast path) against the raw lib/pq baseline on the
// same rows in the same run; the ratio metrics are sink/raw.
func BenchmarkApplyPostgres(b *testing.B) {
	e := pgEnv(b)
	ctx := context.Background()
	const n = 10000
	sinkV := e.open(b, func(c *Config) { c.CopyThreshold = -1 })
	sinkC := e.open(b, func(c *Config) { c.CopyThreshold = 1000 })
	// Create the tables once (outside the timing) and fill them.
	for _, tb := range []string{"bench_sink", "bench_copy", "bench_raw", "bench_rawmerge", "bench_rawcopy"} {
		if err := sinkV.Write(ctx, benchRows(tb, n, 0)); err != nil {
			b.Fatal(err)
		}
	}
	var tSink, tCopy, tRaw, tMerge, tPlain time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		round := i + 1
		recs := benchRows("bench_sink", n, round)
		runtime.GC() // building the rows made garbage: charge it to no side
		start := time.Now()
		if err := sinkV.Write(ctx, recs); err != nil {
			b.Fatal(err)
		}
		tSink += time.Since(start)

		recs = benchRows("bench_copy", n, round)
		runtime.GC()
		start = time.Now()
		if err := sinkC.Write(ctx, recs); err != nil {
			b.Fatal(err)
		}
		tCopy += time.Since(start)

		// The baseline gets values already in driver form: it measures the
		// database round trips only.
		recs = benchRows("bench_raw", n, round)
		rows := driverRows(recs)
		runtime.GC()
		start = time.Now()
		if err := rawUpsert(ctx, e.db, e.table("bench_raw"), rows); err != nil {
			b.Fatal(err)
		}
		tRaw += time.Since(start)

		for _, merge := range []bool{true, false} {
			tb, acc := "bench_rawmerge", &tMerge
			if !merge {
				tb, acc = "bench_rawcopy", &tPlain
				if _, err := e.db.Exec("TRUNCATE " + e.table(tb)); err != nil { // not timed
					b.Fatal(err)
				}
			}
			runtime.GC()
			start = time.Now()
			if err := rawCopy(ctx, e.db, e.table(tb), rows, merge); err != nil {
				b.Fatal(err)
			}
			*acc += time.Since(start)
		}
	}
	b.StopTimer()
	rows := float64(n * b.N)
	b.ReportMetric(rows/tMerge.Seconds(), "rawcopymerge-rows/s")
	b.ReportMetric(rows/tPlain.Seconds(), "rawcopy-rows/s")
	b.ReportMetric(tMerge.Seconds()/tCopy.Seconds(), "copy/rawcopymerge")
	b.ReportMetric(tPlain.Seconds()/tCopy.Seconds(), "copy/rawcopy")
	b.ReportMetric(rows/tSink.Seconds(), "values-rows/s")
	b.ReportMetric(rows/tCopy.Seconds(), "copy-rows/s")
	b.ReportMetric(rows/tRaw.Seconds(), "raw-rows/s")
	b.ReportMetric(tRaw.Seconds()/tSink.Seconds(), "values/raw")
	b.ReportMetric(tRaw.Seconds()/tCopy.Seconds(), "copy/raw")
	// Check the three tables agree, so the benchmark measures equal work.
	var diff int
	q := "SELECT count(*) FROM " + e.table("bench_sink") + " s JOIN " + e.table("bench_raw") + " r USING (id) JOIN " + e.table("bench_copy") +
		" c USING (id) WHERE (s.name, s.amount, s.created, s.flag, s.payload) IS DISTINCT FROM (r.name, r.amount, r.created, r.flag, r.payload) OR (c.name, c.amount, c.created, c.flag, c.payload) IS DISTINCT FROM (r.name, r.amount, r.created, r.flag, r.payload)"
	if err := e.db.QueryRow(q).Scan(&diff); err != nil || diff != 0 {
		b.Fatalf("tables differ in %d rows (%v)", diff, err)
	}
}

// BenchmarkApplyMySQL measures rows/s of Sink.Write on MySQL/MariaDB against
// hand-written multi-row INSERT … ON DUPLICATE KEY UPDATE statements of 500
// rows through go-sql-driver in one transaction, same rows, same run.
func BenchmarkApplyMySQL(b *testing.B) {
	e := mysqlEnv(b)
	ctx := context.Background()
	const n = 10000
	s := e.open(b, nil)
	for _, tb := range []string{"bench_sink", "bench_raw"} {
		if err := s.Write(ctx, benchRows(tb, n, 0)); err != nil {
			b.Fatal(err)
		}
	}
	raw, err := sql.Open("mysql", e.cfg.DSN)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	var tSink, tRaw time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		round := i + 1
		recs := benchRows("bench_sink", n, round)
		runtime.GC() // building the rows made garbage: charge it to no side
		start := time.Now()
		if err := s.Write(ctx, recs); err != nil {
			b.Fatal(err)
		}
		tSink += time.Since(start)

		recs = benchRows("bench_raw", n, round)
		rows := driverRows(recs)
		start = time.Now()
		if err := rawMySQLUpsert(ctx, raw, e.table("bench_raw"), rows); err != nil {
			b.Fatal(err)
		}
		tRaw += time.Since(start)
	}
	b.StopTimer()
	rows := float64(n * b.N)
	b.ReportMetric(rows/tSink.Seconds(), "sink-rows/s")
	b.ReportMetric(rows/tRaw.Seconds(), "raw-rows/s")
	b.ReportMetric(tRaw.Seconds()/tSink.Seconds(), "sink/raw")
	var diff int
	q := "SELECT count(*) FROM " + e.table("bench_sink") + " s JOIN " + e.table("bench_raw") + " r USING (id) WHERE NOT (s.name <=> r.name AND s.amount <=> r.amount AND s.created <=> r.created AND s.flag <=> r.flag AND s.payload <=> r.payload)"
	if err := e.db.QueryRow(q).Scan(&diff); err != nil || diff != 0 {
		b.Fatalf("tables differ in %d rows (%v)", diff, err)
	}
}

func rawMySQLUpsert(ctx context.Context, db *sql.DB, qualified string, rows [][]any) error {
	const per = 500
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for start := 0; start < len(rows); start += per {
		end := min(start+per, len(rows))
		var b strings.Builder
		b.WriteString("INSERT INTO " + qualified + " (id, name, amount, created, flag, payload) VALUES ")
		args := make([]any, 0, (end-start)*6)
		for i, r := range rows[start:end] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?,?,?,?)")
			args = append(args, r...)
		}
		b.WriteString(" ON DUPLICATE KEY UPDATE name=VALUES(name), amount=VALUES(amount), created=VALUES(created), flag=VALUES(flag), payload=VALUES(payload)")
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// BenchmarkDeletePostgres measures rows/s of deletes by a single-column key
// through Sink.Write against a raw DELETE … WHERE id = ANY($1) of 1,000 ids
// per statement, same rows, same run. Refilling the tables is not timed.
func BenchmarkDeletePostgres(b *testing.B) {
	e := pgEnv(b)
	ctx := context.Background()
	const n = 10000
	s := e.open(b, nil)
	dels := make([]schema.Record, n)
	ids := make([]int64, n)
	for i := range dels {
		ids[i] = int64(i)
		dels[i] = schema.Record{Op: schema.OpDelete, Table: schema.TableID{Database: "src", Table: "del_sink"}, KeySchema: tKey, Key: schema.Row{int64(i)}}
	}
	var tSink, tRaw time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, tb := range []string{"del_sink", "del_raw"} {
			if err := s.Write(ctx, benchRows(tb, n, i)); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		if err := s.Write(ctx, dels); err != nil {
			b.Fatal(err)
		}
		tSink += time.Since(start)
		start = time.Now()
		tx, err := e.db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < n; j += 1000 {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+e.table("del_raw")+" WHERE id = ANY($1)", pq.Array(ids[j:j+1000])); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		tRaw += time.Since(start)
	}
	b.StopTimer()
	rows := float64(n * b.N)
	b.ReportMetric(rows/tSink.Seconds(), "sink-rows/s")
	b.ReportMetric(rows/tRaw.Seconds(), "raw-rows/s")
	b.ReportMetric(tRaw.Seconds()/tSink.Seconds(), "sink/raw")
	var left int
	if err := e.db.QueryRow("SELECT (SELECT count(*) FROM " + e.table("del_sink") + ") + (SELECT count(*) FROM " + e.table("del_raw") + ")").Scan(&left); err != nil || left != 0 {
		b.Fatalf("%d rows left (%v)", left, err)
	}
}

// BenchmarkTransactionalPostgres measures the cost of transactional mode:
// the same 10,000 updates a round, in source transactions of 7 records so
// every batch ends inside one (its tail goes to the pending table and comes
// back with the next batch), written by a normal Sink and by a
// Transactional one in the same run. tx/normal is the throughput ratio.
func BenchmarkTransactionalPostgres(b *testing.B) {
	e := pgEnv(b)
	b.Cleanup(func() { e.db.Exec("DELETE FROM sluice_pending WHERE pipeline = $1", e.cfg.Pipeline) })
	ctx := context.Background()
	const n = 10000
	norm := e.open(b, func(c *Config) { c.CopyThreshold = -1 })
	txs := e.open(b, func(c *Config) { c.CopyThreshold = -1; c.Transactional = true })
	mk := func(table, topic string, round int) []schema.Record {
		recs := benchRows(table, n, round)
		for i := range recs {
			seq := int64(round)*n + int64(i)
			recs[i].Transaction = &schema.Transaction{ID: fmt.Sprintf("tx-%d", seq/7), TotalOrder: seq%7 + 1}
			recs[i].Delivery, recs[i].ID = deliveredAt(topic, 0, int64(seq))
		}
		return recs
	}
	for _, tb := range []string{"bench_norm", "bench_tx"} {
		if err := norm.Write(ctx, benchRows(tb, n, 0)); err != nil {
			b.Fatal(err)
		}
	}
	var tNorm, tTx time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		round := i + 1
		recs := mk("bench_norm", "norm", round)
		start := time.Now()
		if err := norm.Write(ctx, recs); err != nil {
			b.Fatal(err)
		}
		tNorm += time.Since(start)
		recs = mk("bench_tx", "tx", round)
		start = time.Now()
		if err := txs.Write(ctx, recs); err != nil {
			b.Fatal(err)
		}
		tTx += time.Since(start)
	}
	b.StopTimer()
	rows := float64(n * b.N)
	b.ReportMetric(rows/tNorm.Seconds(), "normal-rows/s")
	b.ReportMetric(rows/tTx.Seconds(), "tx-rows/s")
	b.ReportMetric(tNorm.Seconds()/tTx.Seconds(), "tx/normal")
	// The transactional table lags by the held tail only: every row it has
	// applied equals the normal table's row as of the same round or the
	// round before.
	var behind, differ int
	q := "SELECT count(*) FILTER (WHERE t.name <> n.name), count(*) FILTER (WHERE t.name <> n.name AND t.name NOT LIKE '%/' || " + fmt.Sprint(b.N-1) + ") FROM " + e.table("bench_norm") + " n JOIN " + e.table("bench_tx") + " t USING (id)"
	if err := e.db.QueryRow(q).Scan(&behind, &differ); err != nil || differ != 0 || behind > 7 {
		b.Fatalf("transactional table: %d rows behind, %d differ otherwise (%v)", behind, differ, err)
	}
}

// BenchmarkMergePostgres measures rows/s of updates merged by Sink.Write
// per batch size, in the same run: multi-row VALUES upserts (CopyThreshold
// -1), the COPY path merging through a staging table per merge (as before
// the rowset merge), and the rowset merge (json_populate_recordset, one
// statement, no staging table; up to rowsetMaxRows, COPY above). Each
// Write is one transaction of n updates of existing rows, as the runtime's
// batches are. On a busy machine wall time is noisy, so when the server's
// processes are readable (a local server of the same user) it also reports
// the PostgreSQL backend's CPU per row of each side.
func BenchmarkMergePostgres(b *testing.B) {
	for _, n := range benchMergeSizes {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			e := pgEnv(b)
			ctx := context.Background()
			app := func(side string) func(c *Config) {
				return func(c *Config) {
					sep := "?"
					if strings.Contains(c.DSN, "?") {
						sep = "&"
					}
					c.DSN += sep + "application_name=" + e.schema + "_" + side
					c.CopyThreshold = 1
					if side == "values" {
						c.CopyThreshold = -1
					}
				}
			}
			sides := []struct {
				name     string
				s        *Sink
				t        time.Duration
				cpu0     float64
				cpuKnown bool
			}{{name: "values"}, {name: "staging"}, {name: "rowset"}}
			for k := range sides {
				sd := &sides[k]
				sd.s = e.open(b, app(sd.name))
				sd.s.applier.stagingMerge = sd.name == "staging"
				if err := sd.s.Write(ctx, benchRows("m_"+sd.name, n, 0)); err != nil {
					b.Fatal(err)
				}
				sd.cpu0, sd.cpuKnown = backendCPU(b, e, e.schema+"_"+sd.name)
			}
			writes := max(10, 20000/n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// At least ten Writes and 20,000 rows a round per side
				// (CPU is read in 10 ms ticks), sides interleaved, so load
				// on the machine falls on all alike.
				for w := 0; w < writes; w++ {
					for k := range sides {
						sd := &sides[k]
						recs := benchRows("m_"+sd.name, n, i*writes+w+1)
						start := time.Now()
						if err := sd.s.Write(ctx, recs); err != nil {
							b.Fatal(err)
						}
						sd.t += time.Since(start)
					}
				}
			}
			b.StopTimer()
			rows := float64(writes * n * b.N)
			cpu := map[string]float64{}
			for _, sd := range sides {
				b.ReportMetric(rows/sd.t.Seconds(), sd.name+"-rows/s")
				if c, ok := backendCPU(b, e, e.schema+"_"+sd.name); ok && sd.cpuKnown {
					cpu[sd.name] = c - sd.cpu0
					b.ReportMetric(cpu[sd.name]/rows*1e6, sd.name+"-pg-cpu-µs/row")
				}
			}
			b.ReportMetric(sides[1].t.Seconds()/sides[2].t.Seconds(), "rowset/staging")
			b.ReportMetric(sides[0].t.Seconds()/sides[2].t.Seconds(), "rowset/values")
			if cpu["rowset"] > 0 {
				b.ReportMetric(cpu["staging"]/cpu["rowset"], "pg-cpu-staging/rowset")
			}
			var diff int
			q := "SELECT count(*) FROM " + e.table("m_values") + " v JOIN " + e.table("m_staging") + " s USING (id) JOIN " + e.table("m_rowset") +
				" r USING (id) WHERE (s.name, s.amount, s.created, s.flag, s.payload) IS DISTINCT FROM (v.name, v.amount, v.created, v.flag, v.payload) OR (r.name, r.amount, r.created, r.flag, r.payload) IS DISTINCT FROM (v.name, v.amount, v.created, v.flag, v.payload)"
			if err := e.db.QueryRow(q).Scan(&diff); err != nil || diff != 0 {
				b.Fatalf("tables differ in %d rows (%v)", diff, err)
			}
		})
	}
}

// backendCPU sums the CPU seconds of the PostgreSQL backends whose
// application_name is app, from /proc (ok false when the server is not a
// local process of this user).
func backendCPU(b *testing.B, e *tenv, app string) (float64, bool) {
	rows, err := e.db.Query("SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var total float64
	found := false
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, false
		}
		// Fields after the command name (in parentheses): utime is the
		// 12th, stime the 13th, in clock ticks (100 a second on Linux).
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 {
			return 0, false
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		total += (ut + st) / 100
		found = true
	}
	return total, found && rows.Err() == nil
}

var benchMergeSizes = []int{100, 300, 1000, 3000, 10000}
