package binlog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/secure"
)

// TLS modes (Config.TLSMode), MySQL's ssl-mode values (secure.ParseSSLMode).
const (
	TLSDisabled       = secure.SSLDisabled
	TLSPreferred      = secure.SSLPreferred
	TLSRequired       = secure.SSLRequired
	TLSVerifyCA       = secure.SSLVerifyCA
	TLSVerifyIdentity = secure.SSLVerifyIdentity
)

// normalizeTLSMode accepts MySQL's spellings (VERIFY_CA, verify-ca) and
// returns the mode as the constants spell it; unset is disabled.
func normalizeTLSMode(m string) (string, error) {
	v, err := secure.ParseSSLMode(m)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if v == "" {
		return TLSDisabled, nil
	}
	return v, nil
}

// tlsConfig returns the client TLS configuration for the server, or nil
// when the connection is not to use TLS.
func (s *Source) tlsConfig() *tls.Config {
	if s.cfg.TLSMode == TLSDisabled || s.plain.Load() {
		return nil
	}
	return tlsFor(&s.cfg)
}

// tlsFor returns the client TLS configuration for c, nil when disabled.
func tlsFor(c *Config) *tls.Config { return secure.ClientTLS(c.TLSMode, c.TLS, c.Host) }

// dial opens a client connection for queries (not the replication
// stream), with TLS as the config says. A "preferred" source whose server
// offers no TLS connects in plain text and remembers it for the
// replication and snapshot connections.
func (s *Source) dial(ctx context.Context) (*client.Conn, error) {
	return dialServer(ctx, &s.cfg, s.tlsConfig(), func() { s.plain.Store(true) })
}

func dialServer(ctx context.Context, cfg *Config, t *tls.Config, fellBack func(), more ...client.Option) (*client.Conn, error) {
	addr := (&Source{cfg: *cfg}).addr()
	opt := func(c *client.Conn) error {
		if t != nil {
			c.SetTLSConfig(t)
		}
		return nil
	}
	conn, err := connectBounded(ctx, addr, cfg.User, cfg.Password, append([]client.Option{opt}, more...)...)
	if err != nil && t != nil && cfg.TLSMode == TLSPreferred && noServerTLS(err) {
		if fellBack != nil {
			fellBack()
		}
		conn, err = connectBounded(ctx, addr, cfg.User, cfg.Password, more...)
	}
	if err != nil {
		return nil, tlsError(cfg, addr, err)
	}
	return conn, nil
}

// handshakeTimeout bounds a connection's handshake when ctx sets no
// deadline.
const handshakeTimeout = 30 * time.Second

// connectBounded is client.ConnectWithContext whose handshake, not only
// its dial, ends with ctx: go-mysql reads the server's greeting without a
// deadline, so a server that accepts and never answers (hung, or a wrong
// port of another service) held the caller for ever.
func connectBounded(ctx context.Context, addr, user, password string, options ...client.Option) (*client.Conn, error) {
	var raw net.Conn
	var stop func() bool
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		dl, ok := ctx.Deadline()
		if !ok {
			dl = time.Now().Add(handshakeTimeout)
		}
		_ = c.SetDeadline(dl)
		stop = context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
		raw = c
		return c, nil
	}
	conn, err := client.ConnectWithDialer(ctx, "", addr, user, password, "", dial, options...)
	if raw != nil {
		stop()
		if err == nil {
			_ = raw.SetDeadline(time.Time{})
		}
	}
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return conn, err
}

// tlsFailure marks an error of TLS negotiation (see tlsError).
type tlsFailure struct{ error }

func (t tlsFailure) Unwrap() error { return t.error }

func isTLSFailure(err error) bool { return errors.As(err, new(tlsFailure)) }

func noServerTLS(err error) bool {
	return err != nil && strings.Contains(err.Error(), "does not support TLS")
}

// tlsError turns a failed TLS negotiation into a fatal error that names
// the mode and the fix; other errors pass unchanged.
func tlsError(cfg *Config, addr string, err error) error {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	var invalid x509.CertificateInvalidError
	var alert tls.AlertError
	switch {
	case errors.As(err, &unknown), errors.As(err, &verify) && errors.As(verify.Err, &unknown):
		return schema.Fatal(tlsFailure{fmt.Errorf("binlog: TLS (ssl_mode %s) with %s: the server's certificate is not signed by the configured CA (ssl_ca): %w", cfg.TLSMode, addr, err)})
	case errors.As(err, &host):
		return schema.Fatal(tlsFailure{fmt.Errorf("binlog: TLS (ssl_mode %s) with %s: the server's certificate is not for host %q: connect by a name the certificate lists, or use ssl_mode verify_ca: %w", cfg.TLSMode, addr, cfg.Host, err)})
	case errors.As(err, &invalid), errors.As(err, &verify):
		return schema.Fatal(tlsFailure{fmt.Errorf("binlog: TLS (ssl_mode %s) with %s: the server's certificate is not valid: %w", cfg.TLSMode, addr, err)})
	case errors.As(err, &alert):
		return schema.Fatal(tlsFailure{fmt.Errorf("binlog: TLS (ssl_mode %s) with %s: the server refused the handshake (check ssl_cert and ssl_key): %w", cfg.TLSMode, addr, err)})
	case noServerTLS(err):
		return schema.Fatal(tlsFailure{fmt.Errorf("binlog: %s offers no TLS, and ssl_mode is %s: configure ssl_cert and ssl_key on the server, or set ssl_mode preferred or disabled: %w", addr, cfg.TLSMode, err)})
	}
	return err
}
