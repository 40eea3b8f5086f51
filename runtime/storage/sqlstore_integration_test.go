package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/lib/pq"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// sqlStoreTargets returns driver -> DSN of the test servers, or skips
// (fails in CI) without them.
func sqlStoreTargets(t *testing.T) map[string]string {
	t.Helper()
	s := schematest.NeedServers(t, "SLUICE_PG_DSN", "SLUICE_MYSQL_HOST")
	pg, host := s[0], s[1]
	my := fmt.Sprintf("%s:%s@tcp(%s:%s)/mysql", os.Getenv("SLUICE_MYSQL_USER"), os.Getenv("SLUICE_MYSQL_PASSWORD"), host, os.Getenv("SLUICE_MYSQL_PORT"))
	return map[string]string{"postgres": pg, "mysql": my}
}

// Two runs of one pipeline: the later claim fences the earlier run's saves;
// reading never fences; a reset clears the position.
func TestSQLStoreFencesEarlierRuns(t *testing.T) {
	for driver, dsn := range sqlStoreTargets(t) {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			table := fmt.Sprintf("sluice_positions_it_%d", rand.Uint32())
			a, err := NewSQLStore(ctx, driver, dsn, table)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			t.Cleanup(func() { a.db.Exec("DROP TABLE " + table) })
			b, err := NewSQLStore(ctx, driver, dsn, table)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if pos, err := a.Load(ctx, "p"); err != nil || pos != nil {
				t.Fatalf("fresh Load = %q, %v", pos, err)
			}
			runA, err := a.Claim(ctx, "p")
			if err != nil {
				t.Fatal(err)
			}
			for _, pos := range []string{"one", "two", "two"} { // the same position twice: MySQL reports 0 rows changed
				if err := runA.Save(ctx, "p", []byte(pos)); err != nil {
					t.Fatalf("Save %s: %v", pos, err)
				}
			}
			if pos, _ := b.Load(ctx, "p"); string(pos) != "two" {
				t.Fatalf("Load = %q, want two", pos)
			}
			if err := runA.Save(ctx, "p", []byte("three")); err != nil {
				t.Fatalf("a Load by b fenced a: %v", err)
			}
			// A second run, even through the same store (one process).
			runB, err := a.Claim(ctx, "p")
			if err != nil {
				t.Fatal(err)
			}
			err = runA.Save(ctx, "p", []byte("stale"))
			if !errors.Is(err, ErrFenced) || !runtime.IsFatal(err) {
				t.Fatalf("Save by the fenced run: %v, want a fatal ErrFenced", err)
			}
			if err := runA.(runtime.Holder).Held(ctx, "p"); !errors.Is(err, ErrFenced) {
				t.Fatalf("Held by the fenced run: %v", err)
			}
			if err := runB.(runtime.Holder).Held(ctx, "p"); err != nil {
				t.Fatalf("Held by the current run: %v", err)
			}
			if err := runB.Save(ctx, "p", []byte("four")); err != nil {
				t.Fatal(err)
			}
			if pos, _ := b.Load(ctx, "p"); string(pos) != "four" {
				t.Fatalf("Load = %q, want four (the fenced save must not land)", pos)
			}
			if err := b.Reset(ctx, "p"); err != nil {
				t.Fatal(err)
			}
			if pos, err := b.Load(ctx, "p"); err != nil || pos != nil {
				t.Fatalf("Load after Reset = %q, %v", pos, err)
			}
			// Without a claim (a position set by hand) Save writes.
			c, err := NewSQLStore(ctx, driver, dsn, table)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Save(ctx, "q", []byte("by hand")); err != nil {
				t.Fatal(err)
			}
			if pos, _ := c.Load(ctx, "q"); string(pos) != "by hand" {
				t.Fatalf("Load = %q", pos)
			}
		})
	}
}

func TestSQLStoreRejectsBadSettings(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ driver, table string }{{"sqlite", "t"}, {"postgres", "bad-name"}, {"postgres", "a.b.c d"}} {
		if _, err := NewSQLStore(ctx, c.driver, "x", c.table); !errors.Is(err, runtime.ErrConfig) {
			t.Errorf("%s %q: %v, want ErrConfig", c.driver, c.table, err)
		}
	}
}

// A position saved in PostgreSQL is durable when Claim and Save return,
// even where the session's default is synchronous_commit=off: a trigger on
// the store's table records the setting in force in its transactions.
func TestSQLStoreSavesDurably(t *testing.T) {
	dsn := sqlStoreTargets(t)["postgres"]
	ctx := context.Background()
	table := fmt.Sprintf("sluice_positions_it_%d", rand.Uint32())
	// lib/pq sends unknown DSN parameters as the session's run-time
	// parameters: the default a server started with synchronous_commit=off gives.
	s, err := NewSQLStore(ctx, "postgres", dsn+"&synchronous_commit=off", table)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Cleanup(func() {
		s.db.Exec("DROP TABLE " + table)
		s.db.Exec("DROP TABLE " + table + "_seen")
		s.db.Exec("DROP FUNCTION " + table + "_note()")
	})
	for _, q := range []string{
		"CREATE TABLE " + table + "_seen (setting TEXT)",
		"CREATE FUNCTION " + table + "_note() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO " + table +
			"_seen VALUES (current_setting('synchronous_commit')); RETURN NULL; END $$",
		"CREATE TRIGGER note AFTER INSERT OR UPDATE ON " + table + " FOR EACH ROW EXECUTE FUNCTION " + table + "_note()",
	} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c, err := s.Claim(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Save(ctx, "p", []byte("pos 1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, "other", []byte("pos 2")); err != nil {
		t.Fatal(err)
	}
	rows, err := s.db.Query("SELECT setting FROM " + table + "_seen")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var got string
		if err := rows.Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != "on" {
			t.Errorf("a position store write ran with synchronous_commit=%s, want on", got)
		}
		n++
	}
	if n != 3 { // the claim, its save, the unconditional save
		t.Fatalf("the trigger saw %d writes, want 3", n)
	}
}
