package integration

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema/schematest"
)

// TestReadmeFirstPipeline follows README's "Your first pipeline" word by
// word: the blocks marked `<!-- first-pipeline:NAME -->` are what it runs.
// The only changes it makes, each of a text that must occur in the block
// exactly once, are the ones README announces: hosts, ports, user names and
// passwords become those of servers.env (the source's 127.0.0.1:3306, the
// account 'sluice'/'change-me', the DSN of the target, the REST address
// 127.0.0.1:8083, whose port becomes a free one wherever it is written); and on MySQL the source's `type: mariadb`
// becomes the `mysql` its comment offers. It checks that the source server
// has the settings of the section's my.cnf lines, runs the commands
// (`go install` with GOBIN set to a folder of the test; `curl URL` is a GET
// of URL), and that the pipeline reaches RUNNING and both rows land.
func TestReadmeFirstPipeline(t *testing.T) {
	blocks := readmeFirstPipeline(t)
	bin := t.TempDir() // GOBIN of both runs: the second install finds the binary current
	t.Run("mariadb", func(t *testing.T) {
		e := servers(t, "SLUICE_MYSQL_PORT", "SLUICE_PG_DSN")
		if e["SLUICE_MYSQL_FLAVOR"] != "mariadb" {
			schematest.NoServer(t, "SLUICE_MYSQL_FLAVOR is %q, not mariadb", e["SLUICE_MYSQL_FLAVOR"])
		}
		followFirstPipeline(t, e, blocks, bin, "mariadb.cnf", false)
	})
	t.Run("mysql97", func(t *testing.T) {
		e := servers(t, "SLUICE_MYSQL97_PORT", "SLUICE_PG_DSN").withMySQL97()
		followFirstPipeline(t, e, blocks, bin, "mysql.cnf", true)
	})
}

var firstPipelineBlock = regexp.MustCompile("(?s)<!-- first-pipeline:([a-z0-9.]+) -->\\s*```[a-z]*\\n(.*?)```")

// readmeFirstPipeline returns the marked blocks of README's first-pipeline
// section by name.
func readmeFirstPipeline(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n## Your first pipeline\n")
	if i < 0 {
		t.Fatal(`README has no "## Your first pipeline" section`)
	}
	section := text[i+1:]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	blocks := map[string]string{}
	for _, m := range firstPipelineBlock.FindAllStringSubmatch(section, -1) {
		blocks[m[1]] = m[2]
	}
	for _, name := range []string{"mariadb.cnf", "mysql.cnf", "source.sql", "first.yaml", "commands.sh", "change.sql", "target.sql"} {
		if blocks[name] == "" {
			t.Fatalf("README's first-pipeline section has no block marked first-pipeline:%s", name)
		}
	}
	return blocks
}

// substitute replaces each old text of pairs, which must occur in s exactly
// once, by its new text.
func substitute(t *testing.T, what, s string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		if n := strings.Count(s, pairs[i]); n != 1 {
			t.Fatalf("README's %s block has %q %d times, want once:\n%s", what, pairs[i], n, s)
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

// sqlStatements splits a block of SQL into its statements.
func sqlStatements(block string) []string {
	var out []string
	for _, s := range strings.Split(block, ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func followFirstPipeline(t *testing.T, e env, blocks map[string]string, bin, cnf string, mysql bool) {
	root := openDB(t, "mysql", e.mysqlDSN(""))
	checkServerSettings(t, root, blocks[cnf])

	// The section's names: pipeline first, database and schema inventory,
	// account sluice. A run before this one leaves them behind; the pipeline's
	// rows in the sink's control tables go with the target schema (as
	// scripts/demo.sh does).
	const user = "readme_first"
	password := uniqueName("pw")
	pg := openDB(t, "postgres", e["SLUICE_PG_DSN"])
	clean := func() {
		for _, q := range []string{"DROP DATABASE IF EXISTS inventory", "DROP USER IF EXISTS '" + user + "'@'%'"} {
			if _, err := root.Exec(q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
		if _, err := pg.Exec(`DROP SCHEMA IF EXISTS inventory CASCADE`); err != nil {
			t.Errorf("drop schema inventory: %v", err)
		}
		if _, err := pg.Exec(`DO $$ DECLARE t text; BEGIN
  FOR t IN SELECT table_name FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name LIKE 'sluice\_progress%' AND column_name = 'pipeline' LOOP
    EXECUTE format('DELETE FROM %I WHERE pipeline = %L', t, 'first');
  END LOOP; END $$`); err != nil {
			t.Errorf("delete the pipeline's control rows: %v", err)
		}
	}
	clean()
	t.Cleanup(clean)

	// 2. The account and the table, as an administrator.
	source := substitute(t, "source.sql", blocks["source.sql"],
		"CREATE USER 'sluice'@'%' IDENTIFIED BY 'change-me'", "CREATE USER '"+user+"'@'%' IDENTIFIED BY '"+password+"'",
		"TO 'sluice'@'%'", "TO '"+user+"'@'%'")
	for _, q := range sqlStatements(source) {
		mustExec(t, root, q)
	}

	// 3. The config.
	dir := t.TempDir()
	pairs := []string{"host: 127.0.0.1", "host: " + e["SLUICE_MYSQL_HOST"],
		"port: 3306", "port: " + e["SLUICE_MYSQL_PORT"],
		"user: sluice", "user: " + user,
		"password: change-me", "password: " + password,
		"dsn: postgres://sluice:change-me@127.0.0.1:5432/sluice", "dsn: " + e["SLUICE_PG_DSN"]}
	if mysql {
		pairs = append(pairs, "type: mariadb            # or mysql", "type: mysql")
	}
	config := substitute(t, "first.yaml", blocks["first.yaml"], pairs...)
	if err := os.WriteFile(filepath.Join(dir, "first.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}

	// 4. The commands.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	restPort := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	commands := blocks["commands.sh"]
	if !strings.Contains(commands, "127.0.0.1:8083") {
		t.Fatalf("README's commands.sh block has no 127.0.0.1:8083:\n%s", commands)
	}
	commands = strings.ReplaceAll(commands, "127.0.0.1:8083", "127.0.0.1:"+restPort)
	var run *exec.Cmd
	var runLog bytes.Buffer
	runExited := make(chan error, 1)
	for _, line := range strings.Split(commands, "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		switch {
		case len(words) == 3 && words[0] == "go" && words[1] == "install":
			cmd := exec.Command("go", words[1:]...)
			cmd.Dir = ".."
			cmd.Env = append(os.Environ(), "GOBIN="+bin)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
		case words[0] == "sluice" && words[len(words)-1] == "&":
			run = exec.Command(filepath.Join(bin, "sluice"), words[1:len(words)-1]...)
			run.Dir = dir
			w := &syncWriter{w: &runLog}
			run.Stdout, run.Stderr = w, w
			if err := run.Start(); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			go func() { runExited <- run.Wait() }()
			t.Cleanup(func() {
				if run.ProcessState == nil {
					_ = run.Process.Kill()
					<-runExited
				}
			})
		case words[0] == "sluice":
			cmd := exec.Command(filepath.Join(bin, "sluice"), words[1:]...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
			if words[1] == "check" && !strings.Contains(string(out), "all checks passed") {
				t.Fatalf("%s: no verdict \"all checks passed\":\n%s", line, out)
			}
		case words[0] == "curl" && run != nil:
			url := words[len(words)-1]
			if !strings.HasPrefix(url, "http") {
				url = "http://" + url
			}
			waitStatusRunning(t, url, runExited, &runLog)
		default:
			t.Fatalf("README's commands.sh block has a line this test does not know how to follow: %q", line)
		}
	}
	if run == nil {
		t.Fatal("README's commands.sh block starts no `sluice run … &`")
	}

	// 5. A change arrives: both rows on the target.
	for _, q := range sqlStatements(blocks["change.sql"]) {
		mustExec(t, root, q)
	}
	queries := sqlStatements(blocks["target.sql"])
	if len(queries) != 1 {
		t.Fatalf("README's target.sql block has %d statements, want one SELECT", len(queries))
	}
	schematest.Eventually(t, 30*time.Second, 100*time.Millisecond, "both rows on the target", func() (bool, string) {
		rows, err := queryRows(pg, queries[0])
		var got []string
		for _, r := range rows {
			got = append(got, r[0].String+" "+r[1].String)
		}
		return err == nil && strings.Join(got, "; ") == "1 anvil; 2 rocket", fmt.Sprintf("%q %v", got, err)
	})

	// SIGTERM stops it gracefully; its position is in positions/ beside the config.
	if err := run.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-runExited:
		if err != nil {
			t.Fatalf("sluice run after SIGTERM: %v\n%s", err, runLog.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("sluice run did not stop within 30 s of SIGTERM\n%s", runLog.String())
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "positions")); err != nil || len(entries) == 0 {
		t.Errorf("no saved position in positions/ beside the config (%v)", err)
	}
}

// checkServerSettings checks that the source server has the settings of a
// my.cnf block: log-bin on (its value is the files' base name), a non-zero
// server-id, and every other key at its value (ON and 1 alike).
func checkServerSettings(t *testing.T, db *sql.DB, block string) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		name := strings.ReplaceAll(strings.TrimSpace(k), "-", "_")
		var got string
		if err := db.QueryRow("SELECT @@GLOBAL." + name).Scan(&got); err != nil {
			t.Fatalf("my.cnf line %q: %v", line, err)
		}
		want := strings.TrimSpace(v)
		norm := func(s string) string {
			s = strings.ToUpper(s)
			if s == "1" {
				return "ON"
			}
			return s
		}
		switch name {
		case "log_bin":
			if norm(got) != "ON" {
				t.Errorf("my.cnf line %q: the server's log_bin is %q", line, got)
			}
		case "server_id":
			if got == "0" {
				t.Errorf("my.cnf line %q: the server's server_id is 0", line)
			}
		default:
			if norm(got) != norm(want) {
				t.Errorf("my.cnf line %q: the server's %s is %q", line, name, got)
			}
		}
		n++
	}
	if n == 0 {
		t.Fatalf("my.cnf block has no settings:\n%s", block)
	}
}

// waitStatusRunning polls the status at url until its state is RUNNING and checks
// the fields README names beside it.
func waitStatusRunning(t *testing.T, url string, exited chan error, log *bytes.Buffer) {
	t.Helper()
	var status map[string]any
	schematest.Eventually(t, 45*time.Second, 100*time.Millisecond, "state RUNNING at "+url, func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("sluice run exited: %v\n%s", err, log.String())
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		status = nil
		_ = json.Unmarshal(body, &status)
		return resp.StatusCode == http.StatusOK && status["state"] == "RUNNING", fmt.Sprintf("%d %s", resp.StatusCode, body)
	})
	for _, k := range []string{"records_read", "records_applied", "lag_seconds"} {
		if _, ok := status[k]; !ok {
			t.Errorf("the status has no %q: %v", k, status)
		}
	}
}
