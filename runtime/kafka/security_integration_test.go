package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// securityEnv returns the broker's TLS and SASL listeners and test user
// from servers.env (scripts/servers.sh start kafka), or skips (fails in CI).
func securityEnv(t *testing.T) map[string]string {
	t.Helper()
	e := map[string]string{}
	for _, k := range []string{"SLUICE_KAFKA_BROKERS", "SLUICE_KAFKA_SSL_BROKERS", "SLUICE_KAFKA_SASL_SSL_BROKERS", "SLUICE_KAFKA_SASL_BROKERS",
		"SLUICE_KAFKA_CA", "SLUICE_KAFKA_SASL_USER", "SLUICE_KAFKA_SASL_PASSWORD"} {
		if e[k] = os.Getenv(k); e[k] == "" {
			msg := k + " is not set: start the broker with scripts/servers.sh start kafka and source its servers.env"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return e
}

// roundTrip publishes three updates with cfg and consumes them with a
// subscriber of cfg, then reads them again with Tail; it returns their
// topic.
func roundTrip(ctx context.Context, t *testing.T, cfg Config) string {
	t.Helper()
	name := "sec-" + suffix()
	cfg.Pipeline = name
	id := schema.TableID{Database: "db", Table: "t"}
	topic := TopicName(name, id.Database, id.Table)
	recs := []schema.Record{update(id, 1, 1), update(id, 2, 1), update(id, 1, 2)}
	publishAll(ctx, t, cfg, recs)
	cfg.Topics = []string{topic}
	sub, err := NewSubscriber(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	var mu sync.Mutex
	got := 0
	done := make(chan error, 1)
	go func() {
		done <- sub.Consume(cctx, func(_ context.Context, rs []schema.Record) error {
			mu.Lock()
			defer mu.Unlock()
			if got += len(rs); got >= len(recs) {
				stop()
			}
			return nil
		})
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stop()
	_ = sub.Close(ctx)
	if got != len(recs) {
		t.Fatalf("consumed %d records, want %d (ctx: %v)", got, len(recs), ctx.Err())
	}
	tailed := 0
	if err := Tail(ctx, cfg, TailOptions{}, func(TailMessage) error { tailed++; return nil }); err != nil {
		t.Fatal(err)
	}
	if tailed != len(recs) {
		t.Fatalf("tail read %d records, want %d", tailed, len(recs))
	}
	return topic
}

// TestIntegrationTLSAndSASL publishes, consumes and tails over the broker's
// TLS listener with the servers' CA, and over its SASL_SSL and
// SASL_PLAINTEXT listeners with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
func TestIntegrationTLSAndSASL(t *testing.T) {
	e := securityEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	user, pass, ca := e["SLUICE_KAFKA_SASL_USER"], e["SLUICE_KAFKA_SASL_PASSWORD"], e["SLUICE_KAFKA_CA"]
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"SSL verify_identity", Config{Brokers: []string{e["SLUICE_KAFKA_SSL_BROKERS"]}, TLSMode: "verify_identity", SSLCA: ca}},
		{"SASL_SSL PLAIN", Config{Brokers: []string{e["SLUICE_KAFKA_SASL_SSL_BROKERS"]}, TLSMode: "verify_ca", SSLCA: ca,
			SASLMechanism: "plain", SASLUsername: user, SASLPassword: pass}},
		{"SASL_SSL SCRAM-SHA-512", Config{Brokers: []string{e["SLUICE_KAFKA_SASL_SSL_BROKERS"]}, TLSMode: "verify_identity", SSLCA: ca,
			SASLMechanism: SASLScramSHA512, SASLUsername: user, SASLPassword: pass}},
		{"SASL_PLAINTEXT SCRAM-SHA-256", Config{Brokers: []string{e["SLUICE_KAFKA_SASL_BROKERS"]},
			SASLMechanism: SASLScramSHA256, SASLUsername: user, SASLPassword: pass}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			roundTrip(ctx, t, c.cfg)
		})
	}
}

// TestIntegrationSecurityRefusals: a wrong password, a CA that did not sign
// the broker's certificate and SASL to a listener
// without it each stop the constructors at once with a fatal error that
// names the keys to fix and never the password.
func TestIntegrationSecurityRefusals(t *testing.T) {
	e := securityEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	user, pass, ca := e["SLUICE_KAFKA_SASL_USER"], e["SLUICE_KAFKA_SASL_PASSWORD"], e["SLUICE_KAFKA_CA"]
	wrong := pass + "-Wrong"
	for _, c := range []struct {
		name string
		cfg  Config
		is   error
		says []string
	}{
		{"SCRAM-SHA-512 wrong password", Config{Brokers: []string{e["SLUICE_KAFKA_SASL_SSL_BROKERS"]}, TLSMode: "verify_identity", SSLCA: ca,
			SASLMechanism: SASLScramSHA512, SASLUsername: user, SASLPassword: wrong}, ErrAuth, []string{"sasl_password", `"` + user + `"`}},
		{"PLAIN wrong password", Config{Brokers: []string{e["SLUICE_KAFKA_SASL_BROKERS"]},
			SASLMechanism: SASLPlain, SASLUsername: user, SASLPassword: wrong}, ErrAuth, []string{"sasl_password", `"` + user + `"`}},
		{"SCRAM unknown user", Config{Brokers: []string{e["SLUICE_KAFKA_SASL_BROKERS"]},
			SASLMechanism: SASLScramSHA256, SASLUsername: "nobody-" + suffix(), SASLPassword: wrong}, ErrAuth, []string{"sasl_username"}},
		{"CA that did not sign", Config{Brokers: []string{e["SLUICE_KAFKA_SSL_BROKERS"]}, TLSMode: "verify_identity"},
			ErrConfig, []string{"not signed by the configured CA (ssl_ca)"}},
		{"SASL to a listener without it", Config{Brokers: []string{e["SLUICE_KAFKA_BROKERS"]},
			SASLMechanism: SASLPlain, SASLUsername: user, SASLPassword: wrong}, ErrConfig, []string{"does not use SASL"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			refused(ctx, t, c.cfg, c.is, c.says, pass)
		})
	}
}

// refused checks that NewPublisher and NewSubscriber of cfg both fail at
// once with a fatal error wrapping is that says each of says and shows
// none of secrets.
func refused(ctx context.Context, t *testing.T, cfg Config, is error, says []string, secrets ...string) {
	t.Helper()
	cfg.Pipeline = "sec-" + suffix()
	log := slog.New(slog.DiscardHandler)
	_, perr := NewPublisher(ctx, cfg, log)
	_, serr := NewSubscriber(ctx, cfg, log)
	for side, err := range map[string]error{"publisher": perr, "subscriber": serr} {
		t.Logf("%s: %v", side, err)
		if !errors.Is(err, is) || schema.ClassOf(err) != schema.ClassFatal {
			t.Fatalf("%s: got %v (class %v), want a fatal %v", side, err, schema.ClassOf(err), is)
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: the error does not say %q: %v", side, s, err)
			}
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: the error shows a secret: %v", side, err)
			}
		}
	}
}

// TestIntegrationMutualTLS: the broker's listener that requires a client
// certificate (ssl.client.auth=required) takes the one of ssl_cert and
// ssl_key: the transport publishes, consumes and tails over it. Without one,
// or with one its CA did not sign, the constructors stop at once with a
// fatal error that says to set ssl_cert and ssl_key, and never shows the
// key.
func TestIntegrationMutualTLS(t *testing.T) {
	e := securityEnv(t)
	for _, k := range []string{"SLUICE_KAFKA_MTLS_BROKERS", "SLUICE_KAFKA_CLIENT_CERT", "SLUICE_KAFKA_CLIENT_KEY"} {
		if e[k] = os.Getenv(k); e[k] == "" {
			msg := k + " is not set: start the broker with scripts/servers.sh start kafka (stop it first if an older servers.sh started it) and source its servers.env"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	bs, ca := []string{e["SLUICE_KAFKA_MTLS_BROKERS"]}, e["SLUICE_KAFKA_CA"]
	t.Run("with the client certificate", func(t *testing.T) {
		t.Parallel()
		roundTrip(ctx, t, Config{Brokers: bs, TLSMode: "verify_identity", SSLCA: ca, SSLCert: e["SLUICE_KAFKA_CLIENT_CERT"], SSLKey: e["SLUICE_KAFKA_CLIENT_KEY"]})
	})
	stranger, strangerKey := selfSignedClient(t)
	key, err := os.ReadFile(e["SLUICE_KAFKA_CLIENT_KEY"])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  Config
		says []string
	}{
		{"without a client certificate", Config{Brokers: bs, TLSMode: "verify_identity", SSLCA: ca},
			[]string{"requires a client certificate", "set transport.ssl_cert and transport.ssl_key"}},
		{"with one its CA did not sign", Config{Brokers: bs, TLSMode: "verify_identity", SSLCA: ca, SSLCert: stranger, SSLKey: strangerKey},
			[]string{"trust the client certificate", "transport.ssl_cert", "transport.ssl_key"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			refused(ctx, t, c.cfg, ErrConfig, c.says, "PRIVATE KEY", strings.TrimSpace(string(key)))
		})
	}
}

// selfSignedClient writes a self-signed client certificate and its key
// (no CA the broker trusts signed it) and returns their files.
func selfSignedClient(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stranger"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}
