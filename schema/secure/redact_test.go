package secure

import (
	"errors"
	"strings"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	for _, c := range []struct{ dsn, pw string }{
		{"postgres://u:Sekr3t@127.0.0.1:5432/db?sslmode=disable", "Sekr3t"},
		{"postgres://u:Sek%40r3t@127.0.0.1:5x/db", "Sek@r3t"},
		{"host=127.0.0.1 user=u password=Sekr3t dbname=x", "Sekr3t"},
		{"host=127.0.0.1 user=u password='Sek r3t' dbname=x", "Sek r3t"},
		{"u:Sekr3t@tcp(127.0.0.1:3306)/db?timeout=2s", "Sekr3t"},
		{"u:Sek/r3t@tcp(127.0.0.1:3306)/db", "Sek/r3t"},
		{"u:Sek@r3t@tcp(127.0.0.1:3306)/db", "Sek@r3t"},
		{"postgres://127.0.0.1/db?user=u&password=Sekr3t", "Sekr3t"},
	} {
		msg := `parse "` + c.dsn + `": failed; the password was ` + c.pw
		got := RedactDSN(msg, c.dsn)
		if strings.Contains(got, c.pw) {
			t.Errorf("%s: the password survives: %s", c.dsn, got)
		}
		err := RedactDSNError(errors.New(msg), c.dsn)
		if strings.Contains(err.Error(), c.pw) || errors.Unwrap(err) == nil {
			t.Errorf("%s: RedactDSNError: %v", c.dsn, err)
		}
	}
	if got := RedactDSN("dial tcp 127.0.0.1:1: refused", "postgres://u@127.0.0.1/db"); got != "dial tcp 127.0.0.1:1: refused" {
		t.Errorf("a DSN without password changed the text: %s", got)
	}
}
