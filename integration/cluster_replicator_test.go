package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/rocketmq"
)

// TestReplicatorSwitchoverInCluster: in a cluster of two `sluice worker`s,
// POST .../groups/switchover of a replicator connector, asked of either
// worker (one of them does not run its task), waits on the position the
// coordinator keeps until everything is copied, then writes the group's
// offsets on B, from which it reads every message it had not read on A.
func TestReplicatorSwitchoverInCluster(t *testing.T) {
	e := servers(t, "SLUICE_PG_DSN", "SLUICE_ROCKETMQ_NAMESRV", "SLUICE_ROCKETMQ_B_NAMESRV", "SLUICE_ROCKETMQ_B_CLUSTER")
	t.Setenv("SLUICE_IT_COORD_DSN", e["SLUICE_PG_DSN"])
	a, b := e["SLUICE_ROCKETMQ_NAMESRV"], e["SLUICE_ROCKETMQ_B_NAMESRV"]
	topic, group := uniqueName("it_cl_switch"), uniqueName("it_cl_switch_g")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const perQueue, groupRead = 30, 10
	queues := fillTopic(ctx, t, a, b, topic, perQueue)
	for _, q := range queues {
		if err := rocketmq.CommitGroupOffset(ctx, rocketmq.Config{NameServers: []string{a}}, group, topic, q.BrokerName, q.QueueId, groupRead); err != nil {
			t.Fatal(err)
		}
	}
	c := newCluster(t)
	w1, w2 := c.start("w1"), c.start("w2")
	body, _ := json.Marshal(map[string]any{"name": topic, "config": map[string]any{
		"source":    map[string]any{"type": "rocketmq", "name_servers": []string{a}, "topics": []string{topic}, "groups": []string{group}, "offset_sync_messages": 5, "checkpoint_interval": "100ms"},
		"transport": map[string]any{"type": "rocketmq", "name_servers": []string{b}, "cluster": e["SLUICE_ROCKETMQ_B_CLUSTER"]},
	}})
	post := func(w *clusterWorker, path string, body []byte) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+w.addr+path, strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, out := post(w1, "/connectors", body); code != http.StatusCreated {
		t.Fatalf("POST /connectors: %d %s", code, out)
	}
	for _, w := range []*clusterWorker{w2, w1} {
		code, out := post(w, "/connectors/"+topic+"/groups/switchover?timeout=2m", nil)
		var rep rocketmq.SwitchoverReport
		if err := json.Unmarshal([]byte(out), &rep); code != http.StatusOK || err != nil || !rep.Drained || len(rep.Groups) != 1 ||
			rep.Groups[0].Applied+rep.Groups[0].Kept != len(queues) {
			t.Fatalf("switchover through %s: %d %s", w.id, code, out)
		}
	}
	if code, out := post(w1, "/connectors/nope/groups/switchover", nil); code != http.StatusNotFound {
		t.Errorf("an unknown connector: %d %s", code, out)
	}
	checkGroupOnTarget(t, b, topic, group, groupRead, perQueue, 5)
}
