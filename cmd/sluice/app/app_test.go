package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/runtime/plugin"
)

// The commented examples are part of the contract: they must stay valid.
func TestExamplesDecode(t *testing.T) {
	files, err := filepath.Glob("../../../examples/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		cfg, err := plugin.LoadConfig(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		d, err := decodeAll(cfg, "")
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.source == nil || d.sink == nil || d.source.Host != "127.0.0.1" || d.sink.Dialect != "postgres" {
			t.Fatalf("%s decoded to %+v", f, d)
		}
	}
}

func TestValidateReportsKeyAndLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.yaml")
	writeFile(t, path, "name: x\nsource:\n  type: mysql\n  host: h\n  user: u\n  server_id: many\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: postgres://u@127.0.0.1:1/x\n")
	var out, errOut bytes.Buffer
	code := Main([]string{"validate", "--config", path}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "bad.yaml:6: source.server_id: expected an integer") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	writeFile(t, path, "name: x\nsource:\n  type: mysql\n  host: h\n  user: u\n  server_id: 7\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: postgres://u@127.0.0.1:1/x\n")
	out.Reset()
	errOut.Reset()
	if code := Main([]string{"validate", "--config", path}, &out, &errOut); code != 0 {
		t.Fatalf("valid config: exit %d, %s", code, errOut.String())
	}
	if code := Main([]string{"run", "--config", path, "--only", "sink"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--only needs a broker transport (rocketmq or kafka)") {
		t.Fatalf("--only with embedded: exit %d, %s", code, errOut.String())
	}
}

// positions show/reset work for every transport, the embedded one included.
func TestPositionsCommandEmbedded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	writeFile(t, path, "name: p1\nsource:\n  type: mysql\n  host: h\n  user: u\n  server_id: 7\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: postgres://u@127.0.0.1:1/x\npositions:\n  type: file\n  dir: "+dir+"\n")
	writeFile(t, filepath.Join(dir, "p1.position"), `{"sluice_position":1,"source":"{\"v\":1}","seq":42}`)
	var out, errOut bytes.Buffer
	if code := Main([]string{"positions", "show", "--config", path}, &out, &errOut); code != 0 || strings.TrimSpace(out.String()) != `{"v":1}` {
		t.Fatalf("show: exit %d, out %q, err %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := Main([]string{"positions", "reset", "--config", path}, &out, &errOut); code != 0 {
		t.Fatalf("reset: exit %d, err %q", code, errOut.String())
	}
	out.Reset()
	if code := Main([]string{"positions", "show", "--config", path}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "no saved position") {
		t.Fatalf("show after reset: exit %d, out %q", code, out.String())
	}
}

// Relative paths in a config resolve against the config file's folder, not
// the working directory (issue 28, problem 2): `positions show` run from
// another folder finds the position `run` saved next to the config, and
// the schema history and TLS files are those beside it too. Before,
// positions.dir was read from the working directory and a service manager
// with another one started over.
func TestRelativePathsResolveAgainstTheConfigFolder(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	path := filepath.Join(work, "p.yaml")
	if err := os.MkdirAll(filepath.Join(work, "pos"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "name: p1\nsource:\n  type: mysql\n  host: h\n  user: u\n  server_id: 7\n  history_file: hist/h.jsonl\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: postgres://u@127.0.0.1:1/x\npositions:\n  type: file\n  dir: pos\n")
	writeFile(t, filepath.Join(work, "pos", "p1.position"), `{"v":1}`)
	t.Chdir(t.TempDir()) // another working directory, as a service manager's
	var out, errOut bytes.Buffer
	if code := Main([]string{"positions", "show", "--config", path}, &out, &errOut); code != 0 || strings.TrimSpace(out.String()) != `{"v":1}` {
		t.Fatalf("show from another folder: exit %d, out %q, err %q", code, out.String(), errOut.String())
	}
	cfg, err := loadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := decodeAll(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(work, "hist", "h.jsonl"); d.source.HistoryFile != want {
		t.Errorf("history_file %q, want %q", d.source.HistoryFile, want)
	}
	if want := "folder " + filepath.Join(work, "pos"); d.positions.where() != want {
		t.Errorf("positions %q, want %q", d.positions.where(), want)
	}
	// `sluice run` names the resolved paths at start (here it then fails:
	// no server answers, and start_retries 0 allows no retry)
	writeFile(t, path, "start_retries: 0\nname: p1\nsource:\n  type: mysql\n  host: 127.0.0.1\n  port: 1\n  user: u\n  server_id: 7\n  history_file: hist/h.jsonl\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: postgres://u@127.0.0.1:1/x?sslmode=disable\npositions:\n  type: file\n  dir: pos\n")
	out.Reset()
	errOut.Reset()
	if code := Main([]string{"run", "--rest", "", "--config", path}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), `positions="folder `+filepath.Join(work, "pos")+`"`) || !strings.Contains(errOut.String(), "history_file="+filepath.Join(work, "hist", "h.jsonl")) {
		t.Errorf("run: exit %d, want 1 after a start log naming the resolved paths:\n%s", code, errOut.String())
	}
	// a TLS file named relative to the config is read from beside it
	writeFile(t, path, "name: p1\nsource:\n  type: mysql\n  host: h\n  user: u\n  server_id: 7\n  ssl_mode: verify_ca\n  ssl_ca: ca.pem\ntransport:\n  type: embedded\nsink:\n  type: postgres\n  dsn: postgres://u@127.0.0.1:1/x\n")
	writeFile(t, filepath.Join(work, "ca.pem"), "not a certificate")
	out.Reset()
	errOut.Reset()
	if code := Main([]string{"validate", "--config", path}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), filepath.Join(work, "ca.pem")+" holds no PEM certificate") {
		t.Errorf("validate with ssl_ca beside the config: exit %d, %s", code, errOut.String())
	}
}
