package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/schema"
)

// keylessRefusedAtStart: under the default keyless_mode (before_image), a
// source table without primary key whose target table has a column the
// target cannot compare exactly (PostgreSQL money, MariaDB geometry) is
// refused when the sink side starts, before any row of any table is
// written: the fatal error names the table, the column, keyless_mode and
// its switches append and fail, the run ends FAILED (a process: exit code
// 1), and the rows of a good table, snapshotted before the keyless one,
// never reach the target. Over RocketMQ the source process publishes both
// tables first, then the sink-only process refuses at start with the
// shapes it reads from the source's catalogue. With keyless_mode: append,
// then fail, the same pipeline runs. Before, the refusal came at the
// keyless table's first row, after the good table's rows were written.
func keylessRefusedAtStart(t *testing.T, k *kit) {
	good, bad := "a_good", "b_keyless"
	k.createTable(t, good, "id BIGINT PRIMARY KEY, v BIGINT NULL")
	k.insertRange(t, good, 1, 3000, 1)
	k.createTable(t, bad, "id BIGINT NULL, v BIGINT NULL, m VARCHAR(40) NULL")
	k.insertRange(t, bad, 1, 10, 1)
	typ := "money" // its text form follows lc_monetary
	if k.target == "mysql" {
		typ = "geometry" // compared by its internal form
	} else {
		mustExec(t, k.dst, `CREATE SCHEMA "`+k.schema+`"`)
	}
	mustExec(t, k.dst, "CREATE TABLE "+k.targetTable(bad)+" (id BIGINT NULL, v BIGINT NULL, m "+typ+" NULL)")
	withSnapshot := func() string {
		cfg := k.config(t)
		editConfig(t, cfg, "  snapshot: never\n", "  snapshot: initial\n  snapshot_chunk: 200\n")
		return cfg
	}
	cfg := withSnapshot()
	check := func(t *testing.T, err error) {
		t.Helper()
		for _, want := range []string{bad, "m (" + typ, "keyless_mode", "append", "fail"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not name %q: %v", want, err)
			}
		}
		if cols := k.targetColumns(t, good); len(cols) > 0 {
			var n int
			_ = k.dst.QueryRow("SELECT count(*) FROM " + k.targetTable(good)).Scan(&n)
			t.Errorf("the sink made %s (columns %v, %d rows) before refusing %s", good, cols, n, bad)
		}
		var n int
		if err := k.dst.QueryRow("SELECT count(*) FROM " + k.targetTable(bad)).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s has %d rows (%v), want none", bad, n, err)
		}
	}
	var bin string
	if k.transport == "rocketmq" {
		bin = buildSluice(t)
		// The source side alone publishes the snapshot of both tables: its
		// position without a snapshot in progress is saved once every
		// record before it is delivered.
		src := startProcess(t, bin, "source", cfg)
		posFile := filepath.Join(k.dir, "positions", k.db+".position")
		deadline := time.Now().Add(2 * time.Minute)
		for {
			b, err := os.ReadFile(posFile)
			if err == nil && len(b) > 0 && !strings.Contains(string(b), `"snapshot"`) {
				break
			}
			src.failIfStopped(t)
			if time.Now().After(deadline) {
				t.Fatalf("the source never finished its snapshot (position %q, %v)", b, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		src.stopProcess(t)
		p := startProcess(t, bin, "sink", cfg)
		select {
		case <-p.exited:
			if code := p.cmd.ProcessState.ExitCode(); code != 1 {
				t.Errorf("the sink process exited with %d, want 1 (a fatal error)", code)
			}
			check(t, <-p.errc)
		case <-time.After(90 * time.Second):
			t.Fatal("the sink process did not stop at start")
		}
	} else {
		r := startPipeline(t, cfg)
		select {
		case err := <-r.errc:
			if err == nil || schema.ClassOf(err) != schema.ClassFatal {
				t.Fatalf("the pipeline ended with %v, want a fatal error", err)
			}
			if st := r.p.Status(); st.State != engine.StateFailed {
				t.Errorf("state %s, want %s", st.State, engine.StateFailed)
			}
			check(t, err)
		case <-time.After(90 * time.Second):
			r.cancel()
			t.Fatal("the pipeline kept running with a keyless table it cannot match rows of")
		}
	}
	if t.Failed() {
		return
	}

	// append, then fail: the pipeline starts and applies both tables (fail
	// refuses only updates and deletes).
	for i, mode := range []string{"append", "fail"} {
		k.sink = "  keyless_mode: " + mode + "\n"
		cfg = withSnapshot()
		if i > 0 {
			k.insertRange(t, good, 3001, 3100, 1)
			k.insertRange(t, bad, 11, 20, 1)
		}
		if k.transport == "rocketmq" {
			var src *process
			if i > 0 {
				src = startProcess(t, bin, "source", cfg)
			}
			p := startProcess(t, bin, "sink", cfg)
			k.sameRows(t, p.running, good, "id, v", 3*time.Minute)
			k.sameRows(t, p.running, bad, "id, v", time.Minute)
			p.stopProcess(t)
			if src != nil {
				src.stopProcess(t)
			}
			continue
		}
		r := startPipeline(t, cfg)
		k.sameRows(t, r, good, "id, v", 3*time.Minute)
		k.sameRows(t, r, bad, "id, v", time.Minute)
		r.stop(t)
	}
}
