package sink

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
)

func keyless(r schema.Record) schema.Record {
	r.KeySchema, r.Key = nil, nil
	return r
}

func TestWriteKeylessModes(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		// fail (the default): an update names the table and the option.
		s := e.open(t, nil)
		write(t, s, keyless(cIns("kl", 1, "a")))
		err := s.Write(context.Background(), []schema.Record{keyless(cIns("kl", 2, "b")), keyless(cUpd("kl", 1, 1, "a", "a2"))})
		if !errors.Is(err, ErrSchema) || !isFatal(err) || !strings.Contains(err.Error(), "kl") || !strings.Contains(err.Error(), "keyless_mode") {
			t.Fatalf("keyless update: %v, want a fatal ErrSchema naming the table and keyless_mode", err)
		}
		// OnError skip does not turn that into a skipped row.
		s2 := e.open(t, func(c *Config) { c.OnError = OnErrorSkip })
		if err := s2.Write(context.Background(), []schema.Record{keyless(cDel("kl", 1))}); !errors.Is(err, ErrSchema) {
			t.Fatalf("keyless delete with OnError skip: %v, want ErrSchema", err)
		}
		// append: inserts appended, updates and deletes skipped, the rest
		// of the batch applied.
		a := e.open(t, func(c *Config) { c.KeylessMode = KeylessAppend })
		write(t, a, keyless(cIns("kl", 2, "b")), keyless(cUpd("kl", 1, 1, "a", "a2")), keyless(cDel("kl", 1)), keyless(cIns("kl", 2, "b")), cIns("keyed", 1, "x"))
		var n, ones, twos int
		if err := e.db.QueryRow("SELECT count(*), sum(CASE WHEN id = 1 THEN 1 ELSE 0 END), sum(CASE WHEN id = 2 THEN 1 ELSE 0 END) FROM "+e.table("kl")).Scan(&n, &ones, &twos); err != nil {
			t.Fatal(err)
		}
		if n != 3 || ones != 1 || twos != 2 {
			t.Fatalf("kl has %d rows (%d of id 1, %d of id 2), want 3: 1 untouched, 2 appended", n, ones, twos)
		}
		wantRows(t, e, "keyed", map[int64]string{1: "x"})
		if _, err := New(context.Background(), Config{Dialect: e.dialect, DSN: e.cfg.DSN, Pipeline: "p", KeylessMode: "upsert"}, nil); !errors.Is(err, ErrConfig) {
			t.Fatalf("bad KeylessMode: %v, want ErrConfig", err)
		}
	})
}
