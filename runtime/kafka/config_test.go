package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/sluicecdc/sluice/schema"
)

func TestTopicNameAsDebeziumNamesThem(t *testing.T) {
	for _, c := range []struct{ prefix, db, table, want string }{
		{"shop", "inventory", "orders", "shop.inventory.orders"},
		{"", "inventory", "orders", "inventory.orders"},
		{"p", "db", "tä ble$", "p.db.t__ble_"}, // one _ a character
	} {
		if got := TopicName(c.prefix, c.db, c.table); got != c.want {
			t.Errorf("TopicName(%q, %q, %q) = %q, want %q", c.prefix, c.db, c.table, got, c.want)
		}
	}
	long := TopicName("p", "db", strings.Repeat("x", 300))
	if len(long) != maxTopicLen || long == TopicName("p", "db", strings.Repeat("x", 299)) {
		t.Errorf("a long name is %d bytes (want %d) or not told apart from another", len(long), maxTopicLen)
	}
}

func TestTopicPatternMatchesThePrefixTopicsOnly(t *testing.T) {
	re := regexp.MustCompile(topicPattern("shop"))
	for topic, want := range map[string]bool{
		"shop.db.t": true, "shop.db.a.b": true, "shop.db": false, "shopx.db.t": false, "other.shop.db.t": false,
	} {
		if re.MatchString(topic) != want {
			t.Errorf("pattern %s on %q: want %v", re, topic, want)
		}
	}
}

func TestConfigDefaultsAndRefusals(t *testing.T) {
	c, err := Config{Brokers: []string{"127.0.0.1:9092"}, Pipeline: "p"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Partitions != DefaultPartitions || c.Group != "p-sink" || c.TopicPrefix != "p" || c.Format != FormatJSON || c.MaxBatch != DefaultMaxBatch || c.SessionTimeout != DefaultSessionTimeout ||
		c.Compression != DefaultCompression {
		t.Errorf("defaults: %+v", c)
	}
	for _, bad := range []Config{
		{Pipeline: "p"},
		{Brokers: []string{"nohost"}, Pipeline: "p"},
		{Brokers: []string{"127.0.0.1:9092"}, Pipeline: "p", Partitions: -1},
		{Brokers: []string{"127.0.0.1:9092"}, Pipeline: "p", Format: "avro"},
		{Brokers: []string{"127.0.0.1:9092"}, Pipeline: "p", SessionTimeout: -1},
		{Brokers: []string{"127.0.0.1:9092"}, Pipeline: "p", Compression: "brotli"},
		{Brokers: []string{"127.0.0.1:9092"}},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", bad, err)
		}
	}
}

// TestSecurityKeys: the TLS and SASL keys reach every client (the TLS
// config with the mode's verification and no fixed server name, so that
// each broker's host is checked; the SASL mechanism asked for), and
// settings a broker could never accept are refused before any dial.
func TestSecurityKeys(t *testing.T) {
	roots := x509.NewCertPool()
	for _, c := range []struct {
		cfg        Config
		verify     bool // the certificate chain is checked by crypto/tls
		mechanism  string
		tlsEnabled bool
	}{
		{Config{}, false, "", false},
		{Config{TLSMode: "VERIFY-IDENTITY", TLS: &tls.Config{RootCAs: roots}}, true, "", true},
		{Config{TLSMode: "required", SASLMechanism: "plain", SASLUsername: "u", SASLPassword: "p"}, false, SASLPlain, true},
		{Config{SASLMechanism: "scram-sha-256", SASLUsername: "u", SASLPassword: "p"}, false, SASLScramSHA256, false},
		{Config{TLSMode: "verify_identity", SASLMechanism: SASLScramSHA512, SASLUsername: "u", SASLPassword: "p"}, true, SASLScramSHA512, true},
	} {
		c.cfg.Brokers, c.cfg.Pipeline = []string{"127.0.0.1:1"}, "p"
		cfg, err := c.cfg.withDefaults()
		if err != nil {
			t.Fatalf("%+v: %v", c.cfg, err)
		}
		cl, err := kgo.NewClient(clientOptions(cfg, slog.New(slog.DiscardHandler))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		tc, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config)
		if (tc != nil) != c.tlsEnabled {
			t.Errorf("ssl_mode %q: TLS config %v, want TLS %v", c.cfg.TLSMode, tc, c.tlsEnabled)
		} else if tc != nil && (tc.InsecureSkipVerify == c.verify || tc.ServerName != "" || tc.MinVersion < tls.VersionTLS12) {
			t.Errorf("ssl_mode %q: InsecureSkipVerify %v, ServerName %q, MinVersion %x", c.cfg.TLSMode, tc.InsecureSkipVerify, tc.ServerName, tc.MinVersion)
		}
		if c.cfg.TLS != nil && (tc == nil || tc.RootCAs != roots) {
			t.Errorf("ssl_mode %q: the configured roots are not used", c.cfg.TLSMode)
		}
		ms, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
		var got []string
		for _, m := range ms {
			got = append(got, m.Name())
		}
		if strings.Join(got, ",") != c.mechanism {
			t.Errorf("sasl_mechanism %q: the client uses %v, want %q", c.cfg.SASLMechanism, got, c.mechanism)
		}
	}
	for _, bad := range []Config{
		{TLSMode: "preferred"},
		{TLSMode: "sometimes"},
		{SSLCA: "/nonexistent/ca.pem"},
		{TLSMode: "verify_ca", SSLCA: "/nonexistent/ca.pem"},
		{TLSMode: "verify_ca"},
		{SASLUsername: "u", SASLPassword: "p"},
		{SASLMechanism: "GSSAPI", SASLUsername: "u", SASLPassword: "p"},
		{SASLMechanism: SASLPlain, SASLUsername: "u"},
		{SASLMechanism: SASLScramSHA512, SASLPassword: "p"},
	} {
		bad.Brokers, bad.Pipeline = []string{"127.0.0.1:9092"}, "p"
		if err := bad.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", bad, err)
		}
	}
}

// TestSecurityErrorClassifies: the broker answers the real broker cannot
// give here (it offers every mechanism and wants no client certificate)
// are fatal with the key to fix; an error that may pass (a broker gone,
// a connection closed at once) is left unclassified.
func TestSecurityErrorClassifies(t *testing.T) {
	cfg := Config{Brokers: []string{"b:9093"}, TLSMode: "verify_identity", SASLMechanism: SASLScramSHA256, SASLUsername: "u", SASLPassword: "pw"}
	for _, c := range []struct {
		err  error
		is   error
		says string
	}{
		{fmt.Errorf("dial: %w", kerr.UnsupportedSaslMechanism), ErrConfig, "does not offer SCRAM-SHA-256"},
		{&net.OpError{Op: "remote error", Err: tls.AlertError(116)}, ErrConfig, "set transport.ssl_cert and transport.ssl_key"},
		{fmt.Errorf("handshake: %w", tls.AlertError(42)), ErrConfig, "check ssl_cert and ssl_key"},
		{fmt.Errorf("sasl: %w", kerr.SaslAuthenticationFailed), ErrAuth, "is there one for SCRAM-SHA-256?"},
	} {
		err := securityError(cfg, c.err)
		if !errors.Is(err, c.is) || schema.ClassOf(err) != schema.ClassFatal || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "pw") {
			t.Errorf("%v: got %v, want a fatal %v saying %q", c.err, err, c.is, c.says)
		}
	}
	for _, passing := range []error{io.EOF, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, kerr.LeaderNotAvailable} {
		if err := securityError(cfg, passing); err != nil {
			t.Errorf("%v: classified as %v", passing, err)
		}
	}
}
