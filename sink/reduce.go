package sink

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicecdc/sluice/schema"
)

// change is the final state of one key of one table within a batch.
type change struct {
	del     bool
	keyCols []string // names of the key columns, in key order
	key     []any    // key values (schema representation), aligned with keyCols
	rec     *schema.Record
}

// tablePlan is what one Write does to one target table: an optional
// TRUNCATE first, then deletes and upserts of the final state of each key
// (independent of each other, so their relative order does not matter), then
// plain inserts into a table without key.
type tablePlan struct {
	target   target
	truncate *schema.Record // the truncate record, when the table is truncated first
	changes  []*change      // per-key final states in order of first appearance
	index    map[string]int // key string -> position in changes
	// inserts are the rows of a table without key in source order: its
	// inserts, and under KeylessMode "before_image" its updates and
	// deletes, each applied to one row equal to its before image.
	inserts []*schema.Record
	// schemas seen in this batch, for table creation and evolution: the
	// value schema of every record that writes a row.
	lastSchema *schema.Record
	// keylessSkipped counts updates and deletes of a table without key left
	// out by KeylessMode "append".
	keylessSkipped int
	// keys is where the key columns of the last record's schemas are.
	keys keyLayout
}

// keyLayout is the key columns of a pair of key and value schemas and
// their positions in the value schema (-1 where absent): the same for every
// record of a table version, so it is worked out once per version.
type keyLayout struct {
	keySchema, valueSchema *schema.Schema
	cols                   []string
	idx                    []int
}

// keyLayout returns r's key layout, kept while r's schemas are the last ones.
func (tp *tablePlan) keyLayout(r *schema.Record) *keyLayout {
	kl := &tp.keys
	if kl.cols != nil && kl.keySchema == r.KeySchema && kl.valueSchema == r.ValueSchema {
		return kl
	}
	kl.keySchema, kl.valueSchema = r.KeySchema, r.ValueSchema
	kl.cols = keyColumns(r)
	kl.idx = make([]int, len(kl.cols))
	for i, c := range kl.cols {
		kl.idx[i] = -1
		if r.ValueSchema != nil {
			kl.idx[i] = r.ValueSchema.FieldIndex(c)
		}
	}
	return kl
}

// key takes the key columns' values out of a full row image.
func (kl *keyLayout) key(row schema.Row) ([]any, error) {
	key := make([]any, len(kl.idx))
	for i, j := range kl.idx {
		if j < 0 || j >= len(row) {
			return nil, fatal(fmt.Errorf("%w: key column %q is not in the row", ErrSchema, kl.cols[i]))
		}
		if row[j] == nil {
			return nil, fatal(fmt.Errorf("%w: key column %q is NULL", ErrValue, kl.cols[i]))
		}
		key[i] = row[j]
	}
	return key, nil
}

// sameKey is keyString(cols, a) == keyString(cols, b), without building
// the strings for the usual key types.
func sameKey(cols []string, a, b []any) bool {
	if eq, ok := schema.KeyValuesEqual(a, b); ok {
		return eq
	}
	return len(a) == len(b) && keyString(cols, a) == keyString(cols, b)
}

// plan is the reduced form of a batch: applying it gives the same table
// contents as applying the records one by one in order.
type plan struct {
	tables []*tablePlan
	by     map[target]*tablePlan
	// inOrder, when set, is applied instead of tables: one plan per record,
	// in source order (unique.go).
	inOrder []*tablePlan
}

func (p *plan) table(t target) *tablePlan {
	if tp, ok := p.by[t]; ok {
		return tp
	}
	tp := &tablePlan{target: t, index: map[string]int{}}
	p.by[t] = tp
	p.tables = append(p.tables, tp)
	return tp
}

func (tp *tablePlan) set(c *change) {
	k := keyString(c.keyCols, c.key)
	if i, ok := tp.index[k]; ok {
		tp.changes[i] = c // last write wins, keeping the key's first position
		return
	}
	tp.index[k] = len(tp.changes)
	tp.changes = append(tp.changes, c)
}

// sortedChanges returns the changes in key order. Writes that lock the
// same rows in the same order cannot deadlock each other: this matters when
// several queues write the same keys at once (after a rebalance). Changes
// of distinct keys are independent, so their order does not matter
// otherwise. Any fixed total order does; comparing typed values (numbers as
// numbers) lets a batch already in key order, as a snapshot's chunks are,
// pass after one linear check.
func (tp *tablePlan) sortedChanges() []*change {
	if slices.IsSortedFunc(tp.changes, compareChanges) {
		return tp.changes
	}
	out := slices.Clone(tp.changes)
	slices.SortFunc(out, compareChanges)
	return out
}

func compareChanges(a, b *change) int {
	if c := cmp.Compare(len(a.key), len(b.key)); c != 0 {
		return c
	}
	for i := range a.key {
		if c := strings.Compare(a.keyCols[i], b.keyCols[i]); c != 0 {
			return c
		}
		if c := compareKeyValues(a.key[i], b.key[i]); c != 0 {
			return c
		}
	}
	return 0
}

func compareKeyValues(a, b any) int {
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y)
		}
	case uint64:
		if y, ok := b.(uint64); ok {
			return cmp.Compare(x, y)
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y)
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y)
		}
	}
	// Other types, and mixed ones (a column's values share one type, so
	// this is rare): their canonical text decides.
	return strings.Compare(keyString([]string{""}, []any{a}), keyString([]string{""}, []any{b}))
}

// reduce folds recs (in order) into a plan. Markers and schema changes are
// skipped; targetOf maps a source table to its target.
func reduce(recs []schema.Record, targetOf func(schema.TableID) target) (*plan, error) {
	return reduceWith(recs, targetOf, reduceOpts{})
}

// reduceOpts adjusts reduce to the sink's policies.
type reduceOpts struct {
	skip          func(*schema.Record) bool // rows left out (OnError skip/dlq)
	keylessAppend bool                      // KeylessMode "append": drop keyless updates and deletes
	keylessFail   bool                      // KeylessMode "fail": refuse them
}

// keylessChange decides an update or delete of a table without key: skip
// it (KeylessMode "append"), refuse it ("fail"), or keep it, applied to
// the row equal to its before image ("before_image"), which must then be
// complete.
func (o reduceOpts) keylessChange(tp *tablePlan, r *schema.Record) (skip bool, err error) {
	what := "updates"
	if r.Op == schema.OpDelete {
		what = "deletes"
	}
	switch {
	case o.keylessAppend:
		tp.keylessSkipped++
		return true, nil
	case o.keylessFail:
		return false, fatal(fmt.Errorf("%w: table %s has no primary key: %s cannot be applied under keyless_mode: %s (add a primary key to the source table, or set keyless_mode: %s to match rows by their before image, or %s to append inserts and skip updates and deletes)", ErrSchema, tp.target, what, KeylessFail, KeylessBeforeImage, KeylessAppend))
	}
	if r.ValueSchema == nil || r.Before == nil || len(r.Before) != len(r.ValueSchema.Fields) {
		return false, fatal(fmt.Errorf("%w: table %s has no primary key and a %s record without its full before image: the row to change cannot be found (set binlog_row_image=FULL on the source, or keyless_mode: %s in the sink config to skip updates and deletes)", ErrSchema, tp.target, r.Op, KeylessAppend))
	}
	return false, nil
}

func reduceWith(recs []schema.Record, targetOf func(schema.TableID) target, o reduceOpts) (*plan, error) {
	p := &plan{by: map[target]*tablePlan{}}
	var lastID schema.TableID
	var tp *tablePlan
	for i := range recs {
		r := &recs[i]
		if r.Op.IsMarker() || r.Op == schema.OpSchemaChange || (o.skip != nil && o.skip(r)) {
			continue
		}
		if tp == nil || r.Table != lastID {
			tp, lastID = p.table(targetOf(r.Table)), r.Table
		}
		bad := func(err error) error {
			return newRowError(r, tp.target, err, fmt.Sprintf("table %s", tp.target))
		}
		keyless := r.KeySchema == nil || len(r.KeySchema.Fields) == 0
		switch r.Op {
		case schema.OpTruncate:
			tp.truncate = r
			tp.changes, tp.index, tp.inserts = nil, map[string]int{}, nil
		case schema.OpCreate, schema.OpRead, schema.OpUpdate:
			if r.After == nil || r.ValueSchema == nil {
				return nil, bad(fatal(fmt.Errorf("%w: %s record without after image or value schema", ErrSchema, r.Op)))
			}
			if len(r.After) != len(r.ValueSchema.Fields) {
				return nil, bad(fatal(fmt.Errorf("%w: after image has %d values for %d columns", ErrSchema, len(r.After), len(r.ValueSchema.Fields))))
			}
			if keyless && r.Op == schema.OpUpdate {
				if skip, err := o.keylessChange(tp, r); skip || err != nil {
					if err != nil {
						return nil, err // the table's, not the row's: OnError does not skip it
					}
					continue
				}
			}
			tp.lastSchema = r
			if keyless {
				tp.inserts = append(tp.inserts, r)
				continue
			}
			kl := tp.keyLayout(r)
			cols := kl.cols
			newKey, err := kl.key(r.After)
			if err != nil {
				return nil, bad(err)
			}
			if r.Op == schema.OpUpdate && r.Before != nil && len(r.Before) == len(r.ValueSchema.Fields) {
				oldKey, err := kl.key(r.Before)
				if err != nil {
					return nil, bad(err)
				}
				if !sameKey(cols, oldKey, newKey) {
					tp.set(&change{del: true, keyCols: cols, key: oldKey, rec: r})
				}
			}
			tp.set(&change{keyCols: cols, key: newKey, rec: r})
		case schema.OpDelete:
			if keyless {
				if skip, err := o.keylessChange(tp, r); err != nil {
					return nil, err
				} else if !skip {
					tp.inserts = append(tp.inserts, r)
				}
				continue
			}
			cols, key, err := deleteKey(tp.keyLayout(r), r)
			if err != nil {
				return nil, bad(err)
			}
			tp.set(&change{del: true, keyCols: cols, key: key, rec: r})
		default:
			return nil, bad(fatal(fmt.Errorf("%w: cannot apply operation %s", ErrSchema, r.Op)))
		}
	}
	return p, nil
}

func keyColumns(r *schema.Record) []string {
	cols := make([]string, len(r.KeySchema.Fields))
	for i, f := range r.KeySchema.Fields {
		cols[i] = f.Name
	}
	return cols
}

// keyFromRow takes the key columns' values out of a full row image.
func keyFromRow(r *schema.Record, row schema.Row) ([]string, []any, error) {
	cols := keyColumns(r)
	key := make([]any, len(cols))
	for i, c := range cols {
		j := r.ValueSchema.FieldIndex(c)
		if j < 0 || j >= len(row) {
			return nil, nil, fatal(fmt.Errorf("%w: key column %q is not in the row", ErrSchema, c))
		}
		if row[j] == nil {
			return nil, nil, fatal(fmt.Errorf("%w: key column %q is NULL", ErrValue, c))
		}
		key[i] = row[j]
	}
	return cols, key, nil
}

// deleteKey finds the key of a delete: Key when complete, else Before.
func deleteKey(kl *keyLayout, r *schema.Record) ([]string, []any, error) {
	cols := kl.cols
	if len(r.Key) == len(cols) {
		for i, v := range r.Key {
			if v == nil {
				return nil, nil, fatal(fmt.Errorf("%w: key column %q is NULL", ErrValue, cols[i]))
			}
		}
		return cols, r.Key, nil
	}
	if r.Before == nil || r.ValueSchema == nil {
		return nil, nil, fatal(fmt.Errorf("%w: delete without key and without before image", ErrSchema))
	}
	key, err := kl.key(r.Before)
	return cols, key, err
}

// keyString renders key columns and values unambiguously, for reduction.
func keyString(cols []string, key []any) string {
	if len(key) == 1 {
		if x, ok := key[0].(int64); ok { // the common case, without a builder
			return strconv.Itoa(len(cols[0])) + ":" + cols[0] + "=i" + strconv.FormatInt(x, 10)
		}
	}
	var b strings.Builder
	for i, v := range key {
		b.WriteString(strconv.Itoa(len(cols[i])))
		b.WriteByte(':')
		b.WriteString(cols[i])
		b.WriteByte('=')
		switch x := v.(type) {
		case int64:
			b.WriteString("i")
			b.WriteString(strconv.FormatInt(x, 10))
		case uint64:
			b.WriteString("u")
			b.WriteString(strconv.FormatUint(x, 10))
		case nil:
			b.WriteString("null")
		case []byte:
			b.WriteString("x")
			b.WriteString(hex.EncodeToString(x))
		case string:
			b.WriteString(strconv.Quote(x))
		case schema.Dec:
			b.WriteString("d" + x.String())
		default:
			fmt.Fprintf(&b, "%T:%v", v, v)
		}
		b.WriteByte(';')
	}
	return b.String()
}

// describeKey renders a key for error messages.
func describeKey(cols []string, key []any) string {
	var b strings.Builder
	for i, v := range key {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(cols[i] + "=")
		switch x := v.(type) {
		case []byte:
			b.WriteString("0x" + hex.EncodeToString(x))
		case string:
			b.WriteString(strconv.Quote(x))
		default:
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// progressKey identifies a transport queue: with several RocketMQ master
// brokers, queue numbers repeat per broker.
type progressKey struct {
	Topic  string
	Broker string
	Queue  int
}

func deliveryKey(d *schema.Delivery) progressKey { return progressKey{d.Topic, d.Broker, d.Queue} }

// String names the queue in messages.
func (k progressKey) String() string {
	if k.Broker == "" {
		return fmt.Sprintf("%s/%d", k.Topic, k.Queue)
	}
	return fmt.Sprintf("%s/%s/%d", k.Topic, k.Broker, k.Queue)
}

// counts reports whether r moves its queue's progress: a change (data or
// schema change) delivered by a transport. Markers pass the filters as
// they are; sinks apply nothing of them.
func counts(r *schema.Record) bool {
	return r.Delivery != nil && !r.Op.IsMarker()
}

// filterDelivered drops the records already applied: those whose ID is at
// or below their queue's last applied ID in last (missing: nothing
// applied), and replays inside the batch, whose ID is at or below that of
// an earlier record of their queue (a source that restarted published them
// again). It returns the rest with the highest ID kept per queue. recs is
// returned as is (not copied) when nothing is dropped. A delivered change
// without an ID is refused: nothing could tell it from a replay.
func filterDelivered(recs []schema.Record, last map[progressKey]schema.ID) ([]schema.Record, map[progressKey]schema.ID, error) {
	maxID := map[progressKey]schema.ID{}
	var drop []bool
	var (
		cur                progressKey // the queue of the current run
		top                schema.ID   // its highest ID so far
		inRun, have, dirty bool        // cur set; top set; top not yet in maxID
	)
	for i := range recs {
		r := &recs[i]
		if !counts(r) {
			continue
		}
		if r.ID.IsZero() {
			return nil, nil, fatal(fmt.Errorf("%w: %s record of %s key %s from queue %s (offset %d) has no record ID: it was not made by a sluice source of this version; nothing can tell whether it was applied already",
				ErrValue, r.Op, r.Table, r.KeyString(), deliveryKey(r.Delivery), r.Delivery.Offset))
		}
		// A queue's records come in runs: its top is looked up at the
		// start of a run and stored at its end, not once a record.
		if k := deliveryKey(r.Delivery); !inRun || k != cur {
			if dirty {
				maxID[cur] = top
			}
			cur, inRun, dirty = k, true, false
			if top, have = maxID[k]; !have {
				top, have = last[k]
			}
		}
		if have && r.ID.Compare(top) <= 0 {
			if drop == nil {
				drop = make([]bool, len(recs))
			}
			drop[i] = true
			continue
		}
		top, have, dirty = r.ID, true, true
	}
	if dirty {
		maxID[cur] = top
	}
	if drop == nil {
		return recs, maxID, nil
	}
	out := make([]schema.Record, 0, len(recs))
	for i := range recs {
		if !drop[i] {
			out = append(out, recs[i])
		}
	}
	return out, maxID, nil
}
