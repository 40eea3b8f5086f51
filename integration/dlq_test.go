package integration

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/cmd/sluice/app"
	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime/kafka"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
)

// TestRejectedRowGoesToDeadLetterTopic streams a row PostgreSQL refuses (a
// NUL character in text, which MariaDB stores) with on_error: dlq, over each
// transport with a dead-letter topic: the row must land on that transport's
// dead-letter topic with the database's error, and every other row must
// still reach the target.
func TestRejectedRowGoesToDeadLetterTopic(t *testing.T) {
	for _, tc := range []struct {
		transport, server string
		// tail: `sluice tail --dlq` is checked too (only where tested here).
		tail bool
		// read returns the first dead letter's key, value and error.
		read func(ctx context.Context, e env, db string) (key, value []byte, cause string, err error)
	}{
		{"rocketmq", "SLUICE_ROCKETMQ_NAMESRV", false, func(ctx context.Context, e env, db string) ([]byte, []byte, string, error) {
			cfg := rocketmq.Config{NameServers: []string{e["SLUICE_ROCKETMQ_NAMESRV"]}, Pipeline: db, TopicPrefix: db}
			var got rocketmq.TailMessage
			err := rocketmq.Tail(ctx, cfg, rocketmq.TailOptions{Topics: []string{rocketmq.DeadLetterTopic(db)}, Follow: true, Limit: 1},
				func(m rocketmq.TailMessage) error { got = m; return rocketmq.ErrTailDone })
			if errors.Is(err, rocketmq.ErrTailDone) {
				err = nil
			}
			return got.Key, got.Value, got.Properties[rocketmq.DeadLetterErrorProperty], err
		}},
		{"kafka", "SLUICE_KAFKA_BROKERS", true, func(ctx context.Context, e env, db string) ([]byte, []byte, string, error) {
			cfg := kafka.Config{Brokers: []string{e["SLUICE_KAFKA_BROKERS"]}, Pipeline: db, TopicPrefix: db}
			var got kafka.TailMessage
			err := kafka.Tail(ctx, cfg, kafka.TailOptions{Topics: []string{kafka.DeadLetterTopic(db)}, Follow: true, Limit: 1},
				func(m kafka.TailMessage) error { got = m; return nil })
			if err == nil && got.Value == nil {
				err = ctx.Err()
			}
			return got.Key, got.Value, got.Headers[kafka.DeadLetterErrorHeader], err
		}},
	} {
		t.Run(tc.transport, func(t *testing.T) {
			e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN", tc.server)
			db, my, pg := sourceAndTarget(t, e, "it_dlq")
			path := writeConfig(t, e, db, tc.transport)
			editConfig(t, path, "  type: postgres\n", "  type: postgres\n  on_error: dlq\n")

			r := startPipeline(t, path)
			defer r.stop(t)
			waitStreaming(t, my, pg, db, r)
			w := newWorkload(my, db)
			w.run(t, 300)
			mustExec(t, my, "INSERT INTO "+db+".orders (id, customer, amount, status, updated_at) VALUES (999999, 'nul\\0byte', 1, 'new', '2024-01-01')")
			w.run(t, 300)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			key, value, cause, err := tc.read(ctx, e, db)
			if err != nil {
				t.Fatalf("reading the dead-letter topic: %v", err)
			}
			// The sink refuses the NUL before PostgreSQL does, naming the column.
			if !strings.Contains(cause, `column "customer"`) || !strings.Contains(cause, "NUL byte") {
				t.Fatalf("dead letter lacks the rejection's cause: sluice_error %q", cause)
			}
			rec, err := converter.NewJSON(converter.DefaultOptions()).Decode(key, value)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Table.Table != "orders" || rec.KeyString() != "999999" {
				t.Fatalf("dead-letter record is %s key %q, want orders key 999999", rec.Table, rec.KeyString())
			}
			if tc.tail {
				// The dead letter is stored: tail prints it, its cause as "error".
				var out, errb bytes.Buffer
				if code := app.Main([]string{"tail", "--config", path, "--dlq"}, &out, &errb); code != 0 {
					t.Fatalf("sluice tail --dlq: exit %d: %s", code, errb.String())
				}
				line := strings.TrimSpace(out.String())
				if strings.Count(line, "\n") != 0 || !strings.Contains(line, `"key":{"id":999999}`) || !strings.Contains(line, `"error":"`) || !strings.Contains(line, "NUL byte") {
					t.Fatalf("sluice tail --dlq printed %q, want the one dead letter of key 999999 with its error", line)
				}
			}
			// Everything else arrived: once the bad row is gone from the source too,
			// both sides are equal.
			mustExec(t, my, "DELETE FROM "+db+".orders WHERE id = 999999")
			waitEqual(t, my, pg, db, r)
		})
	}
}
