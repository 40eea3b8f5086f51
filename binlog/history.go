package binlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/sluicecdc/sluice/binlog/ddl"
	"github.com/sluicecdc/sluice/schema"
)

// HistoryEntry is one line of the schema history file (Config.HistoryFile):
// a DDL statement and the position just after it, or, at first start, the
// SHOW CREATE TABLE text of an included table at the start position.
type HistoryEntry struct {
	Position Position `json:"position"`
	DB       string   `json:"db"`
	DDL      string   `json:"ddl"`
}

// schemaHistory is the table shapes the recorded DDL gives at the mapper's
// position. The mapper changes it as DDL streams by; the Source persists
// the new entries (pending) before it hands on the records.
type schemaHistory struct {
	tables  map[schema.TableID]*ddl.Table
	later   []HistoryEntry // entries of the file after the start position, in order
	last    *Position      // the last entry in the file; nil when empty
	pending []HistoryEntry // entries to append to the file
}

func newSchemaHistory() *schemaHistory {
	return &schemaHistory{tables: map[schema.TableID]*ddl.Table{}}
}

// comparePositions orders two positions by binlog file (numeric suffix)
// and offset.
func comparePositions(a, b Position) int {
	base := func(f string) (string, int64) {
		i := strings.LastIndexByte(f, '.')
		if i < 0 {
			return f, 0
		}
		n, err := strconv.ParseInt(f[i+1:], 10, 64)
		if err != nil {
			return f, 0
		}
		return f[:i], n
	}
	an, ai := base(a.File)
	bn, bi := base(b.File)
	if c := strings.Compare(an, bn); c != 0 {
		return c
	}
	if ai != bi {
		if ai < bi {
			return -1
		}
		return 1
	}
	switch {
	case a.Pos < b.Pos:
		return -1
	case a.Pos > b.Pos:
		return 1
	}
	return 0
}

// apply changes the shapes by one statement.
func (h *schemaHistory) apply(q, db string) error {
	res, err := readDDL(q, db)
	if err != nil {
		return err
	}
	ch, err := res.Apply(h.tables)
	if err != nil {
		return err
	}
	h.change(ch)
	return nil
}

func (h *schemaHistory) change(ch ddl.Change) {
	if ch.DropDB != "" {
		for id := range h.tables {
			if strings.EqualFold(id.Database, ch.DropDB) {
				delete(h.tables, id)
			}
		}
	}
	for _, id := range ch.Drop {
		delete(h.tables, id)
	}
	for id, t := range ch.Set {
		h.tables[id] = t
	}
}

// HistoryStore keeps the schema history durably: the entries in the order
// they were appended. FileHistory is the history file (Config.HistoryFile);
// Config.History takes another, e.g. a table in a database whose appends are
// fenced by a lease (the runtime's SQL history store).
type HistoryStore interface {
	// Load returns every entry appended so far, in order.
	Load(ctx context.Context) ([]HistoryEntry, error)
	// Append adds entries after the others, durably and all or none. An
	// error the store classifies fatal (schema.Fatal: a writer fenced off)
	// stops the source; others are retried a few times.
	Append(ctx context.Context, entries ...HistoryEntry) error
	// String names the store in messages (a file, a table).
	String() string
}

// FileHistory is the schema history file: JSON lines of HistoryEntry,
// appended and synced. A missing file is an empty history.
type FileHistory struct{ Path string }

var _ HistoryStore = FileHistory{}

func (f FileHistory) String() string { return f.Path }

// Load reads the file strictly: an unknown field or a line that is no
// entry is an error naming the line.
func (f FileHistory) Load(context.Context) ([]HistoryEntry, error) {
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("binlog: read the schema history %s: %w", f.Path, err)
	}
	var out []HistoryEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var e HistoryEntry
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%w: schema history %s line %d: %v; fix or remove the line", ErrConfig, f.Path, line, err)
		}
		if n := len(out); n > 0 && comparePositions(e.Position, out[n-1].Position) < 0 {
			return nil, fmt.Errorf("%w: schema history %s line %d: position %s is before the line above it", ErrConfig, f.Path, line, e.Position.String())
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("binlog: read the schema history %s: %w", f.Path, err)
	}
	return out, nil
}

// Append writes entries to the file and syncs it.
func (f FileHistory) Append(_ context.Context, entries ...HistoryEntry) error {
	return appendHistory(f.Path, entries)
}

// appendHistory writes entries to the file and syncs it.
func appendHistory(file string, entries []HistoryEntry) error {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("binlog: open the schema history %s: %w", file, err)
	}
	var b bytes.Buffer
	for _, e := range entries {
		line, err := json.Marshal(e)
		if err != nil {
			f.Close()
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("binlog: write the schema history %s: %w", file, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("binlog: sync the schema history %s: %w", file, err)
	}
	return f.Close()
}

// loadHistory reads the history file and replays the entries up to start.
// A missing file gives an empty history.
func loadHistory(file string, start Position) (*schemaHistory, error) {
	return loadStoredHistory(context.Background(), FileHistory{file}, start)
}

// loadStoredHistory loads a store's entries and replays those up to start.
func loadStoredHistory(ctx context.Context, store HistoryStore, start Position) (*schemaHistory, error) {
	entries, err := store.Load(ctx)
	if err != nil {
		return nil, err
	}
	h := newSchemaHistory()
	for i, e := range entries {
		if h.last != nil && comparePositions(e.Position, *h.last) < 0 {
			return nil, fmt.Errorf("%w: schema history %s entry %d: position %s is before the entry above it", ErrConfig, store, i+1, e.Position.String())
		}
		p := e.Position
		h.last = &p
		if comparePositions(e.Position, start) > 0 {
			h.later = append(h.later, e)
			continue
		}
		if err := h.apply(e.DDL, e.DB); err != nil {
			return nil, fmt.Errorf("%w: schema history %s entry %d: %q: %v", ErrUnparsedDDL, store, i+1, e.DDL, err)
		}
	}
	return h, nil
}

// ddl records a statement that streamed by at position pos (the commit
// position just after it). Statements the file already has (a restart from
// an older position) are taken from the file, not parsed again, so that an
// entry fixed by hand wins. tracked says whether a table matters: a
// statement on such a table that cannot be parsed returns ErrUnparsedDDL.
func (h *schemaHistory) ddl(q, db string, pos Position, gtid string, skip map[string]bool, tracked func(schema.TableID) bool, file string) (bool, error) {
	if h.covers(pos) {
		applied := false
		for len(h.later) > 0 && comparePositions(h.later[0].Position, pos) <= 0 {
			e := h.later[0]
			h.later = h.later[1:]
			if err := h.apply(e.DDL, e.DB); err != nil {
				return applied, fmt.Errorf("%w: schema history %s: %q at %s: %v", ErrUnparsedDDL, file, e.DDL, e.Position.String(), err)
			}
			applied = true
		}
		return applied, nil
	}
	res, perr := readDDL(q, db)
	relevant := perr != nil && unparsedMatters(q, db, tracked) || res.DropDB != ""
	for _, id := range res.Tables {
		relevant = relevant || tracked(id) || h.tables[id] != nil
	}
	if !relevant {
		return false, nil
	}
	if skip[strings.TrimSpace(q)] || (gtid != "" && skip[gtid]) {
		return false, nil
	}
	var ch ddl.Change
	if perr == nil {
		ch, perr = res.Apply(h.tables)
	}
	if perr != nil {
		for _, id := range res.Tables {
			if !tracked(id) {
				continue
			}
			return false, unparsedError(q, db, pos, gtid, file, perr)
		}
		if len(res.Tables) == 0 {
			return false, unparsedError(q, db, pos, gtid, file, perr)
		}
		// only tables nobody captures: forget them
		for _, id := range res.Tables {
			delete(h.tables, id)
		}
		return true, nil
	}
	h.change(ch)
	h.pending = append(h.pending, HistoryEntry{Position: pos, DB: db, DDL: q})
	p := pos
	h.last = &p
	return true, nil
}

// covers reports whether the file already holds the statements up to pos.
func (h *schemaHistory) covers(pos Position) bool {
	return h.last != nil && comparePositions(pos, *h.last) <= 0
}

// entryAt returns the file's statement at pos not yet replayed, if any.
func (h *schemaHistory) entryAt(pos Position) (HistoryEntry, bool) {
	for _, e := range h.later {
		if c := comparePositions(e.Position, pos); c == 0 {
			return e, true
		} else if c > 0 {
			break
		}
	}
	return HistoryEntry{}, false
}

// unparsedMatters says whether a statement the parser rejects may change a
// captured table: a table statement (CREATE/ALTER/DROP/RENAME … TABLE) run
// in a captured database, or naming one (a qualified name db.… in its
// text).
func unparsedMatters(q, db string, tracked func(schema.TableID) bool) bool {
	u := strings.ToUpper(q)
	if !strings.Contains(u, "TABLE") {
		return false
	}
	if !ddlStart.MatchString(q) {
		return false
	}
	if db != "" && tracked(schema.TableID{Database: db}) {
		return true
	}
	for _, m := range qualifier.FindAllStringSubmatch(q, -1) {
		name := m[1]
		if name == "" {
			name = strings.ReplaceAll(m[2], "``", "`")
		}
		if tracked(schema.TableID{Database: name}) {
			return true
		}
	}
	return false
}

var (
	// ddlStart: the statement (after any comments, or inside an
	// executable one) starts with a table DDL verb
	ddlStart = regexp.MustCompile(`(?is)^\s*(/\*.*?\*/\s*)*(/\*[M]?!\d*\s*)?(CREATE|ALTER|DROP|RENAME)\b`)
	// qualifier: an identifier followed by a dot, bare or quoted
	qualifier = regexp.MustCompile("(?:\\b([A-Za-z0-9_$]+)|`((?:[^`]|``)+)`)\\s*\\.")
)

func unparsedError(q, db string, pos Position, gtid, file string, cause error) error {
	id := "its exact text"
	if gtid != "" {
		id = fmt.Sprintf("its GTID %q or its exact text", gtid)
	}
	if file == "" {
		return fmt.Errorf("%w: %q (default database %q, at %s): %v. The statement may change a captured table, and no consumer could apply it: "+
			"to continue, apply its effect to the target by hand (or make sure it changes no captured table), add %s to skip_ddl (Config.SkipDDL) and restart; "+
			"with history_file (Config.HistoryFile) set you may instead record an equivalent statement the parser reads",
			ErrUnparsedDDL, q, db, pos.String(), cause, id)
	}
	line, _ := json.Marshal(HistoryEntry{Position: pos, DB: db, DDL: "<an equivalent statement: DROP TABLE and CREATE TABLE ... with the new shape>"})
	return fmt.Errorf("%w: %q (default database %q, at %s): %v. To continue: either append to the schema history %s the line\n%s\n"+
		"with a statement the history understands, and restart; or, if the statement does not change the shape of captured tables, add %s to skip_ddl in the source config and restart",
		ErrUnparsedDDL, q, db, pos.String(), cause, file, line, id)
}
