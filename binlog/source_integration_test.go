package binlog

import (
	"context"
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

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
)

type serverEnv struct {
	host             string
	port             int
	admin, adminPass string
	cdcUser, cdcPass string
	flavor           string
}

func needServer(t testing.TB) serverEnv {
	t.Helper()
	host := schematest.NeedServers(t, "SLUICE_MYSQL_HOST")[0]
	port, err := strconv.Atoi(os.Getenv("SLUICE_MYSQL_PORT"))
	if err != nil {
		t.Fatalf("SLUICE_MYSQL_PORT: %v", err)
	}
	e := serverEnv{host: host, port: port,
		admin: os.Getenv("SLUICE_MYSQL_USER"), adminPass: os.Getenv("SLUICE_MYSQL_PASSWORD"),
		cdcUser: os.Getenv("SLUICE_MYSQL_CDC_USER"), cdcPass: os.Getenv("SLUICE_MYSQL_CDC_PASSWORD"),
		flavor: os.Getenv("SLUICE_MYSQL_FLAVOR")}
	if e.cdcUser == "" {
		e.cdcUser, e.cdcPass = e.admin, e.adminPass
	}
	if e.flavor == "" {
		e.flavor = FlavorMariaDB
	}
	return e
}

// adminConn opens an admin connection and a fresh database dropped at the
// end of the test.
func adminConn(t testing.TB, env serverEnv) (*client.Conn, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.ConnectWithContext(ctx, fmt.Sprintf("%s:%d", env.host, env.port), env.admin, env.adminPass, "", 10*time.Second)
	if err != nil {
		t.Fatalf("connect as %s: %v", env.admin, err)
	}
	db := fmt.Sprintf("binlog_it_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1e6))
	exec(t, c, "CREATE DATABASE "+db+" CHARACTER SET utf8mb4")
	exec(t, c, "USE "+db)
	exec(t, c, "SET NAMES utf8mb4")
	exec(t, c, "SET time_zone = '+00:00'")
	t.Cleanup(func() {
		_, _ = c.Execute("DROP DATABASE IF EXISTS " + db)
		c.Close()
	})
	return c, db
}

func exec(t testing.TB, c *client.Conn, q string) {
	t.Helper()
	if _, err := c.Execute(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// testConfig streams only (Snapshot never) unless a test asks for a snapshot.
func testConfig(env serverEnv, db string) Config {
	return Config{Host: env.host, Port: env.port, User: env.cdcUser, Password: env.cdcPass,
		ServerID: 100000 + uint32(rand.IntN(1e6)), Flavor: env.flavor, ServerName: "it", Include: []string{db + ".*"},
		Snapshot: SnapshotNever}
}

func openSource(t *testing.T, cfg Config, pos []byte) *Source {
	t.Helper()
	s, err := NewSource(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Open(ctx, pos); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// readUntil reads records until ok says the collected records suffice.
func readUntil(t *testing.T, s *Source, ok func([]schema.Record) bool) []schema.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var all []schema.Record
	for !ok(all) {
		recs, err := s.Read(ctx)
		if err != nil {
			t.Fatalf("Read after %d records: %v", len(all), err)
		}
		all = append(all, recs...)
	}
	return all
}

// ownData keeps the data records of db and the commit markers of their
// transactions (snapshot records have none).
func ownData(recs []schema.Record, db string) []schema.Record {
	var out []schema.Record
	txs := map[string]bool{}
	for _, r := range recs {
		if r.Op.IsData() && r.Table.Database == db {
			out = append(out, r)
			if r.Transaction != nil {
				txs[r.Transaction.ID] = true
			}
		} else if r.Op == schema.OpCommit && r.Transaction != nil && txs[r.Transaction.ID] {
			out = append(out, r)
		}
	}
	return out
}

func countOps(recs []schema.Record, op schema.Op) int {
	n := 0
	for _, r := range recs {
		if r.Op == op {
			n++
		}
	}
	return n
}

// summary renders records as "op key before->after", one per line.
func summary(recs []schema.Record) string {
	var b strings.Builder
	for _, r := range recs {
		if r.Op == schema.OpCommit {
			b.WriteString("END\n")
			continue
		}
		fmt.Fprintf(&b, "%s %s %s %v -> %v\n", r.Op, r.Table.Table, r.KeyString(), r.Before, r.After)
	}
	return b.String()
}

func TestSourceStreamsAndResumes(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, qty INT)")
	cfg := testConfig(env, db)
	s := openSource(t, cfg, nil)

	exec(t, c, "INSERT INTO items VALUES (1, 'apple', 5)")
	exec(t, c, "UPDATE items SET qty = 6 WHERE id = 1")
	exec(t, c, "DELETE FROM items WHERE id = 1")
	exec(t, c, "BEGIN")
	exec(t, c, "INSERT INTO items VALUES (2, 'pear', 1), (3, 'plum', NULL)")
	exec(t, c, "UPDATE items SET name = 'PEAR' WHERE id = 2")
	exec(t, c, "DELETE FROM items WHERE id = 3")
	exec(t, c, "COMMIT")
	exec(t, c, "INSERT INTO items VALUES (4, '', 0)")

	all := readUntil(t, s, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCommit) >= 5 })
	got := ownData(all, db)
	want := `c items 1 [] -> [1 apple 5]
END
u items 1 [1 apple 5] -> [1 apple 6]
END
d items 1 [1 apple 6] -> []
END
c items 2 [] -> [2 pear 1]
c items 3 [] -> [3 plum <nil>]
u items 2 [2 pear 1] -> [2 PEAR 1]
d items 3 [3 plum <nil>] -> []
END
c items 4 [] -> [4  0]
END
`
	if g := summary(got); g != want {
		t.Fatalf("records:\n%s\nwant:\n%s", g, want)
	}
	// Positions only on commit markers; data records of one transaction
	// share its id and are numbered in order.
	var commits [][]byte
	for _, r := range all {
		switch {
		case r.Op == schema.OpCommit:
			if _, err := ParsePosition(r.Position); err != nil {
				t.Fatalf("commit position %q: %v", r.Position, err)
			}
			commits = append(commits, r.Position)
		case r.Op == schema.OpHeartbeat:
			// MySQL sends heartbeats while it skips the transactions of
			// the GTID set it resumes from; they carry the position
			if _, err := ParsePosition(r.Position); err != nil {
				t.Fatalf("heartbeat position %q: %v", r.Position, err)
			}
		case r.Position != nil:
			t.Fatalf("%s record carries a position %s", r.Op, r.Position)
		}
	}
	tx := got[6].Transaction
	if got[6].Transaction.ID != got[9].Transaction.ID || tx.TotalOrder != 1 || got[9].Transaction.TotalOrder != 4 || got[9].Transaction.DataCollectionOrder != 4 {
		t.Errorf("transaction of the 4-statement transaction: first %+v last %+v", *got[6].Transaction, *got[9].Transaction)
	}
	if r := got[0]; r.Source.Connector != env.flavor || r.Source.Name != "it" || r.Source.File == "" || r.Source.TsMs == 0 ||
		r.KeySchema == nil || r.KeySchema.Name != "it."+db+".items.Key" || r.ValueSchema.Name != "it."+db+".items.Value" {
		t.Errorf("record metadata: source %+v key schema %v value schema %s", r.Source, r.KeySchema, r.ValueSchema.Name)
	}
	if env.flavor == FlavorMariaDB && got[0].Source.GTID == "" {
		t.Errorf("MariaDB record without GTID: %+v", got[0].Source)
	}

	// Resume after the second transaction (the update): exactly the rest.
	resumeAt := got[3].Position
	if got[3].Op != schema.OpCommit || resumeAt == nil {
		t.Fatalf("record 3 is %s, want the commit of the update", got[3].Op)
	}
	s.Close()
	s2 := openSource(t, cfg, resumeAt)
	rest := readUntil(t, s2, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCommit) >= 3 })
	if g, w := summary(ownData(rest, db)), strings.SplitAfterN(want, "END\n", 3)[2]; g != w {
		t.Fatalf("after resuming at %s:\n%s\nwant:\n%s", resumeAt, g, w)
	}

	// Resuming by file and offset alone gives the same records.
	p, _ := ParsePosition(resumeAt)
	p.GTIDSet = ""
	s2.Close()
	s3 := openSource(t, cfg, EncodePosition(p))
	rest = readUntil(t, s3, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCommit) >= 3 })
	if g, w := summary(ownData(rest, db)), strings.SplitAfterN(want, "END\n", 3)[2]; g != w {
		t.Fatalf("after resuming at file/pos %s:\n%s\nwant:\n%s", p, g, w)
	}
}

func TestSourcePurgedPositionIsFatal(t *testing.T) {
	env := needServer(t)
	_, db := adminConn(t, env)
	cfg := testConfig(env, db)
	for _, p := range []Position{
		{Flavor: env.flavor, File: "mysql-bin.999999", Pos: 4},
		{Flavor: env.flavor, GTIDSet: "0-1-999999999", File: "x", Pos: 4},
	} {
		if env.flavor != FlavorMariaDB && p.GTIDSet != "" {
			continue
		}
		s, err := NewSource(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err = s.Open(ctx, EncodePosition(p))
		if err == nil {
			_, err = s.Read(ctx)
		}
		cancel()
		s.Close()
		if !errors.Is(err, ErrPositionPurged) || !strings.Contains(err.Error(), "snapshot") {
			t.Errorf("resume at %s: err %v, want ErrPositionPurged telling to snapshot again", p, err)
		}
	}
}

// TestSourceReconnects kills the replication connection between
// transactions: the source reconnects from the last commit and loses and
// repeats nothing.
func TestSourceReconnects(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE k (id INT PRIMARY KEY)")
	s := openSource(t, testConfig(env, db), nil)
	exec(t, c, "INSERT INTO k VALUES (1)")
	first := readUntil(t, s, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCommit) >= 1 })
	id := s.connID.Load()
	if id == 0 {
		t.Fatal("no replication connection id")
	}
	exec(t, c, fmt.Sprintf("KILL %d", id))
	exec(t, c, "INSERT INTO k VALUES (2)")
	exec(t, c, "INSERT INTO k VALUES (3)")
	rest := readUntil(t, s, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCommit) >= 2 })
	got := summary(ownData(append(first, rest...), db))
	want := "c k 1 [] -> [1]\nEND\nc k 2 [] -> [2]\nEND\nc k 3 [] -> [3]\nEND\n"
	if got != want {
		t.Fatalf("records across a reconnect:\n%s\nwant:\n%s", got, want)
	}
	if s.connID.Load() == id {
		t.Errorf("connection id still %d: the source did not reconnect", id)
	}
}

// TestSourceSameServerIDIsEvicted: a second reader with the same server_id
// makes the server drop the first one's stream. The first source must stop
// with an error that names the clash (fatal: retrying would evict the
// other reader in turn), not reconnect or claim a purged position.
func TestSourceSameServerIDIsEvicted(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE k (id INT PRIMARY KEY)")
	cfg := testConfig(env, db)
	first := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO k VALUES (1)")
	readUntil(t, first, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCommit) >= 1 })
	second := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO k VALUES (2)")
	readUntil(t, second, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCommit) >= 1 })
	if env.flavor == FlavorMySQL {
		// MySQL evicts a dump thread only for a replica of the same
		// replica UUID (or of the same server_id when no UUID is set), and
		// each connection sets its own @replica_uuid: both keep streaming,
		// no reconnect evicts the other, and check reports the clash
		// (TestCheckReportsProblems).
		next := func(s *Source) string {
			return summary(ownData(readUntil(t, s, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCommit) >= 1 }), db))
		}
		if got, want := next(first), "c k 2 [] -> [2]\nEND\n"; got != want {
			t.Fatalf("first source after the second connected:\n%s\nwant:\n%s", got, want)
		}
		exec(t, c, "INSERT INTO k VALUES (3)")
		for _, s := range []*Source{first, second} {
			if got, want := next(s), "c k 3 [] -> [3]\nEND\n"; got != want {
				t.Fatalf("a source with a shared server_id:\n%s\nwant:\n%s", got, want)
			}
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	for err == nil {
		_, err = first.Read(ctx)
	}
	if ctx.Err() != nil {
		t.Fatal("the evicted source kept reading for 60 s")
	}
	if errors.Is(err, ErrPositionPurged) || !strings.Contains(err.Error(), "its own server_id") || schema.ClassOf(err) != schema.ClassFatal {
		t.Fatalf("evicted source: %v (class %v), want a fatal error naming the server_id clash", err, schema.ClassOf(err))
	}
	t.Logf("evicted source stopped: %v", err)
}
