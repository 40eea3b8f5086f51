package postgres

import (
	"fmt"
	"strings"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// The type registry: schema to PostgreSQL column type, and column types as text.

// columnType maps a schema to a PostgreSQL column type. Bits become
// BIT VARYING(n): the value is written as a bit string of exactly n digits,
// so it reads back with its width (BIGINT would lose it).
func (d Dialect) ColumnType(col string, s *schema.Schema, key bool) (string, error) {
	if t, ok := extColumnType(s); ok {
		return t, nil
	}
	switch s.Logical {
	case schema.Decimal:
		p, sc, err := dialect.PrecisionScale(s)
		if err != nil {
			return "", fmt.Errorf("column %q: %w", col, err)
		}
		if p <= 0 {
			return "NUMERIC", nil
		}
		return fmt.Sprintf("NUMERIC(%d,%d)", p, sc), nil
	case schema.Date:
		return "DATE", nil
	case schema.Time:
		if d.interval {
			return "INTERVAL", nil
		}
		return fmt.Sprintf("TIME(%d)", dialect.FractionDigits(s)), nil
	case schema.Timestamp:
		return fmt.Sprintf("TIMESTAMP(%d)", dialect.FractionDigits(s)), nil
	case schema.ZonedTimestamp:
		return fmt.Sprintf("TIMESTAMPTZ(%d)", dialect.FractionDigits(s)), nil
	case schema.Json:
		return "JSONB", nil
	case schema.Enum:
		return "TEXT", nil
	case schema.Set:
		return "TEXT[]", nil
	case schema.Bits:
		return fmt.Sprintf("BIT VARYING(%d)", dialect.BitLength(s)), nil
	case schema.Year:
		return "SMALLINT", nil
	case schema.Geometry:
		return "BYTEA", nil
	}
	switch s.Type {
	case schema.Int8, schema.Int16:
		return "SMALLINT", nil
	case schema.Int32:
		return "INTEGER", nil
	case schema.Int64:
		return "BIGINT", nil
	case schema.Uint64:
		return "NUMERIC(20)", nil
	case schema.Float32:
		return "REAL", nil
	case schema.Float64:
		return "DOUBLE PRECISION", nil
	case schema.Bool:
		return "BOOLEAN", nil
	case schema.String:
		return "TEXT", nil
	case schema.Bytes:
		return "BYTEA", nil
	}
	return "", fmt.Errorf("%w: column %q: no PostgreSQL type for %s", dialect.ErrSchema, col, s)
}

// extColumnType is the target type of a string column that holds a
// MariaDB UUID, INET6 or INET4 value as text (source.type uuid, inet6,
// inet4): PostgreSQL's own uuid and inet types, which compare and index
// the values as the source does.
func extColumnType(s *schema.Schema) (string, bool) {
	if s.Type != schema.String {
		return "", false
	}
	switch strings.ToLower(strings.TrimSpace(s.Param(schema.ParamSourceType))) {
	case "uuid":
		return "UUID", true
	case "inet6", "inet4":
		return "INET", true
	}
	return "", false
}

var pgNames = map[string]string{
	"smallint": "smallint", "int2": "smallint",
	"integer": "integer", "int": "integer", "int4": "integer",
	"bigint": "bigint", "int8": "bigint",
	"numeric": "numeric", "decimal": "numeric",
	"real": "real", "float4": "real",
	"double precision": "double precision", "float8": "double precision", "float": "double precision",
	"character varying": "varchar", "varchar": "varchar",
	"character": "char", "char": "char", "bpchar": "char",
	"text": "text",
	"bit":  "bit", "bit varying": "varbit", "varbit": "varbit",
	"time": "time", "time without time zone": "time", "time with time zone": "timetz", "timetz": "timetz",
	"timestamp": "timestamp", "timestamp without time zone": "timestamp",
	"timestamp with time zone": "timestamptz", "timestamptz": "timestamptz",
	"boolean": "boolean", "bool": "boolean",
}

// parsePGType parses a PostgreSQL type as format_type prints it or as
// columnType writes it ("NUMERIC(5,2)", "TIMESTAMPTZ(6)", "TEXT[]").
// Types it does not know keep their normalised text as base, so they still
// compare equal to themselves.
func parsePGType(s string) (dialect.ColType, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	var t dialect.ColType
	for strings.HasSuffix(s, "]") {
		i := strings.LastIndexByte(s, '[')
		if i < 0 {
			return dialect.ColType{}, false
		}
		s, t.Array = strings.TrimSpace(s[:i]), true
	}
	w, inner, has, ok := dialect.SplitParens(s, false)
	if !ok || strings.ContainsAny(w, "[]") {
		return dialect.ColType{}, false
	}
	w = dialect.Words(w)
	if w == "" {
		return dialect.ColType{}, false
	}
	name, known := pgNames[w]
	if !known {
		t.Base = w
		if has {
			t.Base += "(" + dialect.Words(inner) + ")"
		}
		return t, true
	}
	t.Base = name
	if has {
		if t.Args, ok = dialect.IntArgs(inner); !ok {
			return dialect.ColType{}, false
		}
	}
	switch name {
	case "numeric":
		if len(t.Args) == 1 {
			t.Args = append(t.Args, 0)
		}
	case "time", "timetz", "timestamp", "timestamptz":
		if t.Args == nil {
			t.Args = []int{6} // no typmod: microseconds
		}
		if len(t.Args) != 1 {
			return dialect.ColType{}, false
		}
	case "char", "bit":
		if t.Args == nil {
			t.Args = []int{1}
		}
		if len(t.Args) != 1 {
			return dialect.ColType{}, false
		}
	case "varchar", "varbit":
		if len(t.Args) > 1 {
			return dialect.ColType{}, false
		}
	case "double precision":
		if w == "float" && len(t.Args) == 1 {
			if t.Args[0] <= 24 {
				t.Base = "real"
			}
			t.Args = nil
		}
		if t.Args != nil {
			return dialect.ColType{}, false
		}
	default:
		if t.Args != nil {
			return dialect.ColType{}, false
		}
	}
	if name == "varchar" && t.Args == nil {
		t.Base = "text" // unbounded varchar is text to PostgreSQL
	}
	return t, true
}

// widenPG decides what turning a PostgreSQL column of type cur into want
// means; both are type texts.
func widenPG(cur, want string) dialect.TypeChange {
	return dialect.CompareTypes(cur, want, parsePGType, pgChange)
}

func pgChange(c, w dialect.ColType) dialect.TypeChange {
	// SET columns became TEXT[]; tables made before keep text.
	if w.Array && w.Base == "text" && !c.Array && (c.Base == "text" || c.Base == "varchar" || c.Base == "char") {
		return dialect.TypeKeep
	}
	if c.Array || w.Array {
		return dialect.TypeDiffer
	}
	if pgWidens(c, w) {
		return dialect.TypeWiden
	}
	// Times and timestamps made with six fraction digits before the
	// source's own precision was used hold every value of a narrower one.
	if fractional(c.Base) && w.Base == c.Base && len(c.Args) == 1 && len(w.Args) == 1 && c.Args[0] >= w.Args[0] {
		return dialect.TypeKeep
	}
	return dialect.TypeDiffer
}

func fractional(base string) bool {
	switch base {
	case "time", "timetz", "timestamp", "timestamptz":
		return true
	}
	return false
}

func pgWidens(c, w dialect.ColType) bool {
	rank := map[string]int{"smallint": 1, "integer": 2, "bigint": 3}
	switch c.Base {
	case "smallint", "integer", "bigint":
		switch w.Base {
		case "smallint", "integer", "bigint":
			return rank[w.Base] > rank[c.Base]
		case "numeric":
			return w.Args == nil || w.Args[0]-w.Args[1] >= dialect.IntDigits(c.Base, false)
		case "double precision":
			return c.Base != "bigint" // 53-bit mantissa
		case "real":
			return c.Base == "smallint" // 24-bit mantissa
		}
	case "numeric":
		return w.Base == "numeric" && dialect.DecimalHolds(c.Args, w.Args)
	case "real":
		return w.Base == "double precision"
	case "varchar":
		return w.Base == "text" || (w.Base == "varchar" && w.Args[0] > c.Args[0])
	case "char":
		switch w.Base {
		case "text":
			return true
		case "varchar":
			return w.Args[0] >= c.Args[0]
		case "char":
			return w.Args[0] > c.Args[0]
		}
	case "varbit":
		return w.Base == "varbit" && c.Args != nil && (w.Args == nil || w.Args[0] > c.Args[0])
	case "bit":
		// bit(n) into bit(m) pads or refuses: only bit varying keeps the bits.
		return w.Base == "varbit" && (w.Args == nil || w.Args[0] >= c.Args[0])
	case "time", "timetz", "timestamp", "timestamptz":
		if c.Base == "time" && w.Base == "interval" {
			// time_as_interval set after the table was made: every TIME
			// value is an INTERVAL (PostgreSQL casts it implicitly)
			return true
		}
		return w.Base == c.Base && len(c.Args) == 1 && len(w.Args) == 1 && w.Args[0] > c.Args[0]
	}
	return false
}
