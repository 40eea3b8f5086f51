package schema

import (
	"errors"
	"fmt"
	"testing"
)

// driverFatal is an error of a driver with its own Fatal method (lib/pq's
// *Error has one: severity FATAL, a terminated connection).
type driverFatal bool

func (t driverFatal) Error() string { return "driver" }
func (t driverFatal) Fatal() bool   { return bool(t) }

func TestClassOf(t *testing.T) {
	base := errors.New("boom")
	cases := []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, ClassUnknown},
		{"plain", base, ClassUnknown},
		{"fatal", Fatal(base), ClassFatal},
		{"wrapped fatal", fmt.Errorf("ctx: %w", Fatal(base)), ClassFatal},
		{"retriable", Retriable(base), ClassRetriable},
		{"outermost wins", Retriable(fmt.Errorf("x: %w", Fatal(base))), ClassRetriable},
		{"end of input", fmt.Errorf("snapshot done: %w", ErrEndOfInput), ClassEndOfInput},
		{"marked end of input stays marked", Fatal(ErrEndOfInput), ClassFatal},
		// A driver's notion of fatal is not the contract's: only the marks
		// of this package classify.
		{"driver's own Fatal method", fmt.Errorf("w: %w", driverFatal(true)), ClassUnknown},
		{"driver's own Fatal false", driverFatal(false), ClassUnknown},
		{"driver error marked retriable", Retriable(driverFatal(true)), ClassRetriable},
		{"joined", errors.Join(base, Fatal(base)), ClassFatal},
	}
	for _, c := range cases {
		if got := ClassOf(c.err); got != c.want {
			t.Errorf("%s: ClassOf = %v, want %v", c.name, got, c.want)
		}
	}
	if Fatal(nil) != nil || Retriable(nil) != nil {
		t.Error("marking nil must give nil")
	}
	if !errors.Is(Fatal(base), base) {
		t.Error("Fatal must keep the chain for errors.Is")
	}
}

// Every package's configuration sentinel behaves the same: fatal wherever
// it is wrapped, and matched by its own name and by ErrConfig, not by
// another package's.
func TestConfigError(t *testing.T) {
	a, b := ConfigError("a: invalid config"), ConfigError("b: invalid config")
	err := fmt.Errorf("key x: %w", fmt.Errorf("%w: detail", a))
	if ClassOf(err) != ClassFatal || ClassOf(ErrConfig) != ClassFatal {
		t.Errorf("class %v, ErrConfig %v; want fatal", ClassOf(err), ClassOf(ErrConfig))
	}
	if !errors.Is(err, a) || !errors.Is(err, ErrConfig) || errors.Is(err, b) {
		t.Errorf("errors.Is: a %v ErrConfig %v b %v", errors.Is(err, a), errors.Is(err, ErrConfig), errors.Is(err, b))
	}
	if err.Error() != "key x: a: invalid config: detail" {
		t.Errorf("message %q", err.Error())
	}
}

// Wrapf says a prefix once, keeps the class and what errors.Is finds.
func TestWrapfSaysThePrefixOnce(t *testing.T) {
	base := errors.New("the broker refused")
	for _, tc := range []struct {
		err         error
		format      string
		want        string
		class       Class
		isBase      bool
		args        []any
		description string
	}{
		{Fatal(fmt.Errorf("rocketmq: %w", base)), "offsets of %s", "rocketmq: offsets of t: the broker refused", ClassFatal, true, []any{"t"}, "same prefix"},
		{Retriable(base), "offsets of %s", "rocketmq: offsets of t: the broker refused", ClassRetriable, true, []any{"t"}, "no prefix"},
		{errors.New("kafka: down"), "", "rocketmq: kafka: down", ClassUnknown, false, nil, "another prefix, no context"},
		{errors.New("rocketmq:x"), "", "rocketmq: rocketmq:x", ClassUnknown, false, nil, "not a prefix"},
	} {
		got := Wrapf("rocketmq", tc.err, tc.format, tc.args...)
		if got.Error() != tc.want || ClassOf(got) != tc.class || errors.Is(got, base) != tc.isBase || !errors.Is(got, tc.err) {
			t.Errorf("%s: %q (class %v, is base %v), want %q (%v, %v)", tc.description, got, ClassOf(got), errors.Is(got, base), tc.want, tc.class, tc.isBase)
		}
	}
	if Wrapf("p", nil, "x") != nil {
		t.Error("Wrapf of nil is not nil")
	}
}
