package integration

import (
	"strings"
	"testing"
	"time"
)

// TestRocketMQACL runs the sluice binary over the RocketMQ instance with
// authentication and authorization on (scripts/servers.sh start
// rocketmq-acl): with the transport's access_key and secret_key, rows reach
// the target; with a wrong secret the pipeline is FAILED at once (a wrong
// secret does not fix itself): the process exits 1 at once with one message
// naming the keys to fix; and the secret is in no output.
func TestRocketMQACL(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN", "SLUICE_ROCKETMQ_ACL_NAMESRV", "SLUICE_ROCKETMQ_ACL_ACCESS_KEY", "SLUICE_ROCKETMQ_ACL_SECRET_KEY")
	bin := buildSluice(t)
	acl := env{"SLUICE_ROCKETMQ_NAMESRV": e["SLUICE_ROCKETMQ_ACL_NAMESRV"]}.with(e)
	ak, sk := e["SLUICE_ROCKETMQ_ACL_ACCESS_KEY"], e["SLUICE_ROCKETMQ_ACL_SECRET_KEY"]
	withCredentials := func(t *testing.T, cfg, secret string) {
		t.Helper()
		editConfig(t, cfg, "transport:\n  type: rocketmq\n", "transport:\n  type: rocketmq\n  access_key: "+ak+"\n  secret_key: "+secret+"\n")
	}

	t.Run("right credentials", func(t *testing.T) {
		name, my, pg := faultTables(t, acl)
		cfg := faultConfig(t, acl, name, "rocketmq", "")
		withCredentials(t, cfg, sk)
		r := startSluice(t, bin, cfg)
		r.waitState(t, name, "RUNNING")
		waitRows(t, r, my, pg, name, 1) // the snapshot
		mustExec(t, my, "INSERT INTO `"+name+"`.t VALUES (2, 2), (3, 3)")
		mustExec(t, my, "UPDATE `"+name+"`.t SET v = 10 WHERE id = 1")
		waitRows(t, r, my, pg, name, 3) // streaming
		v, deadline := 0, time.Now().Add(60*time.Second)
		for v != 10 && time.Now().Before(deadline) {
			_ = pg.QueryRow(`SELECT v FROM "` + name + `".t WHERE id = 1`).Scan(&v)
			time.Sleep(200 * time.Millisecond)
		}
		if v != 10 {
			t.Fatalf("the update did not arrive: v = %d", v)
		}
		if code := r.stop(t); code != 0 {
			t.Errorf("exit code %d after SIGTERM, want 0", code)
		}
		if strings.Contains(r.output(), sk) {
			t.Errorf("the secret key is in the output:\n%s", strings.ReplaceAll(r.output(), sk, "<SECRET>"))
		}
	})

	t.Run("wrong secret", func(t *testing.T) {
		name, _, _ := faultTables(t, acl)
		cfg := faultConfig(t, acl, name, "rocketmq", "")
		withCredentials(t, cfg, "Wrong"+sk)
		r := startSluice(t, bin, cfg)
		// The credentials are checked while the pipeline is built: the
		// process ends at once, as for any fatal error at start.
		if code := r.wait(t, 60*time.Second); code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		for _, w := range []string{`says "check signature failed" for access key "` + ak + `"`, "check transport.access_key and transport.secret_key"} {
			if n := strings.Count(r.output(), w); n != 1 {
				t.Errorf("the output says %q %d times, want once:\n%s", w, n, r.output())
			}
		}
		assertNoRepeatedPrefix(t, "output", r.output())
		if strings.Contains(r.output(), "restarting it") {
			t.Errorf("refused credentials were retried:\n%s", r.output())
		}
		if strings.Contains(r.output(), sk) {
			t.Errorf("the secret key is in the output:\n%s", strings.ReplaceAll(r.output(), sk, "<SECRET>"))
		}
	})
}
