package dialect

import (
	"crypto/tls"

	"github.com/sluicecdc/sluice/schema"
)

// TLS modes (ConnConfig.TLSMode): MySQL's ssl-mode values, for both dialects
// (schema.ParseSSLMode reads them).
const (
	TLSDisabled       = schema.SSLDisabled
	TLSPreferred      = schema.SSLPreferred
	TLSRequired       = schema.SSLRequired
	TLSVerifyCA       = schema.SSLVerifyCA
	TLSVerifyIdentity = schema.SSLVerifyIdentity
)

// TLSFor applies the mode's verification to a copy of base for host.
func TLSFor(mode string, base *tls.Config, host string) *tls.Config {
	return schema.ClientTLS(mode, base, host)
}
