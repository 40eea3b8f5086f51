package dialect

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// TLS modes (ConnConfig.TLSMode): MySQL's ssl-mode values, for both dialects.
const (
	TLSDisabled       = "disabled"
	TLSPreferred      = "preferred"
	TLSRequired       = "required"
	TLSVerifyCA       = "verify_ca"
	TLSVerifyIdentity = "verify_identity"
)

// TLSFor applies the mode's verification to a copy of base for host.
func TLSFor(mode string, base *tls.Config, host string) *tls.Config {
	t := &tls.Config{}
	if base != nil {
		t = base.Clone()
	}
	switch mode {
	case TLSPreferred, TLSRequired:
		t.InsecureSkipVerify = true // encrypted, not authenticated (MySQL's meaning)
	case TLSVerifyCA:
		if t.VerifyConnection == nil {
			roots := t.RootCAs
			t.InsecureSkipVerify = true
			t.VerifyConnection = func(cs tls.ConnectionState) error {
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
	case TLSVerifyIdentity:
		if t.ServerName == "" {
			t.ServerName = host
		}
	}
	if t.MinVersion == 0 {
		t.MinVersion = tls.VersionTLS12
	}
	return t
}
