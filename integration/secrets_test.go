package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// secretRun is one `sluice` process whose every output byte is kept.
type secretRun struct {
	cmd  *exec.Cmd
	out  *syncWriter
	buf  *bytes.Buffer
	done chan struct{}
	rest string
}

func startSecretRun(t *testing.T, bin, dir string, args ...string) *secretRun {
	t.Helper()
	r := &secretRun{buf: &bytes.Buffer{}, done: make(chan struct{})}
	r.out = &syncWriter{w: r.buf}
	if args[0] == "run" {
		r.rest = freeAddr(t)
		args = append(args, "--rest", r.rest)
	}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Dir = dir
	r.cmd.Env = append(os.Environ(), "SLUICE_LOG_LEVEL=debug")
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// get fetches a REST path and records the answer in the run's output.
func (r *secretRun) get(path string) string {
	resp, err := http.Get("http://" + r.rest + path)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Fprintf(r.out, "\n--- GET %s: %d\n%s\n", path, resp.StatusCode, b)
	return string(b)
}

// scrape reads every REST endpoint of pipeline name.
func (r *secretRun) scrape(name string) {
	for _, p := range []string{"/connectors", "/connectors/" + name + "/status", "/connectors/" + name + "/offsets", "/metrics", "/health"} {
		r.get(p)
	}
}

// stop ends the run with SIGTERM (SIGKILL after 60s) and returns all it wrote.
func (r *secretRun) stop() string {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	r.out.mu.Lock()
	defer r.out.mu.Unlock()
	return r.buf.String()
}

// assertNoSecret fails, showing the lines, when secret occurs in out.
func assertNoSecret(t *testing.T, what, out, secret string) {
	t.Helper()
	if !strings.Contains(out, secret) {
		return
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, secret) {
			lines = append(lines, strings.ReplaceAll(l, secret, "<SECRET>"))
		}
	}
	t.Errorf("%s: the password appears in the output %d times:\n%s", what, len(lines), strings.Join(lines, "\n"))
}

// TestNoSecretInOutput runs sluice with one distinctive password as the
// source password, in the target and position DSNs and as the broker's
// secret key, scrapes every REST endpoint, runs validate and check, then
// repeats with faults whose errors name DSNs (bad ports, servers down, a
// wrong password), and fails if the password appears in anything the
// processes wrote.
func TestNoSecretInOutput(t *testing.T) {
	e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
	bin := buildSluice(t)
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	secret := "LeakCanary" + hex.EncodeToString(b)

	my := openDB(t, "mysql", e.mysqlDSN(""))
	pg := openDB(t, "postgres", e["SLUICE_PG_DSN"])
	user := uniqueName("leak")
	mustExec(t, my, fmt.Sprintf("CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY '%s'", user, secret))
	t.Cleanup(func() { my.Exec(fmt.Sprintf("DROP USER IF EXISTS '%s'@'127.0.0.1'", user)) })
	mustExec(t, my, fmt.Sprintf("GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT, LOCK TABLES ON *.* TO '%s'@'127.0.0.1'", user))
	mustExec(t, pg, fmt.Sprintf(`CREATE ROLE %s LOGIN SUPERUSER PASSWORD '%s'`, user, secret))
	t.Cleanup(func() {
		pg.Exec(fmt.Sprintf(`DELETE FROM sluice_progress WHERE pipeline LIKE '%s%%'`, user))
		pg.Exec(fmt.Sprintf(`DROP OWNED BY %s CASCADE`, user))
		pg.Exec(fmt.Sprintf(`DROP ROLE IF EXISTS %s`, user))
	})
	db := uniqueName("leakdb")
	mustExec(t, my, "CREATE DATABASE "+db)
	t.Cleanup(func() { my.Exec("DROP DATABASE IF EXISTS " + db) })
	mustExec(t, my, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v VARCHAR(20))")
	t.Cleanup(func() { pg.Exec(`DROP SCHEMA IF EXISTS "` + db + `" CASCADE`) })

	pgURL, err := url.Parse(e["SLUICE_PG_DSN"])
	if err != nil {
		t.Fatal(err)
	}
	pgDSN := fmt.Sprintf("postgres://%s:%s@%s%s?sslmode=disable", user, secret, pgURL.Host, pgURL.Path)
	broker := e["SLUICE_ROCKETMQ_NAMESRV"]
	if broker == "" && os.Getenv("CI") == "true" {
		t.Fatal("SLUICE_ROCKETMQ_NAMESRV is not set")
	}

	type section map[string]string
	config := func(name string, src, transport, sink, positions section) string {
		var sb strings.Builder
		fmt.Fprintf(&sb, "name: %s\n", name)
		for _, s := range []struct {
			key string
			sec section
		}{{"source", src}, {"transport", transport}, {"sink", sink}, {"positions", positions}} {
			fmt.Fprintf(&sb, "%s:\n", s.key)
			for k, v := range s.sec {
				fmt.Fprintf(&sb, "  %s: %s\n", k, v)
			}
		}
		return sb.String()
	}
	serverID := func() string { n, _ := rand.Int(rand.Reader, big.NewInt(1e6)); return fmt.Sprint(200000 + n.Int64()) }
	source := func(password string) section {
		return section{"type": e["SLUICE_MYSQL_FLAVOR"], "host": e["SLUICE_MYSQL_HOST"], "port": e["SLUICE_MYSQL_PORT"],
			"user": user, "password": fmt.Sprintf("%q", password), "server_id": serverID(), "include": fmt.Sprintf("[%q]", db+".*")}
	}
	if source("")["type"] == "" {
		e["SLUICE_MYSQL_FLAVOR"] = "mariadb"
	}
	embedded := section{"type": "embedded"}
	pgSink := func(dsn string) section { return section{"type": "postgres", "dsn": fmt.Sprintf("%q", dsn)} }
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("working run", func(t *testing.T) {
		name := user + "_ok"
		transport := embedded
		if broker != "" {
			transport = section{"type": "rocketmq", "name_servers": fmt.Sprintf("[%q]", broker), "access_key": "sluice-ak",
				"secret_key": fmt.Sprintf("%q", secret), "topics": fmt.Sprintf("[%s_%s_t]", name, db)}
		}
		src, snk := source(secret), pgSink(pgDSN)
		// With the servers' test CA, source and target go over verified TLS
		// from the YAML keys, and the source account may only use TLS.
		var haveSSL, pgSSL string
		_ = my.QueryRow("SELECT @@have_ssl").Scan(&haveSSL)
		_ = pg.QueryRow("SHOW ssl").Scan(&pgSSL)
		if ca := e["SLUICE_TLS_CA"]; ca != "" && haveSSL == "YES" && pgSSL == "on" {
			mustExec(t, my, fmt.Sprintf("ALTER USER '%s'@'127.0.0.1' REQUIRE SSL", user))
			src["ssl_mode"], src["ssl_ca"] = "verify_identity", ca
			snk["dsn"] = fmt.Sprintf("%q", strings.Replace(pgDSN, "?sslmode=disable", "", 1))
			snk["ssl_mode"], snk["ssl_ca"] = "verify_identity", ca
		} else if os.Getenv("CI") == "true" {
			t.Fatalf("the servers do not serve TLS with a test CA (SLUICE_TLS_CA %q, have_ssl %q, ssl %q): start them with scripts/servers.sh", ca, haveSSL, pgSSL)
		}
		cfg := write(name, config(name, src, transport, snk,
			section{"type": "postgres", "dsn": fmt.Sprintf("%q", pgDSN), "table": "leak_positions"}))
		var outputs []string
		for _, cmd := range []string{"validate", "check"} {
			r := startSecretRun(t, bin, dir, cmd, "--config", cfg)
			outputs = append(outputs, r.stop())
		}
		r := startSecretRun(t, bin, dir, "run", "--config", cfg)
		deadline := time.Now().Add(60 * time.Second)
		for r.get("/health") == "" && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(2 * time.Second) // let the source reach streaming before the rows
		for i := 1; i <= 3; i++ {
			mustExec(t, my, fmt.Sprintf("INSERT INTO %s.t VALUES (%d, 'v%d')", db, i, i))
		}
		n := 0
		for time.Now().Before(deadline) {
			if err := pg.QueryRow(`SELECT count(*) FROM "` + db + `".t`).Scan(&n); err == nil && n == 3 {
				break
			}
			time.Sleep(300 * time.Millisecond)
		}
		r.scrape(name)
		out := r.stop()
		if n != 3 {
			t.Fatalf("the working run applied %d of 3 rows; its output:\n%s", n, strings.ReplaceAll(out, secret, "<SECRET>"))
		}
		assertNoSecret(t, "working run", strings.Join(append(outputs, out), "\n"), secret)
	})

	type fault struct {
		name                            string
		src, transport, sink, positions section
	}
	faults := []fault{
		{"target DSN with a bad port", source(secret), embedded, pgSink(fmt.Sprintf("postgres://%s:%s@127.0.0.1:99999/x?sslmode=disable", user, secret)), nil},
		{"target DSN unparseable", source(secret), embedded, pgSink(fmt.Sprintf("postgres://%s:%s@127.0.0.1:5x/x", user, secret)), nil},
		{"positions DSN unparseable", source(secret), embedded, pgSink(pgDSN), section{"type": "postgres", "dsn": fmt.Sprintf("%q", fmt.Sprintf("postgres://%s:%s@127.0.0.1:5x/x", user, secret))}},
		{"target down", source(secret), embedded, pgSink(fmt.Sprintf("postgres://%s:%s@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", user, secret)), nil},
		{"target key=value DSN down", source(secret), embedded, pgSink(fmt.Sprintf("host=127.0.0.1 port=1 user=%s password=%s dbname=x sslmode=disable connect_timeout=2", user, secret)), nil},
		{"MySQL target down", source(secret), embedded, section{"type": "mysql", "dsn": fmt.Sprintf("%q", fmt.Sprintf("%s:%s@tcp(127.0.0.1:1)/x?timeout=2s", user, secret))}, nil},
		{"MySQL target DSN malformed", source(secret), embedded, section{"type": "mysql", "dsn": fmt.Sprintf("%q", fmt.Sprintf("%s:%s@tcp(127.0.0.1:1/x", user, secret))}, nil},
		{"positions DSN with a bad port", source(secret), embedded, pgSink(pgDSN), section{"type": "postgres", "dsn": fmt.Sprintf("%q", fmt.Sprintf("postgres://%s:%s@127.0.0.1:99999/x", user, secret))}},
		{"positions MySQL down", source(secret), embedded, pgSink(pgDSN), section{"type": "mysql", "dsn": fmt.Sprintf("%q", fmt.Sprintf("%s:%s@tcp(127.0.0.1:1)/x?timeout=2s", user, secret))}},
		{"wrong source password", source(secret + "-wrong"), embedded, pgSink(pgDSN), nil},
		{"source down", func() section { s := source(secret); s["port"] = "1"; return s }(), embedded, pgSink(pgDSN), nil},
		{"broker down", source(secret), section{"type": "rocketmq", "name_servers": `["127.0.0.1:1"]`, "access_key": "ak", "secret_key": fmt.Sprintf("%q", secret), "topics": "[x]"}, pgSink(pgDSN), nil},
	}
	// The Kafka broker's SASL_SSL listener refuses the password (its user's
	// is another): the refusal names the user and the keys, never the
	// password.
	if kb := e["SLUICE_KAFKA_SASL_SSL_BROKERS"]; kb != "" {
		faults = append(faults, fault{"Kafka SASL password refused", source(secret), section{"type": "kafka", "brokers": fmt.Sprintf("[%q]", kb),
			"ssl_mode": "verify_identity", "ssl_ca": fmt.Sprintf("%q", e["SLUICE_KAFKA_CA"]), "sasl_mechanism": "SCRAM-SHA-512",
			"sasl_username": fmt.Sprintf("%q", e["SLUICE_KAFKA_SASL_USER"]), "sasl_password": fmt.Sprintf("%q", secret)}, pgSink(pgDSN), nil})
	} else if os.Getenv("CI") == "true" {
		t.Fatal("SLUICE_KAFKA_SASL_SSL_BROKERS is not set: start the broker with scripts/servers.sh start kafka")
	}
	for i, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("%s_f%d", user, i)
			pos := f.positions
			if pos == nil {
				pos = section{"type": "file", "dir": fmt.Sprintf("%q", filepath.Join(dir, name+"-positions"))}
			}
			cfg := write(name, config(name, f.src, f.transport, f.sink, pos))
			v := startSecretRun(t, bin, dir, "validate", "--config", cfg)
			out := v.stop()
			r := startSecretRun(t, bin, dir, "run", "--config", cfg)
			select {
			case <-r.done:
			case <-time.After(8 * time.Second):
			}
			r.scrape(name)
			out += r.stop()
			if low := strings.ToLower(out); !strings.Contains(low, "error") && !strings.Contains(low, "warn") && !strings.Contains("\n"+out, "\nsluice: ") {
				t.Errorf("the fault left no trace in the output (is the test still injecting it?):\n%s", strings.ReplaceAll(out, secret, "<SECRET>"))
			}
			assertNoSecret(t, f.name, out, secret)
		})
	}
}
