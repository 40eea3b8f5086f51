package secure

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
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

// LoadClientTLS checks a connector's TLS keys, named after MySQL's client
// options: mode is ssl_mode, ca (ssl_ca) the PEM file of the CA that signs
// the server's certificate, cert and key (ssl_cert, ssl_key) the PEM files
// of a client certificate, for servers that ask for one. It loads the files
// and returns the normalised mode ("" when unset) and the base config for
// ClientTLS (nil for disabled or unset). The caller wraps its error with its
// own configuration sentinel.
func LoadClientTLS(mode, ca, cert, key string) (string, *tls.Config, error) {
	m, err := ParseSSLMode(mode)
	if err != nil {
		return "", nil, fmt.Errorf("ssl_mode %q must be one of disabled, preferred, required, verify_ca, verify_identity", mode)
	}
	files := ca != "" || cert != "" || key != ""
	switch {
	case m == "" && files:
		return "", nil, errors.New("ssl_ca, ssl_cert and ssl_key need an ssl_mode (verify_identity to check the server's certificate and name)")
	case m == SSLDisabled && files:
		return "", nil, errors.New("ssl_mode disabled with ssl_ca, ssl_cert or ssl_key: remove them or choose another ssl_mode")
	case m == SSLVerifyCA && ca == "":
		return "", nil, errors.New("ssl_mode verify_ca needs ssl_ca, the CA the server's certificate must be signed by")
	case (cert == "") != (key == ""):
		return "", nil, errors.New("ssl_cert and ssl_key go together: set both or neither")
	}
	if m == "" || m == SSLDisabled {
		return m, nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return "", nil, fmt.Errorf("ssl_ca: %w", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return "", nil, fmt.Errorf("ssl_ca %s holds no PEM certificate", ca)
		}
	}
	if cert != "" {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return "", nil, fmt.Errorf("ssl_cert/ssl_key: %w", err)
		}
		t.Certificates = []tls.Certificate{c}
	}
	return m, t, nil
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

// CertificateProblem says what is wrong when err is a failed check of the
// server's certificate, which retrying cannot fix; "" otherwise. host says
// what the certificate had to name ("the DSN's host").
func CertificateProblem(err error, host string) string {
	var unknown x509.UnknownAuthorityError
	var name x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown):
		return "the server's certificate is not signed by the configured CA (ssl_ca)"
	case errors.As(err, &name):
		return "the server's certificate does not name " + host + ": connect by a name it lists, or use ssl_mode verify_ca"
	case errors.As(err, &invalid), errors.As(err, &verify):
		return "the server's certificate is not valid"
	}
	return ""
}
