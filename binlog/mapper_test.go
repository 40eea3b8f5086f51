package binlog

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/sluicecdc/sluice/schema"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const fixtureFile = "testdata/mariadb-10.11.binlog"

// fixtureEvents parses the recorded MariaDB binlog the way the syncer does.
func fixtureEvents(t testing.TB) []*replication.BinlogEvent {
	t.Helper()
	p := newParser()
	var evs []*replication.BinlogEvent
	err := p.ParseFile(fixtureFile, 0, func(e *replication.BinlogEvent) error {
		evs = append(evs, e)
		return nil
	})
	if err != nil {
		t.Fatalf("parse %s: %v", fixtureFile, err)
	}
	return evs
}

func newParser() *replication.BinlogParser {
	p := replication.NewBinlogParser()
	p.SetFlavor(FlavorMariaDB)
	p.SetUseDecimal(false) // as Source.syncerConfig
	p.SetRenderJSONAsMySQLText(true)
	p.SetRowsEventDecodeFunc(decodeRowsEvent)
	p.SetParseTime(true)
	return p
}

var fixedNow = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func fixtureMapper(t testing.TB) *mapper {
	t.Helper()
	m, err := newMapper(mapperConfig{Flavor: FlavorMariaDB, ServerName: "fxsrv", Include: []string{"fx.*"}, ZeroAsNull: true, Now: fixedNow},
		Position{Flavor: FlavorMariaDB, GTIDSet: "0-1-5", File: "mysql-bin.000002", Pos: 4})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mapAll(t testing.TB, m *mapper, evs []*replication.BinlogEvent) []schema.Record {
	t.Helper()
	var out []schema.Record
	for _, ev := range evs {
		var err error
		if out, err = m.Map(ev, out); err != nil {
			t.Fatalf("map %s at %d: %v", ev.Header.EventType, ev.Header.LogPos, err)
		}
	}
	return out
}

// renderValue prints a value with its Go type, so the golden file pins the
// representation and not only the text.
func renderValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case []byte:
		return fmt.Sprintf("[]byte(%x)", x)
	case schema.Geom:
		return fmt.Sprintf("geom(srid %d, %x)", x.SRID, x.WKB)
	case string:
		return fmt.Sprintf("%q", x)
	case schema.Dec:
		return "Dec(" + x.String() + ")"
	default:
		return fmt.Sprintf("%T(%v)", v, v)
	}
}

func renderRow(s *schema.Schema, r schema.Row) string {
	if r == nil {
		return "nil"
	}
	var b strings.Builder
	for i, v := range r {
		name := fmt.Sprint(i)
		if s != nil && i < len(s.Fields) {
			name = s.Fields[i].Name
		}
		fmt.Fprintf(&b, "\n    %s=%s", name, renderValue(v))
	}
	return b.String()
}

func renderRecords(recs []schema.Record) string {
	var b strings.Builder
	seen := map[*schema.Schema]bool{}
	for _, r := range recs {
		if r.ValueSchema != nil && !seen[r.ValueSchema] {
			seen[r.ValueSchema] = true
			fmt.Fprintf(&b, "SCHEMA %s %s\n  key %s %s\n", r.ValueSchema.Name, r.ValueSchema, r.KeySchema.String(), keyName(r.KeySchema))
			for _, f := range r.ValueSchema.Fields {
				fmt.Fprintf(&b, "  %s %s %v\n", f.Name, f.Schema, f.Schema.Params)
			}
		}
		fmt.Fprintf(&b, "%s %s", r.Op, r.Table)
		if r.Transaction != nil {
			fmt.Fprintf(&b, " tx=%s/%d/%d", r.Transaction.ID, r.Transaction.TotalOrder, r.Transaction.DataCollectionOrder)
		}
		s := r.Source
		fmt.Fprintf(&b, " src=%s,%s,ts=%d,sid=%d,gtid=%s,%s:%d,row=%d ts=%d", s.Connector, s.Name, s.TsMs, s.ServerID, s.GTID, s.File, s.Pos, s.Row, r.TsMs)
		if r.Position != nil {
			fmt.Fprintf(&b, " position=%s", r.Position)
		}
		if r.Change != nil {
			fmt.Fprintf(&b, " ddl=%s %q", r.Change.Kind, r.Change.DDL)
		}
		if len(r.Headers) > 0 {
			fmt.Fprintf(&b, " headers=%v", r.Headers)
		}
		if r.Op.IsData() {
			fmt.Fprintf(&b, "\n  key=%q\n  before=%s\n  after=%s", r.KeyString(), renderRow(r.ValueSchema, r.Before), renderRow(r.ValueSchema, r.After))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func keyName(s *schema.Schema) string {
	if s == nil {
		return ""
	}
	return s.Name
}

func checkGolden(t *testing.T, name string, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it); got:\n%s", path, got)
	}
}

func TestMapFixtureGolden(t *testing.T) {
	recs := mapAll(t, fixtureMapper(t), fixtureEvents(t))
	checkGolden(t, "mariadb-10.11.records.golden", renderRecords(recs))
}

// sameKey answers as comparing keyText's texts does, for the typed fast
// cases, mixed types and the fallback.
func TestSameKeyAsKeyText(t *testing.T) {
	vals := []any{int64(1), int64(2), uint64(1), "1", "a|b", "", []byte("1"), schema.MustDec("1.0"), nil, 1.0}
	for _, a := range vals {
		for _, b := range vals {
			for _, pair := range [][2]schema.Row{{{a}, {b}}, {{int64(7), a}, {int64(7), b}}, {{a, "x"}, {b, "y"}}, {{a}, {a, b}}} {
				want := keyText(pair[0]) == keyText(pair[1])
				if got := sameKey(pair[0], pair[1]); got != want {
					t.Errorf("sameKey(%#v, %#v) = %v, keyText says %v", pair[0], pair[1], got, want)
				}
			}
		}
	}
}
