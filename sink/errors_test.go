package sink

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lib/pq"

	"github.com/sluicecdc/sluice/schema"
)

// The sink classifies a driver error where it meets it, in the contract's
// vocabulary: what the same statement would hit again is fatal, the rest
// retriable, whatever the driver calls it (lib/pq's severity FATAL is a
// terminated connection); an error classified already keeps its class.
func TestWrapDBClassifiesDriverErrors(t *testing.T) {
	terminated := &pq.Error{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}
	cases := []struct {
		name string
		err  error
		want schema.Class
	}{
		{"unique violation", &pq.Error{Severity: "ERROR", Code: "23505"}, schema.ClassFatal},
		{"syntax", &pq.Error{Severity: "ERROR", Code: "42601"}, schema.ClassFatal},
		{"terminated connection (severity FATAL)", terminated, schema.ClassRetriable},
		{"deadlock", &pq.Error{Severity: "ERROR", Code: "40P01"}, schema.ClassRetriable},
		{"not a driver error", context.DeadlineExceeded, schema.ClassRetriable},
		{"classified already", fatal(fmt.Errorf("%w: x", ErrSchema)), schema.ClassFatal},
	}
	for _, c := range cases {
		werr := wrapDB(c.err)
		if got := schema.ClassOf(werr); got != c.want || isFatal(werr) != (c.want == schema.ClassFatal) {
			t.Errorf("%s: class %v, want %v", c.name, got, c.want)
		}
		if !errors.Is(werr, c.err) {
			t.Errorf("%s: the driver error is lost from the chain", c.name)
		}
	}
	if wrapDB(nil) != nil {
		t.Error("wrapDB(nil) is not nil")
	}
	if got := schema.ClassOf(fmt.Errorf("sink: write: %w", terminated)); got != schema.ClassUnknown {
		t.Errorf("a raw lib/pq FATAL error is classified %v by the contract; it reads only its own marks", got)
	}
}
