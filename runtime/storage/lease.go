package storage

import (
	"fmt"
	"strings"
)

// Lease is a source task's hold on its durable writes in a cluster
// (`sluice worker`). The coordinator database keeps one row per task in the
// lease table:
//
//	task       text primary key   -- "<connector>/source" (see TaskName)
//	holder     text               -- the worker id that holds it
//	epoch      bigint             -- raised by one at every change of holder
//	expires_at timestamp(6)       -- judged by the database's own clock
//
// Every durable write of the task (positions, snapshot checkpoints, which
// travel inside positions, and schema history) puts Condition in the same
// statement, so the database refuses it once another worker took the task
// or the lease expired: a paused or partitioned worker writes nothing after
// it wakes. A zero Lease (Table "") means "no cluster": writes are not
// fenced (`sluice run`).
type Lease struct {
	Table  string // the lease table, e.g. sluice_leases; "" = unfenced
	Task   string
	Holder string
	Epoch  int64
}

// TaskName names a connector's task in the lease table: role "source" or
// "sink-<n>".
func TaskName(connector, role string) string { return connector + "/" + role }

// Held reports whether l fences anything.
func (l Lease) Held() bool { return l.Table != "" }

// Condition returns an SQL boolean that is true only while l is current
// and unexpired, and its arguments. dialect is "postgres" (placeholders $n,
// numbered from next) or "mysql" (placeholders ?). For a zero Lease it is
// "TRUE" with no arguments.
func (l Lease) Condition(dialect string, next int) (string, []any) {
	if !l.Held() {
		return "TRUE", nil
	}
	ph := func(i int) string {
		if dialect == "postgres" {
			return fmt.Sprintf("$%d", next+i)
		}
		return "?"
	}
	// The lease row is read with a shared lock: a takeover (an UPDATE of
	// that row) then waits for the write that checked it, and a write that
	// waited for a takeover re-reads the row and is refused. Without the
	// lock, a PostgreSQL READ COMMITTED write could pass on the snapshot
	// taken just before a takeover committed.
	lock := " LOCK IN SHARE MODE"
	if dialect == "postgres" {
		lock = " FOR SHARE"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "EXISTS (SELECT 1 FROM %s WHERE task = %s AND holder = %s AND epoch = %s AND expires_at > CURRENT_TIMESTAMP(6)%s)",
		l.Table, ph(0), ph(1), ph(2), lock)
	return b.String(), []any{l.Task, l.Holder, l.Epoch}
}
