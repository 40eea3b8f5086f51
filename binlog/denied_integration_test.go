package binlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicecdc/sluice/schema"
	"github.com/sluicecdc/sluice/schema/schematest"
)

// TestSourceRidesOutDeniedReconnect: a server that refuses the account
// for a moment after a lost stream (as a restarting server does while
// its accounts load, December 7's CI) is retried, and the stream goes on
// with nothing lost once the login works again; a refusal that lasts is
// reported as ErrAccessDenied, fatal, after a bounded number of tries.
func TestSourceRidesOutDeniedReconnect(t *testing.T) {
	env := needServer(t)
	c, db := adminConn(t, env)
	exec(t, c, "CREATE TABLE k (id INT PRIMARY KEY)")
	for _, lasting := range []bool{false, true} {
		t.Run(fmt.Sprintf("lasting=%v", lasting), func(t *testing.T) {
			user := fmt.Sprintf("den%d", rand.IntN(1e9))
			exec(t, c, fmt.Sprintf("CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY 'pw'", user))
			t.Cleanup(func() { _, _ = c.Execute(fmt.Sprintf("DROP USER '%s'@'127.0.0.1'", user)) })
			exec(t, c, fmt.Sprintf("GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '%s'@'127.0.0.1'", user))
			cfg := testConfig(env, db)
			cfg.User, cfg.Password = user, "pw"
			var logs schematest.LogBuffer
			s, err := NewSource(cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.Open(ctx, nil); err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			id := 1
			if lasting {
				id = 100
			}
			exec(t, c, fmt.Sprintf("INSERT INTO k VALUES (%d)", id))
			readUntil(t, s, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCommit) >= 1 })

			exec(t, c, fmt.Sprintf("ALTER USER '%s'@'127.0.0.1' IDENTIFIED BY 'changed'", user))
			exec(t, c, fmt.Sprintf("KILL %d", s.connID.Load()))
			const refused = "refused the reconnect's login"
			if !lasting {
				schematest.Eventually(t, 20*time.Second, 20*time.Millisecond, "a refused reconnect", func() (bool, string) {
					return strings.Count(logs.String(), refused) >= 1, fmt.Sprintf("%d refusals logged", strings.Count(logs.String(), refused))
				})
				exec(t, c, fmt.Sprintf("ALTER USER '%s'@'127.0.0.1' IDENTIFIED BY 'pw'", user))
				exec(t, c, fmt.Sprintf("INSERT INTO k VALUES (%d)", id+1))
				rest := readUntil(t, s, func(r []schema.Record) bool { return countOps(ownData(r, db), schema.OpCommit) >= 1 })
				if got, want := summary(ownData(rest, db)), fmt.Sprintf("c k %d [] -> [%d]\nEND\n", id+1, id+1); got != want {
					t.Fatalf("after the refused reconnect:\n%s\nwant:\n%s", got, want)
				}
				return
			}
			rctx, rcancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer rcancel()
			for {
				_, err = s.Read(rctx)
				if err != nil {
					break
				}
			}
			if !errors.Is(err, ErrAccessDenied) || schema.ClassOf(err) != schema.ClassFatal {
				t.Fatalf("a lasting refusal: err %v (class %v), want ErrAccessDenied, fatal", err, schema.ClassOf(err))
			}
			if n := strings.Count(logs.String(), refused); n != maxDeniedReconnects {
				t.Errorf("%d refused reconnects retried, want %d", n, maxDeniedReconnects)
			}
		})
	}
}
