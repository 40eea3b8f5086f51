package cluster

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/admin"
)

// The topics table holds, per connector, the topics its tasks published
// to or consumed from (GET /connectors/{name}/topics), and in the row with
// topic '' the number of resets (PUT .../topics/reset). A topic row counts
// only under the number of resets it was written with: a worker that read
// the number before a reset cannot bring back a topic the reset forgot.

// topicResets reads the connector's number of resets (0 before the first).
func (s *Store) topicResets(ctx context.Context, connector string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, s.q("SELECT resets FROM "+s.Table("topics")+" WHERE connector = ? AND topic = ''"), connector).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, retriable("read the topic resets of "+connector, err)
	}
	return n, nil
}

// addTopic records that connector used topic, unless the connector is gone
// or its number of resets is no longer resets.
func (s *Store) addTopic(ctx context.Context, connector, topic string, resets int64) error {
	num := "?"
	if s.dialect == "postgres" {
		num = "CAST(? AS BIGINT)" // a SELECT list gives no type to a bare parameter
	}
	sel := " SELECT ?, ?, " + num + " WHERE EXISTS (SELECT 1 FROM " + s.Table("connectors") + " WHERE name = ?)" +
		" AND COALESCE((SELECT resets FROM " + s.Table("topics") + " WHERE connector = ? AND topic = ''), 0) = " + num
	q := "INSERT INTO " + s.Table("topics") + " (connector, topic, resets)" + sel + " ON CONFLICT (connector, topic) DO UPDATE SET resets = EXCLUDED.resets"
	if s.dialect == "mysql" {
		q = "INSERT INTO " + s.Table("topics") + " (connector, topic, resets)" + strings.Replace(sel, " WHERE EXISTS", " FROM DUAL WHERE EXISTS", 1) + " ON DUPLICATE KEY UPDATE resets = VALUES(resets)"
	}
	if _, err := s.db.ExecContext(ctx, s.q(q), connector, topic, resets, connector, connector, resets); err != nil {
		return retriable("record topic "+topic+" of "+connector, err)
	}
	return nil
}

var _ admin.Topics = (*Control)(nil)

// Topics lists, sorted, the topics the connector's tasks have used since
// it was created or since its last ResetTopics.
func (c *Control) Topics(ctx context.Context, name string) ([]string, error) {
	if _, err := c.S.connector(ctx, name); err != nil {
		return nil, err
	}
	t := c.S.Table("topics")
	rows, err := c.S.db.QueryContext(ctx, c.S.q("SELECT topic FROM "+t+" WHERE connector = ? AND topic <> ''"+
		" AND resets = COALESCE((SELECT resets FROM "+t+" WHERE connector = ? AND topic = ''), 0) ORDER BY topic"), name, name)
	if err != nil {
		return nil, retriable("read the topics of "+name, err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var topic string
		if err := rows.Scan(&topic); err != nil {
			return nil, retriable("read the topics of "+name, err)
		}
		out = append(out, topic)
	}
	if err := rows.Err(); err != nil {
		return nil, retriable("read the topics of "+name, err)
	}
	return out, nil
}

// ResetTopics counts a reset, which hides the topics written before it,
// then deletes their rows; the tasks forget theirs at their next heartbeat
// (Worker.writeTopics).
func (c *Control) ResetTopics(ctx context.Context, name string) error {
	if _, err := c.S.connector(ctx, name); err != nil {
		return err
	}
	t := c.S.Table("topics")
	q := "INSERT INTO " + t + " AS t (connector, topic, resets) VALUES (?, '', 1) ON CONFLICT (connector, topic) DO UPDATE SET resets = t.resets + 1"
	if c.S.dialect == "mysql" {
		q = "INSERT INTO " + t + " (connector, topic, resets) VALUES (?, '', 1) ON DUPLICATE KEY UPDATE resets = resets + 1"
	}
	if _, err := c.S.db.ExecContext(ctx, c.S.q(q), name); err != nil {
		return retriable("reset the topics of "+name, err)
	}
	n, err := c.S.topicResets(ctx, name)
	if err != nil {
		return err
	}
	if _, err := c.S.db.ExecContext(ctx, c.S.q("DELETE FROM "+t+" WHERE connector = ? AND topic <> '' AND resets < ?"), name, n); err != nil {
		return retriable("reset the topics of "+name, err)
	}
	return nil
}

// writeTopics records the topics h's pipeline used that are not written
// yet; after a reset (the number of resets changed since the last call)
// the pipeline forgets the topics it used before.
func (w *Worker) writeTopics(ctx context.Context, h *hosted) error {
	n, err := w.s.topicResets(ctx, h.t.Connector)
	if err != nil {
		return err
	}
	if n != h.topicResets {
		if h.topicResets >= 0 {
			_ = h.rw.ResetTopics(h.cfg.Name)
		}
		h.topicResets, h.written = n, map[string]bool{}
	}
	topics, err := h.rw.Topics(h.cfg.Name)
	if err != nil {
		return nil // not hosted any more
	}
	for _, topic := range topics {
		if h.written[topic] {
			continue
		}
		if err := w.s.addTopic(ctx, h.t.Connector, topic, n); err != nil {
			return err
		}
		h.written[topic] = true
	}
	return nil
}

// UsedTopics are the gated publisher's (runtime.TopicTracker).
func (g gatedPublisher) UsedTopics() []string {
	if tt, ok := g.Publisher.(runtime.TopicTracker); ok {
		return tt.UsedTopics()
	}
	return nil
}

// ResetUsedTopics forgets them.
func (g gatedPublisher) ResetUsedTopics() {
	if tt, ok := g.Publisher.(runtime.TopicTracker); ok {
		tt.ResetUsedTopics()
	}
}
