package app

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/cluster"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/plugin"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema/secure"
	"github.com/sluicecdc/sluice/sink"
)

// positionsConfig is the positions section: type file (dir), or postgres
// or mysql (dsn, table: positions in a database, fenced per run).
type positionsConfig struct {
	Dir   string `yaml:"dir"`
	DSN   string `yaml:"dsn"`
	Table string `yaml:"table"`
	typ   string
}

// where says where the positions are kept: the resolved folder, or the
// table (never the DSN, which may hold a password).
func (c positionsConfig) where() string {
	if c.typ == "file" || c.typ == "" {
		if abs, err := filepath.Abs(c.Dir); err == nil {
			return "folder " + abs
		}
		return "folder " + c.Dir
	}
	table := c.Table
	if table == "" {
		table = "sluice_positions"
	}
	return c.typ + " table " + table
}

// resettableStore is a position store that `positions reset` can clear.
type resettableStore interface {
	runtime.PositionStore
	Reset(ctx context.Context, pipeline string) error
}

// sqlStores holds one SQLStore per database and table for the process: a
// restarted pipeline reuses it (and claims again) instead of opening
// another connection pool.
var sqlStores sync.Map

// openPositions opens the configured position store.
func openPositions(ctx context.Context, c positionsConfig) (resettableStore, error) {
	if c.typ == "file" || c.typ == "" {
		return storage.NewFileStore(c.Dir)
	}
	key := c.typ + "\x00" + c.DSN + "\x00" + c.Table
	if s, ok := sqlStores.Load(key); ok {
		return s.(*storage.SQLStore), nil
	}
	s, err := storage.NewSQLStore(ctx, c.typ, c.DSN, c.Table)
	if err != nil {
		// Drivers quote an unparseable DSN, password included.
		return nil, secure.RedactDSNError(err, c.DSN)
	}
	if prev, loaded := sqlStores.LoadOrStore(key, s); loaded {
		s.Close()
		return prev.(*storage.SQLStore), nil
	}
	return s, nil
}

// loadSourcePosition is the saved position of cfg's source in store. Of a
// replicator split into tasks (tasks: N, whose positions section names
// the positions table of the worker cluster's coordinator), it is the
// positions of its tasks merged (rocketmq.MergePositions), each queue
// once. strict: nil while a task has saved none, as a switchover must
// wait for every task; otherwise the tasks that saved one.
func loadSourcePosition(ctx context.Context, store runtime.PositionStore, cfg *plugin.Config, strict bool) ([]byte, error) {
	n := 1
	if cfg.Source != nil {
		var err error
		if n, err = cfg.Source.Tasks(); err != nil {
			return nil, err
		}
	}
	if n <= 1 {
		return store.Load(ctx, cfg.Name)
	}
	var saved [][]byte
	for _, row := range cluster.SourcePositionRows(cfg.Name, n) {
		pos, err := store.Load(ctx, row)
		if err != nil {
			return nil, err
		}
		if len(pos) == 0 && strict {
			return nil, nil
		}
		if len(pos) > 0 {
			saved = append(saved, engine.SourcePosition(pos))
		}
	}
	if len(saved) == 0 {
		return nil, nil
	}
	return rocketmq.MergePositions(saved)
}

// positionsOf is the positions section of the task being built.
func positionsOf(t *plugin.Task) positionsConfig {
	if p, ok := plugin.SectionConfig[positionsConfig](t, "positions"); ok {
		return *p
	}
	return positionsConfig{}
}

// decodePositions decodes and checks the positions section, and protects
// a positions table in the sink's target.
func (d *decoded) decodePositions(cfg *plugin.Config) error {
	if cfg.Positions != nil {
		if err := cfg.Positions.Decode(&d.positions); err != nil {
			return err
		}
		d.positions.typ = cfg.Positions.Type
		if err := d.positions.check(cfg.Positions); err != nil {
			return err
		}
	}
	d.positions.Dir = cfg.Resolve(d.positions.Dir)
	if cfg.Positions != nil {
		table := d.positions.Table
		if table == "" {
			table = "sluice_positions"
		}
		d.protectInTarget(table)
	}
	return nil
}

// check checks the keys of positions of c's type.
func (c *positionsConfig) check(sec *plugin.Section) error {
	switch c.typ {
	case "file":
		if c.DSN != "" || c.Table != "" {
			return sec.Err("type", "dsn and table are for positions of type postgres or mysql; type file takes dir")
		}
	case "postgres", "mysql":
		if c.DSN == "" {
			return sec.Err("dsn", fmt.Sprintf("positions of type %s need a dsn (the sink's target is a good place)", c.typ))
		}
		if err := sink.CheckDSN(c.typ, c.DSN); err != nil {
			return sec.Explain(err, c)
		}
		if err := storage.CheckSQLStoreTable(c.Table); err != nil {
			return sec.Explain(err, c)
		}
	default:
		return sec.Err("type", fmt.Sprintf("unknown positions type %q (known: file, postgres, mysql)", sec.Type))
	}
	return nil
}

// positionsKeys documents the positions section's keys (positionsConfig;
// its type is the section's).
var positionsKeys = plugin.KeyDocs{
	"type":  {Doc: "Where the source's position is kept: files in a folder, or a table of a PostgreSQL or MySQL database (fenced per run)."},
	"dir":   {Doc: "Type file: folder of the position files, relative to the config's folder.", Default: "positions"},
	"dsn":   {Doc: "Type postgres or mysql: connection string of the database that keeps the positions (the sink's target is a good place)."},
	"table": {Doc: "Type postgres or mysql: table of the positions, optionally qualified by a schema (PostgreSQL) or database (MySQL).", Default: "sluice_positions"},
}

// positionsSpec describes the positions section as a plugin's spec (for
// the configuration reference; the command decodes it itself).
func positionsSpec() plugin.Plugin {
	return plugin.Spec[positionsConfig]{Kind: "positions", Name: "positions", Types: []string{"file", "postgres", "mysql"},
		Keys: positionsKeys}.Plugin()
}
