package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime/rocketmq"
)

// TestRESTTopics is GET /connectors/{name}/topics and PUT
// .../topics/reset of `sluice run --rest`, in Kafka Connect's shapes: on
// RocketMQ the table's topic (published to and consumed from), gone after
// a reset until the next record uses it again; on the embedded transport,
// which has no topics, an empty list; an unknown connector 404 with Kafka
// Connect's error body.
func TestRESTTopics(t *testing.T) {
	bin := buildSluice(t)
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	topics := func(t *testing.T, r *sluiceRun, name string) []string {
		t.Helper()
		code, body := r.call(t, "GET", "/connectors/"+name+"/topics", "")
		var got map[string]struct {
			Topics []string `json:"topics"`
		}
		if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || len(got) != 1 || got[name].Topics == nil {
			t.Fatalf("GET topics: %d %s (%v); want 200 {%q: {\"topics\": [...]}}", code, body, err, name)
		}
		return got[name].Topics
	}

	t.Run("embedded", func(t *testing.T) {
		name, _, _ := faultTables(t, e)
		r := startSluice(t, bin, faultConfig(t, e, name, "embedded", ""))
		r.waitState(t, name, "RUNNING")
		if got := topics(t, r, name); len(got) != 0 {
			t.Errorf("embedded topics %v, want none", got)
		}
		if code, body := r.call(t, "PUT", "/connectors/"+name+"/topics/reset", ""); code != 200 || body != "" {
			t.Errorf("reset: %d %q, want 200 and no body", code, body)
		}
		code, body := r.call(t, "GET", "/connectors/nope/topics", "")
		if code != 404 || !strings.Contains(body, `"error_code":404`) || !strings.Contains(body, `"message":`) {
			t.Errorf("unknown connector: %d %s, want 404 with Kafka Connect's error body", code, body)
		}
		if code := r.stop(t); code != 0 {
			t.Errorf("exit code %d after SIGTERM, want 0", code)
		}
	})

	t.Run("rocketmq", func(t *testing.T) {
		e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN", "SLUICE_ROCKETMQ_NAMESRV")
		name, my, pg := faultTables(t, e)
		r := startSluice(t, bin, faultConfig(t, e, name, "rocketmq", ""))
		r.waitState(t, name, "RUNNING")
		waitRows(t, r, my, pg, name, 1)
		want := []string{rocketmq.TopicName(name, name, "t", "table")}
		if got := topics(t, r, name); !slices.Equal(got, want) {
			t.Fatalf("topics %v, want %v", got, want)
		}
		if code, body := r.call(t, "PUT", "/connectors/"+name+"/topics/reset", ""); code != 200 || body != "" {
			t.Fatalf("reset: %d %q, want 200 and no body", code, body)
		}
		if got := topics(t, r, name); len(got) != 0 {
			t.Fatalf("topics %v right after the reset, want none", got)
		}
		mustExec(t, my, "INSERT INTO `"+name+"`.t VALUES (2, 2)")
		waitRows(t, r, my, pg, name, 2)
		// the row applied was published and consumed: its topic is back
		if got := topics(t, r, name); !slices.Equal(got, want) {
			t.Fatalf("topics %v after a new row, want %v again", got, want)
		}
		if code := r.stop(t); code != 0 {
			t.Errorf("exit code %d after SIGTERM, want 0", code)
		}
	})
}

// call sends a request to the process's REST API and returns the status
// code and body.
func (r *sluiceRun) call(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, r.rest+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
