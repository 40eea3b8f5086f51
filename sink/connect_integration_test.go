package sink

import (
	"context"
	"net/url"
	"strings"
	"testing"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/sluicecdc/sluice/schema"
)

// A target that refuses the login (a wrong password, an unknown user) is fatal at once (retrying cannot fix a
// password); a target that is down is retriable.
func TestConnectErrorsAreClassified(t *testing.T) {
	forEachTarget(t, func(t *testing.T, e *tenv) {
		bad := e.cfg
		down := e.cfg
		if e.dialect == DialectPostgres {
			u, err := url.Parse(e.cfg.DSN)
			if err != nil {
				t.Fatal(err)
			}
			u.User = url.UserPassword("sluice_no_such_user", "wrong-password") // the test server may trust any password
			bad.DSN = u.String()
			u.Host = "127.0.0.1:1"
			down.DSN = u.String()
		} else {
			c, err := mysqldrv.ParseDSN(e.cfg.DSN)
			if err != nil {
				t.Fatal(err)
			}
			c.Passwd = "wrong-password"
			bad.DSN = c.FormatDSN()
			c.Addr = "127.0.0.1:1"
			down.DSN = c.FormatDSN()
		}
		_, err := New(context.Background(), bad, nil)
		if err == nil || schema.ClassOf(err) != schema.ClassFatal || !strings.Contains(err.Error(), "refused the login") || strings.Contains(err.Error(), "wrong-password") {
			t.Fatalf("wrong password: %v (class %v), want fatal", err, schema.ClassOf(err))
		}
		_, err = New(context.Background(), down, nil)
		if err == nil || schema.ClassOf(err) == schema.ClassFatal {
			t.Fatalf("server down: %v (class %v), want retriable", err, schema.ClassOf(err))
		}
	})
}
