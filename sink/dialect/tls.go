package dialect

import (
	"crypto/tls"

	"github.com/sluicecdc/sluice/schema/secure"
)

// TLS modes (ConnConfig.TLSMode): MySQL's ssl-mode values, for both dialects
// (secure.ParseSSLMode reads them).
const (
	TLSDisabled       = secure.SSLDisabled
	TLSPreferred      = secure.SSLPreferred
	TLSRequired       = secure.SSLRequired
	TLSVerifyCA       = secure.SSLVerifyCA
	TLSVerifyIdentity = secure.SSLVerifyIdentity
)

// TLSFor applies the mode's verification to a copy of base for host.
func TLSFor(mode string, base *tls.Config, host string) *tls.Config {
	return secure.ClientTLS(mode, base, host)
}
