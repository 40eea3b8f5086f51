package binlog

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
)

// needTLS returns the throwaway CA of scripts/servers.sh and checks that the
// server serves TLS with it.
func needTLS(t *testing.T, env serverEnv) *x509.CertPool {
	t.Helper()
	ca := os.Getenv("SLUICE_TLS_CA")
	fail := t.Skipf
	if os.Getenv("CI") == "true" {
		fail = t.Fatalf
	}
	if ca == "" {
		fail("SLUICE_TLS_CA is not set: start the servers with scripts/servers.sh start (it makes a test CA) and source servers.env")
	}
	pemBytes, err := os.ReadFile(ca)
	if err != nil {
		t.Fatalf("SLUICE_TLS_CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("SLUICE_TLS_CA %s holds no certificate", ca)
	}
	c, _ := adminConn(t, env)
	q := "SELECT @@have_ssl"
	if env.flavor == FlavorMySQL { // no have_ssl since MySQL 8.4: the CA the server loaded
		q = "SELECT IF(VARIABLE_VALUE <> '', 'YES', 'NO') FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Current_tls_ca'"
	}
	r, err := c.Execute(q)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := r.GetString(0, 0); v != "YES" {
		fail("the server at %s:%d does not serve TLS (have_ssl or a loaded CA: %s): restart it with scripts/servers.sh", env.host, env.port, v)
	}
	return pool
}

// tlsUser creates an account that may connect only over TLS, with the
// privileges of the CDC user, dropped at the end of the test.
func tlsUser(t *testing.T, env serverEnv, db string) (user, pass string) {
	t.Helper()
	c, _ := adminConn(t, env)
	user, pass = fmt.Sprintf("tls_%d", mrand.IntN(1e9)), "tls-pass"
	exec(t, c, "SET SESSION sql_log_bin = 0")
	exec(t, c, fmt.Sprintf("CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY '%s' REQUIRE SSL", user, pass))
	exec(t, c, fmt.Sprintf("GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT, LOCK TABLES ON *.* TO '%s'@'127.0.0.1'", user))
	t.Cleanup(func() { _, _ = c.Execute(fmt.Sprintf("DROP USER IF EXISTS '%s'@'127.0.0.1'", user)) })
	return user, pass
}

// otherCA writes a CA that signed nothing the server holds.
func otherCA(t *testing.T) *x509.CertPool {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "not the server's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "other-ca.pem")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	b, _ := os.ReadFile(f)
	pool.AppendCertsFromPEM(b)
	return pool
}

// TestSourceTLS: with a REQUIRE SSL account, the snapshot and the
// replication stream work over TLS for verify_identity, verify_ca and
// required; the same account with TLS disabled is refused (so the account
// proves each connection really used TLS); a wrong CA is a fatal error that
// names ssl_ca.
func TestSourceTLS(t *testing.T) {
	env := needServer(t)
	pool := needTLS(t, env)
	admin, db := adminConn(t, env)
	exec(t, admin, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(60))")
	exec(t, admin, "INSERT INTO t VALUES (1, 'snap')")
	user, pass := tlsUser(t, env, db)

	for i, mode := range []string{TLSVerifyIdentity, TLSVerifyCA, TLSRequired, TLSPreferred} {
		t.Run(mode, func(t *testing.T) {
			cfg := testConfig(env, db)
			cfg.User, cfg.Password = user, pass
			cfg.TLSMode, cfg.TLS = mode, &tls.Config{RootCAs: pool}
			cfg.Snapshot = SnapshotInitial
			src := openSource(t, cfg, nil)
			v := fmt.Sprintf("stream-%s", mode)
			exec(t, admin, fmt.Sprintf("INSERT INTO t VALUES (%d, '%s')", 10+i, v))
			reads, streamed := 0, false
			readUntil(t, src, func(r []schema.Record) bool {
				reads, streamed = 0, false
				for _, x := range r {
					if x.Table.Database != db {
						continue
					}
					reads += map[bool]int{true: 1}[x.Op == schema.OpRead]
					streamed = streamed || x.Op == schema.OpCreate && strings.Contains(fmt.Sprint(x.After), v)
				}
				return streamed
			})
			if reads == 0 {
				t.Fatalf("snapshot over TLS: no read records")
			}
		})
	}

	t.Run("disabled is refused for a REQUIRE SSL account", func(t *testing.T) {
		cfg := testConfig(env, db)
		cfg.User, cfg.Password = user, pass
		src, err := NewSource(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := src.Open(ctx, nil); err == nil || !strings.Contains(err.Error(), "Access denied") {
			src.Close()
			t.Fatalf("plain connection of a REQUIRE SSL account: %v", err)
		}
	})

	t.Run("wrong CA", func(t *testing.T) {
		for _, mode := range []string{TLSVerifyCA, TLSVerifyIdentity} {
			cfg := testConfig(env, db)
			cfg.TLSMode, cfg.TLS = mode, &tls.Config{RootCAs: otherCA(t)}
			src, err := NewSource(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = src.Open(ctx, nil)
			cancel()
			src.Close()
			if err == nil || schema.ClassOf(err) != schema.ClassFatal || !strings.Contains(err.Error(), "not signed by the configured CA (ssl_ca)") {
				t.Fatalf("%s with a wrong CA: want a fatal error naming ssl_ca, got %v (class %v)", mode, err, schema.ClassOf(err))
			}
			if probs := Check(context.Background(), cfg); len(probs) == 0 || probs[0].Check != "tls" {
				t.Fatalf("%s with a wrong CA: Check says %+v", mode, probs)
			}
		}
	})

	t.Run("verify_identity checks the name", func(t *testing.T) {
		// The certificate names 127.0.0.1 and localhost; asking for another
		// name must fail even though the CA is right.
		cfg := testConfig(env, db)
		cfg.TLSMode, cfg.TLS = TLSVerifyIdentity, &tls.Config{RootCAs: pool, ServerName: "db.example.org"}
		_, err := CurrentPosition(context.Background(), cfg)
		if err == nil || schema.ClassOf(err) != schema.ClassFatal || !strings.Contains(err.Error(), "not for host") {
			t.Fatalf("verify_identity with a name the certificate lacks: %v", err)
		}
		cfg.TLSMode = TLSVerifyCA // the chain is right: verify_ca accepts it
		if _, err := CurrentPosition(context.Background(), cfg); err != nil {
			t.Fatalf("verify_ca ignores the name: %v", err)
		}
	})

	t.Run("the query connection reports a cipher", func(t *testing.T) {
		cfg := testConfig(env, db)
		cfg.User, cfg.Password = user, pass
		cfg.TLSMode, cfg.TLS = TLSVerifyIdentity, &tls.Config{RootCAs: pool}
		if err := cfg.validate(); err != nil {
			t.Fatal(err)
		}
		c, err := dialServer(context.Background(), &cfg, tlsFor(&cfg), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		r, err := c.Execute("SHOW STATUS LIKE 'Ssl_cipher'")
		if err != nil {
			t.Fatal(err)
		}
		if cipher, _ := r.GetString(0, 1); cipher == "" {
			t.Fatal("Ssl_cipher is empty: the connection is not encrypted")
		}
	})
}
