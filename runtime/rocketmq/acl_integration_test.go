package rocketmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// aclServer returns the name server of the RocketMQ instance with
// authentication and authorization on (scripts/servers.sh start
// rocketmq-acl) and its user's credentials, or skips (fails in CI).
func aclServer(t testing.TB) (ns []string, accessKey, secretKey string) {
	t.Helper()
	s := schematest.NeedServers(t, "SLUICE_ROCKETMQ_ACL_NAMESRV", "SLUICE_ROCKETMQ_ACL_ACCESS_KEY", "SLUICE_ROCKETMQ_ACL_SECRET_KEY")
	return strings.Split(s[0], ","), s[1], s[2]
}

// aclUser makes a normal user on every master broker of the ACL instance,
// signed as the super user (ak, sk), with actions allowed on every topic and
// group (none: no permission at all), and returns its credentials.
func aclUser(ctx context.Context, t *testing.T, ns []string, ak, sk, name string, actions ...string) (string, string) {
	t.Helper()
	name += "-" + suffix()
	secret := name + "-Secret"
	super := primitive.Credentials{AccessKey: ak, SecretKey: sk}
	ci, err := fetchClusterInfo(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	user, _ := json.Marshal(map[string]string{"username": name, "password": secret, "userType": "Normal"})
	acts, _ := json.Marshal(actions)
	acl := fmt.Sprintf(`{"subject":"User:%s","policies":[{"policyType":"Custom","entries":[`+
		`{"resource":"Topic:*","actions":%s,"decision":"Allow"},{"resource":"Group:*","actions":%s,"decision":"Allow"}]}]}`, name, acts, acts)
	for _, addr := range ci.masters(DefaultCluster) {
		reqs := []struct {
			code int
			ext  map[string]string
			body string
		}{{3001, map[string]string{"username": name}, string(user)}} // AUTH_CREATE_USER
		if len(actions) > 0 {
			reqs = append(reqs, struct {
				code int
				ext  map[string]string
				body string
			}{3006, map[string]string{"subject": "User:" + name}, acl}) // AUTH_CREATE_ACL
		}
		for _, r := range reqs {
			h, _, err := invokeSigned(ctx, super, addr, r.code, r.ext, []byte(r.body))
			if err != nil || h.Code != resSuccess {
				t.Fatalf("request %d for user %s on %s: %v code %d %s", r.code, name, addr, err, h.Code, h.Remark)
			}
		}
	}
	return name, secret
}

// TestIntegrationACL runs the transport against a broker with
// authentication and authorization on, as a normal user with the
// permissions it needs: records are published, consumed in order per key
// and read by Tail (whose own requests are signed). With a wrong secret, an
// unknown user or no credentials every entry point fails at once with a
// fatal ErrAuth error that names the fields to fix; a user without
// permission to subscribe, or to publish, fails fatally at the first request
// it may not make. Neither the errors nor anything logged (by sluice or the
// client library) contains a secret.
func TestIntegrationACL(t *testing.T) {
	skipUnderRace(t)
	ns, superKey, superSecret := aclServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ak, sk := aclUser(ctx, t, ns, superKey, superSecret, "app", "Pub", "Sub", "Create", "Update", "Get")
	nopubKey, nopubSecret := aclUser(ctx, t, ns, superKey, superSecret, "nopub", "Sub", "Create", "Update", "Get")
	noaclKey, noaclSecret := aclUser(ctx, t, ns, superKey, superSecret, "noacl")
	id := schema.TableID{Database: "db", Table: "acl"}
	cfg := Config{NameServers: ns, Pipeline: "acl-" + suffix(), Tables: []schema.TableID{id}, Codec: integrationCodec(),
		AccessKey: ak, SecretKey: sk, Queues: 2}
	topic := TopicName(cfg.Pipeline, id.Database, id.Table, TopicPerTable)
	logs := &schematest.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	wantRefused := func(t *testing.T, what string, err error, want string) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s: no error", what)
		case !errors.Is(err, ErrAuth) || !runtime.IsFatal(err):
			t.Errorf("%s: %v (class %v), want a fatal ErrAuth", what, err, runtime.ClassOf(err))
		case !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "transport.access_key"):
			t.Errorf("%s: %q does not say %q and name transport.access_key", what, err, want)
		}
		for _, secret := range []string{sk, nopubSecret, noaclSecret, superSecret} {
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("%s: a secret key is in the error %q", what, err)
			}
		}
	}
	publishOne := func(c Config) error {
		p, err := NewPublisher(ctx, c, log)
		if err != nil {
			return err
		}
		defer p.Close(ctx)
		acked := make(chan error, 1)
		if err := p.Publish(ctx, []schema.Record{testRecord(id, 99, 1)}, func(err error) { acked <- err }); err != nil {
			return err
		}
		return <-acked
	}

	// The right credentials: publish, consume, tail.
	const keys, versions = 4, 5
	var recs []schema.Record
	for v := int64(1); v <= versions; v++ {
		for k := int64(1); k <= keys; k++ {
			recs = append(recs, testRecord(id, k, v))
		}
	}
	p, err := NewPublisher(ctx, cfg, log)
	if err != nil {
		t.Fatalf("publisher with the right credentials: %v", err)
	}
	acked := make(chan error, 1)
	if err := p.Publish(ctx, recs, func(err error) { acked <- err }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-acked:
		if err != nil {
			t.Fatalf("publish with the right credentials: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("publish not acked")
	}
	_ = p.Close(ctx)

	s, err := NewSubscriber(ctx, cfg, log)
	if err != nil {
		t.Fatalf("subscriber with the right credentials: %v", err)
	}
	var mu sync.Mutex
	seen := map[int64][]int64{}
	total := 0
	done := make(chan struct{})
	consumed := make(chan error, 1)
	go func() {
		consumed <- s.Consume(ctx, func(_ context.Context, rs []schema.Record) error {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rs {
				if r.Op != schema.OpUpdate {
					continue
				}
				seen[r.Key[0].(int64)] = append(seen[r.Key[0].(int64)], r.After[1].(int64))
				if total++; total == len(recs) {
					close(done)
				}
			}
			return nil
		})
	}()
	closeWhen(ctx, t, done, s, consumed, func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("consumed %d of %d records with the right credentials", total, len(recs))
	})
	for k := int64(1); k <= keys; k++ {
		got := seen[k]
		for i, v := range got {
			if v != int64(i+1) {
				t.Fatalf("key %d: versions %v, want 1..%d in order, once each", k, got, versions)
			}
		}
		if len(got) != versions {
			t.Fatalf("key %d: versions %v, want 1..%d", k, got, versions)
		}
	}

	var tailed int
	if err := Tail(ctx, cfg, TailOptions{}, func(TailMessage) error { tailed++; return nil }); err != nil {
		t.Fatalf("tail with the right credentials: %v", err)
	}
	if tailed != len(recs) {
		t.Fatalf("tail with the right credentials read %d messages, want %d", tailed, len(recs))
	}

	// Missing permissions: fatal at the first refused request, not retried.
	t.Run("no permission", func(t *testing.T) {
		bad := cfg
		bad.AccessKey, bad.SecretKey = noaclKey, noaclSecret
		_, err := NewSubscriber(ctx, bad, log)
		wantRefused(t, "subscriber", err, "no permission")
		_, err = NewDeadLetter(ctx, bad, log) // creating the dead-letter topic
		wantRefused(t, "dead letter", err, "no permission")
		wantRefused(t, "tail", Tail(ctx, bad, TailOptions{}, func(TailMessage) error { return nil }), "no permission")
		wantRefused(t, "publish", publishOne(bad), "no permission")
	})
	t.Run("no permission to publish", func(t *testing.T) {
		bad := cfg
		bad.AccessKey, bad.SecretKey = nopubKey, nopubSecret
		start := time.Now()
		wantRefused(t, "publish", publishOne(bad), "no permission")
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("a refused send took %s to report: it must not be retried", d)
		}
		if _, err := NewSubscriber(ctx, bad, log); err != nil {
			t.Errorf("subscriber of a user that may subscribe: %v", err)
		}
	})

	// Wrong credentials: fatal at once, with the fields to fix.
	for _, c := range []struct {
		name, ak, sk, want string
	}{
		{"wrong secret", ak, "wrong-" + sk, "check signature failed"},
		{"unknown user", "no-such-user", sk, "not found"},
		{"no credentials", "", "", "requires authentication"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := cfg
			bad.AccessKey, bad.SecretKey = c.ak, c.sk
			start := time.Now()
			var errs []error
			_, err := NewPublisher(ctx, bad, log)
			errs = append(errs, err)
			_, err = NewSubscriber(ctx, bad, log)
			errs = append(errs, err)
			_, err = NewDeadLetter(ctx, bad, log)
			errs = append(errs, err)
			errs = append(errs, EnsureTopic(ctx, bad, topic))
			errs = append(errs, Tail(ctx, bad, TailOptions{}, func(TailMessage) error { return nil }))
			for i, err := range errs {
				wantRefused(t, fmt.Sprintf("entry point %d", i), err, c.want)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("refused credentials took %s to report", d)
			}
			t.Logf("publisher: %v", errs[0])
		})
	}
	for _, secret := range []string{sk, nopubSecret, noaclSecret, superSecret} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("a secret key is in the logs:\n%s", strings.ReplaceAll(logs.String(), secret, "<SECRET>"))
		}
	}
}
