package sink

import (
	"fmt"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// collate is the character set and collation clause of a new column of
// type typ for field schema f on a dialect that has them
// (dialect.Collator): the source's collation, so that the target keeps
// apart what the source keeps apart.
func (cat *catalog) collate(typ string, f *schema.Schema, key bool) string {
	if c, ok := cat.d.(dialect.Collator); ok && f != nil {
		return c.Collate(typ, f, key)
	}
	return ""
}

// checkKeyCollations refuses, before any row of the batch is written, a
// table whose existing key column has a collation that takes keys the
// source keeps apart as one (utf8mb4_0900_ai_ci for utf8mb4_bin): its rows
// would merge. It looks at every record of the plan, deletes included, once
// per key column, target collation and source collation.
func (cat *catalog) checkKeyCollations(t target, m *tableMeta, tp *tablePlan) error {
	c, ok := cat.d.(dialect.Collator)
	if !ok {
		return nil
	}
	var last *schema.Schema
	for _, ch := range tp.changes {
		r := ch.rec
		if r == nil || r.KeySchema == nil || r.KeySchema == last {
			continue
		}
		last = r.KeySchema
		for _, kf := range r.KeySchema.Fields {
			f := kf.Schema
			if r.ValueSchema != nil {
				if i := r.ValueSchema.FieldIndex(kf.Name); i >= 0 {
					f = r.ValueSchema.Fields[i].Schema
				}
			}
			col, ok := m.cols[cat.fold(kf.Name)]
			if !ok || col.Collation == "" || f == nil {
				continue
			}
			seen := cat.fold(kf.Name) + "\x00collation\x00" + col.Collation + "\x00" + f.Param(schema.ParamCollation)
			if m.typed[seen] {
				continue
			}
			if want, merges := c.KeyMerges(f, col.Collation); merges {
				fix := "MODIFY the column with COLLATE " + want
				if cs := cat.collate(col.Type, f, true); cs != "" {
					nn := ""
					if col.NotNull {
						nn = " NOT NULL"
					}
					fix = fmt.Sprintf("ALTER TABLE %s MODIFY %s %s%s%s", qualified(cat.d, t), cat.d.Quote(kf.Name), col.Type, cs, nn)
				}
				return fatal(fmt.Errorf("%w: table %s, key column %s: the target column's collation %s takes keys that the source's collation %s keeps apart (such as 'a' and 'A', or 'a' and 'ä') as one, so their rows would merge; nothing was written. Change the column: %s (or drop the table and let the sink create it)",
					ErrSchema, t, kf.Name, col.Collation, f.Param(schema.ParamCollation), fix))
			}
			if len(m.typed) >= 1024 {
				clear(m.typed)
			}
			m.typed[seen] = true
		}
	}
	return nil
}
