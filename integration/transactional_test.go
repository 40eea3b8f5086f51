package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// TestTransactionalLastTransactionVisible: with `transactional: true` a
// source transaction becomes visible in the target as soon as it is
// applied, although no later transaction follows it (the transports mark
// each queue's last record of a transaction whose commit they published),
// and all of it at once (one queue: across queues it commits per queue).
// `queues: 1` is one queue per broker, so on the two-broker test cluster
// the topic has two queues: the transaction's keys are chosen to hash to
// one queue of two or four, as the publisher routes them (before, the
// rows split 30/30 over the two brokers' queues and a reader saw 30 of
// 60 in about one run in five).
func TestTransactionalLastTransactionVisible(t *testing.T) {
	onEachTransport(t, func(t *testing.T, transport string, e env) {
		db, my, pg := sourceAndTarget(t, e, "it_txq")
		cfg := writeConfig(t, e, db, transport)
		editConfig(t, cfg, "sink:\n  type: postgres\n", "sink:\n  type: postgres\n  transactional: true\n")
		editConfig(t, cfg, "queues: 4", "queues: 1")
		r := startPipeline(t, cfg)
		waitStreaming(t, my, pg, db, r)
		const n = 60
		tx, err := my.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range oneQueueKeys(schema.TableID{Database: db, Table: "orders"}, 1001, n) {
			if _, err := tx.Exec("INSERT INTO "+db+".orders VALUES (?, 'tx', 1.00, 'new', '2024-01-01 00:00:00', NULL)", id); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// Nothing is written after it. Every poll must see none or all.
		deadline := time.Now().Add(60 * time.Second)
		for {
			var got int
			if err := pg.QueryRow(fmt.Sprintf(`SELECT count(*) FROM %q.orders WHERE customer = 'tx'`, db)).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got == n {
				break
			}
			if got != 0 {
				t.Fatalf("a reader saw %d of the transaction's %d rows", got, n)
			}
			if time.Now().After(deadline) {
				t.Fatal("the last transaction never became visible: the sink is still waiting for a later one")
			}
			r.failIfStopped(t)
			time.Sleep(50 * time.Millisecond)
		}
		r.stop(t)
	})
}

// oneQueueKeys returns n integer keys from first on whose rows of table go
// to the same queue as first's when a topic has 2 or 4 queues.
func oneQueueKeys(table schema.TableID, first int64, n int) []int64 {
	queue := func(id int64, queues int) int {
		r := schema.Record{Table: table, Key: []any{id}}
		return runtime.QueueFor(&r, queues)
	}
	var out []int64
	for id := first; len(out) < n; id++ {
		if queue(id, 2) == queue(first, 2) && queue(id, 4) == queue(first, 4) {
			out = append(out, id)
		}
	}
	return out
}
