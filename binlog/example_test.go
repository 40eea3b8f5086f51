package binlog_test

import (
	"context"
	"log/slog"

	"github.com/sluicecdc/sluice/binlog"
	"github.com/sluicecdc/sluice/schema"
)

// A source reads records and keeps the position of the last commit.
func Example() {
	src, err := binlog.NewSource(binlog.Config{
		Host: "127.0.0.1", Port: 3306, User: "sluice", Password: "secret",
		ServerID: 4242, Flavor: binlog.FlavorMariaDB, ServerName: "shopdb",
		Include: []string{"shop.*"},
	}, slog.Default())
	if err != nil {
		panic(err)
	}
	defer src.Close()
	ctx := context.Background()
	var stored []byte // loaded from a position store; nil the first time
	if err := src.Open(ctx, stored); err != nil {
		return
	}
	for {
		recs, err := src.Read(ctx)
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.Op == schema.OpCommit {
				stored = r.Position // save once everything before it is delivered
			}
		}
	}
}
