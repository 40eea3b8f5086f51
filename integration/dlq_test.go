package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
)

// TestRejectedRowGoesToDeadLetterTopic streams a row PostgreSQL refuses (a
// NUL character in text, which MariaDB stores) with on_error: dlq: the row
// must land on the dead-letter topic with the database's error, and every
// other row must still reach the target.
func TestRejectedRowGoesToDeadLetterTopic(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN", "SLUICE_ROCKETMQ_NAMESRV")
	db, my, pg := sourceAndTarget(t, e, "it_dlq")
	path := writeConfig(t, e, db, "rocketmq")
	editConfig(t, path, "  type: postgres\n", "  type: postgres\n  on_error: dlq\n")

	r := startPipeline(t, path)
	defer r.stop(t)
	waitStreaming(t, my, pg, db, r)
	w := newWorkload(my, db)
	w.run(t, 300)
	mustExec(t, my, "INSERT INTO "+db+".orders (id, customer, amount, status, updated_at) VALUES (999999, 'nul\\0byte', 1, 'new', '2024-01-01')")
	w.run(t, 300)

	cfg := rocketmq.Config{NameServers: []string{e["SLUICE_ROCKETMQ_NAMESRV"]}, Pipeline: db, TopicPrefix: db}
	var got rocketmq.TailMessage
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := rocketmq.Tail(ctx, cfg, rocketmq.TailOptions{Topics: []string{rocketmq.DeadLetterTopic(db)}, Follow: true, Limit: 1},
		func(m rocketmq.TailMessage) error { got = m; return rocketmq.ErrTailDone })
	if err != nil && !errors.Is(err, rocketmq.ErrTailDone) {
		t.Fatalf("reading the dead-letter topic: %v", err)
	}
	// The sink refuses the NUL before PostgreSQL does, naming the column.
	if cause := got.Properties["sluice_error"]; !strings.Contains(cause, `column "customer"`) || !strings.Contains(cause, "NUL byte") {
		t.Fatalf("dead-letter message lacks the rejection's cause: properties %v", got.Properties)
	}
	rec, err := converter.NewJSON(converter.DefaultOptions()).Decode(got.Key, got.Value)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Table.Table != "orders" || rec.KeyString() != "999999" {
		t.Fatalf("dead-letter record is %s key %q, want orders key 999999", rec.Table, rec.KeyString())
	}
	// Everything else arrived: once the bad row is gone from the source too,
	// both sides are equal.
	mustExec(t, my, "DELETE FROM "+db+".orders WHERE id = 999999")
	waitEqual(t, my, pg, db, r)
}
