package schema

import (
	"errors"
	"fmt"
	"testing"
)

type typedFatal bool

func (t typedFatal) Error() string { return "typed" }
func (t typedFatal) Fatal() bool   { return bool(t) }

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
		{"typed fatal", fmt.Errorf("w: %w", typedFatal(true)), ClassFatal},
		{"typed retriable", typedFatal(false), ClassRetriable},
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
