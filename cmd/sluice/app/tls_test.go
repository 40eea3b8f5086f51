package app

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/runtime/plugin"
)

func writeCA(t *testing.T, dir string) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSecurityKeys: the TLS, timeout and credential keys decode into the
// connectors' configs, and validate refuses inconsistent ones, naming the
// key, before anything connects.
func TestSecurityKeys(t *testing.T) {
	dir := t.TempDir()
	ca := writeCA(t, dir)
	base := "name: x\nsource:\n  type: mariadb\n  host: 127.0.0.1\n  user: u\n  server_id: 7\n%SRC%transport:\n  type: %TR%\nsink:\n  type: postgres\n  dsn: postgres://u@127.0.0.1/db\n%SINK%"
	cfg := func(src, sink, transport string) string {
		if transport == "" {
			transport = "embedded"
		}
		return strings.NewReplacer("%SRC%", src, "%SINK%", sink, "%TR%", transport).Replace(base)
	}
	path := filepath.Join(dir, "c.yaml")

	writeFile(t, path, cfg("  ssl_mode: VERIFY_IDENTITY\n  ssl_ca: "+ca+"\n", "  ssl_mode: verify_ca\n  ssl_ca: "+ca+"\n  lock_timeout: 5s\n  statement_timeout: -1s\n", ""))
	c, err := plugin.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := decodeAll(c, "")
	if err != nil {
		t.Fatal(err)
	}
	if d.source.TLSMode != "verify_identity" || d.source.TLS == nil || d.source.TLS.RootCAs == nil {
		t.Errorf("source TLS: %q %+v", d.source.TLSMode, d.source.TLS)
	}
	if d.sink.TLSMode != "verify_ca" || d.sink.TLS == nil || d.sink.TLS.RootCAs == nil {
		t.Errorf("sink TLS: %q %+v", d.sink.TLSMode, d.sink.TLS)
	}
	if d.sink.LockTimeout != 5*time.Second || d.sink.StatementTimeout != -time.Second {
		t.Errorf("sink timeouts: %s %s", d.sink.LockTimeout, d.sink.StatementTimeout)
	}

	writeFile(t, path, cfg("", "", "rocketmq\n  name_servers: [\"127.0.0.1:9876\"]\n  topics: [t]\n  access_key: ak\n  secret_key: sk"))
	if c, err = plugin.LoadConfig(path); err != nil {
		t.Fatal(err)
	}
	if d, err = decodeAll(c, ""); err != nil || d.rocketmq.AccessKey != "ak" || d.rocketmq.SecretKey != "sk" {
		t.Fatalf("rocketmq credentials: %v %+v", err, d)
	}

	for _, bad := range []struct{ src, sink, transport, want string }{
		{"  ssl_mode: verify_ca\n", "", "", "ssl_mode verify_ca needs ssl_ca"},
		{"  ssl_mode: verify-full\n", "", "", `ssl_mode "verify-full" must be one of`},
		{"  ssl_ca: " + ca + "\n", "", "", "need an ssl_mode"},
		{"  ssl_mode: verify_identity\n  ssl_ca: " + filepath.Join(dir, "missing.pem") + "\n", "", "", "ssl_ca: open"},
		{"  ssl_mode: required\n  ssl_cert: " + ca + "\n", "", "", "ssl_cert and ssl_key go together"},
		{"", "  ssl_mode: verify_identity\n  ssl_ca: " + path + "\n", "", "holds no PEM certificate"},
		{"", "", "rocketmq\n  name_servers: [\"127.0.0.1:9876\"]\n  topics: [t]\n  access_key: ak", "access_key and secret_key go together"},
	} {
		writeFile(t, path, cfg(bad.src, bad.sink, bad.transport))
		var out, errOut bytes.Buffer
		code := Main([]string{"validate", "--config", path}, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), bad.want) {
			t.Errorf("%q%q%q: exit %d, %s", bad.src, bad.sink, bad.transport, code, errOut.String())
		}
	}
}
