package binlog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

// go-mysql's syncer logs its whole config at INFO when it is made, and
// each connect; at the default level (INFO) none of that is printed, its
// warnings are (issue 33, item 5).
func TestLibraryInfoIsDebug(t *testing.T) {
	var logs bytes.Buffer
	s, err := NewSource(Config{Host: "127.0.0.1", Port: 3306, User: "u", Password: "secret-pw", ServerID: 77, Flavor: FlavorMariaDB, ServerName: "s"},
		slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		t.Fatal(err)
	}
	sc := s.syncerConfig()
	replication.NewBinlogSyncer(sc).Close()
	if logs.Len() != 0 {
		t.Errorf("go-mysql logged at INFO:\n%s", logs.String())
	}
	sc.Logger.Warn("a warning")
	if !strings.Contains(logs.String(), "level=WARN msg=\"a warning\"") || !strings.Contains(logs.String(), "component=go-mysql") {
		t.Errorf("go-mysql's warning is not logged as one: %q", logs.String())
	}
	logs.Reset()
	s, _ = NewSource(Config{Host: "127.0.0.1", Port: 3306, User: "u", Password: "secret-pw", ServerID: 77, Flavor: FlavorMariaDB, ServerName: "s"},
		slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	replication.NewBinlogSyncer(s.syncerConfig()).Close()
	if !strings.Contains(logs.String(), "level=DEBUG msg=\"create BinlogSyncer\"") {
		t.Errorf("at DEBUG the syncer's config is not logged: %q", logs.String())
	}
	if strings.Contains(logs.String(), "secret-pw") {
		t.Errorf("the syncer's config shows the password: %q", logs.String())
	}
}
