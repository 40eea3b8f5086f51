package sink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

// badBatch is 100 inserts into table (id, doc JSON, dur TIME) where id 37
// and 60 carry invalid JSON (rejected by the server) and id 80 a duration
// no target TIME takes (rejected by the sink's conversion; PostgreSQL with
// TimeAsInterval off), plus a delete.
func badBatch(table string) []schema.Record {
	val := &schema.Schema{Type: schema.Struct, Fields: []schema.Field{
		{Name: "id", Schema: schema.Primitive(schema.Int64, false)},
		{Name: "doc", Schema: lg(schema.String, schema.Json)},
		{Name: "dur", Schema: lg(schema.Int64, schema.Time)},
	}}
	var recs []schema.Record
	for i := int64(0); i < 100; i++ {
		doc, dur := fmt.Sprintf(`{"n": %d}`, i), int64(3600_000000)
		switch i {
		case 37, 60:
			doc = `{not json`
		case 80:
			dur = 1000 * 3600_000000
		}
		recs = append(recs, schema.Record{Op: schema.OpCreate, Table: schema.TableID{Database: "src", Table: table}, KeySchema: tKey, Key: schema.Row{i}, ValueSchema: val, After: schema.Row{i, doc, dur},
			Delivery: &schema.Delivery{Topic: "oe", Queue: 0, Offset: i}, ID: testID(int64(i))})
	}
	recs = append(recs, schema.Record{Op: schema.OpDelete, Table: schema.TableID{Database: "src", Table: table}, KeySchema: tKey, Key: schema.Row{int64(5)}, ValueSchema: val, Before: schema.Row{int64(5), nil, nil},
		Delivery: &schema.Delivery{Topic: "oe", Queue: 0, Offset: 100}, ID: testID(int64(100))})
	return recs
}

func (e *tenv) ids(t *testing.T, table string) []int64 {
	t.Helper()
	rs, err := e.db.Query("SELECT id FROM " + e.table(table) + " ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []int64
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

func wantIDsWithout(n int64, missing ...int64) []int64 {
	var out []int64
	for i := int64(0); i < n; i++ {
		if !slices.Contains(missing, i) {
			out = append(out, i)
		}
	}
	return out
}

func TestWriteOnErrorSkip(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		for _, copyThreshold := range []int{-1, 10} {
			if copyThreshold > 0 && e.dialect != DialectPostgres {
				continue
			}
			table := fmt.Sprintf("skip_%d", max(copyThreshold, 0))
			s := e.open(t, func(c *Config) { c.OnError, c.CopyThreshold, c.TimeAsInterval = OnErrorSkip, copyThreshold, false })
			write(t, s, badBatch(table)...)
			if got, want := e.ids(t, table), wantIDsWithout(100, 5, 37, 60, 80); !slices.Equal(got, want) {
				t.Fatalf("copy %d: ids %v, want %v", copyThreshold, got, want)
			}
			if skipped, dead := s.LeftOut(); skipped != 3 || dead != 0 {
				t.Fatalf("copy %d: LeftOut %d skipped, %d dead-lettered; want 3 (ids 37, 60, 80), 0", copyThreshold, skipped, dead)
			}
			if off, ok := e.progress(t, "oe", 0); !ok || off != 100 {
				t.Fatalf("progress %d %v, want 100", off, ok)
			}
			e.db.Exec("DELETE FROM sluice_progress WHERE pipeline = "+map[string]string{DialectPostgres: "$1", DialectMySQL: "?"}[e.dialect], e.cfg.Pipeline)
		}
	})
}

func TestWriteOnErrorDLQ(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		var mu sync.Mutex
		got := map[int64]string{}
		failDLQ := false
		s := e.open(t, func(c *Config) {
			c.OnError, c.TimeAsInterval = OnErrorDLQ, false
			c.DeadLetter = func(ctx context.Context, r schema.Record, cause error) error {
				if failDLQ {
					return errors.New("dead-letter topic unavailable")
				}
				mu.Lock()
				defer mu.Unlock()
				got[r.Key[0].(int64)] = cause.Error()
				return nil
			}
		})
		// A failing callback fails the Write (retriable) and applies nothing.
		failDLQ = true
		err := s.Write(context.Background(), badBatch("dlq"))
		if err == nil || isFatal(err) || !strings.Contains(err.Error(), "dead-letter topic unavailable") {
			t.Fatalf("Write with a failing DeadLetter: %v, want a retriable error naming it", err)
		}
		if _, ok := e.progress(t, "oe", 0); ok {
			t.Fatal("progress saved although the dead-letter callback failed")
		}
		if skipped, dead := s.LeftOut(); skipped != 0 || dead != 0 {
			t.Fatalf("a failed Write counted %d skipped, %d dead-lettered rows; its redelivery counts them", skipped, dead)
		}
		failDLQ = false
		write(t, s, badBatch("dlq")...)
		if ids, want := e.ids(t, "dlq"), wantIDsWithout(100, 5, 37, 60, 80); !slices.Equal(ids, want) {
			t.Fatalf("ids %v, want %v", ids, want)
		}
		if len(got) != 3 || got[37] == "" || got[60] == "" || !strings.Contains(got[80], `"dur"`) {
			t.Fatalf("dead letters %v, want ids 37, 60 (server errors) and 80 (naming column dur)", got)
		}
		if skipped, dead := s.LeftOut(); skipped != 0 || dead != 3 {
			t.Fatalf("LeftOut %d skipped, %d dead-lettered; want 0, 3", skipped, dead)
		}
		if _, err := New(context.Background(), Config{Dialect: e.dialect, DSN: e.cfg.DSN, Pipeline: "p", OnError: OnErrorDLQ}, nil); !errors.Is(err, ErrConfig) {
			t.Fatalf("dlq without callback: %v, want ErrConfig", err)
		}
	})
}

// A lost connection is never a row error: under OnError "skip" the Write
// still fails (retriable) and nothing is left out.
func TestWriteOnErrorSkipKeepsLostConnectionRetriable(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		s := e.open(t, func(c *Config) { c.OnError = OnErrorSkip })
		write(t, s, cIns("lcs", 1, "before"))
		s.testHook = func(ctx context.Context, stage string, tx *sqlxTx) error {
			q, kill := "SELECT pg_backend_pid()", "SELECT pg_terminate_backend($1)"
			if e.dialect == DialectMySQL {
				q, kill = "SELECT CONNECTION_ID()", "KILL ?"
			}
			var id int64
			if err := tx.QueryRowContext(ctx, q).Scan(&id); err != nil {
				return err
			}
			_, err := e.admin.Exec(kill, id)
			return err
		}
		err := s.Write(context.Background(), []schema.Record{cUpd("lcs", 1, 1, "before", "after"), cIns("lcs", 2, "new")})
		if err == nil || isFatal(err) {
			t.Fatalf("Write on a killed connection: %v, want a retriable error", err)
		}
		s.testHook = nil
		write(t, s, cUpd("lcs", 1, 1, "before", "after"), cIns("lcs", 2, "new"))
		wantRows(t, e, "lcs", map[int64]string{1: "after", 2: "new"})
	})
}
