package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The binary refuses a misspelled key inside a list entry (a mask rule's
// salt) in validate and in run alike, before connecting: exit code 2 and a
// message naming the key and its line. The corrected file validates, with
// $${db} kept for the sink and an environment value "null" kept as text.
func TestBinaryRefusesMisspelledNestedKey(t *testing.T) {
	bin := buildSluice(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	text := `name: cfg_it
source:
  type: mariadb
  host: 127.0.0.1
  port: 1
  user: u
  password: ${SLUICE_IT_WORD}
  server_id: 4242
  mask:
    - columns: shop.users.email
      kind: hash
      slat: pepper
transport:
  type: embedded
sink:
  type: postgres
  dsn: postgres://u@127.0.0.1:1/x
  schema: "$${db}_copy"
positions:
  type: file
  dir: ` + filepath.Join(dir, "positions") + "\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "SLUICE_IT_WORD=null")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), out.String()
		}
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return 0, out.String()
	}
	for _, verb := range []string{"validate", "run"} {
		code, out := run(verb, "--config", path)
		if code != 2 || !strings.Contains(out, "p.yaml:12: source.mask[0].slat: unknown key (known: columns, kind, length, salt, value)") {
			t.Errorf("%s: exit %d, output:\n%s", verb, code, out)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Replace(text, "slat:", "salt:", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := run("validate", "--config", path); code != 0 || !strings.Contains(out, "p.yaml: ok") {
		t.Errorf("corrected config: exit %d, output:\n%s", code, out)
	}
}
