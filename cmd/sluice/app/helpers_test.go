package app

import (
	"os"
	"testing"

	"github.com/sluicecdc/sluice/runtime"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

type runtimeConfig = runtime.Config

func loadFile(path string) (*runtime.Config, error) { return runtime.LoadConfig(path) }
