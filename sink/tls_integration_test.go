package sink

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/sluicecdc/sluice/schema"
)

// testCA returns the throwaway CA of scripts/servers.sh, after checking
// that the target of e serves TLS.
func testCA(t *testing.T, e *tenv) *x509.CertPool {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("CI") == "true" {
		fail = t.Fatalf
	}
	ca := os.Getenv("SLUICE_TLS_CA")
	if ca == "" {
		fail("SLUICE_TLS_CA is not set: start the servers with scripts/servers.sh start (it makes a test CA) and source servers.env")
	}
	b, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("SLUICE_TLS_CA %s holds no certificate", ca)
	}
	q, want := "SELECT @@have_ssl", "YES"
	switch e.flavor {
	case "postgres":
		q, want = "SHOW ssl", "on"
	case "mysql": // no have_ssl since MySQL 8.4: the certificate in use
		q, want = "SELECT IF(@@ssl_cert <> '' AND @@tls_version <> '', 'YES', 'NO')", "YES"
	}
	var v string
	if err := e.admin.QueryRow(q).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != want {
		fail("the %s target does not serve TLS (%s = %s): restart it with scripts/servers.sh", e.dialect, q, v)
	}
	return pool
}

func foreignCA(t *testing.T) *x509.CertPool {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(9), Subject: pkix.Name{CommonName: "not the server's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return pool
}

// tlsTarget points e's config at the target with TLS left to the config:
// PostgreSQL without the env DSN's sslmode=disable; MySQL as an account
// that may connect only over TLS.
func tlsTarget(t *testing.T, e *tenv) {
	t.Helper()
	if e.dialect == DialectPostgres {
		e.cfg.DSN = strings.Replace(e.cfg.DSN, "sslmode=disable", "", 1)
		return
	}
	user := "sink_tls_" + suffix()
	for _, q := range []string{
		fmt.Sprintf("CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY 'tls-pass' REQUIRE SSL", user),
		fmt.Sprintf("GRANT ALL ON `%s`.* TO '%s'@'127.0.0.1'", e.schema, user),
	} {
		if _, err := e.admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { e.admin.Exec(fmt.Sprintf("DROP USER IF EXISTS '%s'@'127.0.0.1'", user)) })
	mc, err := mysqldrv.ParseDSN(e.cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	mc.User, mc.Passwd = user, "tls-pass"
	e.cfg.DSN = mc.FormatDSN()
}

// TestTargetTLS: the sink connects to PostgreSQL and MariaDB over TLS
// verified with the test CA (verify_identity, verify_ca, required), its
// connections report TLS, a wrong CA is a fatal error naming ssl_ca, and
// (MySQL, a REQUIRE SSL account) TLS disabled is refused.
func TestTargetTLS(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		pool := testCA(t, e)
		tlsTarget(t, e)
		for i, mode := range []string{TLSVerifyIdentity, TLSVerifyCA, TLSRequired, TLSPreferred} {
			t.Run(mode, func(t *testing.T) {
				s := e.open(t, func(c *Config) { c.TLSMode, c.TLS = mode, &tls.Config{RootCAs: pool} })
				write(t, s, cIns("tls", int64(i), mode))
				var on string
				q := "SELECT CASE WHEN ssl THEN 'on' ELSE 'off' END FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
				var err error
				if e.dialect == DialectMySQL {
					q = "SHOW SESSION STATUS LIKE 'Ssl_cipher'" // MySQL has no information_schema.SESSION_STATUS
					var name string
					err = s.db.QueryRow(q).Scan(&name, &on)
				} else {
					err = s.db.QueryRow(q).Scan(&on)
				}
				if err != nil {
					t.Fatal(err)
				}
				if on == "off" || on == "" {
					t.Fatalf("the sink's connection is not encrypted (%s: %q)", q, on)
				}
			})
		}
		wantRows(t, e, "tls", map[int64]string{0: TLSVerifyIdentity, 1: TLSVerifyCA, 2: TLSRequired, 3: TLSPreferred})
		if e.dialect == DialectPostgres {
			// The DSN's own settings, without ssl_mode: sslmode=verify-full.
			dsn := e.cfg.DSN + "?sslmode=verify-full&sslrootcert=" + url.QueryEscape(os.Getenv("SLUICE_TLS_CA"))
			if strings.Contains(e.cfg.DSN, "?") {
				dsn = strings.Replace(dsn, "?sslmode", "&sslmode", 1)
			}
			s := e.open(t, func(c *Config) { c.DSN = dsn })
			var on bool
			if err := s.db.QueryRow("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&on); err != nil || !on {
				t.Fatalf("sslmode=verify-full in the DSN: ssl %v, %v", on, err)
			}
		}

		for _, mode := range []string{TLSVerifyIdentity, TLSVerifyCA} {
			cfg := e.cfg
			cfg.TLSMode, cfg.TLS = mode, &tls.Config{RootCAs: foreignCA(t)}
			s, err := New(context.Background(), cfg, nil)
			if err == nil {
				s.Close()
				t.Fatalf("%s with a foreign CA connected", mode)
			}
			if schema.ClassOf(err) != schema.ClassFatal || !strings.Contains(err.Error(), "ssl_ca") {
				t.Fatalf("%s with a foreign CA: want a fatal error naming ssl_ca, got %v (%v)", mode, err, schema.ClassOf(err))
			}
		}
		if e.dialect == DialectMySQL {
			cfg := e.cfg
			cfg.TLSMode = TLSDisabled
			if s, err := New(context.Background(), cfg, nil); err == nil {
				s.Close()
				t.Fatal("a REQUIRE SSL account connected with TLS disabled: the test cannot tell TLS from plain")
			}
		}
		cfg := e.cfg
		cfg.TLSMode = TLSRequired
		cfg.DSN += map[string]string{DialectPostgres: "&sslmode=require", DialectMySQL: "&tls=true"}[e.dialect]
		if !strings.Contains(cfg.DSN, "?") {
			cfg.DSN = strings.Replace(cfg.DSN, "&", "?", 1)
		}
		if _, err := New(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "keep one") {
			t.Fatalf("TLS in both the DSN and the config: %v", err)
		}
	})
}

// TestTargetLockTimeout: a lock held by another session makes the sink's
// transaction fail within the lock timeout (or the statement timeout) with
// a retriable error; once the lock is gone the same write succeeds.
func TestTargetLockTimeout(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		setup := e.open(t, nil)
		write(t, setup, cIns("locked", 1, "a"))
		for _, c := range []struct {
			name          string
			lock, stmt    time.Duration
			wantInMessage []string
		}{
			{"lock_timeout", time.Second, -1, []string{"lock", "timeout"}},
			{"statement_timeout", -1, time.Second, []string{"statement", "time"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				if e.dialect == DialectMySQL && c.name == "statement_timeout" {
					var v string
					if err := e.admin.QueryRow("SELECT VERSION()").Scan(&v); err != nil || !strings.Contains(strings.ToLower(v), "mariadb") {
						t.Skip("MySQL has no statement timeout for writes")
					}
				}
				s := e.open(t, func(cfg *Config) { cfg.LockTimeout, cfg.StatementTimeout = c.lock, c.stmt })
				holder, err := e.admin.Conn(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Close()
				tx, err := holder.BeginTx(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback() // before holder.Close, which waits for it
				if _, err := tx.Exec("SELECT * FROM " + e.table("locked") + " WHERE id = 1 FOR UPDATE"); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				t0 := time.Now()
				err = s.Write(ctx, []schema.Record{cUpd("locked", 1, 1, "a", "b")})
				took := time.Since(t0)
				if err == nil {
					t.Fatal("the write went through a held lock")
				}
				if ctx.Err() != nil {
					t.Fatalf("the write waited for the test's own deadline, not the timeout (%s): %v", took, err)
				}
				if cl := schema.ClassOf(err); cl != schema.ClassRetriable {
					t.Fatalf("a lock or statement timeout is %v, want retriable: %v", cl, err)
				}
				low := strings.ToLower(err.Error())
				for _, w := range c.wantInMessage {
					if !strings.Contains(low, w) {
						t.Errorf("error does not say %q: %v", w, err)
					}
				}
				t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
				if err := tx.Rollback(); err != nil && err != sql.ErrTxDone {
					t.Fatal(err)
				}
				write(t, s, cUpd("locked", 1, 1, "a", "b"))
				wantRows(t, e, "locked", map[int64]string{1: "b"})
				write(t, s, cUpd("locked", 1, 1, "b", "a"))
			})
		}
	})
}
