package binlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// needScratchServer returns a server whose global settings a test may
// change (SLUICE_MYSQL_SCRATCH_PORT on 127.0.0.1, same accounts as the
// shared one): a throwaway MariaDB, e.g.
// SLUICE_SERVERS_ROOT=/tmp/sluice-hist SLUICE_MARIADB_PORT=23307 scripts/servers.sh start mariadb.
// changesGlobals: the test changes global settings (it then has the
// server to itself, schematest.LockScratch).
func needScratchServer(t *testing.T, changesGlobals bool) serverEnv {
	t.Helper()
	env := needServer(t)
	port := os.Getenv("SLUICE_MYSQL_SCRATCH_PORT")
	if port == "" {
		schematest.NoServer(t, "SLUICE_MYSQL_SCRATCH_PORT is not set: start a throwaway MariaDB whose globals tests may change (SLUICE_SERVERS_ROOT=/tmp/sluice-hist SLUICE_MARIADB_PORT=23307 scripts/servers.sh start mariadb) and set it")
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("SLUICE_MYSQL_SCRATCH_PORT: %v", err)
	}
	schematest.LockScratch(t, port, changesGlobals)
	env.host, env.port = "127.0.0.1", n
	return env
}

// rowsByName renders the data records of db as "op col=value ..." lines.
func rowsByName(recs []schema.Record, db string) []string {
	var out []string
	for _, r := range recs {
		if r.Op != schema.OpCreate || r.Table.Database != db {
			continue
		}
		line := r.Op.String()
		for i, f := range r.ValueSchema.Fields {
			line += " " + f.Name + "=" + renderValue(r.After[i])
		}
		if len(r.KeySchema.Fields) == 1 {
			line += " key=" + r.KeySchema.Fields[0].Name
		}
		out = append(out, line)
	}
	return out
}

// TestHistoryMinimalMetadataAcrossAlter: with binlog_row_metadata=MINIMAL
// (table maps without column names, key or ENUM labels; a global variable
// on MariaDB 10.11, so a scratch server), events before and after an ALTER
// decode with their own column lists, also after a restart from a position
// before the ALTER.
func TestHistoryMinimalMetadataAcrossAlter(t *testing.T) {
	env := needScratchServer(t, true)
	c, db := adminConn(t, env)
	exec(t, c, "SET GLOBAL binlog_row_metadata = MINIMAL")
	t.Cleanup(func() { _, _ = c.Execute("SET GLOBAL binlog_row_metadata = FULL") })
	exec(t, c, "CREATE TABLE t (id INT UNSIGNED PRIMARY KEY, a VARCHAR(10), k ENUM('x','y'))")
	cfg := testConfig(env, db)
	// without a history, such a server is refused
	plain, err := NewSource(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Open(context.Background(), nil); !errors.Is(err, ErrMissingMetadata) {
		t.Fatalf("Open without a history on a MINIMAL server: %v, want ErrMissingMetadata", err)
	}
	plain.Close()

	p0 := serverPosition(t, c, env.flavor)
	cfg.HistoryFile = filepath.Join(t.TempDir(), "history.jsonl")
	s := openSource(t, cfg, p0)
	exec(t, c, "INSERT INTO t VALUES (1, 'one', 'x')")
	exec(t, c, "ALTER TABLE t ADD COLUMN b INT AFTER id, DROP COLUMN a")
	exec(t, c, "INSERT INTO t VALUES (2, 20, 'y')")
	want := []string{
		`c id=int64(1) a="one" k="x" key=id`,
		`c id=int64(2) b=int64(20) k="y" key=id`,
	}
	check := func(s *Source) {
		t.Helper()
		recs := readUntil(t, s, func(rs []schema.Record) bool { return len(rowsByName(rs, db)) == 2 })
		if g := rowsByName(recs, db); strings.Join(g, "\n") != strings.Join(want, "\n") {
			t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
		}
	}
	check(s)
	s.Close()
	hist, err := os.ReadFile(cfg.HistoryFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(hist), "\n"); n != 2 || !strings.Contains(string(hist), "ADD COLUMN b INT") {
		t.Fatalf("history file after one ALTER has %d lines:\n%s", n, hist)
	}
	// restart from before the ALTER: the history is replayed up to there
	check(openSource(t, cfg, p0))
	hist2, _ := os.ReadFile(cfg.HistoryFile)
	if string(hist2) != string(hist) {
		t.Fatalf("the restart rewrote the history:\n%s", hist2)
	}
}

// serverPosition reads the server's current position as an encoded Position.
func serverPosition(t *testing.T, c *client.Conn, flavor string) []byte {
	t.Helper()
	p, err := currentPosition(c, flavor)
	if err != nil {
		t.Fatal(err)
	}
	return EncodePosition(p)
}

// TestHistoryUnparseableDDLStops: a DDL statement on a captured table the
// history cannot parse stops the source with ErrUnparsedDDL quoting it;
// listing its GTID in SkipDDL lets a restart go past it.
// TestHistoryUnparseableDDLStops: a statement on a captured table that the
// DDL parser rejects (MariaDB's WAIT n, MySQL's NOT SECONDARY, unknown to
// the TiDB parser) stops
// the source with ErrUnparsedDDL naming skip_ddl, with and without a
// schema history, and skip_ddl then gets past it.
func TestHistoryUnparseableDDLStops(t *testing.T) {
	for _, history := range []bool{true, false} {
		t.Run(fmt.Sprintf("history=%v", history), func(t *testing.T) { testUnparseableDDLStops(t, history) })
	}
}

func testUnparseableDDLStops(t *testing.T, history bool) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY)")
	cfg := testConfig(env, db)
	if history {
		cfg.HistoryFile = filepath.Join(t.TempDir(), "history.jsonl")
	}
	s := openSource(t, cfg, nil)
	exec(t, c, "INSERT INTO t VALUES (1)")
	odd := "ALTER TABLE t WAIT 2 ADD COLUMN w BIGINT" // MariaDB syntax the parser does not know
	if env.flavor == FlavorMySQL {
		odd = "ALTER TABLE t ADD COLUMN w BIGINT NOT SECONDARY" // MySQL's, unknown to the parser too
	}
	exec(t, c, odd)
	exec(t, c, "INSERT INTO t VALUES (2, 2)")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last []byte
	var ferr error
	for ferr == nil {
		recs, err := s.Read(ctx)
		for _, r := range recs {
			if r.Op == schema.OpCreate && r.Table.Database == db && r.After[0] == int64(2) {
				t.Fatalf("a record after the unparseable DDL was delivered: %+v", r)
			}
			if r.Op == schema.OpCommit {
				last = r.Position
			}
		}
		ferr = err
	}
	if !errors.Is(ferr, ErrUnparsedDDL) || !strings.Contains(ferr.Error(), odd) || !strings.Contains(ferr.Error(), "skip_ddl") {
		t.Fatalf("error %v, want ErrUnparsedDDL quoting the statement and naming skip_ddl", ferr)
	}
	s.Close()
	_, afterGTID, ok := strings.Cut(ferr.Error(), "its GTID \"")
	if !ok {
		t.Fatalf("the message names no GTID: %v", ferr)
	}
	gtid, _, _ := strings.Cut(afterGTID, "\"")
	cfg.SkipDDL = []string{gtid}
	s2 := openSource(t, cfg, last)
	readUntil(t, s2, func(rs []schema.Record) bool {
		for _, r := range rs {
			if r.Op == schema.OpCreate && r.Table.Database == db && r.After[0] == int64(2) {
				return len(r.After) == 2
			}
		}
		return false
	})
}
