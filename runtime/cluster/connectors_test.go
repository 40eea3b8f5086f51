package cluster

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime/admin"
)

func TestParseConnectorTasks(t *testing.T) {
	cases := []struct {
		doc   string
		roles []string
		names []string
		only  []string
	}{
		{`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`,
			[]string{"source_sink"}, []string{"c/source"}, []string{""}},
		{`{"source":{"type":"mysql"},"transport":{"type":"rocketmq"},"sink":{"type":"postgres"}}`,
			[]string{"source", "sink"}, []string{"c/source", "c/sink-1"}, []string{"source", "sink"}},
		{`{"source":{"type":"mysql"},"transport":{"type":"rocketmq"},"sink":{"type":"postgres"},"sink_tasks":3}`,
			[]string{"source", "sink", "sink", "sink"}, []string{"c/source", "c/sink-1", "c/sink-2", "c/sink-3"}, []string{"source", "sink", "sink", "sink"}},
		{`{"transport":{"type":"rocketmq"},"sink":{"type":"postgres"}}`,
			[]string{"sink"}, []string{"c/sink-1"}, []string{"sink"}},
		{`{"source":{"type":"mysql"},"transport":{"type":"rocketmq"}}`,
			[]string{"source"}, []string{"c/source"}, []string{"source"}},
	}
	for _, tc := range cases {
		cfg, tasks, err := ParseConnector("c", json.RawMessage(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.doc, err)
		}
		if cfg.Name != "c" {
			t.Fatalf("%s: name %q", tc.doc, cfg.Name)
		}
		var roles, names, only []string
		for _, tk := range tasks {
			roles, names, only = append(roles, tk.Role), append(names, tk.Name), append(only, tk.Only)
			// admin.TaskID: 0 is the source (or embedded) task, sink-n is n
			if want := strings.TrimPrefix(tk.Name, "c/sink-"); tk.Role == "sink" && want != strconv.Itoa(tk.ID) || tk.Role != "sink" && tk.ID != 0 {
				t.Fatalf("%s: task %s has id %d", tc.doc, tk.Name, tk.ID)
			}
		}
		if strings.Join(roles, ",") != strings.Join(tc.roles, ",") || strings.Join(names, ",") != strings.Join(tc.names, ",") || strings.Join(only, ",") != strings.Join(tc.only, ",") {
			t.Fatalf("%s: tasks %v %v %v", tc.doc, roles, names, only)
		}
	}
}

func TestParseConnectorRefuses(t *testing.T) {
	for _, doc := range []string{
		`[]`, `"x"`, `{`,
		`{"transport":{"type":"embedded"}}`, // neither source nor sink
		`{"name":"other","source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"}}`,
		`{"source":{"type":"mysql"},"transport":{"type":"rocketmq"},"sink":{"type":"postgres"},"sink_tasks":0}`,
		`{"source":{"type":"mysql"},"transport":{"type":"rocketmq"},"sink":{"type":"postgres"},"sink_tasks":1.5}`,
		`{"source":{"type":"mysql"},"transport":{"type":"rocketmq"},"sink":{"type":"postgres"},"sink_tasks":"2"}`,
		`{"source":{"type":"mysql"},"transport":{"type":"embedded"},"sink":{"type":"postgres"},"unknown":1}`,
	} {
		if _, _, err := ParseConnector("c", json.RawMessage(doc)); !errors.Is(err, admin.ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", doc, err)
		}
	}
}

func TestPlaceholders(t *testing.T) {
	s := &Store{dialect: "postgres"}
	if got := s.q("a = ? AND b = ? AND " + s.later()); got != "a = $1 AND b = $2 AND (CURRENT_TIMESTAMP(6) + CAST($3 AS BIGINT) * INTERVAL '1 microsecond')" {
		t.Fatal(got)
	}
	m := &Store{dialect: "mysql"}
	if got := m.q("a = ?"); got != "a = ?" {
		t.Fatal(got)
	}
	if connectorOf("a/b/source") != "a/b" || connectorOf("x") != "x" {
		t.Fatal("connectorOf")
	}
}

// TestParseConnectorSourceTasks: a source's tasks key makes that many
// source tasks, the first named as an unsplit source's and saving in the
// connector's positions row, each other in a row of its own; a bad count
// is refused.
func TestParseConnectorSourceTasks(t *testing.T) {
	_, tasks, err := ParseConnector("c", json.RawMessage(`{"source":{"type":"rocketmq","tasks":3},"transport":{"type":"rocketmq"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name, row string
		id        int
	}{{"c/source", "c", 0}, {"c/source-1", "c/source-1", 1}, {"c/source-2", "c/source-2", 2}}
	if len(tasks) != len(want) {
		t.Fatalf("tasks %+v", tasks)
	}
	for i, w := range want {
		tk := tasks[i]
		if tk.Name != w.name || tk.ID != w.id || tk.Role != "source" || tk.Only != "source" || positionRow(tk.Name) != w.row || SourceTaskOf(tk.Name) != i {
			t.Errorf("task %d: %+v, row %q, index %d; want %+v", i, tk, positionRow(tk.Name), SourceTaskOf(tk.Name), w)
		}
	}
	for _, task := range []string{"c/sink-1", "c/source", "x/source-1/sink-1", "c/source-01", "c/source-x"} {
		if SourceTaskOf(task) != 0 || positionRow(task) != connectorOf(task) {
			t.Errorf("%s: index %d, row %q", task, SourceTaskOf(task), positionRow(task))
		}
	}
	for _, bad := range []string{`0`, `65`, `1.5`, `"2"`, `[2]`} {
		_, _, err := ParseConnector("c", json.RawMessage(`{"source":{"type":"rocketmq","tasks":`+bad+`},"transport":{"type":"rocketmq"}}`))
		if !errors.Is(err, admin.ErrInvalid) || !strings.Contains(err.Error(), "tasks") {
			t.Errorf("tasks %s: %v, want ErrInvalid naming tasks", bad, err)
		}
	}
}
