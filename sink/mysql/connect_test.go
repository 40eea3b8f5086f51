package mysql

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicecdc/sluice/sink/dialect"
)

// CheckDSN refuses at validation what the driver would only refuse when
// it dials: a port that is no number, and says which part is wrong.
func TestCheckDSN(t *testing.T) {
	var d Dialect
	for dsn, want := range map[string]string{
		"u:p@tcp(127.0.0.1:3306)/db":  "",
		"u:p@tcp(127.0.0.1)/db":       "",
		"u:p@unix(/tmp/my.sock)/db":   "",
		"u:p@tcp(127.0.0.1:abc)/db":   `port "abc" of address "127.0.0.1:abc" is not a number`,
		"u:p@tcp(127.0.0.1:70000)/db": `port "70000"`,
		"u:p@tcp(127.0.0.1:3306/db":   "DSN:",
	} {
		err := d.CheckDSN(dsn)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s refused: %v", dsn, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, dialect.ErrConfig)):
			t.Errorf("%s: %v, want a config error with %q", dsn, err, want)
		case err != nil && strings.Contains(err.Error(), "u:p@"):
			t.Errorf("the DSN's credentials in the error: %v", err)
		}
	}
}
