package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime/admin"
	"github.com/sluicecdc/sluice/runtime/cluster"
)

// GET /connector-plugins and GET /connector-plugins/{type}/config answer
// in Kafka Connect's shapes, from the plugins' specs, in `sluice run`'s
// REST (admin.Local) and `sluice worker`'s (cluster.Control) alike.
func TestPluginRESTShapes(t *testing.T) {
	for name, c := range map[string]admin.Cluster{
		"run":    &admin.Local{PluginList: clusterPlugins(), Configs: pluginConfig},
		"worker": &cluster.Control{PluginList: clusterPlugins(), PluginConfigs: pluginConfig, Validator: validateForCluster},
	} {
		h := admin.NewHandler(c, "")
		get := func(path string) (int, []byte) {
			req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8083"+path, nil)
			req.RemoteAddr = "127.0.0.1:40000"
			rw := httptest.NewRecorder()
			h.ServeHTTP(rw, req)
			return rw.Code, rw.Body.Bytes()
		}
		code, body := get("/connector-plugins")
		var plugins []map[string]any
		if err := json.Unmarshal(body, &plugins); code != 200 || err != nil || len(plugins) == 0 {
			t.Fatalf("%s: /connector-plugins %d %s", name, code, body)
		}
		if len(plugins) != len(Plugins()) {
			t.Errorf("%s: %d plugins listed, want each of the %d once", name, len(plugins), len(Plugins()))
		}
		byClass := map[string]map[string]any{}
		for _, p := range plugins {
			if len(p) != 3 || p["version"] == "" {
				t.Errorf("%s: plugin %v: want exactly class, type and version", name, p)
			}
			byClass[p["class"].(string)] = p
		}
		for class, typ := range map[string]string{"mysql": "source", "jdbc": "sink", "embedded": "transport", "rocketmq": "transport"} {
			if byClass[class]["type"] != typ {
				t.Errorf("%s: class %s: %v, want type %s", name, class, byClass[class], typ)
			}
		}

		code, body = get("/connector-plugins/mysql/config")
		var keys []map[string]any
		if err := json.Unmarshal(body, &keys); code != 200 || err != nil {
			t.Fatalf("%s: config %d %s", name, code, body)
		}
		want := []string{"name", "type", "required", "default_value", "importance", "documentation", "group", "width", "display_name", "dependents", "order"}
		found := map[string]map[string]any{}
		for _, k := range keys {
			for _, f := range want {
				if _, ok := k[f]; !ok {
					t.Errorf("%s: key %v lacks %s", name, k["name"], f)
				}
			}
			if len(k) != len(want) {
				t.Errorf("%s: key %v has fields beyond Kafka Connect's", name, k["name"])
			}
			found[k["name"].(string)] = k
		}
		if k := found["server_id"]; k["type"] != "LONG" || k["required"] != true || k["importance"] != "HIGH" || k["default_value"] != nil || k["group"] != "source" {
			t.Errorf("%s: server_id %v", name, k)
		}
		if k := found["snapshot_chunk"]; k["default_value"] != "2048" || k["documentation"] == "" {
			t.Errorf("%s: snapshot_chunk %v", name, k)
		}
		if k := found["mask[].kind"]; k == nil || !strings.Contains(k["documentation"].(string), "Allowed values: hash, fixed, truncate.") {
			t.Errorf("%s: mask[].kind %v", name, k)
		}
		// by section type too, and 404 for no plugin
		if code, body := get("/connector-plugins/postgres/config"); code != 200 || !strings.Contains(string(body), `"name":"dsn"`) {
			t.Errorf("%s: postgres config %d %s", name, code, body)
		}
		if code, _ := get("/connector-plugins/oracle/config"); code != 404 {
			t.Errorf("%s: unknown plugin: %d, want 404", name, code)
		}
		if name != "worker" {
			continue
		}
		// validate carries the definitions, and masks a password it repeats
		req := httptest.NewRequest(http.MethodPut, "http://127.0.0.1:8083/connector-plugins/mysql/config/validate",
			strings.NewReader(`{"host": "h", "user": "u", "password": "pwSECRET", "server_id": 1}`))
		req.RemoteAddr = "127.0.0.1:40000"
		rw := httptest.NewRecorder()
		h.ServeHTTP(rw, req)
		var v struct {
			Name       string
			ErrorCount int `json:"error_count"`
			Groups     []string
			Configs    []struct {
				Definition map[string]any
				Value      map[string]any
			}
		}
		if err := json.Unmarshal(rw.Body.Bytes(), &v); rw.Code != 200 || err != nil || v.ErrorCount != 0 || len(v.Configs) < 10 || strings.Contains(rw.Body.String(), "SECRET") {
			t.Fatalf("validate: %d %s", rw.Code, rw.Body)
		}
		for _, c := range v.Configs {
			if c.Definition["name"] != c.Value["name"] || c.Definition["documentation"] == "" {
				t.Errorf("validate entry %v", c)
			}
			if c.Value["name"] == "source.host" && c.Value["value"] != "h" {
				t.Errorf("source.host: %v", c.Value)
			}
		}
	}
}
