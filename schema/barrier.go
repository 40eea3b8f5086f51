package schema

import (
	"fmt"
	"slices"
)

// Table-level records (TRUNCATE, schema changes of a table) are barriers: a
// transport delivers a copy of one to every queue of its table's topic, each
// copy carrying how many copies exist, and a sink applies it once every copy
// has arrived, so it takes effect at its place in the stream relative to
// the rows of every queue.

// HeaderBarrierCopies, set by a transport on each copy of a barrier, is the
// number of copies it made (one per queue of the topic).
const HeaderBarrierCopies = "sluice.barrier.copies"

// IsBarrier reports whether r is a table-level record that orders against
// the rows of every queue of its table: a TRUNCATE, or a schema change that
// names a table. Schema changes of no table (CREATE DATABASE) are not.
func (r *Record) IsBarrier() bool {
	return r.Op == OpTruncate || (r.Op == OpSchemaChange && r.Table.Table != "")
}

// BarrierKey names a barrier: equal on every copy of one barrier, distinct
// between barriers. It is the table and the record's ID, or, for a record
// without identity, its source coordinates.
func BarrierKey(r *Record) string {
	if !r.ID.IsZero() {
		return r.Table.String() + "@" + r.ID.String()
	}
	s := &r.Source
	return fmt.Sprintf("%s@%s:%d:%d:%s", r.Table, s.File, s.Pos, s.Row, s.GTID)
}

// BarrierTables returns the tables whose rows barrier r is ordered with: a
// transport delivers a copy to every queue of each one's topic. A TRUNCATE
// names one table; a schema change every captured table its statement names
// (SchemaChange.Captured: `DROP TABLE a, b`, `RENAME TABLE a TO x, b TO
// y`), or r.Table alone when the source did not list them. Nil when r is
// no barrier.
func (r *Record) BarrierTables() []TableID {
	if !r.IsBarrier() {
		return nil
	}
	out := []TableID{r.Table}
	if r.Op == OpSchemaChange && r.Change != nil {
		for _, id := range r.Change.Captured {
			if id.Table != "" && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}
