package integration

import (
	"bytes"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/runtime/rocketmq"
)

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
	runtime.WritePrometheus(&buf, []*runtime.Pipeline{src.p})
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
