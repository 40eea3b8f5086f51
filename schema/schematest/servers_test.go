package schematest

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// fatalTB records the first Fatalf and ends its goroutine, as testing does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls fn with a fatalTB on a goroutine of its own and returns what
// it failed with ("" when it returned).
func run(fn func(tb testing.TB)) string {
	f := &fatalTB{}
	done := make(chan struct{})
	go func() { defer close(done); fn(f) }()
	<-done
	return f.msg
}

func TestEventuallyReturnsOnceTrue(t *testing.T) {
	calls := 0
	msg := run(func(tb testing.TB) {
		Eventually(tb, time.Minute, time.Millisecond, "three calls", func() (bool, string) { calls++; return calls == 3, "" })
	})
	if msg != "" || calls != 3 {
		t.Fatalf("failed with %q after %d calls, want no failure after 3", msg, calls)
	}
}

func TestEventuallyFailsWithTheLastState(t *testing.T) {
	calls := 0
	msg := run(func(tb testing.TB) {
		Eventually(tb, 30*time.Millisecond, time.Millisecond, "never", func() (bool, string) { calls++; return false, fmt.Sprint("call ", calls) })
	})
	if want := fmt.Sprintf("never: not within 30ms (last: call %d)", calls); msg != want || calls < 2 {
		t.Fatalf("failed with %q after %d calls, want %q", msg, calls, want)
	}
}
