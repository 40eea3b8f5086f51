package cluster

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/lib/pq"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// coordinators returns driver -> DSN of the test servers; without them it
// skips (fails in CI).
func coordinators(t *testing.T) map[string]string {
	t.Helper()
	s := schematest.NeedServers(t, "SLUICE_PG_DSN", "SLUICE_MYSQL_HOST")
	pg, host := s[0], s[1]
	my := fmt.Sprintf("%s:%s@tcp(%s:%s)/mysql", os.Getenv("SLUICE_MYSQL_USER"), os.Getenv("SLUICE_MYSQL_PASSWORD"), host, os.Getenv("SLUICE_MYSQL_PORT"))
	return map[string]string{"postgres": pg, "mysql": my}
}

func openTestStore(t *testing.T, driver, dsn string) *Store {
	t.Helper()
	prefix := fmt.Sprintf("sluice_ct%d_", rand.Uint32())
	s, err := Open(context.Background(), driver, dsn, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, tb := range []string{"connectors", "workers", "leases", "status", "positions", "topics"} {
			s.db.Exec("DROP TABLE " + s.Table(tb))
		}
		s.Close()
	})
	return s
}

// A lease is taken only when expired or already the taker's, every
// acquisition raises the epoch, an expired lease is never renewed, and a
// save carrying a lost lease is refused by the database.
func TestLeaseFencing(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s := openTestStore(t, driver, dsn)
			ttl := 1500 * time.Millisecond
			la, ok, err := s.Acquire(ctx, "c/source", "A", ttl)
			if err != nil || !ok || la.Epoch != 1 {
				t.Fatalf("first acquire = %+v, %v, %v; want epoch 1", la, ok, err)
			}
			if _, ok, err := s.Acquire(ctx, "c/source", "B", ttl); err != nil || ok {
				t.Fatalf("B took A's live lease: %v, %v", ok, err)
			}
			valid := func() bool { return true }
			fa := s.NewFencedPositions(la, valid)
			if err := fa.Save(ctx, "c", []byte("pos-a1")); err != nil {
				t.Fatalf("holder's save: %v", err)
			}
			if ok, err := s.Renew(ctx, la, ttl); err != nil || !ok {
				t.Fatalf("renew of a live lease: %v, %v", ok, err)
			}
			time.Sleep(ttl + 200*time.Millisecond)
			if ok, err := s.Renew(ctx, la, ttl); err != nil || ok {
				t.Fatalf("an expired lease was renewed: %v, %v", ok, err)
			}
			if err := fa.Save(ctx, "c", []byte("pos-a2")); !errors.Is(err, storage.ErrFenced) || !runtime.IsFatal(err) {
				t.Fatalf("save under an expired lease = %v; want a fatal ErrFenced", err)
			}
			lb, ok, err := s.Acquire(ctx, "c/source", "B", ttl)
			if err != nil || !ok || lb.Epoch != 2 {
				t.Fatalf("B's acquire of the expired lease = %+v, %v, %v; want epoch 2", lb, ok, err)
			}
			fb := s.NewFencedPositions(lb, valid)
			if pos, err := fb.Load(ctx, "c"); err != nil || string(pos) != "pos-a1" {
				t.Fatalf("B loads %q, %v; want A's last saved pos-a1", pos, err)
			}
			if err := fb.Save(ctx, "c", []byte("pos-b1")); err != nil {
				t.Fatal(err)
			}
			// A wakes up: its renewal and its save are both refused, and it
			// cannot take the live lease back.
			if ok, _ := s.Renew(ctx, la, ttl); ok {
				t.Fatal("A renewed B's lease")
			}
			if err := fa.Save(ctx, "c", []byte("pos-a3")); !errors.Is(err, storage.ErrFenced) {
				t.Fatalf("A's save after B took over = %v", err)
			}
			select {
			case <-fa.Fenced():
			default:
				t.Fatal("A's store does not report the fence")
			}
			if _, ok, _ := s.Acquire(ctx, "c/source", "A", ttl); ok {
				t.Fatal("A took B's live lease")
			}
			var pos string
			var epoch int64
			if err := s.db.QueryRowContext(ctx, s.q("SELECT position, epoch FROM "+s.Table("positions")+" WHERE pipeline = ?"), "c").Scan(&pos, &epoch); err != nil {
				t.Fatal(err)
			}
			if pos != "pos-b1" || epoch != 2 {
				t.Fatalf("positions row = %q epoch %d; want pos-b1 by epoch 2", pos, epoch)
			}
			// The holder's own re-acquisition is a new incarnation.
			lb2, ok, err := s.Acquire(ctx, "c/source", "B", ttl)
			if err != nil || !ok || lb2.Epoch != 3 {
				t.Fatalf("B's re-acquire = %+v, %v, %v; want epoch 3", lb2, ok, err)
			}
			if err := fb.Save(ctx, "c", []byte("pos-b-old")); !errors.Is(err, storage.ErrFenced) {
				t.Fatalf("B's older incarnation saved: %v", err)
			}
			// A release ends the lease at once, keeping its epoch.
			if err := s.Release(ctx, lb2); err != nil {
				t.Fatal(err)
			}
			la2, ok, err := s.Acquire(ctx, "c/source", "A", ttl)
			if err != nil || !ok || la2.Epoch != 4 {
				t.Fatalf("acquire after release = %+v, %v, %v; want epoch 4", la2, ok, err)
			}
			// A holder whose own clock says the lease ran out refuses
			// before asking the database.
			if err := s.NewFencedPositions(la2, func() bool { return false }).Save(ctx, "c", []byte("x")); !errors.Is(err, storage.ErrFenced) {
				t.Fatalf("save with a locally expired lease = %v", err)
			}
		})
	}
}

// Two workers racing for one expired lease: exactly one wins each round.
func TestLeaseRaceOneWinner(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s := openTestStore(t, driver, dsn)
			for round := range 20 {
				task := fmt.Sprintf("c%d/source", round)
				wins := make(chan bool, 4)
				for i := range 4 {
					go func() {
						_, ok, err := s.Acquire(ctx, task, fmt.Sprintf("w%d", i), time.Minute)
						if err != nil {
							t.Error(err)
						}
						wins <- ok
					}()
				}
				n := 0
				for range 4 {
					if <-wins {
						n++
					}
				}
				if n != 1 {
					t.Fatalf("round %d: %d winners", round, n)
				}
			}
		})
	}
}

// Connector configs: create refuses duplicates and invalid documents, a
// config update is a compare-and-set on the version, and the task split
// follows the transport.
func TestControlConnectors(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s := openTestStore(t, driver, dsn)
			c := &Control{S: s, TTL: time.Second}
			doc := json.RawMessage(`{"source":{"type":"mysql","host":"127.0.0.1","user":"u","server_id":7},"transport":{"type":"rocketmq","name_servers":["127.0.0.1:1"],"topics":["x"]},"sink":{"type":"postgres","dsn":"postgres://x"},"sink_tasks":2}`)
			in, err := c.Create(ctx, "orders", doc)
			if err != nil {
				t.Fatal(err)
			}
			if in.Version != 1 || in.Type != "source_sink" || len(in.Tasks) != 3 {
				t.Fatalf("created %+v; want version 1, a source and 2 sink tasks", in)
			}
			if _, err := c.Create(ctx, "orders", doc); !errors.Is(err, admin.ErrExists) {
				t.Fatalf("second create = %v", err)
			}
			if _, err := c.Create(ctx, "bad", json.RawMessage(`{"transport":{"type":"embedded"}}`)); !errors.Is(err, admin.ErrInvalid) {
				t.Fatalf("invalid create = %v", err)
			}
			if _, err := c.Create(ctx, "other", json.RawMessage(`{"name":"nope","transport":{"type":"embedded"},"source":{"type":"mysql"},"sink":{"type":"postgres"}}`)); !errors.Is(err, admin.ErrInvalid) {
				t.Fatalf("create with another name inside = %v", err)
			}
			emb := json.RawMessage(`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`)
			in, created, err := c.PutConfig(ctx, "orders", emb)
			if err != nil || created || in.Version != 2 || in.Type != "source_sink" || len(in.Tasks) != 1 {
				t.Fatalf("put = %+v, %v, %v", in, created, err)
			}
			// A concurrent writer between read and write loses its CAS.
			if _, err := s.db.ExecContext(ctx, s.q("UPDATE "+s.Table("connectors")+" SET config = ? WHERE name = ? AND version = ?"), string(doc), "orders", 1); err != nil {
				t.Fatal(err)
			}
			tasks, err := c.Tasks(ctx, "orders")
			if err != nil || len(tasks) != 1 || tasks[0].Role != "source_sink" {
				t.Fatalf("tasks = %+v, %v", tasks, err)
			}
			st, err := c.Status(ctx, "orders")
			if err != nil || len(st.Tasks) != 1 || st.Tasks[0].State != "UNASSIGNED" {
				t.Fatalf("status of an unheld connector = %+v, %v", st, err)
			}
			if err := c.Pause(ctx, "orders"); err != nil {
				t.Fatal(err)
			}
			if st, _ := c.Status(ctx, "orders"); st.Connector.State != "PAUSED" || st.Tasks[0].State != "PAUSED" {
				t.Fatalf("paused status = %+v", st)
			}
			if err := c.Restart(ctx, "missing"); !errors.Is(err, admin.ErrNotFound) {
				t.Fatalf("restart of a missing connector = %v", err)
			}
			if err := c.Delete(ctx, "orders"); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Connector(ctx, "orders"); !errors.Is(err, admin.ErrNotFound) {
				t.Fatalf("deleted connector = %v", err)
			}
		})
	}
}

// The compare-and-set itself: of two PutConfigs from the same version,
// one wins and the other gets ErrConflict.
func TestControlPutConflict(t *testing.T) {
	for driver, dsn := range coordinators(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			s := openTestStore(t, driver, dsn)
			c := &Control{S: s}
			emb := json.RawMessage(`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`)
			if _, err := c.Create(ctx, "k", emb); err != nil {
				t.Fatal(err)
			}
			conflicts := 0
			for i := range 20 {
				errs := make(chan error, 2)
				for j := range 2 {
					// Each put changes the document: one equal to the stored
					// one is no update at all.
					doc := json.RawMessage(fmt.Sprintf(`{"source":{"type":"mysql","server_id":%d},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`, 1+i*2+j))
					go func() { _, _, err := c.PutConfig(ctx, "k", doc); errs <- err }()
				}
				for range 2 {
					if err := <-errs; errors.Is(err, admin.ErrConflict) {
						conflicts++
					} else if err != nil {
						t.Fatal(err)
					}
				}
			}
			k, _ := s.connector(ctx, "k")
			if k.Version != int64(1+40-conflicts) {
				t.Fatalf("version %d after %d puts with %d conflicts: a lost update", k.Version, 40, conflicts)
			}
		})
	}
}

// A MySQL/MariaDB coordinator's sessions run in UTC whatever the DSN or
// the server's default zone say, so TIMESTAMP expiries are never judged
// in a local time whose hour repeats when daylight saving ends.
func TestCoordinatorSessionsInUTC(t *testing.T) {
	dsn := coordinators(t)["mysql"] + "?time_zone=%27%2B05%3A00%27"
	s := openTestStore(t, "mysql", dsn)
	ctx := context.Background()
	conns := make([]*sql.Conn, 3) // several sessions of the pool
	for i := range conns {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		var tz string
		if err := c.QueryRowContext(ctx, "SELECT @@session.time_zone").Scan(&tz); err != nil {
			t.Fatal(err)
		}
		if tz != "+00:00" {
			t.Fatalf("session %d of the coordinator runs in time zone %q, want +00:00", i, tz)
		}
	}
	if _, ok, err := s.Acquire(ctx, "c/source", "A", time.Minute); err != nil || !ok {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	var ahead float64
	if err := s.db.QueryRowContext(ctx, "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1e6 FROM "+s.Table("leases")).Scan(&ahead); err != nil {
		t.Fatal(err)
	}
	if ahead < 50 || ahead > 70 {
		t.Fatalf("a 1-minute lease expires %.1f s after the server's UTC now, want about 60", ahead)
	}
}

// A lease's acquisition and a position saved in a PostgreSQL coordinator
// are durable when they return, even where the session's default is
// synchronous_commit=off: triggers record the setting in force.
func TestCoordinatorWritesDurably(t *testing.T) {
	dsn := coordinators(t)["postgres"]
	ctx := context.Background()
	// lib/pq sends unknown DSN parameters as the session's run-time
	// parameters: the default a server started with synchronous_commit=off gives.
	s := openTestStore(t, "postgres", dsn+"&synchronous_commit=off")
	seen := s.Table("seen")
	t.Cleanup(func() {
		s.db.Exec("DROP TABLE " + seen)
		s.db.Exec("DROP FUNCTION " + seen + "_note()")
	})
	for _, q := range []string{
		"CREATE TABLE " + seen + " (tbl TEXT, setting TEXT)",
		"CREATE FUNCTION " + seen + "_note() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO " + seen +
			" VALUES (TG_TABLE_NAME, current_setting('synchronous_commit')); RETURN NULL; END $$",
		"CREATE TRIGGER note AFTER INSERT OR UPDATE ON " + s.Table("leases") + " FOR EACH ROW EXECUTE FUNCTION " + seen + "_note()",
		"CREATE TRIGGER note AFTER UPDATE ON " + s.Table("positions") + " FOR EACH ROW EXECUTE FUNCTION " + seen + "_note()",
	} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	l, ok, err := s.Acquire(ctx, "c/source", "A", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	if err := s.NewFencedPositions(l, func() bool { return true }).Save(ctx, "c", []byte("pos")); err != nil {
		t.Fatal(err)
	}
	rows, err := s.db.Query("SELECT tbl, setting FROM " + seen)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var tbl, setting string
		if err := rows.Scan(&tbl, &setting); err != nil {
			t.Fatal(err)
		}
		got[tbl] = setting
		if setting != "on" {
			t.Errorf("a write to %s ran with synchronous_commit=%s, want on", tbl, setting)
		}
	}
	if len(got) != 2 {
		t.Fatalf("the triggers saw writes to %v, want the leases and positions tables", got)
	}
}
