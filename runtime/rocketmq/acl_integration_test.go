package rocketmq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"

	"github.com/sluicecdc/sluice/runtime"
	"github.com/sluicecdc/sluice/schema"
)

// aclServer returns the name server of the RocketMQ instance with
// authentication and authorization on (scripts/servers.sh start
// rocketmq-acl) and its user's credentials, or skips (fails in CI).
func aclServer(t testing.TB) (ns []string, accessKey, secretKey string) {
	t.Helper()
	v, ak, sk := os.Getenv("SLUICE_ROCKETMQ_ACL_NAMESRV"), os.Getenv("SLUICE_ROCKETMQ_ACL_ACCESS_KEY"), os.Getenv("SLUICE_ROCKETMQ_ACL_SECRET_KEY")
	if v == "" || ak == "" || sk == "" {
		msg := "SLUICE_ROCKETMQ_ACL_NAMESRV/ACCESS_KEY/SECRET_KEY are not set: start scripts/servers.sh start rocketmq-acl and source its servers.env"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return strings.Split(v, ","), ak, sk
}

// syncBuffer is a bytes.Buffer for concurrent log writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestIntegrationACL runs the transport against a broker with
// authentication and authorization on: with the right credentials records
// are published, consumed in order per key and read by Tail (whose own
// requests are signed); with a wrong secret, an unknown user or no
// credentials every entry point fails at once with a fatal ErrAuth error
// that names the fields to fix; and neither the errors nor anything logged
// (by sluice or the client library) contains the secret.
func TestIntegrationACL(t *testing.T) {
	skipUnderRace(t)
	ns, ak, sk := aclServer(t)
	id := schema.TableID{Database: "db", Table: "acl"}
	cfg := Config{NameServers: ns, Pipeline: "acl-" + suffix(), Tables: []schema.TableID{id}, Codec: integrationCodec(),
		AccessKey: ak, SecretKey: sk, Queues: 2}
	topic := TopicName(cfg.Pipeline, id.Database, id.Table, TopicPerTable)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ci, err := fetchClusterInfo(ctx, ns)
		if err != nil {
			return
		}
		adm, err := newAdmin(cfg)
		if err != nil {
			return
		}
		defer adm.Close()
		for _, addr := range ci.masters(DefaultCluster) {
			_ = adm.DeleteTopic(ctx, admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(addr), admin.WithNameSrvAddr(ns))
		}
	})
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

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
				switch {
				case err == nil:
					t.Errorf("entry point %d: no error", i)
				case !errors.Is(err, ErrAuth) || !runtime.IsFatal(err):
					t.Errorf("entry point %d: %v (class %v), want a fatal ErrAuth", i, err, runtime.ClassOf(err))
				case !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "transport.access_key"):
					t.Errorf("entry point %d: %q does not say %q and name transport.access_key", i, err, c.want)
				case strings.Contains(err.Error(), sk):
					t.Errorf("entry point %d: the secret key is in the error %q", i, err)
				}
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("refused credentials took %s to report", d)
			}
			t.Logf("publisher: %v", errs[0])
		})
	}
	if strings.Contains(logs.String(), sk) {
		t.Errorf("the secret key is in the logs:\n%s", strings.ReplaceAll(logs.String(), sk, "<SECRET>"))
	}
}
