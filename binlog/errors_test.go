package binlog

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	drv "github.com/go-sql-driver/mysql"

	"github.com/sluicecdc/sluice/schema"
)

// The source classifies its errors where it makes them, in the contract's
// vocabulary: the runtime stops on these instead of restarting forever.
func TestErrorsAreClassified(t *testing.T) {
	for _, e := range []error{ErrConfig, ErrBadPosition, ErrPositionPurged, ErrMissingMetadata, ErrUnsupported, ErrUnparsedDDL, ErrAccessDenied, ErrServerIDInUse} {
		wrapped := fmt.Errorf("open source: %w", fmt.Errorf("%w: detail", e))
		if c := schema.ClassOf(wrapped); c != schema.ClassFatal {
			t.Errorf("%v: class %v, want fatal", e, c)
		}
	}
	if c := schema.ClassOf(fmt.Errorf("read source: %w", ErrSnapshotDone)); c != schema.ClassEndOfInput {
		t.Errorf("ErrSnapshotDone: class %v, want end of input", c)
	}
	if !errors.Is(ErrSnapshotDone, schema.ErrEndOfInput) {
		t.Error("ErrSnapshotDone does not wrap schema.ErrEndOfInput")
	}

	s := &Source{cfg: Config{Host: "127.0.0.1", Port: 3306, User: "u"}}
	p := Position{Flavor: FlavorMariaDB, GTIDSet: "0-1-5"}
	for _, e := range []error{
		&mysql.MyError{Code: mysql.ER_ACCESS_DENIED_ERROR, Message: "Access denied for user 'u'@'localhost' (using password: YES)"},
		fmt.Errorf("handshake: %w", &drv.MySQLError{Number: 1045, Message: "Access denied"}),
	} {
		if err := connectError(s.addr(), "u", e); !errors.Is(err, ErrAccessDenied) || schema.ClassOf(err) != schema.ClassFatal {
			t.Errorf("connect %v: %v (class %v), want fatal ErrAccessDenied", e, err, schema.ClassOf(err))
		}
		if err := s.classify(e, p); !errors.Is(err, ErrAccessDenied) {
			t.Errorf("stream %v: %v, want ErrAccessDenied", e, err)
		}
	}
	// a lost connection is for the reconnect loop and the runtime to retry
	for _, e := range []error{io.ErrUnexpectedEOF, &mysql.MyError{Code: mysql.ER_LOCK_WAIT_TIMEOUT}} {
		if c := schema.ClassOf(s.classify(e, p)); c == schema.ClassFatal {
			t.Errorf("%v: class %v, want retriable", e, c)
		}
		if c := schema.ClassOf(connectError(s.addr(), "u", e)); c == schema.ClassFatal {
			t.Errorf("connect %v: class %v, want retriable", e, c)
		}
	}
}
