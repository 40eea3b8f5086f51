package sink

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// checkControl refuses records of a source table that maps onto one of the
// sink's control tables (progress, pending, Config.ControlTables): writing
// there would overwrite what the sink knows of its own progress (a source
// table sluice_progress with a large offset would make it skip every later
// change).
func (s *Sink) checkControl(recs []schema.Record) error {
	var last schema.TableID
	for i := range recs {
		r := &recs[i]
		if r.Op == schema.OpSchemaChange && r.Change != nil {
			s.followTables(r.Change.Tables)
			last = schema.TableID{}
		}
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

// followTables moves the route claims (routing.claim) with the source's
// tables, whatever schema_changes says: a table renamed or dropped gives
// up its target, and a table renamed to or created claims its target
// again at its next record. The old name's check stays cached: its
// records still in flight on another queue go on to its old target.
func (s *Sink) followTables(changes []schema.TableChange) {
	if s.cfg.routing == nil || len(s.cfg.routing.routes) == 0 {
		return
	}
	for _, c := range changes {
		switch c.Kind {
		case schema.RenameTable:
			s.cfg.routing.release(c.Table)
			s.mapped.Delete(c.NewTable)
		case schema.DropTable:
			s.cfg.routing.release(c.Table)
		case schema.CreateTable:
			s.mapped.Delete(c.Table)
		}
	}
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
			return fatal(fmt.Errorf("%w: source table %s maps to %s.%s, the sink's %s: refusing to write over it; exclude the table at the source, map it elsewhere (schema/table template or routes), or give the %s another name",
				ErrConfig, id, schemaOf(t.Schema), t.Table, c.what, c.what))
		}
	}
	return s.cfg.routing.claim(id, target{Schema: schemaOf(t.Schema), Table: t.Table}, s.d.FoldCase())
}
