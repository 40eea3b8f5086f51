package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// The progress table keys a queue by (pipeline, topic, queue). A queue of
// a transport with several brokers stores its topic as "topic@broker"
// (RocketMQ topic names cannot hold '@'), so queues with the same number on
// two brokers keep apart.
func (k progressKey) stored() string {
	if k.Broker == "" {
		return k.Topic
	}
	return k.Topic + "@" + k.Broker
}

// createProgress creates the progress table, or brings one of the shape
// before record IDs (an int last_offset per queue) to the current one: such
// offsets cannot be turned into IDs, so its queues start with nothing
// applied and the records after the source's saved position are applied
// again (at least once).
func (s *Sink) createProgress(ctx context.Context) error {
	t := s.cfg.ProgressTable
	if err := createTable(ctx, s.db.DB, s.d.ProgressDDL(t), s.d.Quote(t)); err != nil {
		return fmt.Errorf("sink: create progress table %s: %w", t, wrapDB(err))
	}
	cols, err := s.controlColumns(ctx, t)
	if err != nil {
		return fmt.Errorf("sink: read the columns of progress table %s: %w", t, err)
	}
	hasID, hasOffset := cols["last_id"], cols["last_offset"]
	if hasID || !hasOffset {
		return nil
	}
	if _, err := s.db.ExecContext(ctx, s.d.ProgressMigrate(t)); err != nil {
		return fmt.Errorf("sink: progress table %s has the shape of an older version (last_offset) and adding last_id failed (grant ALTER on it, or drop it): %w", t, wrapDB(err))
	}
	s.log.Warn("progress table of an older version migrated: its offsets are not record IDs, so records after the source's saved position are applied again", "table", t)
	return nil
}

// parseProgress reads a stored last applied ID (empty: nothing applied).
func (s *Sink) parseProgress(k progressKey, text string) (schema.ID, error) {
	if text == "" {
		return schema.ID{}, nil
	}
	id, err := schema.ParseID(text)
	if err != nil {
		return schema.ID{}, fatal(fmt.Errorf("%w: progress table %s, pipeline %q, queue %s holds last_id %q: %v; delete that row to apply the queue from the source's saved position again", ErrConfig, s.cfg.ProgressTable, s.cfg.Pipeline, k, text, err))
	}
	return id, nil
}

// checkControl refuses records of a source table that maps onto one of the
// sink's control tables (progress, pending, Config.ControlTables): writing
// there would overwrite what the sink knows of its own progress (a source
// table sluice_progress with a large offset would make it skip every later
// change).
func (s *Sink) checkControl(recs []schema.Record) error {
	var last schema.TableID
	for i := range recs {
		r := &recs[i]
		if r.Table.Table == "" || r.Table == last || !(r.Op.IsData() || r.Op == schema.OpSchemaChange) {
			continue
		}
		last = r.Table
		if v, ok := s.mapped.Load(r.Table); ok {
			if v != nil {
				return v.(error)
			}
			continue
		}
		err := s.controlCollision(r.Table)
		if err != nil {
			s.mapped.Store(r.Table, err)
			return err
		}
		s.mapped.Store(r.Table, nil)
	}
	return nil
}

// CheckTables refuses, before anything is written, source tables that map
// onto one of the sink's control tables (see checkControl): the runtime
// calls it at start with the tables the source captures. The error names
// each such table and the control table, and is fatal.
func (s *Sink) CheckTables(ids []schema.TableID) error {
	var errs []error
	for _, id := range ids {
		if err := s.controlCollision(id); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) <= 1 {
		return errors.Join(errs...)
	}
	return fatal(errors.Join(errs...))
}

// controlCollision names the control table id maps onto, as a fatal error,
// or returns nil.
func (s *Sink) controlCollision(id schema.TableID) error {
	t := s.cfg.target(id)
	same := func(a, b string) bool {
		if s.d.FoldCase() {
			return strings.EqualFold(a, b)
		}
		return a == b
	}
	schemaOf := func(name string) string {
		if name == "" {
			return s.defaultSchema
		}
		return name
	}
	type control struct{ what, name string }
	barriers, arrivals := s.barrierTables()
	controls := []control{{"progress table", s.cfg.ProgressTable}, {"pending table", s.cfg.PendingTable},
		{"barrier table", barriers}, {"barrier arrivals table", arrivals}, {"table registry", s.registryTable()}}
	for _, c := range s.cfg.ControlTables {
		controls = append(controls, control{"control table", c})
	}
	for _, c := range controls {
		cs, ct, ok := strings.Cut(c.name, ".")
		if !ok {
			cs, ct = "", c.name
		}
		if same(schemaOf(t.Schema), schemaOf(cs)) && same(t.Table, ct) {
			return fatal(fmt.Errorf("%w: source table %s maps to %s.%s, the sink's %s: refusing to write over it; exclude the table at the source, map it elsewhere (schema/table template), or give the %s another name",
				ErrConfig, id, schemaOf(t.Schema), t.Table, c.what, c.what))
		}
	}
	return nil
}

// controlColumns reads the column names (lower case) of a control table
// of the default schema.
func (s *Sink) controlColumns(ctx context.Context, table string) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, s.d.TableColumns(), table)
	if err != nil {
		return nil, wrapDB(err)
	}
	defer rows.Close()
	cols := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, wrapDB(err)
		}
		cols[strings.ToLower(c)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, wrapDB(err)
	}
	return cols, nil
}
