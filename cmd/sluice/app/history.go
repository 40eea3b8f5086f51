package app

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/storage"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/secure"
)

// dbHistory is the schema history in a database (history_store: database):
// binlog's HistoryStore over storage.SQLHistory, each entry the JSON of a
// history file's line.
type dbHistory struct{ *storage.SQLHistory }

var _ binlog.HistoryStore = dbHistory{}

func (h dbHistory) Load(ctx context.Context) ([]binlog.HistoryEntry, error) {
	rows, err := h.SQLHistory.Load(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]binlog.HistoryEntry, 0, len(rows))
	for _, r := range rows {
		var e binlog.HistoryEntry
		dec := json.NewDecoder(bytes.NewReader(r.Entry))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, schema.Fatal(fmt.Errorf("schema history %s, seq %d: %v; fix or delete the row: %w", h, r.Seq, err, runtime.ErrConfig))
		}
		out = append(out, e)
	}
	return out, nil
}

func (h dbHistory) Append(ctx context.Context, entries ...binlog.HistoryEntry) error {
	rows := make([]storage.HistoryRow, len(entries))
	for i, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return schema.Fatal(fmt.Errorf("schema history %s: %w", h, err))
		}
		rows[i] = storage.HistoryRow{Position: e.Position.String(), Entry: b}
	}
	return h.SQLHistory.Append(ctx, rows...)
}

// historyDBs holds one connection pool per database for the schema
// histories of the process: a restarted task reuses it.
var historyDBs sync.Map

// openDBHistory opens the schema history of pipeline in the positions
// database, fenced by lease.
func openDBHistory(ctx context.Context, pos positionsConfig, table, pipeline string, lease storage.Lease) (binlog.HistoryStore, error) {
	key := pos.typ + "\x00" + pos.DSN
	var db *sql.DB
	if v, ok := historyDBs.Load(key); ok {
		db = v.(*sql.DB)
	} else {
		d, err := sql.Open(pos.typ, pos.DSN)
		if err != nil {
			return nil, secure.RedactDSNError(fmt.Errorf("schema history: %w: %w", err, runtime.ErrConfig), pos.DSN)
		}
		d.SetMaxOpenConns(2)
		if prev, loaded := historyDBs.LoadOrStore(key, d); loaded {
			d.Close()
			db = prev.(*sql.DB)
		} else {
			db = d
		}
	}
	h, err := storage.NewSQLHistory(ctx, db, pos.typ, table, pipeline, lease)
	if err != nil {
		return nil, secure.RedactDSNError(err, pos.DSN)
	}
	return dbHistory{h}, nil
}
