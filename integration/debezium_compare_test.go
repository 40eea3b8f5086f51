package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// fieldDiff is one field that differs between Debezium's event and sluice's
// at the same place of the same stream: Path is a JSON path into the event
// ("key." or "value." then members; Connect schema fields by their name,
// e.g. value.schema.fields[after].fields[biu].type); Debezium and Sluice are
// the JSON texts there ("<absent>" when one side has none). Count is how
// many events show this same difference.
type fieldDiff struct {
	Stream   string // the table, or "schema changes (snapshot|streaming)"
	Op       string
	Path     string
	Debezium string
	Sluice   string
	Count    int
}

func (d fieldDiff) String() string {
	return fmt.Sprintf("%s op=%s %s: Debezium %s, sluice %s (%d events)", d.Stream, d.Op, d.Path, clip(d.Debezium), clip(d.Sluice), d.Count)
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

const absent = "<absent>"

// debeziumExcluded is the matrix table Debezium cannot read (INET4, INET6): sluice's
// events of it are not compared.
const debeziumExcluded = "inets"

// volatile reports fields that differ between any two runs, Debezium's
// against itself too, so they are not compared: processing times, and for
// snapshot events the snapshot's start time and position (other writers on
// the server move the binlog between the two snapshots).
func volatile(path string, snapshot bool) bool {
	switch path {
	case "value.payload.ts_ms", "value.payload.ts_us", "value.payload.ts_ns":
		return true
	case "value.payload.source.ts_ms", "value.payload.source.ts_us", "value.payload.source.ts_ns",
		"value.payload.source.file", "value.payload.source.pos":
		return snapshot
	}
	return false
}

// streamOf names the stream an event belongs to and its op; events pair up
// in order within a stream.
func streamOf(v map[string]any) (stream, op string, snapshot bool) {
	payload, _ := v["payload"].(map[string]any)
	src, _ := payload["source"].(map[string]any)
	snap, _ := src["snapshot"].(string)
	snapshot = snap != "" && snap != "false"
	if _, ok := payload["ddl"]; ok || payload["tableChanges"] != nil {
		if snapshot {
			return "schema changes (snapshot)", "ddl", true
		}
		return "schema changes (streaming)", "ddl", false
	}
	table, _ := src["table"].(string)
	op, _ = payload["op"].(string)
	return table, op, snapshot
}

// sentinelDDL reports the test's own CREATE TABLE of the sentinel.
func sentinelDDL(v map[string]any) bool {
	p, _ := v["payload"].(map[string]any)
	ddl, _ := p["ddl"].(string)
	return strings.Contains(ddl, conformanceSentinel)
}

func parseJSON(b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "<invalid JSON: " + err.Error() + ">"
	}
	return v
}

// flatten writes every leaf of v under prefix into out, as JSON text.
func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[prefix] = "{}"
		}
		for k, e := range x {
			flatten(prefix+"."+k, e, out)
		}
	case []any:
		if len(x) == 0 {
			out[prefix] = "[]"
		}
		for i, e := range x {
			name := "[" + strconv.Itoa(i) + "]"
			if m, ok := e.(map[string]any); ok {
				if f, ok := m["field"].(string); ok {
					name = "[" + f + "]"
				}
			}
			flatten(prefix+name, e, out)
		}
	case json.Number:
		// JSON numbers compare by value: Jackson writes 1.0E-10 where Go
		// writes 1e-10, 0.0 where Go writes 0.
		if f, err := strconv.ParseFloat(string(x), 64); err == nil && strings.ContainsAny(string(x), ".eE") {
			out[prefix] = strconv.FormatFloat(f, 'g', -1, 64)
			return
		}
		out[prefix] = string(x)
	default:
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	}
}

// compareEventStreams pairs events per stream in order and returns every
// differing field, identical differences merged.
func compareEventStreams(dbz, sl []wireEvent, db string) []fieldDiff {
	type ev struct {
		leaves   map[string]string
		op       string
		snapshot bool
	}
	group := func(evs []wireEvent) (map[string][]ev, []string) {
		m := map[string][]ev{}
		var order []string
		for _, e := range evs {
			val := parseJSON(e.Value)
			vm, _ := val.(map[string]any)
			stream, op, snap := streamOf(vm)
			if stream == conformanceSentinel || stream == debeziumExcluded || sentinelDDL(vm) {
				continue
			}
			leaves := map[string]string{}
			flatten("key", parseJSON(e.Key), leaves)
			flatten("value", val, leaves)
			if _, ok := m[stream]; !ok {
				order = append(order, stream)
			}
			m[stream] = append(m[stream], ev{leaves, op, snap})
		}
		return m, order
	}
	dm, order := group(dbz)
	sm, sorder := group(sl)
	for _, s := range sorder {
		if _, ok := dm[s]; !ok {
			order = append(order, s)
		}
	}
	merged := map[[4]string]*fieldDiff{}
	var keys [][4]string
	add := func(d fieldDiff) {
		k := [4]string{d.Stream + "\x00" + d.Op, d.Path, d.Debezium, d.Sluice}
		if m := merged[k]; m != nil {
			m.Count++
			return
		}
		d.Count = 1
		merged[k] = &d
		keys = append(keys, k)
	}
	for _, stream := range order {
		de, se := dm[stream], sm[stream]
		for i := 0; i < max(len(de), len(se)); i++ {
			switch {
			case i >= len(se):
				add(fieldDiff{Stream: stream, Op: de[i].op, Path: "event", Debezium: "present", Sluice: absent})
				continue
			case i >= len(de):
				add(fieldDiff{Stream: stream, Op: se[i].op, Path: "event", Debezium: absent, Sluice: "present"})
				continue
			}
			a, b := de[i], se[i]
			op := a.op
			if a.op != b.op {
				op = a.op + "/" + b.op
			}
			for _, p := range unionKeys(a.leaves, b.leaves) {
				if volatile(p, a.snapshot || b.snapshot) {
					continue
				}
				av, ok := a.leaves[p]
				if !ok {
					av = absent
				}
				bv, ok := b.leaves[p]
				if !ok {
					bv = absent
				}
				if av != bv {
					add(fieldDiff{Stream: stream, Op: op, Path: p, Debezium: av, Sluice: bv})
				}
			}
		}
	}
	out := make([]fieldDiff, 0, len(keys))
	for _, k := range keys {
		out = append(out, *merged[k])
	}
	return out
}

func unionKeys(a, b map[string]string) []string {
	ks := make([]string, 0, len(a))
	for k := range a {
		ks = append(ks, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return ks
}

// difference is one entry of testdata/debezium/differences.yaml: a
// deliberate difference from Debezium's defaults, why, and the option that
// gives Debezium's behaviour ("none" where there is none).
type difference struct {
	ID      string   `yaml:"id"`
	Paths   []string `yaml:"paths"`   // patterns of fieldDiff.Path; * matches any run of characters
	Streams []string `yaml:"streams"` // patterns of fieldDiff.Stream; empty: any
	Ops     []string `yaml:"ops"`     // empty: any
	// Debezium and Sluice are patterns of the two values; empty: any.
	Debezium string `yaml:"debezium"`
	Sluice   string `yaml:"sluice"`
	Reason   string `yaml:"reason"`
	Switch   string `yaml:"switch"`
	// Flavors are the sources (mariadb, mysql) whose Debezium connector
	// differs so; empty: both.
	Flavors []string `yaml:"flavors"`
}

type differences []difference

func loadDifferences(t testing.TB) differences {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "debezium", "differences.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ds differences
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&ds); err != nil {
		t.Fatalf("testdata/debezium/differences.yaml: %v", err)
	}
	for _, d := range ds {
		if d.ID == "" || len(d.Paths) == 0 || strings.TrimSpace(d.Reason) == "" || strings.TrimSpace(d.Switch) == "" {
			t.Fatalf("testdata/debezium/differences.yaml: entry %q needs id, paths, reason and switch", d.ID)
		}
	}
	return ds
}

// of keeps the entries that apply to flavor.
func (ds differences) of(flavor string) differences {
	var out differences
	for _, d := range ds {
		if len(d.Flavors) == 0 || matchAny(d.Flavors, flavor) {
			out = append(out, d)
		}
	}
	return out
}

// withoutSwitch keeps the entries whose difference no option removes:
// with Debezium's option values set, only those may remain.
func (ds differences) withoutSwitch() differences {
	var out differences
	for _, d := range ds {
		if strings.HasPrefix(d.Switch, "none") {
			out = append(out, d)
		}
	}
	return out
}

// explains returns the entry that documents d, or nil.
func (ds differences) explains(d fieldDiff) *difference {
	for i := range ds {
		e := &ds[i]
		if matchAny(e.Paths, d.Path) && (len(e.Streams) == 0 || matchAny(e.Streams, d.Stream)) && (len(e.Ops) == 0 || matchAny(e.Ops, d.Op)) &&
			(e.Debezium == "" || globMatch(e.Debezium, d.Debezium)) && (e.Sluice == "" || globMatch(e.Sluice, d.Sluice)) {
			return e
		}
	}
	return nil
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if globMatch(p, s) {
			return true
		}
	}
	return false
}

// globMatch matches s against p, where * is any run of characters.
func globMatch(p, s string) bool {
	parts := strings.Split(p, "*")
	if len(parts) == 1 {
		return p == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		ok   bool
	}{{"a.b", "a.b", true}, {"a.*", "a.b.c", true}, {"*.ts_ms", "value.payload.ts_ms", true}, {"a*c*e", "abcde", true},
		{"a*c*e", "abcd", false}, {"value.schema.fields[after].fields[*].name", "value.schema.fields[after].fields[x].name", true}} {
		if globMatch(c.p, c.s) != c.ok {
			t.Errorf("globMatch(%q, %q) = %v", c.p, c.s, !c.ok)
		}
	}
}

// The comparer reports a differing field with its path and both values,
// an event only one side has, and nothing for fields it must not compare.
func TestCompareEventStreams(t *testing.T) {
	ev := func(op, after, tsMs string) wireEvent {
		return wireEvent{Key: json.RawMessage(`{"payload":{"id":1}}`), Value: json.RawMessage(
			`{"schema":{"type":"struct","fields":[{"type":"struct","field":"after","fields":[{"type":"int16","field":"ti"}]}]},` +
				`"payload":{"op":"` + op + `","after":` + after + `,"ts_ms":` + tsMs + `,"source":{"table":"t","snapshot":"false"}}}`)}
	}
	dbz := []wireEvent{ev("c", `{"ti":1.0E0}`, "1"), ev("u", `{"ti":2}`, "1")}
	sl := []wireEvent{ev("c", `{"ti":1}`, "2"), ev("u", `{"ti":3}`, "2"), ev("d", `null`, "2")}
	diffs := compareEventStreams(dbz, sl, "db")
	want := []fieldDiff{{Stream: "t", Op: "u", Path: "value.payload.after.ti", Debezium: "2", Sluice: "3", Count: 1},
		{Stream: "t", Op: "d", Path: "event", Debezium: absent, Sluice: "present", Count: 1}}
	if fmt.Sprint(diffs) != fmt.Sprint(want) {
		t.Fatalf("diffs %v\nwant %v", diffs, want)
	}
	ds := differences{{ID: "x", Paths: []string{"value.payload.after.*"}, Sluice: "3", Reason: "r", Switch: "none"}}
	if ds.explains(diffs[0]) == nil || ds.explains(diffs[1]) != nil {
		t.Fatal("explains matched the wrong differences")
	}
}
