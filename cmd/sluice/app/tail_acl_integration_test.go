package app

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/rocketmq"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// TestTailCommandACL: `sluice tail` signs its reads with the transport's
// access_key and secret_key, so it reads a broker with authentication on;
// a wrong secret or none ends it with an error that names the keys to fix
// and never the secret.
func TestTailCommandACL(t *testing.T) {
	s := schematest.NeedServers(t, "SLUICE_ROCKETMQ_ACL_NAMESRV", "SLUICE_ROCKETMQ_ACL_ACCESS_KEY", "SLUICE_ROCKETMQ_ACL_SECRET_KEY")
	ns, ak, sk := s[0], s[1], s[2]
	name := fmt.Sprintf("tail_acl_%d", rand.IntN(1e9))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc := rocketmq.Config{NameServers: []string{ns}, Pipeline: name, Queues: 2, AccessKey: ak, SecretKey: sk}
	topic := rocketmq.TopicName(name, "shop", "orders", "table")
	var recs []schema.Record
	for id := int64(1); id <= 3; id++ {
		recs = append(recs, tailRecord("shop", "orders", id, fmt.Sprintf("o%d", id)))
	}
	pub, err := rocketmq.NewPublisher(ctx, rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	publishTail(ctx, t, pub, recs)

	dir := t.TempDir()
	tail := func(credentials string) (int, string, string) {
		t.Helper()
		cfgPath := filepath.Join(dir, "p.yaml")
		writeFile(t, cfgPath, fmt.Sprintf(`name: %s
transport:
  type: rocketmq
  name_servers: [%q]
  topics: [%s]
%s
sink:
  type: postgres
  dsn: postgres://unused@127.0.0.1:1/x
`, name, ns, topic, credentials))
		var out, errb bytes.Buffer
		code := Main([]string{"tail", "--config", cfgPath}, &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := tail(fmt.Sprintf("  access_key: %q\n  secret_key: %q", ak, sk))
	if code != 0 {
		t.Fatalf("sluice tail with the right credentials: exit %d: %s", code, errs)
	}
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != len(recs) || !strings.Contains(lines[0], `"after":{"id":`) {
		t.Fatalf("sluice tail with the right credentials printed %d lines, want %d:\n%s", len(lines), len(recs), out)
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"wrong secret", fmt.Sprintf("  access_key: %q\n  secret_key: %q", ak, "wrong-"+sk), "check signature failed"},
		{"no credentials", "", "requires authentication"},
	} {
		code, out, errs := tail(c.yaml)
		all := out + errs
		if code == 0 || !strings.Contains(errs, c.want) || !strings.Contains(errs, "transport.access_key") {
			t.Errorf("%s: exit %d, output %q; want a non-zero exit and an error saying %q and naming transport.access_key", c.name, code, all, c.want)
		}
		if strings.Contains(all, sk) {
			t.Errorf("%s: the secret key is in the output: %s", c.name, strings.ReplaceAll(all, sk, "<SECRET>"))
		}
		t.Logf("%s: exit %d: %s", c.name, code, strings.TrimSpace(errs))
	}
}
