package schema

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// MySQL's ssl-mode values, the TLS vocabulary of the source and the sink
// (both dialects): one definition for the connectors that may not import
// each other.
const (
	SSLDisabled       = "disabled"
	SSLPreferred      = "preferred"
	SSLRequired       = "required"
	SSLVerifyCA       = "verify_ca"
	SSLVerifyIdentity = "verify_identity"
)

// ParseSSLMode accepts MySQL's spellings (VERIFY_CA, verify-ca) and returns
// the mode as the constants spell it; "" (unset) stays "". The caller wraps
// its error with its own configuration sentinel.
func ParseSSLMode(m string) (string, error) {
	v := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(m)), "-", "_")
	switch v {
	case "", SSLDisabled, SSLPreferred, SSLRequired, SSLVerifyCA, SSLVerifyIdentity:
		return v, nil
	}
	return "", fmt.Errorf("TLSMode %q must be one of disabled, preferred, required, verify_ca, verify_identity", m)
}

// ClientTLS returns a copy of base (nil: an empty config) with the
// verification mode asks for when connecting to host, TLS 1.2 at least;
// nil for disabled or unset. preferred and required encrypt without
// checking the certificate (MySQL's meaning), verify_ca checks its chain
// against base.RootCAs whatever names it holds, verify_identity also checks
// that it names host (unless base names a ServerName).
func ClientTLS(mode string, base *tls.Config, host string) *tls.Config {
	if mode == "" || mode == SSLDisabled {
		return nil
	}
	t := &tls.Config{}
	if base != nil {
		t = base.Clone()
	}
	switch mode {
	case SSLPreferred, SSLRequired:
		t.InsecureSkipVerify = true
	case SSLVerifyCA:
		if t.VerifyConnection == nil {
			t.InsecureSkipVerify, t.VerifyConnection = true, verifyChain(t.RootCAs)
		}
	case SSLVerifyIdentity:
		if t.ServerName == "" {
			t.ServerName = host
		}
	}
	if t.MinVersion == 0 {
		t.MinVersion = tls.VersionTLS12
	}
	return t
}

// verifyChain checks that the server's certificate chains to roots,
// whatever names it holds (ssl-mode VERIFY_CA).
func verifyChain(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}
