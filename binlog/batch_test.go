package binlog

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/sluicecdc/sluice/schema"
)

func TestBatchEndsAtTransactionBoundaries(t *testing.T) {
	row := func() schema.Record {
		return schema.Record{Op: schema.OpCreate, Transaction: &schema.Transaction{ID: "0-1-5"}}
	}
	commit := schema.Record{Op: schema.OpCommit, Transaction: &schema.Transaction{ID: "0-1-5"}, Position: []byte("p")}
	if insideTx(nil) || !insideTx([]schema.Record{row()}) || insideTx([]schema.Record{row(), commit}) ||
		insideTx([]schema.Record{{Op: schema.OpRead}}) {
		t.Fatal("insideTx")
	}
	mk := func(n int, commitsAt ...int) []schema.Record {
		out := make([]schema.Record, n)
		for i := range out {
			out[i] = row()
		}
		for _, c := range commitsAt {
			out[c] = commit
		}
		return out
	}
	for _, c := range []struct {
		name string
		recs []schema.Record
		want int
	}{
		{"small batch whole", mk(10, 9), 10},
		{"cut at maxBatch when a commit is there", mk(maxBatch+10, maxBatch-1), maxBatch},
		{"past maxBatch to the commit", mk(maxBatch+10, 100, maxBatch+4), maxBatch + 5},
		{"a transaction larger than maxTxBatch is cut", mk(maxTxBatch + 5), maxTxBatch},
	} {
		if got := batchEnd(c.recs); got != c.want {
			t.Errorf("%s: batchEnd = %d, want %d", c.name, got, c.want)
		}
	}
}

// A second replica with this one's server_id takes the stream over: the
// error says so (on MySQL it is 1236, like a purged position, which it
// must not be mistaken for) and stops the source instead of evicting the
// other reader in turn.
func TestSameServerIDIsExplained(t *testing.T) {
	s := &Source{cfg: Config{Host: "127.0.0.1", Port: 3306, ServerID: 77}}
	for _, e := range []error{
		&mysql.MyError{Code: 4052, Message: "A slave with the same server_uuid/server_id as this slave has connected to the master"},
		&mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, Message: "A replica with the same server_uuid/server_id as this replica has connected to the source"},
	} {
		err := s.classify(e, Position{Flavor: FlavorMariaDB, GTIDSet: "0-1-5"})
		if errors.Is(err, ErrPositionPurged) || !strings.Contains(err.Error(), "its own server_id") || !strings.Contains(err.Error(), "server_id 77") || schema.ClassOf(err) != schema.ClassFatal {
			t.Errorf("%v: classified as %v (class %v)", e, err, schema.ClassOf(err))
		}
	}
	purged := s.classify(&mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, Message: "Could not find first log file name in binary log index file"}, Position{Flavor: FlavorMariaDB})
	if !errors.Is(purged, ErrPositionPurged) {
		t.Errorf("a purged position: %v", purged)
	}
}

// Errors the server would repeat on every reconnect are fatal and say what
// to do: a 1236 that is not about a purge (GTID auto-positioning refused)
// is not reported as a purge, and 1773 (a GTID set the server cannot read)
// is a bad position.
func TestRepeatingStreamErrorsAreFatal(t *testing.T) {
	s := &Source{cfg: Config{Host: "127.0.0.1", Port: 3306, ServerID: 77, Flavor: FlavorMySQL}}
	p := Position{Flavor: FlavorMySQL, GTIDSet: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", File: "binlog.000002", Pos: 198}
	for _, c := range []struct {
		err  error
		want error
		says string
	}{
		{&mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, Message: "The replication sender thread cannot start in AUTO_POSITION mode: this server has GTID_MODE = OFF instead of ON."}, ErrStreamRefused, "gtid_mode"},
		{&mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, Message: "Cannot replicate because the source purged required binary logs."}, ErrPositionPurged, "snapshot"},
		{&mysql.MyError{Code: mysql.ER_MALFORMED_GTID_SET_ENCODING, Message: "Malformed GTID set encoding."}, ErrBadPosition, "positions reset"},
		{&mysql.MyError{Code: mysql.ER_MALFORMED_GTID_SET_SPECIFICATION, Message: "Malformed GTID set specification 'x'."}, ErrBadPosition, "positions reset"},
	} {
		err := s.classify(c.err, p)
		if !errors.Is(err, c.want) || schema.ClassOf(err) != schema.ClassFatal || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: classified as %v (class %v), want %v saying %q", c.err, err, schema.ClassOf(err), c.want, c.says)
		}
		if c.want != ErrPositionPurged && errors.Is(err, ErrPositionPurged) {
			t.Errorf("%v: reported as a purge: %v", c.err, err)
		}
	}
}
