package sink

import (
	"fmt"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// Dialects.
const (
	DialectPostgres = "postgres"
	DialectMySQL    = "mysql"
)

// Config configures a Sink. Start from DefaultConfig.
type Config struct {
	Dialect  string // "postgres" or "mysql" (MySQL and MariaDB)
	DSN      string // lib/pq DSN or go-sql-driver DSN
	Pipeline string // pipeline name, the first key column of the progress table
	// SchemaTemplate names the target schema (PostgreSQL) or database
	// (MySQL); placeholders ${db} (source database) and ${table} (source
	// table). Unset ("") means "${db}". To write into the connection's
	// default schema or database, name it (e.g. "public").
	SchemaTemplate string
	TableTemplate  string // target table name; default "${table}"
	AutoCreate     bool   // create missing schemas and tables (with primary key)
	AutoEvolve     bool   // add columns that records carry and the table lacks
	BatchSize      int    // rows per statement, default 500
	// ProgressTable is the name of the progress table in the connection's
	// default schema or database; default "sluice_progress".
	ProgressTable string
	// CopyThreshold enables the PostgreSQL fast path: upserts of at least
	// this many rows of one table and shape go through COPY into a temporary
	// table and one INSERT … SELECT … ON CONFLICT (measured 1.7-1.9× the
	// rows/s of multi-row VALUES upserts). 0 means the default, 1000; a
	// negative value disables the fast path.
	CopyThreshold int
	// TimeAsInterval maps source TIME columns (schema.Time: durations that
	// may be negative or beyond 24 hours, MySQL's -838:59:59..838:59:59) to
	// PostgreSQL INTERVAL instead of TIME(6), so every value fits. Off (the
	// default), values outside 00:00:00..24:00:00 are a fatal ErrValue.
	// It applies to columns the sink creates or adds; an existing column
	// keeps its type. MySQL targets always use TIME(6), which holds the
	// whole source range.
	TimeAsInterval bool
}

// DefaultConfig returns a Config with the documented defaults; set Dialect,
// DSN and Pipeline.
func DefaultConfig() Config {
	return Config{
		SchemaTemplate: "${db}",
		TableTemplate:  "${table}",
		AutoCreate:     true,
		AutoEvolve:     true,
		BatchSize:      500,
		ProgressTable:  "sluice_progress",
		CopyThreshold:  1000,
	}
}

func (c *Config) normalize() error {
	switch c.Dialect {
	case DialectPostgres, "postgresql", "pg":
		c.Dialect = DialectPostgres
	case DialectMySQL, "mariadb":
		c.Dialect = DialectMySQL
	default:
		return fmt.Errorf("%w: dialect %q: use %q or %q", ErrConfig, c.Dialect, DialectPostgres, DialectMySQL)
	}
	if c.DSN == "" {
		return fmt.Errorf("%w: DSN is empty", ErrConfig)
	}
	if c.Pipeline == "" {
		return fmt.Errorf("%w: pipeline name is empty (it keys the progress table)", ErrConfig)
	}
	if c.SchemaTemplate == "" {
		c.SchemaTemplate = "${db}"
	}
	if c.TableTemplate == "" {
		c.TableTemplate = "${table}"
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 500
	}
	if c.ProgressTable == "" {
		c.ProgressTable = "sluice_progress"
	}
	if c.CopyThreshold == 0 {
		c.CopyThreshold = 1000
	}
	for _, t := range []string{c.SchemaTemplate, c.TableTemplate} {
		if err := checkTemplate(t); err != nil {
			return err
		}
	}
	return nil
}

func checkTemplate(t string) error {
	rest := t
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			return nil
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return fmt.Errorf("%w: template %q has an unclosed ${", ErrConfig, t)
		}
		switch rest[i : i+j+1] {
		case "${db}", "${table}":
		default:
			return fmt.Errorf("%w: template %q: unknown placeholder %s (use ${db} or ${table})", ErrConfig, t, rest[i:i+j+1])
		}
		rest = rest[i+j+1:]
	}
}

func expand(t string, id schema.TableID) string {
	if !strings.Contains(t, "${") {
		return t
	}
	return strings.NewReplacer("${db}", id.Database, "${table}", id.Table).Replace(t)
}

// target names a table in the target: Schema may be "" for the default.
type target struct {
	Schema string
	Table  string
}

func (t target) String() string {
	if t.Schema == "" {
		return t.Table
	}
	return t.Schema + "." + t.Table
}

func (c *Config) target(id schema.TableID) target {
	return target{Schema: expand(c.SchemaTemplate, id), Table: expand(c.TableTemplate, id)}
}
