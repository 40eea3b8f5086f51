package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime/plugin"
)

// kcCluster is a Cluster with every capability Kafka Connect has an
// endpoint for: offsets, topics and plugin configs.
type kcCluster struct{ *offsetting }

func (kcCluster) Topics(context.Context, string) ([]string, error) {
	return []string{"shop.orders"}, nil
}
func (kcCluster) ResetTopics(context.Context, string) error { return nil }
func (kcCluster) PluginConfig(context.Context, string) ([]ConfigKeyInfo, error) {
	return KeyInfos("source", []plugin.ConfigKey{{Name: "port", Type: "INT", Default: "3306", Doc: "the port"}}), nil
}

// Validate answers as the registry's validation does (cmd/sluice/app's
// validateForCluster, TestValidateCarriesDefinitions): each key with its
// definition and value.
func (c kcCluster) Validate(ctx context.Context, typ string, cfg json.RawMessage) (Validation, error) {
	keys, _ := c.PluginConfig(ctx, typ)
	return Validation{Name: typ, ErrorCount: 1, Groups: []string{"source"}, Configs: []ConfigInfo{{Definition: &keys[0],
		Value: ConfigValue{Name: "source.port", Value: "x", RecommendedValues: []string{}, Errors: []string{"not a number"}, Visible: true}}}}, nil
}

// kcDefinition is a ConfigKeyInfo as Kafka Connect documents it.
const kcDefinition = `{"name": "topics", "type": "LIST", "required": false, "default_value": "", "importance": "HIGH",
	"documentation": "...", "group": "Common", "width": "LONG", "display_name": "Topics", "dependents": [], "order": 4}`

// kcDocumented are the response bodies of Kafka Connect's REST reference,
// their members and nesting as documented (the values are ours), for each
// endpoint sluice serves too.
var kcDocumented = []struct{ method, path, body, doc string }{
	{"GET", "/", "", `{"version": "3.7.0", "commit": "abc", "kafka_cluster_id": "x"}`},
	{"GET", "/connectors", "", `["a"]`},
	{"GET", "/connectors?expand=status", "", `{"a": {"status": {"name": "a", "connector": {"state": "RUNNING", "worker_id": "w:8083"},
		"tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w:8083"}], "type": "source"}}}`},
	{"GET", "/connectors?expand=info", "", `{"a": {"info": {"name": "a", "config": {}, "tasks": [{"connector": "a", "task": 0}], "type": "source"}}}`},
	{"GET", "/connectors/a", "", `{"name": "a", "config": {}, "tasks": [{"connector": "a", "task": 0}], "type": "source"}`},
	{"GET", "/connectors/a/config", "", `{}`},
	{"GET", "/connectors/a/status", "", `{"name": "a", "connector": {"state": "RUNNING", "worker_id": "w:8083"},
		"tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w:8083"}], "type": "source"}`},
	{"GET", "/connectors/a/tasks", "", `[{"id": {"connector": "a", "task": 0}, "config": {}}]`},
	{"GET", "/connectors/a/tasks/0/status", "", `{"id": 0, "state": "RUNNING", "worker_id": "w:8083"}`},
	{"GET", "/connectors/a/topics", "", `{"a": {"topics": ["t"]}}`},
	{"GET", "/connectors/a/offsets", "", `{"offsets": [{"partition": {"server": "s"}, "offset": {"pos": 1}}]}`},
	{"GET", "/connector-plugins", "", `[{"class": "c", "type": "source", "version": "1"}]`},
	{"GET", "/connector-plugins/mysql/config", "", `[` + kcDefinition + `]`},
	{"PUT", "/connector-plugins/mysql/config/validate", `{"sink": {"dsn": "x"}}`, `{"name": "c", "error_count": 1, "groups": ["Common"],
		"configs": [{"definition": ` + kcDefinition + `, "value": {"name": "topics", "value": "t", "recommended_values": [], "errors": ["..."], "visible": true}}]}`},
	{"GET", "/admin/loggers", "", `{"root": {"level": "INFO", "last_modified": null}}`},
	{"GET", "/connectors/nosuch/status", "", `{"error_code": 404, "message": "..."}`},
}

// kcLeftOut are documented members sluice does not have, and why.
var kcLeftOut = map[string]string{
	"GET / .kafka_cluster_id": "sluice runs without a Kafka cluster of its own",
}

// TestKafkaConnectDocumentedShapes: every endpoint sluice shares with
// Kafka Connect answers with every member of Kafka Connect's documented
// response, nested alike and of the same JSON kind (a documented null or
// an empty object or list leaves the member's kind open); sluice's extras
// are beside them.
func TestKafkaConnectDocumentedShapes(t *testing.T) {
	pos := `{"v":1,"flavor":"mariadb","gtid":"0-1-42","file":"mariadb-bin.000001","pos":1234}`
	c := kcCluster{&offsetting{fakeCluster: newFake(), pos: map[string]string{"a": pos}}}
	h := NewHandler(c, "", WithLogLevel(new(slog.LevelVar)))
	if code, out := do(t, h, "POST", "/connectors", `{"name": "a", "config": {"source": {"type": "mysql"}}}`); code != 201 {
		t.Fatalf("create: %d %s", code, out)
	}
	c.failed["a"] = true
	for _, e := range kcDocumented {
		code, out := do(t, h, e.method, e.path, e.body)
		var got, doc any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Errorf("%s %s: %d %q is not JSON", e.method, e.path, code, out)
			continue
		}
		if err := json.Unmarshal([]byte(e.doc), &doc); err != nil {
			t.Fatalf("the documented body of %s %s: %v", e.method, e.path, err)
		}
		for _, p := range sameShape(e.method+" "+e.path+" ", doc, got) {
			if _, ok := kcLeftOut[p]; !ok {
				t.Errorf("%s (%d %s)", p, code, out)
			}
		}
	}
}

// sameShape lists where got lacks a member of doc or differs in kind.
func sameShape(at string, doc, got any) []string {
	switch d := doc.(type) {
	case nil:
		return nil
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an object", at, got)}
		}
		var out []string
		for k, v := range d {
			gv, has := g[k]
			if !has {
				out = append(out, at+"."+k)
				continue
			}
			out = append(out, sameShape(at+"."+k, v, gv)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want a list", at, got)}
		}
		if len(d) == 0 {
			return nil
		}
		var out []string
		for i := range g {
			out = append(out, sameShape(fmt.Sprintf("%s[%d]", at, i), d[0], g[i])...)
		}
		return out
	default:
		if got != nil && fmt.Sprintf("%T", got) != fmt.Sprintf("%T", doc) {
			return []string{fmt.Sprintf("%s: %T, want %T", at, got, doc)}
		}
		return nil
	}
}

// everything is kcCluster with stop and signals too.
type everything struct {
	kcCluster
	*signalingCluster
}

func (everything) Stop(context.Context, string) error { return nil }

// TestEveryLifecycleCallLogged: besides pause, resume and restart
// (TestLifecycleLogged), every call that changes a connector logs one INFO
// line naming the action, the connector and who asked: create, config
// change, stop, a signal, offsets altered and reset, topics reset, delete.
func TestEveryLifecycleCallLogged(t *testing.T) {
	buf := logToBuffer(t)
	f := newFake()
	c := everything{kcCluster{&offsetting{fakeCluster: f, pos: map[string]string{}}}, &signalingCluster{fakeCluster: f}}
	h := NewHandler(c, "")
	for _, call := range []struct{ method, path, body, line string }{
		{"POST", "/connectors", `{"name": "c", "config": {"source": {"password": "s3cret"}}}`, "connector create through REST"},
		{"PUT", "/connectors/c/config", `{"source": {"password": "s3cret", "port": 1}}`, "connector config change through REST"},
		{"PUT", "/connectors/c/stop", "", "connector stop through REST"},
		{"POST", "/connectors/c/signals", `{"type": "execute-snapshot"}`, "connector signal execute-snapshot through REST"},
		{"PATCH", "/connectors/c/offsets", `{"offsets": [{"partition": {"server": "s"}, "offset": {"pos": 1}}]}`, "connector offsets alter through REST"},
		{"DELETE", "/connectors/c/offsets", "", "connector offsets reset through REST"},
		{"PUT", "/connectors/c/topics/reset", "", "connector topics reset through REST"},
		{"DELETE", "/connectors/c", "", "connector delete through REST"},
		{"DELETE", "/connectors/c", "", "connector delete through REST failed"},
	} {
		buf.Reset()
		code, body := do(t, h, call.method, call.path, call.body)
		out := buf.String()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], `msg="`+call.line+`"`) ||
			!strings.Contains(lines[0], "remote=192.0.2.1:1234") || !strings.Contains(lines[0], "connector=c") || strings.Contains(out, "s3cret") {
			t.Errorf("%s %s (%d %s) logged %q, want one INFO line %q with connector=c and remote=192.0.2.1:1234, no secret", call.method, call.path, code, body, out, call.line)
		}
	}
}
