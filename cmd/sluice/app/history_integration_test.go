package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// A source whose schema history is in the database (history_store:
// database), on a server whose table maps lack column names
// (binlog_row_metadata=MINIMAL, so only the history can name them): events
// before and after an ALTER decode with their own columns, also after a
// restart from before the ALTER that reads the history back from the
// database and appends nothing twice; once the task's lease moved to
// another worker, the next DDL's append is refused and the source stops
// with a fatal ErrFenced before handing on anything after it.
func TestSchemaHistoryInDatabase(t *testing.T) {
	env := serverEnv(t, "start the servers (scripts/test.sh starts the scratch MariaDB)", "SLUICE_PG_DSN", "SLUICE_MYSQL_SCRATCH_PORT")
	pg, port := env[0], env[1]
	schematest.LockScratch(t, port, true) // it sets binlog_row_metadata=MINIMAL
	ctx := context.Background()
	c, err := client.Connect("127.0.0.1:"+port, os.Getenv("SLUICE_MYSQL_USER"), os.Getenv("SLUICE_MYSQL_PASSWORD"), "")
	if err != nil {
		t.Fatal(err)
	}
	// Closed by a cleanup registered before the one that puts
	// binlog_row_metadata back (cleanups run last first): a deferred Close
	// ran before that cleanup, whose SET GLOBAL then failed unseen on the
	// closed connection, and the scratch server stayed MINIMAL for the next
	// holder of its lock (binlog's TestCheckMinimalMetadataWithHistory and
	// TestRowImagesRefused failed in CI on December 7).
	t.Cleanup(func() { c.Close() })
	exec := func(q string) {
		t.Helper()
		if _, err := c.Execute(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	n := rand.Uint32()
	db := fmt.Sprintf("hist_db_it_%d", n)
	exec("SET GLOBAL binlog_row_metadata = MINIMAL")
	t.Cleanup(func() {
		if _, err := c.Execute("SET GLOBAL binlog_row_metadata = FULL"); err != nil {
			t.Errorf("put binlog_row_metadata back to FULL on the scratch server: %v", err)
		}
	})
	exec("CREATE DATABASE " + db)
	t.Cleanup(func() { _, _ = c.Execute("DROP DATABASE IF EXISTS " + db) })
	exec("USE " + db)
	exec("CREATE TABLE t (id INT UNSIGNED PRIMARY KEY, a VARCHAR(10), k ENUM('x','y'))")
	r, err := c.Execute("SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	file, _ := r.GetString(0, 0)
	off, _ := r.GetUint(0, 1)
	g, err := c.Execute("SELECT @@gtid_binlog_pos")
	if err != nil {
		t.Fatal(err)
	}
	gtid, _ := g.GetString(0, 0)
	p0 := binlog.EncodePosition(binlog.Position{Flavor: binlog.FlavorMariaDB, File: file, Pos: uint32(off), GTIDSet: gtid})

	pdb, err := sql.Open("postgres", pg)
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	table, leases := fmt.Sprintf("sluice_schema_history_it_%d", n), fmt.Sprintf("sluice_leases_hist_it_%d", n)
	t.Cleanup(func() { pdb.Exec("DROP TABLE " + table); pdb.Exec("DROP TABLE " + leases) })
	for _, q := range []string{
		"CREATE TABLE " + leases + " (task TEXT PRIMARY KEY, holder TEXT NOT NULL, epoch BIGINT NOT NULL, expires_at TIMESTAMP(6) NOT NULL)",
		"INSERT INTO " + leases + " VALUES ('p/source', 'w1', 1, CURRENT_TIMESTAMP(6) + INTERVAL '1' HOUR)",
	} {
		if _, err := pdb.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	lease := storage.Lease{Table: leases, Task: "p/source", Holder: "w1", Epoch: 1}
	scratch, _ := strconv.Atoi(port)
	cfg := binlog.Config{Host: "127.0.0.1", Port: scratch, User: os.Getenv("SLUICE_MYSQL_CDC_USER"), Password: os.Getenv("SLUICE_MYSQL_CDC_PASSWORD"),
		ServerID: 300000 + uint32(rand.IntN(1e6)), Flavor: binlog.FlavorMariaDB, ServerName: "it", Include: []string{db + ".*"},
		HistoryStore: binlog.HistoryInDatabase}
	open := func() *binlog.Source {
		t.Helper()
		h, err := openDBHistory(ctx, positionsConfig{typ: "postgres", DSN: pg}, table, "p", lease)
		if err != nil {
			t.Fatal(err)
		}
		sc := cfg
		sc.History = h
		s, err := binlog.NewSource(sc, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			t.Fatal(err)
		}
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := s.Open(octx, p0); err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	rows := func(recs []schema.Record) []string {
		var out []string
		for _, r := range recs {
			if r.Op != schema.OpCreate || r.Table.Database != db {
				continue
			}
			line := ""
			for i, f := range r.ValueSchema.Fields {
				line += fmt.Sprintf(" %s=%v", f.Name, r.After[i])
			}
			out = append(out, strings.TrimSpace(line))
		}
		return out
	}
	want := "id=1 a=one k=x\nid=2 b=20 k=y"
	check := func(s *binlog.Source) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		var all []schema.Record
		for len(rows(all)) < 2 {
			recs, err := s.Read(rctx)
			if err != nil {
				t.Fatalf("Read after %d records: %v", len(all), err)
			}
			all = append(all, recs...)
		}
		if got := strings.Join(rows(all), "\n"); got != want {
			t.Fatalf("records:\n%s\nwant:\n%s", got, want)
		}
	}
	stored := func() string {
		t.Helper()
		var n int
		var ddl string
		if err := pdb.QueryRow("SELECT COUNT(*), STRING_AGG(entry, ' ' ORDER BY seq) FROM "+table+" WHERE pipeline = 'p'").Scan(&n, &ddl); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d %s", n, ddl)
	}

	s := open()
	exec("INSERT INTO t VALUES (1, 'one', 'x')")
	exec("ALTER TABLE t ADD COLUMN b INT AFTER id, DROP COLUMN a")
	exec("INSERT INTO t VALUES (2, 20, 'y')")
	check(s)
	s.Close()
	hist := stored()
	if !strings.HasPrefix(hist, "2 ") || !strings.Contains(hist, "CREATE TABLE") || !strings.Contains(hist, "ADD COLUMN b INT") {
		t.Fatalf("history rows after one ALTER: %s", hist)
	}

	// restart from before the ALTER: the history is read back from the
	// database and replayed up to there
	s2 := open()
	check(s2)
	if again := stored(); again != hist {
		t.Fatalf("the restart appended to the history:\n%s\nwas:\n%s", again, hist)
	}

	// another worker took the task: the next DDL's append is refused
	if _, err := pdb.Exec("UPDATE " + leases + " SET holder = 'w2', epoch = 2"); err != nil {
		t.Fatal(err)
	}
	exec("ALTER TABLE t ADD COLUMN c INT")
	exec("INSERT INTO t VALUES (3, 30, 'x', 3)")
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		recs, err := s2.Read(rctx)
		for _, r := range recs {
			if r.Table.Database == db && r.Op == schema.OpCreate && fmt.Sprint(r.After[0]) == "3" {
				t.Fatalf("a record after the refused DDL was handed on: %+v", r)
			}
		}
		if err != nil {
			if !errors.Is(err, storage.ErrFenced) || schema.ClassOf(err) != schema.ClassFatal || !strings.Contains(err.Error(), "task p/source") {
				t.Fatalf("Read: %v, want a fatal ErrFenced naming the task", err)
			}
			break
		}
	}
	if again := stored(); again != hist {
		t.Fatalf("the fenced source appended:\n%s", again)
	}
}
