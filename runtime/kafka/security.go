package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/secure"
)

// TLS and SASL of every client of the transport. A Kafka listener speaks
// one security protocol: PLAINTEXT (neither), SSL (ssl_mode), SASL_PLAINTEXT
// (sasl_mechanism) or SASL_SSL (both).

// SASL mechanisms (Config.SASLMechanism), as Kafka's sasl.mechanism names
// them.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// ErrAuth is wrapped by the error of a broker that refuses the SASL
// credentials. It is fatal: a wrong password does not fix itself.
var ErrAuth = errors.New("kafka: the broker refused the credentials")

// withSecurity checks the TLS and SASL keys and loads TLS from SSLCA,
// SSLCert and SSLKey unless TLS is set (withDefaults).
func (c Config) withSecurity() (Config, error) {
	mode, t, err := secure.LoadClientTLS(c.TLSMode, c.SSLCA, c.SSLCert, c.SSLKey)
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if mode == secure.SSLPreferred {
		return c, fmt.Errorf("%w: ssl_mode preferred: a Kafka listener speaks TLS or not, it does not offer it: use verify_identity (or required, verify_ca) for the broker's SSL or SASL_SSL listener, else disabled", ErrConfig)
	}
	c.TLSMode = mode
	if c.TLS == nil {
		c.TLS = t
	}
	m := strings.ToUpper(strings.TrimSpace(c.SASLMechanism))
	switch m {
	case "":
		if c.SASLUsername != "" || c.SASLPassword != "" {
			return c, fmt.Errorf("%w: sasl_username and sasl_password need a sasl_mechanism (%s, %s or %s)", ErrConfig, SASLPlain, SASLScramSHA256, SASLScramSHA512)
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if c.SASLUsername == "" || c.SASLPassword == "" {
			return c, fmt.Errorf("%w: sasl_mechanism %s needs sasl_username and sasl_password", ErrConfig, m)
		}
	default:
		return c, fmt.Errorf("%w: sasl_mechanism %q is not known (known: %s, %s, %s)", ErrConfig, c.SASLMechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)
	}
	c.SASLMechanism = m
	return c, nil
}

// securityOptions are the client options of c's TLS and SASL.
func securityOptions(c Config) []kgo.Opt {
	var opts []kgo.Opt
	// The host of each broker dialed is its certificate's expected name
	// (verify_identity): franz-go sets ServerName per dial when it is empty.
	if t := secure.ClientTLS(c.TLSMode, c.TLS, ""); t != nil {
		opts = append(opts, kgo.DialTLSConfig(t))
	}
	var m sasl.Mechanism
	switch c.SASLMechanism {
	case SASLPlain:
		m = plain.Auth{User: c.SASLUsername, Pass: c.SASLPassword}.AsMechanism()
	case SASLScramSHA256:
		m = scram.Auth{User: c.SASLUsername, Pass: c.SASLPassword}.AsSha256Mechanism()
	case SASLScramSHA512:
		m = scram.Auth{User: c.SASLUsername, Pass: c.SASLPassword}.AsSha512Mechanism()
	}
	if m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts
}

// connect makes a client with opts and returns it once a broker answered;
// a broker that refuses the credentials, or a listener whose security
// protocol is not the config's, is a fatal error (securityError).
func connect(ctx context.Context, cfg Config, opts []kgo.Opt) (*kgo.Client, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		if serr := securityError(cfg, err); serr != nil {
			return nil, serr
		}
		return nil, fmt.Errorf("kafka: no broker of %v answers: %w", cfg.Brokers, err)
	}
	return cl, nil
}

// securityError returns the fatal error for a broker's refusal of cfg's
// credentials (ErrAuth) or for a TLS or SASL setting the listener does not
// match (ErrConfig), naming the keys to check and never the password; nil
// for any other error. A listener that closes the connection at once (TLS
// to a plain listener, plain or no SASL to a TLS or SASL one) is left to
// franz-go's ErrFirstReadEOF, whose text guesses the cause: a broker that
// goes away looks the same.
func securityError(cfg Config, err error) error {
	brokers := strings.Join(cfg.Brokers, ",")
	var alert tls.AlertError
	var remote *net.OpError
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		hint := ""
		if cfg.SASLMechanism != SASLPlain {
			hint = " (a SCRAM user has credentials per mechanism: is there one for " + cfg.SASLMechanism + "?)"
		}
		return schema.Fatal(fmt.Errorf("%w: %s refused user %q with %s: check transport.sasl_username and transport.sasl_password against the broker's users%s: %w",
			ErrAuth, brokers, cfg.SASLUsername, cfg.SASLMechanism, hint, err))
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return schema.Fatal(fmt.Errorf("%w: sasl_mechanism: the listener of %s does not offer %s: use one of its sasl.enabled.mechanisms: %w", ErrConfig, brokers, cfg.SASLMechanism, err))
	case errors.Is(err, kerr.IllegalSaslState):
		return schema.Fatal(fmt.Errorf("%w: sasl_mechanism is set, and the listener of %s does not use SASL: use the broker's SASL_SSL or SASL_PLAINTEXT listener, or remove the sasl keys: %w", ErrConfig, brokers, err))
	case errors.As(err, &remote) && remote.Op == "remote error" && cfg.TLSMode != secure.SSLDisabled:
		// A TLS alert from the broker: with TLS 1.3 the one about the
		// client's certificate comes after the handshake, at the first read.
		return schema.Fatal(fmt.Errorf("%w: TLS (ssl_mode %s) with %s: the broker refused the connection (%v): %s: %w",
			ErrConfig, cfg.TLSMode, brokers, remote.Err, clientCertHint(cfg), err))
	case errors.As(err, &alert):
		return schema.Fatal(fmt.Errorf("%w: TLS (ssl_mode %s) with %s: the broker refused the handshake (does it want a client certificate? check ssl_cert and ssl_key): %w", ErrConfig, cfg.TLSMode, brokers, err))
	}
	if what := secure.CertificateProblem(err, "the broker's host"); what != "" {
		return schema.Fatal(fmt.Errorf("%w: TLS (ssl_mode %s) with %s: %s: %w", ErrConfig, cfg.TLSMode, brokers, what, err))
	}
	return nil
}

// clientCertHint says what to check when a broker refuses cfg's TLS
// connection: the client certificate a listener with ssl.client.auth asks
// for, given or not.
func clientCertHint(cfg Config) string {
	if cfg.TLS != nil && (len(cfg.TLS.Certificates) > 0 || cfg.TLS.GetClientCertificate != nil) {
		return "does the broker trust the client certificate? check that a CA in its ssl.truststore signed transport.ssl_cert, and that transport.ssl_key is its key"
	}
	return "if its listener requires a client certificate (ssl.client.auth=required), set transport.ssl_cert and transport.ssl_key to the PEM files of a certificate signed by a CA the broker trusts and of its key"
}
