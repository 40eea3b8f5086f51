package secure

import (
	"crypto/tls"
	"testing"
)

func TestParseSSLMode(t *testing.T) {
	for in, want := range map[string]string{"": "", "VERIFY_CA": SSLVerifyCA, "verify-identity": SSLVerifyIdentity, " Required ": SSLRequired, "disabled": SSLDisabled, "preferred": SSLPreferred} {
		if got, err := ParseSSLMode(in); err != nil || got != want {
			t.Errorf("ParseSSLMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseSSLMode("verify_full"); err == nil {
		t.Error("verify_full (PostgreSQL's word) accepted")
	}
}

func TestClientTLS(t *testing.T) {
	if ClientTLS(SSLDisabled, nil, "h") != nil || ClientTLS("", nil, "h") != nil {
		t.Error("disabled or unset gives a TLS config")
	}
	base := &tls.Config{}
	for mode, check := range map[string]func(*tls.Config) bool{
		SSLPreferred:      func(c *tls.Config) bool { return c.InsecureSkipVerify && c.VerifyConnection == nil },
		SSLRequired:       func(c *tls.Config) bool { return c.InsecureSkipVerify && c.VerifyConnection == nil },
		SSLVerifyCA:       func(c *tls.Config) bool { return c.InsecureSkipVerify && c.VerifyConnection != nil },
		SSLVerifyIdentity: func(c *tls.Config) bool { return !c.InsecureSkipVerify && c.ServerName == "db.local" },
	} {
		c := ClientTLS(mode, base, "db.local")
		if c == nil || !check(c) || c.MinVersion != tls.VersionTLS12 {
			t.Errorf("%s: %+v", mode, c)
		}
	}
	if base.InsecureSkipVerify || base.ServerName != "" {
		t.Error("the base config was changed")
	}
	if err := ClientTLS(SSLVerifyCA, nil, "h").VerifyConnection(tls.ConnectionState{}); err == nil {
		t.Error("verify_ca accepted a server without a certificate")
	}
}
