package runtime

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestUniqueKeys(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(UniqueKeys(slog.NewTextHandler(&buf, nil)))
	src := log.With("component", "source", "pipeline", "p")
	lib := src.With("component", "go-mysql") // what a library does with the logger it gets
	lib.Info("connected", "host", "h", "pipeline", "p2")
	src.Info("reading")
	log.With("a", 1).WithGroup("g").With("a", 2).Info("grouped", "a", 3)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("lines:\n%s", buf.String())
	}
	if !strings.HasSuffix(lines[0], `msg=connected component=go-mysql pipeline=p2 host=h`) {
		t.Errorf("library line: %s", lines[0])
	}
	if !strings.HasSuffix(lines[1], `msg=reading component=source pipeline=p`) {
		t.Errorf("the parent logger changed: %s", lines[1])
	}
	if !strings.HasSuffix(lines[2], `msg=grouped a=1 g.a=3`) {
		t.Errorf("group: %s", lines[2])
	}
}
