package binlog

import (
	"context"
	"strconv"
	"strings"
)

// Backlog is how far the server's binary log is ahead of a position.
type Backlog struct {
	// Bytes of binary log after the position; -1 when the position is in
	// another (older) file than the server's current one.
	Bytes int64
	// Transactions the server logged after the position, from MariaDB GTID
	// sequence numbers per domain; -1 when unknown (MySQL, or no GTIDs).
	Transactions int64
}

// Behind compares position (an encoded Position from a record) with the
// end of the server's binary log, read as CurrentPosition reads it on a
// connection of its own. It does not disturb a running stream.
func (s *Source) Behind(ctx context.Context, position []byte) (Backlog, error) {
	p, err := ParsePosition(position)
	if err != nil {
		return Backlog{}, err
	}
	b, err := CurrentPosition(ctx, s.cfg)
	if err != nil {
		return Backlog{}, err
	}
	server, err := ParsePosition(b)
	if err != nil {
		return Backlog{}, err
	}
	return backlog(p, server), nil
}

func backlog(p, server Position) Backlog {
	b := Backlog{Bytes: -1, Transactions: -1}
	if p.File != "" && p.File == server.File {
		b.Bytes = max(0, int64(server.Pos)-int64(p.Pos))
	}
	if p.Flavor == FlavorMariaDB && p.GTIDSet != "" && server.GTIDSet != "" {
		have, want := mariadbSeqs(p.GTIDSet), mariadbSeqs(server.GTIDSet)
		if have != nil && want != nil {
			b.Transactions = 0
			for domain, seq := range want {
				b.Transactions += max(0, seq-have[domain])
			}
		}
	}
	return b
}

// mariadbSeqs reads a MariaDB GTID list ("0-1-413,1-2-7") as the highest
// sequence number per domain; nil if it is not one.
func mariadbSeqs(set string) map[string]int64 {
	out := map[string]int64{}
	for _, g := range strings.Split(set, ",") {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		parts := strings.Split(g, "-")
		if len(parts) != 3 {
			return nil
		}
		seq, err := strconv.ParseInt(parts[2], 10, 64)
		if err != nil {
			return nil
		}
		out[parts[0]] = max(out[parts[0]], seq)
	}
	return out
}
