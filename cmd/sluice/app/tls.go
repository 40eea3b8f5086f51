package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// tlsOptions are the TLS keys of a source or sink section, named after
// MySQL's client options: ssl_mode (disabled, preferred, required,
// verify_ca, verify_identity), ssl_ca (PEM file of the CA that signs the
// server's certificate), ssl_cert and ssl_key (PEM files of a client
// certificate, for servers that ask for one).
type tlsOptions struct{ Mode, CA, Cert, Key string }

// mode returns the normalised ssl_mode ("" when unset).
func (o tlsOptions) mode() (string, error) {
	m := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(o.Mode)), "-", "_")
	switch m {
	case "", "disabled", "preferred", "required", "verify_ca", "verify_identity":
	default:
		return "", fmt.Errorf("ssl_mode %q must be one of disabled, preferred, required, verify_ca, verify_identity", o.Mode)
	}
	if m == "" && (o.CA != "" || o.Cert != "" || o.Key != "") {
		return "", errors.New("ssl_ca, ssl_cert and ssl_key need an ssl_mode (verify_identity to check the server's certificate and name)")
	}
	if m == "disabled" && (o.CA != "" || o.Cert != "" || o.Key != "") {
		return "", errors.New("ssl_mode disabled with ssl_ca, ssl_cert or ssl_key: remove them or choose another ssl_mode")
	}
	if m == "verify_ca" && o.CA == "" {
		return "", errors.New("ssl_mode verify_ca needs ssl_ca, the CA the server's certificate must be signed by")
	}
	if (o.Cert == "") != (o.Key == "") {
		return "", errors.New("ssl_cert and ssl_key go together: set both or neither")
	}
	return m, nil
}

// client loads the files and returns the mode and the client TLS
// configuration with the CA and the client certificate (nil for disabled
// or unset); the connector applies the mode's verification to it.
func (o tlsOptions) client() (string, *tls.Config, error) {
	m, err := o.mode()
	if err != nil || m == "" || m == "disabled" {
		return m, nil, err
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CA != "" {
		pem, err := os.ReadFile(o.CA)
		if err != nil {
			return "", nil, fmt.Errorf("ssl_ca: %w", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return "", nil, fmt.Errorf("ssl_ca %s holds no PEM certificate", o.CA)
		}
	}
	if o.Cert != "" {
		c, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return "", nil, fmt.Errorf("ssl_cert/ssl_key: %w", err)
		}
		t.Certificates = []tls.Certificate{c}
	}
	return m, t, nil
}
