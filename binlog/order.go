package binlog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// ErrUnordered: two positions that cannot be told apart as earlier and
// later (a snapshot in progress, other flavors, GTID sets neither of which
// contains the other, binlog files of different servers), or a at an
// earlier epoch than b: every record read from a would carry an ID below
// those read from b, which a sink takes for records it applied.
var ErrUnordered = errors.New("binlog: positions not ordered")

// OrderPositions compares two saved positions (EncodePosition's text): -1
// when a is before b in the server's history, 0 at the same point, 1
// after; ErrUnordered when that cannot be told. GTID sets decide when
// both have one (the source resumes by them), else binlog file and offset.
func OrderPositions(a, b []byte) (int, error) {
	pa, err := ParsePosition(a)
	if err != nil {
		return 0, err
	}
	pb, err := ParsePosition(b)
	if err != nil {
		return 0, err
	}
	switch {
	case pa.Epoch != 0 && pa.Epoch < pb.Epoch:
		return 0, fmt.Errorf("%w: epoch %x is before %x: a sink would skip every record read from it as one it applied", ErrUnordered, pa.Epoch, pb.Epoch)
	case pa.Snapshot != nil || pb.Snapshot != nil || pa.Incremental != nil || pb.Incremental != nil:
		return 0, fmt.Errorf("%w: a snapshot is in progress at one of them", ErrUnordered)
	case pa.Flavor != pb.Flavor:
		return 0, fmt.Errorf("%w: flavors %s and %s", ErrUnordered, pa.Flavor, pb.Flavor)
	case pa.GTIDSet != "" && pb.GTIDSet != "":
		ga, err := mysql.ParseGTIDSet(pa.Flavor, pa.GTIDSet)
		if err != nil {
			return 0, fmt.Errorf("%w: GTID set %q: %v", ErrBadPosition, pa.GTIDSet, err)
		}
		gb, err := mysql.ParseGTIDSet(pb.Flavor, pb.GTIDSet)
		if err != nil {
			return 0, fmt.Errorf("%w: GTID set %q: %v", ErrBadPosition, pb.GTIDSet, err)
		}
		aHasB, bHasA := ga.Contain(gb), gb.Contain(ga)
		switch {
		case aHasB && bHasA:
			return 0, nil
		case aHasB:
			return 1, nil
		case bHasA:
			return -1, nil
		}
		return 0, fmt.Errorf("%w: neither GTID set %q nor %q contains the other", ErrUnordered, pa.GTIDSet, pb.GTIDSet)
	case pa.File != "" && pb.File != "":
		base := func(f string) string { return f[:max(strings.LastIndexByte(f, '.'), 0)] }
		if base(pa.File) != base(pb.File) {
			return 0, fmt.Errorf("%w: binlog files %s and %s of different series", ErrUnordered, pa.File, pb.File)
		}
		return comparePositions(pa, pb), nil
	}
	return 0, fmt.Errorf("%w: one has a GTID set, the other only a file", ErrUnordered)
}
