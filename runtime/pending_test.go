package runtime

import (
	"errors"
	"testing"
)

func TestPending(t *testing.T) {
	select {
	case <-NewPending(0).Done():
	default:
		t.Fatal("a Pending of no parts is not done")
	}
	p := NewPending(3)
	first, second := errors.New("first"), errors.New("second")
	p.Finish(nil)
	p.Finish(first)
	select {
	case <-p.Done():
		t.Fatal("done with one part left")
	default:
	}
	p.Finish(second)
	<-p.Done()
	if p.Err() != first {
		t.Fatalf("Err %v, want the first error", p.Err())
	}
}
