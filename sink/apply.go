package sink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/sink/dialect"
)

// applier writes a reduced plan's rows into the target inside a
// transaction it is given: truncates, deletes by key, upserts (through
// COPY or a rowset merge where the dialect has one), the rows of tables
// without key in source order. It never begins or commits the
// transaction it writes in, and knows nothing of progress; when a
// statement fails for good it finds the rows to blame (diagnose). mu
// guards what it learnt of tables that refuse a bulk path.
type applier struct {
	backend
	catalog *catalog // records the identity a TRUNCATE gives a table

	stmts sync.Map // stmtKey -> statement text

	mu           sync.Mutex
	noDirectCopy map[target]bool // tables where a direct COPY met existing keys (under mu)
	noRowset     map[target]bool // tables whose rowset merge statement refused them (under mu)

	// stagingMerge, set by tests and benchmarks, merges through a staging
	// table even where the dialect has a RowsetMerger (copy.go).
	stagingMerge bool
	rowsetMerges atomic.Int64 // statements of the rowset merge run, for tests
}

func newApplier(b backend, cat *catalog) *applier {
	return &applier{backend: b, catalog: cat}
}

// rowGroup is a set of rows with the same columns, written by one statement
// shape.
type rowGroup struct {
	cols           []string
	keyCols        []string
	recs           []*schema.Record
	colSig, keySig string     // joined names, for the statement cache
	view           *tableView // the target's columns, for converting values
}

func groupRows(recs []*schema.Record, keyed bool, view *tableView) []*rowGroup {
	var groups []*rowGroup
	by := map[string]*rowGroup{}
	var lastSchema *schema.Schema
	var last *rowGroup
	for _, r := range recs {
		// Records decoded from a transport carry a schema each: compare
		// names, not pointers, before building a signature.
		if last != nil && (r.ValueSchema == lastSchema || sameNames(r.ValueSchema, last.cols)) && (!keyed || sameNames(r.KeySchema, last.keyCols)) {
			last.recs = append(last.recs, r)
			continue
		}
		var sig strings.Builder
		for _, f := range r.ValueSchema.Fields {
			sig.WriteString(strconv.Quote(f.Name))
		}
		if keyed {
			sig.WriteByte('|')
			for _, f := range r.KeySchema.Fields {
				sig.WriteString(strconv.Quote(f.Name))
			}
		}
		g, ok := by[sig.String()]
		if !ok {
			g = &rowGroup{cols: make([]string, len(r.ValueSchema.Fields)), view: view}
			for i, f := range r.ValueSchema.Fields {
				g.cols[i] = f.Name
			}
			if keyed {
				g.keyCols = keyColumns(r)
			}
			by[sig.String()] = g
			groups = append(groups, g)
		}
		g.recs = append(g.recs, r)
		last, lastSchema = g, r.ValueSchema
	}
	return groups
}

func sameNames(s *schema.Schema, names []string) bool {
	if len(s.Fields) != len(names) {
		return false
	}
	for i, f := range s.Fields {
		if f.Name != names[i] {
			return false
		}
	}
	return true
}

const maxStatementBytes = 8 << 20 // cut statements well below max_allowed_packet

// value converts v for column f of a table whose columns view describes:
// the dialect's conversion, and for a SET written into an array column
// (PostgreSQL TEXT[]) the array literal instead of the joined labels.
// Columns of older tables that hold SETs as text keep the joined labels.
func (ap *applier) value(view *tableView, f schema.Field, v any) (any, error) {
	out, err := ap.d.Convert(f.Name, f.Schema, v)
	if err != nil || f.Schema.Logical != schema.Set || out == nil || !view.array(ap.fold(f.Name)) {
		return out, err
	}
	str, ok := out.(string)
	if !ok {
		return nil, valueErr(f.Name, f.Schema, v, "want string")
	}
	return ap.d.ArrayValue(str), nil
}

func (ap *applier) applyTable(ctx context.Context, tx *txn, tp *tablePlan, view *tableView) error {
	if tp.truncate != nil {
		if _, err := tx.ExecContext(ctx, ap.d.Truncate(tp.target)); err != nil {
			return fmt.Errorf("sink: truncate %s: %w", tp.target, wrapDB(err))
		}
		if err := ap.catalog.recordIdentity(ctx, tx, tp.target, false); err != nil {
			return err
		}
	}
	// Deletes, grouped by key columns.
	var dels []*change
	var ups []*schema.Record
	for _, c := range tp.sortedChanges() {
		if c.del {
			dels = append(dels, c)
		} else {
			ups = append(ups, c.rec)
		}
	}
	if err := ap.applyDeletes(ctx, tx, tp.target, dels, view); err != nil {
		return err
	}
	for _, g := range groupRows(ups, true, view) {
		if err := ap.writeRows(ctx, tx, tp.target, g, true); err != nil {
			return err
		}
	}
	return ap.applyKeyless(ctx, tx, tp.target, tp.inserts, view)
}

// applyKeyless applies the rows of a table without key in source order:
// runs of inserts as multi-row INSERTs, each update and delete on one row
// equal to its before image (reduce checked it is complete).
func (ap *applier) applyKeyless(ctx context.Context, tx *txn, t target, recs []*schema.Record, view *tableView) error {
	for len(recs) > 0 {
		n := 0
		for n < len(recs) && recs[n].Op != schema.OpUpdate && recs[n].Op != schema.OpDelete {
			n++
		}
		for _, g := range groupRows(recs[:n], false, view) {
			if err := ap.writeRows(ctx, tx, t, g, false); err != nil {
				return err
			}
		}
		if n == len(recs) {
			return nil
		}
		if err := ap.applyByBeforeImage(ctx, tx, t, recs[n], view); err != nil {
			return err
		}
		recs = recs[n+1:]
	}
	return nil
}

// applyByBeforeImage updates or deletes one row of a table without key
// whose every column equals r's before image. A row not found (the target
// diverged from the source) is logged, not an error: there is nothing to
// change, and under redelivery the progress check has skipped r already.
func (ap *applier) applyByBeforeImage(ctx context.Context, tx *txn, t target, r *schema.Record, view *tableView) error {
	fields := r.ValueSchema.Fields
	match := make([]dialect.Match, len(fields))
	var set []string
	var args []any
	if r.Op == schema.OpUpdate {
		set = make([]string, len(fields))
		args = make([]any, 0, 2*len(fields))
		for j, f := range fields {
			set[j] = f.Name
			v, err := ap.value(view, f, r.After[j])
			if err != nil {
				return newRowError(r, t, err, fmt.Sprintf("sink: update of %s (table without key)", t))
			}
			args = append(args, v)
		}
	}
	for j, f := range fields {
		match[j] = dialect.Match{Col: f.Name, Type: view.colType(ap.fold(f.Name))}
		v, err := ap.value(view, f, r.Before[j])
		if err != nil {
			return newRowError(r, t, err, fmt.Sprintf("sink: %s of %s (table without key), before image", r.Op, t))
		}
		args = append(args, v)
	}
	q := ap.d.DeleteOne(t, match)
	if r.Op == schema.OpUpdate {
		q = ap.d.UpdateOne(t, set, match)
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		werr := wrapDB(err)
		msg := fmt.Sprintf("sink: %s of %s (table without key)", r.Op, t)
		if isFatal(werr) {
			return newRowError(r, t, werr, msg)
		}
		return fmt.Errorf("%s: %w", msg, werr)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 && r.Op == schema.OpDelete {
		ap.log.Warn("table without key: no target row equals the before image of a delete; nothing deleted (the target differs from the source)", "table", t.String())
	}
	return nil
}

func (ap *applier) writeRows(ctx context.Context, tx *txn, t target, g *rowGroup, upsert bool) error {
	if upsert && ap.cfg.CopyThreshold > 0 && len(g.recs) >= ap.cfg.CopyThreshold {
		if cp, ok := ap.d.(dialect.Copier); ok {
			return ap.copyUpsert(ctx, tx, cp, t, g)
		}
	}
	n := len(g.cols)
	per := ap.cfg.BatchSize
	if m := ap.d.MaxParams() / n; per > m {
		per = m
	}
	args := make([]any, 0, per*n)
	rows, size, first := 0, 0, 0
	flush := func() error {
		if rows == 0 {
			return nil
		}
		q := ap.statement(t, g, rows, rows == per, upsert)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return ap.rowsError(ctx, err, t, g, g.recs[first:first+rows], upsert)
		}
		args, rows, size = args[:0], 0, 0
		return nil
	}
	for i, r := range g.recs {
		if rows == 0 {
			first = i
		}
		for j, f := range r.ValueSchema.Fields {
			v, err := ap.value(g.view, f, r.After[j])
			if err != nil {
				return newRowError(r, t, err, fmt.Sprintf("sink: table %s, key %s", t, recKey(r)))
			}
			size += approxSize(v)
			args = append(args, v)
		}
		rows++
		if rows >= per || size >= maxStatementBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

type stmtKey struct {
	t          target
	cols, keys string
	rows       int
	upsert     bool
}

// statement returns the INSERT or upsert text for rows rows of g, cached
// for full chunks only (the last chunk of a batch has any size).
func (ap *applier) statement(t target, g *rowGroup, rows int, full, upsert bool) string {
	if !full {
		if upsert {
			return ap.d.Upsert(t, g.cols, g.keyCols, rows)
		}
		return insertSQL(ap.d, t, g.cols, rows)
	}
	if g.colSig == "" {
		g.colSig = strings.Join(g.cols, "\x00")
		g.keySig = strings.Join(g.keyCols, "\x00")
	}
	k := stmtKey{t, g.colSig, g.keySig, rows, upsert}
	if q, ok := ap.stmts.Load(k); ok {
		return q.(string)
	}
	var q string
	if upsert {
		q = ap.d.Upsert(t, g.cols, g.keyCols, rows)
	} else {
		q = insertSQL(ap.d, t, g.cols, rows)
	}
	ap.stmts.Store(k, q)
	return q
}

// rowsError describes a failed multi-row statement. When the error is
// permanent (bad data, a constraint) it returns a *diagError: once the
// transaction is rolled back (its locks would block the replay), apply finds
// the offending rows by trying them one by one in a separate transaction
// that is rolled back too, so the error names the first one's key and
// carries them all (*rowError) for OnError "skip" and "dlq".
func (ap *applier) rowsError(ctx context.Context, err error, t target, g *rowGroup, recs []*schema.Record, upsert bool) error {
	werr := wrapDB(err)
	if !isFatal(werr) || ctx.Err() != nil {
		return fmt.Errorf("sink: write %d rows into %s (first key %s): %w", len(recs), t, recKey(recs[0]), werr)
	}
	return &diagError{t: t, g: g, recs: recs, upsert: upsert, err: werr}
}

// diagError is a permanent error of a multi-row statement whose offending
// row is still to be found.
type diagError struct {
	t      target
	g      *rowGroup
	recs   []*schema.Record
	upsert bool
	err    error
}

func (e *diagError) Error() string {
	return fmt.Sprintf("sink: write %d rows into %s (first key %s): %v", len(e.recs), e.t, recKey(e.recs[0]), e.err)
}

func (e *diagError) Unwrap() error { return e.err }

// diagnose replaces a *diagError (after its transaction is gone) by the
// error naming the offending rows.
func (ap *applier) diagnose(ctx context.Context, err error) error {
	var d *diagError
	if !errors.As(err, &d) || ctx.Err() != nil {
		return err
	}
	limit := 1
	if ap.cfg.OnError != OnErrorFail {
		limit = maxDiagnoseRows
	}
	if bad := ap.offendingRows(ctx, d.t, d.g, d.recs, d.upsert, limit); len(bad) > 0 {
		return &rowError{rows: bad, err: fmt.Errorf("sink: write into %s, key %s: %w", d.t, recKey(bad[0].rec), d.err)}
	}
	return fmt.Errorf("sink: write %d rows into %s (first key %s; no single row fails alone): %w", len(d.recs), d.t, recKey(d.recs[0]), d.err)
}

const maxDiagnoseRows = 5000

// offendingRows replays recs one row a statement in a transaction that is
// rolled back, each under a savepoint, and returns up to limit rows that
// fail with a permanent error, each with its own error.
func (ap *applier) offendingRows(ctx context.Context, t target, g *rowGroup, recs []*schema.Record, upsert bool, limit int) []badRow {
	if len(recs) > maxDiagnoseRows {
		recs = recs[:maxDiagnoseRows]
	}
	tx, err := ap.begin(ctx)
	if err != nil {
		return nil
	}
	defer tx.Rollback() // diagnosis only: never commit
	q := ap.statement(t, g, 1, true, upsert)
	args := make([]any, len(g.cols))
	var bad []badRow
	for _, r := range recs {
		var cerr error
		for j, f := range r.ValueSchema.Fields {
			if args[j], cerr = ap.value(g.view, f, r.After[j]); cerr != nil {
				break
			}
		}
		if cerr != nil {
			bad = append(bad, badRow{rec: r, table: t, err: cerr})
		} else {
			if _, err := tx.ExecContext(ctx, "SAVEPOINT sluice_row"); err != nil {
				return bad
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				werr := wrapDB(err)
				if !isFatal(werr) {
					return nil // a lost connection or the like: no verdict
				}
				bad = append(bad, badRow{rec: r, table: t, err: werr})
				if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT sluice_row"); err != nil {
					return bad
				}
			}
		}
		if len(bad) >= limit {
			break
		}
	}
	return bad
}

// badRow is a row the target rejects for good, with the reason.
type badRow struct {
	rec   *schema.Record
	table target
	err   error
}

// rowError is a permanent error caused by particular rows; OnError "skip"
// and "dlq" leave them out and apply the rest.
type rowError struct {
	rows []badRow
	err  error
}

func (e *rowError) Error() string { return e.err.Error() }

func (e *rowError) Unwrap() error { return e.err }

func newRowError(r *schema.Record, t target, err error, msg string) error {
	werr := fmt.Errorf("%s: %w", msg, err)
	return &rowError{rows: []badRow{{rec: r, table: t, err: err}}, err: werr}
}

func approxSize(v any) int {
	switch x := v.(type) {
	case string:
		return len(x) + 4
	case []byte:
		return 2*len(x) + 4
	}
	return 8
}

func recKey(r *schema.Record) string {
	if r.KeySchema == nil {
		return "(table without key)"
	}
	row := r.After
	if row == nil {
		row = r.Before
	}
	if row != nil && r.ValueSchema != nil {
		if cols, key, err := keyFromRow(r, row); err == nil {
			return describeKey(cols, key)
		}
	}
	return r.KeyString()
}

const deleteChunk = 1000

func (ap *applier) applyDeletes(ctx context.Context, tx *txn, t target, dels []*change, view *tableView) error {
	if len(dels) == 0 {
		return nil
	}
	groups := map[string][]*change{}
	var order []string
	for _, c := range dels {
		sig := strings.Join(c.keyCols, "\x00")
		if _, ok := groups[sig]; !ok {
			order = append(order, sig)
		}
		groups[sig] = append(groups[sig], c)
	}
	for _, sig := range order {
		g := groups[sig]
		cols := g[0].keyCols
		// Key values, converted with the schema of each key column.
		conv := make([][]any, len(g))
		for i, c := range g {
			conv[i] = make([]any, len(cols))
			for j, col := range cols {
				v, err := ap.value(view, schema.Field{Name: col, Schema: c.rec.KeySchema.Fields[j].Schema}, c.key[j])
				if err != nil {
					return newRowError(c.rec, t, err, fmt.Sprintf("sink: delete from %s, key %s", t, describeKey(cols, c.key)))
				}
				conv[i][j] = v
			}
		}
		// One array parameter for a one-column key, unless the key is an
		// array itself (a SET as TEXT[]): then the generic IN list.
		if len(cols) == 1 && !view.array(ap.fold(cols[0])) {
			if done, err := ap.deleteAny(ctx, tx, t, cols[0], g, conv); err != nil || done {
				if err != nil {
					return err
				}
				continue
			}
		}
		per := deleteChunk
		if m := ap.d.MaxParams() / len(cols); per > m {
			per = m
		}
		for start := 0; start < len(conv); start += per {
			end := min(start+per, len(conv))
			args := make([]any, 0, (end-start)*len(cols))
			for _, row := range conv[start:end] {
				args = append(args, row...)
			}
			if _, err := tx.ExecContext(ctx, deleteSQL(ap.d, t, cols, end-start), args...); err != nil {
				return fmt.Errorf("sink: delete %d rows from %s (first key %s): %w", end-start, t, describeKey(cols, g[start].key), wrapDB(err))
			}
		}
	}
	return nil
}

// deleteAny deletes by a single-column key with one array parameter
// (the dialect's DeleteAny), ok false when the dialect has none.
func (ap *applier) deleteAny(ctx context.Context, tx *txn, t target, col string, g []*change, conv [][]any) (bool, error) {
	const per = 10000
	for start := 0; start < len(conv); start += per {
		end := min(start+per, len(conv))
		vals := make([]any, 0, end-start)
		for _, row := range conv[start:end] {
			vals = append(vals, row[0])
		}
		q, arg, ok := ap.d.DeleteAny(t, col, vals)
		if !ok {
			return false, nil
		}
		if _, err := tx.ExecContext(ctx, q, arg); err != nil {
			return true, fmt.Errorf("sink: delete %d rows from %s (first key %s): %w", end-start, t, describeKey([]string{col}, g[start].key), wrapDB(err))
		}
	}
	return true, nil
}

// apply writes the rows of plan p inside tx; views are the tables' of
// p.tables (nil: the table is absent and p only deletes from or truncates
// it, which is then a no-op).
func (ap *applier) apply(ctx context.Context, tx *txn, p *plan, views []*tableView) error {
	for i, tp := range p.tables {
		if views[i] == nil || p.inOrder != nil {
			continue // table absent and nothing to write into it, or applied record by record below
		}
		if err := ap.applyTable(ctx, tx, tp, views[i]); err != nil {
			return err
		}
	}
	return ap.applyInOrderIn(ctx, tx, p, views)
}

// applyInOrderIn applies p.inOrder inside tx; views are those of p.tables.
func (ap *applier) applyInOrderIn(ctx context.Context, tx *txn, p *plan, views []*tableView) error {
	if p.inOrder == nil {
		return nil
	}
	view := make(map[target]*tableView, len(p.tables))
	for i, tp := range p.tables {
		view[tp.target] = views[i]
	}
	for _, tp := range p.inOrder {
		if v := view[tp.target]; v != nil {
			if err := ap.applyTable(ctx, tx, tp, v); err != nil {
				return err
			}
		}
	}
	return nil
}
