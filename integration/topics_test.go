package integration

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/converter"
	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/engine"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema"
)

// plainConsumerReadsCompact reads topic (of a pipeline whose config names
// no format, prefix db) as a consumer that is not sluice would, by what
// docs/record-format.md says of the default format: a row change's body
// is the payload alone, property sluice_schema names its schemas, and the
// message of the schema topic whose key is that name holds them; the
// envelope {"schema":…,"payload":…} rebuilt from them decodes as the JSON
// format's. A schema change (no value schema) travels whole.
func plainConsumerReadsCompact(t *testing.T, e env, db, topic string) {
	t.Helper()
	cfg := rocketmq.Config{NameServers: []string{e["SLUICE_ROCKETMQ_NAMESRV"]}, Pipeline: db, TopicPrefix: db}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type entry struct {
		ID         string          `json:"id"`
		Key, Value json.RawMessage // Connect schema JSON
	}
	schemas := map[string]entry{}
	err := rocketmq.Tail(ctx, cfg, rocketmq.TailOptions{Topics: []string{rocketmq.SchemaTopic(db)}}, func(m rocketmq.TailMessage) error {
		var en entry
		if err := json.Unmarshal(m.Value, &en); err != nil {
			return fmt.Errorf("schema message %s: %w", m.Value, err)
		}
		if keys := m.Properties[primitive.PropertyKeys]; keys != en.ID {
			return fmt.Errorf("schema message of id %s has key %q", en.ID, keys)
		}
		schemas[en.ID] = en
		return nil
	})
	if err != nil {
		t.Fatalf("reading the schema topic: %v", err)
	}
	codec := converter.NewJSON(converter.DefaultOptions())
	n := 0
	err = rocketmq.Tail(ctx, cfg, rocketmq.TailOptions{Topics: []string{topic}}, func(m rocketmq.TailMessage) error {
		id, key, value := m.Properties[rocketmq.SchemaProperty], m.Key, m.Value
		if id != "" { // the envelope, rebuilt
			en, ok := schemas[id]
			if !ok || bytes.HasPrefix(m.Value, []byte(`{"schema":`)) || !json.Valid(m.Value) {
				return fmt.Errorf("message at offset %d: %s %q (known: %d schemas), body %s", m.Offset, rocketmq.SchemaProperty, id, len(schemas), m.Value)
			}
			key = []byte(`{"schema":` + string(en.Key) + `,"payload":` + string(m.Key) + `}`)
			value = []byte(`{"schema":` + string(en.Value) + `,"payload":` + string(m.Value) + `}`)
		}
		rec, err := codec.Decode(key, value)
		if err != nil {
			return fmt.Errorf("message at offset %d (%s %q): %w", m.Offset, rocketmq.SchemaProperty, id, err)
		}
		if rec.Table.Table != "newt" {
			return fmt.Errorf("message at offset %d decodes to table %s", m.Offset, rec.Table)
		}
		if (rec.Op == schema.OpSchemaChange) == (id != "") {
			return fmt.Errorf("message at offset %d: op %s with %s %q: want a row's change by reference, a schema change whole", m.Offset, rec.Op, rocketmq.SchemaProperty, id)
		}
		if id != "" {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("%d row changes on %s, want at least the 20 inserts", n, topic)
	}
}

// rocketmqConfig writes a config of db's tables over RocketMQ whose
// transport section has the given extra lines (topics, topics_regex, …).
func rocketmqConfig(t *testing.T, e env, db, extra string) string {
	t.Helper()
	path := writeConfig(t, e, db, "embedded")
	editConfig(t, path, "  type: embedded\n  queues: 4\n", fmt.Sprintf(
		"  type: rocketmq\n  name_servers: [%q]\n  queues: 4\n  topic_prefix: %s\n  group: %s\n%s",
		e["SLUICE_ROCKETMQ_NAMESRV"], db, db+"_sink", extra))
	return path
}

// newTableLands creates a table while the pipeline runs, writes rows to it,
// and waits until the target has them all.
func newTableLands(t *testing.T, my, pg *sql.DB, db string, rs ...*running) {
	t.Helper()
	mustExec(t, my, "CREATE TABLE "+db+".newt (id INT PRIMARY KEY, v VARCHAR(20))")
	for i := 1; i <= 20; i++ {
		mustExec(t, my, "INSERT INTO "+db+".newt VALUES (?, ?)", i, fmt.Sprint("v", i))
	}
	mustExec(t, my, "UPDATE "+db+".newt SET v = 'changed' WHERE id <= 5")
	mustExec(t, my, "DELETE FROM "+db+".newt WHERE id > 15")
	q := [][2]string{{"SELECT id, v FROM " + db + ".newt ORDER BY id", `SELECT id, v FROM "` + db + `"."newt" ORDER BY id`}}
	waitSame(t, rs[0], func() (bool, string, error) {
		for _, r := range rs[1:] {
			r.failIfStopped(t)
		}
		same, detail, err := compareQueries(my, pg, q)
		if err != nil && strings.Contains(err.Error(), "does not exist") {
			return false, "the target has no table newt yet", nil
		}
		return same, detail, err
	})
}

// A table created while the pipeline runs over RocketMQ reaches the target:
// in one process without any topic list (the sink follows what the source
// publishes), and in a sink-only process that consumes by topics_regex.
func TestRocketMQNewTableReachesTheSink(t *testing.T) {
	for _, format := range []string{"", rocketmq.FormatPacked} {
		t.Run("one-process"+map[bool]string{true: "-" + format}[format != ""], func(t *testing.T) {
			e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN", "SLUICE_ROCKETMQ_NAMESRV")
			db, my, pg := sourceAndTarget(t, e, "tp_one")
			extra := ""
			if format != "" {
				extra = "  format: " + format + "\n"
			}
			r := startPipeline(t, rocketmqConfig(t, e, db, extra))
			defer r.stop(t)
			waitStreaming(t, my, pg, db, r)
			newTableLands(t, my, pg, db, r)
			if format == "" {
				plainConsumerReadsCompact(t, e, db, rocketmq.TopicName(db, db, "newt", rocketmq.TopicPerTable))
			}
		})
	}
	t.Run("sink-only-regex", func(t *testing.T) {
		e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN", "SLUICE_ROCKETMQ_NAMESRV")
		db, my, pg := sourceAndTarget(t, e, "tp_rx")
		path := rocketmqConfig(t, e, db, fmt.Sprintf("  topics_regex: '%s_.*'\n  topics_refresh: 1s\n", db))
		src := startPipelineOnly(t, path, "source")
		defer src.stop(t)
		snk := startPipelineOnly(t, path, "sink")
		defer snk.stop(t)
		waitStreaming(t, my, pg, db, snk)
		newTableLands(t, my, pg, db, snk, src)
	})
}

// A table the source publishes that no sink consumes is reported: the
// publisher names its topic (status unconsumed_topics) and the metric
// sluice_unconsumed_topics counts it, while the listed tables keep flowing.
func TestRocketMQUnconsumedTopicIsReported(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN", "SLUICE_ROCKETMQ_NAMESRV")
	db, my, pg := sourceAndTarget(t, e, "tp_un")
	orders := rocketmq.TopicName(db, db, "orders", "table")
	path := rocketmqConfig(t, e, db, fmt.Sprintf("  topics: [%s]\n  topics_refresh: 1s\n", orders))
	src := startPipelineOnly(t, path, "source")
	defer src.stop(t)
	snk := startPipelineOnly(t, path, "sink")
	defer snk.stop(t)
	waitStreaming(t, my, pg, db, snk)

	mustExec(t, my, "CREATE TABLE "+db+".lonely (id INT PRIMARY KEY)")
	mustExec(t, my, "INSERT INTO "+db+".lonely VALUES (1)")
	lonely := rocketmq.TopicName(db, db, "lonely", "table")
	reporter, ok := src.p.Publisher.(runtime.TopicReporter)
	if !ok {
		t.Fatalf("the RocketMQ publisher (%T) reports no unconsumed topics", src.p.Publisher)
	}
	deadline := time.Now().Add(90 * time.Second)
	for !slices.Contains(reporter.UnconsumedTopics(), lonely) {
		if time.Now().After(deadline) {
			t.Fatalf("topic %s, which no group reads, was never reported (reported: %v)", lonely, reporter.UnconsumedTopics())
		}
		src.failIfStopped(t)
		time.Sleep(500 * time.Millisecond)
	}
	if got := reporter.UnconsumedTopics(); slices.Contains(got, orders) {
		t.Errorf("topic %s, which the sink reads, is reported unconsumed: %v", orders, got)
	}
	var buf bytes.Buffer
	engine.WritePrometheus(&buf, []*engine.Pipeline{src.p})
	if !strings.Contains(buf.String(), "sluice_unconsumed_topics{") || strings.Contains(buf.String(), "sluice_unconsumed_topics{pipeline=\""+db+"\"} 0") {
		t.Errorf("metrics do not count the unconsumed topic:\n%s", grepLines(buf.String(), "sluice_unconsumed_topics"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
