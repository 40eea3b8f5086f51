package integration

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink"
)

var updateDebezium = flag.Bool("update-debezium", false, "rewrite testdata/debezium/expected.txt from the target (check it by hand against source.sql)")

// debeziumEvent is one line of testdata/debezium/events.jsonl: the key and
// value JSON that Debezium's embedded MariaDB connector wrote (made by
// scripts/debezium-fixture/run.sh from testdata/debezium/source.sql).
type debeziumEvent struct {
	Key   json.RawMessage `json:"key"`
	Value json.RawMessage `json:"value"`
}

func readDebeziumEvents(t *testing.T) []schema.Record {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "debezium", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := converter.NewJSON(converter.DefaultOptions())
	var recs []schema.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var ev debeziumEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("events.jsonl line %d: %v", n, err)
		}
		key := []byte(ev.Key)
		if bytes.Equal(key, []byte("null")) {
			key = nil
		}
		rec, err := c.Decode(key, ev.Value)
		if err != nil {
			t.Fatalf("events.jsonl line %d: Decode: %v", n, err)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// The events decode to the operations source.sql made, in order.
func TestDebeziumEventsDecode(t *testing.T) {
	recs := readDebeziumEvents(t)
	var ops []string
	for _, r := range recs {
		ops = append(ops, fmt.Sprintf("%s:%s", r.Table.Table, r.Op))
	}
	want := []string{"pairs:r", "pairs:r", "pairs:r", "types:r", "types:r",
		"types:c", "types:c", "types:u", "types:u", "types:d", "types:c", "types:u", "types:d", "types:c",
		"pairs:u", "pairs:d", "pairs:c", "pairs:d", "pairs:c"}
	var got []string
	for _, o := range ops {
		got = append(got, strings.NewReplacer(":read", ":r", ":create", ":c", ":update", ":u", ":delete", ":d").Replace(o))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("operations %v, want %v", got, want)
	}
	for i, r := range recs {
		if r.Table.Database != "dbz_fixture" || r.Source.Connector != "mariadb" || len(r.Key) == 0 {
			t.Fatalf("event %d: table %v connector %q key %v", i+1, r.Table, r.Source.Connector, r.Key)
		}
	}
}

// Events written by Debezium itself (not by sluice), decoded with the
// converter's defaults and applied by the PostgreSQL sink, leave the rows
// that source.sql left in MariaDB: testdata/debezium/expected.txt, one line
// per row in PostgreSQL's text form of each column (checked by hand against
// source.sql; see the notes in that file for Debezium's lossy defaults).
// Applied once one event per Write, once all in one Write (which reduces
// per key first).
func TestDebeziumEventsApplyToPostgres(t *testing.T) {
	e := servers(t, "SLUICE_PG_DSN")
	recs := readDebeziumEvents(t)
	pg := openDB(t, "postgres", e["SLUICE_PG_DSN"])
	want, err := os.ReadFile(filepath.Join("testdata", "debezium", "expected.txt"))
	if err != nil && !*updateDebezium {
		t.Fatal(err)
	}
	for _, mode := range []string{"per-event", "one-batch"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			target := uniqueName("dbz")
			t.Cleanup(func() { pg.Exec(`DROP SCHEMA IF EXISTS "` + target + `" CASCADE`) })
			cfg := sink.DefaultConfig()
			cfg.Dialect, cfg.DSN, cfg.Pipeline = sink.DialectPostgres, e["SLUICE_PG_DSN"], target
			cfg.SchemaTemplate = target
			cfg.TimeAsInterval = true // TIME '-838:59:59' does not fit PostgreSQL TIME
			s, err := sink.New(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if mode == "per-event" {
				for i := range recs {
					if err := s.Write(ctx, recs[i:i+1]); err != nil {
						t.Fatalf("event %d (%s %s key %v): %v", i+1, recs[i].Op, recs[i].Table, recs[i].Key, err)
					}
				}
			} else if err := s.Write(ctx, slices.Clone(recs)); err != nil {
				t.Fatal(err)
			}
			got := dumpDebeziumTarget(t, pg, target)
			if *updateDebezium && mode == "per-event" {
				if err := os.WriteFile(filepath.Join("testdata", "debezium", "expected.txt"), []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				want = []byte(got)
			}
			if got != stripComments(string(want)) {
				t.Fatalf("target rows differ from testdata/debezium/expected.txt\n got:\n%s\nwant:\n%s", got, stripComments(string(want)))
			}
		})
	}
}

func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// dumpDebeziumTarget renders both tables as "table|col=value|…" lines, in
// key order, values in PostgreSQL's text form (NULL for null).
func dumpDebeziumTarget(t *testing.T, pg *sql.DB, schemaName string) string {
	t.Helper()
	var b strings.Builder
	for _, tbl := range []struct{ name, order string }{{"types", "id"}, {"pairs", `region COLLATE "C", n`}} {
		cols, err := pg.Query(`SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, schemaName, tbl.name)
		if err != nil {
			t.Fatal(err)
		}
		var names, sel []string
		for cols.Next() {
			var n string
			if err := cols.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
			sel = append(sel, `"`+n+`"::text`)
		}
		cols.Close()
		if len(names) == 0 {
			t.Fatalf("target table %s.%s missing", schemaName, tbl.name)
		}
		rows, err := pg.Query(`SELECT ` + strings.Join(sel, ", ") + ` FROM "` + schemaName + `"."` + tbl.name + `" ORDER BY ` + tbl.order)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals := make([]sql.NullString, len(names))
			ptrs := make([]any, len(names))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			b.WriteString(tbl.name)
			for i, n := range names {
				v := "NULL"
				if vals[i].Valid {
					v = strconv.Quote(vals[i].String)
				}
				b.WriteString("|" + n + "=" + v)
			}
			b.WriteString("\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}
