package sink

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
	"github.com/sluicecdc/sluice/sink/mysql"
	"github.com/sluicecdc/sluice/sink/postgres"
)

// The type tables of docs/type-mapping.md (the target half) against each
// dialect's type registry: every row's schema type goes through the
// dialect's ColumnType and must give the type the row names. Placeholders
// in the tables are filled from the schemas built here: (p,s) is (10,2),
// (n) is (5), (fsp) is (3).

// readmeTable returns the rows (cells, trimmed) of the Markdown table that
// follows the line starting with heading.
func readmeTable(t *testing.T, readme, heading string) [][]string {
	t.Helper()
	i := strings.Index(readme, heading)
	if i < 0 {
		t.Fatalf("docs/type-mapping.md has no %q", heading)
	}
	var rows [][]string
	started := false
	for _, line := range strings.Split(readme[i:], "\n")[1:] {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if started {
				break
			}
			continue
		}
		started = true
		if strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
	}
	if len(rows) < 2 {
		t.Fatalf("docs/type-mapping.md: the table after %q has no rows", heading)
	}
	return rows[1:] // without the header
}

var firstCode = regexp.MustCompile("`([^`]*)`")

// readmeType is the first `code` of a cell with the placeholders filled.
func readmeType(cell string) string {
	m := firstCode.FindStringSubmatch(cell)
	if m == nil {
		return ""
	}
	return strings.NewReplacer("(p,s)", "(10,2)", "(n)", "(5)", "(fsp)", "(3)").Replace(m[1])
}

// readmeSchema builds the schema a table's schema name stands for; source
// is the source type to give it ("" for none). ok is false for names the
// test does not know, which fails the test: a new row needs a schema here.
func readmeSchema(name, source string) (*schema.Schema, bool) {
	var s *schema.Schema
	switch name {
	case "int8", "int16", "int32", "int64", "uint64", "float32", "float64", "string", "bytes", "boolean":
		typ := map[string]schema.Type{"int8": schema.Int8, "int16": schema.Int16, "int32": schema.Int32, "int64": schema.Int64, "uint64": schema.Uint64,
			"float32": schema.Float32, "float64": schema.Float64, "string": schema.String, "bytes": schema.Bytes, "boolean": schema.Bool}[name]
		s = schema.Primitive(typ, true)
		s.Params = map[string]string{schema.ParamLength: "5"}
	case "decimal":
		s = schema.DecimalSchema(10, 2, true)
	case "bits":
		s = &schema.Schema{Type: schema.Int64, Logical: schema.Bits, Optional: true, Params: map[string]string{schema.ParamLength: "5"}}
	case "year":
		s = &schema.Schema{Type: schema.Int32, Logical: schema.Year, Optional: true}
	case "date":
		s = &schema.Schema{Type: schema.Int32, Logical: schema.Date, Optional: true}
	case "time":
		s = &schema.Schema{Type: schema.Int64, Logical: schema.Time, Optional: true}
	case "timestamp":
		s = &schema.Schema{Type: schema.Int64, Logical: schema.Timestamp, Optional: true}
	case "zoned_timestamp":
		s = &schema.Schema{Type: schema.Int64, Logical: schema.ZonedTimestamp, Optional: true}
	case "json":
		s = &schema.Schema{Type: schema.String, Logical: schema.Json, Optional: true}
	case "enum":
		s = &schema.Schema{Type: schema.String, Logical: schema.Enum, Optional: true, Params: map[string]string{schema.ParamAllowed: "a,b"}}
	case "set":
		s = &schema.Schema{Type: schema.String, Logical: schema.Set, Optional: true, Params: map[string]string{schema.ParamAllowed: "a,b"}}
	case "geometry":
		s = &schema.Schema{Type: schema.Bytes, Logical: schema.Geometry, Optional: true}
	default:
		return nil, false
	}
	if source != "" {
		if s.Params == nil {
			s.Params = map[string]string{}
		}
		s.Params[schema.ParamSourceType] = source
	}
	return s, true
}

// A source type of each PostgreSQL row's schema: the PostgreSQL table's
// precision comes from it (fsp 3).
var readmeSources = map[string]string{"time": "time(3)", "timestamp": "datetime(3)", "zoned_timestamp": "timestamp(3)"}

func TestReadmeTypeTables(t *testing.T) {
	b, err := os.ReadFile("../docs/type-mapping.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	ext := regexp.MustCompile(`^string \(source type (.*)\)$`)
	extMy := regexp.MustCompile(`^string of a MariaDB (.*)$`)
	codes := func(s string) []string {
		var out []string
		for _, m := range firstCode.FindAllStringSubmatch(s, -1) {
			out = append(out, strings.ToLower(m[1]))
		}
		return out
	}
	check := func(d dialect.Dialect, row string, s *schema.Schema, key bool, want string) {
		t.Helper()
		got, err := d.ColumnType("c", s, key)
		if err != nil || got != want {
			t.Errorf("docs/type-mapping.md %s row %q (key %v): the registry gives %q (%v), the table %q", d.Name(), row, key, got, err, want)
		}
	}

	pg := postgres.New(dialect.Options{TimeAsInterval: DefaultConfig().TimeAsInterval})
	n := 0
	for _, r := range readmeTable(t, readme, "**MySQL/MariaDB → PostgreSQL**") {
		if len(r) < 3 {
			t.Fatalf("PostgreSQL table row %q: want 4 cells", r)
		}
		name, want := r[1], readmeType(r[2])
		if m := ext.FindStringSubmatch(name); m != nil {
			for _, src := range codes(m[1]) {
				s, _ := readmeSchema("string", src)
				check(pg, name, s, false, want)
				n++
			}
			continue
		}
		s, ok := readmeSchema(name, readmeSources[name])
		if !ok {
			t.Errorf("PostgreSQL table row %q: schema %q unknown to this test", r[0], name)
			continue
		}
		check(pg, name, s, false, want)
		n++
		if name == "time" && strings.Contains(r[2], "`TIME(fsp)` with `time_as_interval: false`") {
			check(postgres.New(dialect.Options{}), name+" with time_as_interval: false", s, false, "TIME(3)")
		}
	}

	my := mysql.New(dialect.Options{})
	for _, r := range readmeTable(t, readme, "**MySQL/MariaDB → MySQL/MariaDB**") {
		if len(r) < 3 {
			t.Fatalf("MySQL table row %q: want 3 cells", r)
		}
		names := strings.Split(r[0], " / ")
		types := strings.Split(r[1], " / ")
		var sources []string
		if m := extMy.FindStringSubmatch(r[0]); m != nil {
			sources = codes(m[1])
			names = make([]string, len(sources))
			for i := range names {
				names[i] = "string"
			}
		}
		for len(types) < len(names) && len(types) == 1 {
			types = append(types, types[0]) // one type for every schema of the row
		}
		if len(types) != len(names) {
			t.Errorf("MySQL table row %q: %d schemas, %d types", r[0], len(names), len(types))
			continue
		}
		for i, name := range names {
			want := readmeType(types[i])
			keyWant := want
			if r[2] != "same" {
				keyWant = readmeType(r[2])
			}
			src := ""
			if sources != nil {
				src = sources[i]
			}
			s, ok := readmeSchema(name, src)
			if !ok {
				t.Errorf("MySQL table row %q: schema %q unknown to this test", r[0], name)
				continue
			}
			check(my, name, s, false, want)
			check(my, name, s, true, keyWant)
			n++
		}
	}
	if n < 35 {
		t.Fatalf("checked only %d type rows of docs/type-mapping.md", n)
	}
}
