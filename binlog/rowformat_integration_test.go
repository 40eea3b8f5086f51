package binlog

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// TestCheckMinimalMetadataWithHistory (d8): binlog_row_metadata=MINIMAL
// (MySQL's default) is what the source runs with when it keeps a schema
// history: check warns and says so; without a history it fails, with the
// fix. Events logged under MINIMAL stop a source without a history with
// advice that helps for them (a history), not only FULL for what comes.
func TestCheckMinimalMetadataWithHistory(t *testing.T) {
	env := needScratchServer(t, true)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	cfg := testConfig(env, db)
	plain := openSource(t, cfg, nil) // opened while the server logs FULL metadata
	exec(t, c, "SET GLOBAL binlog_row_metadata = MINIMAL")
	t.Cleanup(func() { _, _ = c.Execute("SET GLOBAL binlog_row_metadata = FULL") })

	cfg.ServerID++ // the checks' own id, not the running source's
	ps := checkNow(t, cfg)
	var got []string
	for _, p := range ps {
		if p.Check == "binlog_row_metadata" {
			got = append(got, p.String())
		}
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], `FAIL binlog_row_metadata: binlog_row_metadata is "MINIMAL", not FULL`) ||
		!strings.Contains(got[0], "SET GLOBAL binlog_row_metadata=FULL") || !strings.Contains(got[0], "history_file") {
		t.Errorf("check without a history: %v, want a FAIL whose fix names FULL and history_file", got)
	}
	hcfg := cfg
	hcfg.HistoryFile = filepath.Join(t.TempDir(), "history.jsonl")
	ps = checkNow(t, hcfg)
	if f := failures(ps); len(f) > 0 {
		t.Errorf("check with a history on MINIMAL: failures %v", f)
	}
	got = got[:0]
	for _, p := range ps {
		if p.Check == "binlog_row_metadata" {
			got = append(got, p.String())
		}
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], `WARN binlog_row_metadata: binlog_row_metadata is "MINIMAL"`) || !strings.Contains(got[0], "schema history") {
		t.Errorf("check with a history: %v, want one WARN naming the schema history", got)
	}

	// an event logged under MINIMAL reaches the source opened without a history
	exec(t, c, "INSERT INTO t VALUES (1, 1)")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var err error
	for err == nil {
		_, err = plain.Read(ctx)
	}
	if !errors.Is(err, ErrMissingMetadata) || !strings.Contains(err.Error(), "history_file") {
		t.Fatalf("MINIMAL event without a history: %v, want ErrMissingMetadata naming history_file", err)
	}
}

// TestRowImagesRefused: binlog_row_image MINIMAL or NOBLOB leaves columns
// out of row images; it is refused by check, at start, and at the first
// such event (a session may set it), each time with the fix.
func TestRowImagesRefused(t *testing.T) {
	env := needScratchServer(t, true)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE t (id INT PRIMARY KEY, v INT, b BLOB)")
	exec(t, c, "INSERT INTO t VALUES (1, 1, 'blob'), (2, 2, 'blob')")
	cfg := testConfig(env, db)
	for _, image := range []string{"MINIMAL", "NOBLOB"} {
		exec(t, c, "SET GLOBAL binlog_row_image = "+image)
		var got []string
		for _, p := range checkNow(t, cfg) {
			if p.Check == "binlog_row_image" {
				got = append(got, p.String())
			}
		}
		if len(got) != 1 || !strings.Contains(got[0], "FAIL binlog_row_image") || !strings.Contains(got[0], "binlog_row_image=FULL") {
			t.Errorf("check with binlog_row_image=%s: %v, want a FAIL with the fix", image, got)
		}
		s, err := NewSource(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Open(context.Background(), nil)
		s.Close()
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "set binlog_row_image=FULL") || schema.ClassOf(err) != schema.ClassFatal {
			t.Errorf("Open with binlog_row_image=%s: %v, want a fatal error with the fix", image, err)
		}
	}
	exec(t, c, "SET GLOBAL binlog_row_image = FULL")
	for i, image := range []string{"MINIMAL", "NOBLOB"} {
		s := openSource(t, cfg, nil)
		exec(t, c, "SET SESSION binlog_row_image = "+image)
		exec(t, c, "UPDATE t SET v = v + 10 WHERE id = "+[]string{"1", "2"}[i])
		exec(t, c, "SET SESSION binlog_row_image = FULL")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var err error
		for err == nil {
			var recs []schema.Record
			recs, err = s.Read(ctx)
			if len(ownData(recs, db)) > 0 {
				t.Fatalf("session binlog_row_image=%s: records handed on: %s", image, summary(ownData(recs, db)))
			}
		}
		cancel()
		s.Close()
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "binlog_row_image=FULL") || schema.ClassOf(err) != schema.ClassFatal {
			t.Errorf("an event logged with session binlog_row_image=%s: %v, want a fatal error with the fix", image, err)
		}
	}
}
