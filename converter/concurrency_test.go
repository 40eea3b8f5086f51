package converter

import (
	"sync"
	"testing"
)

// TestConcurrentUse shares one converter between goroutines (run with
// -race): the schema caches are the only shared state.
func TestConcurrentUse(t *testing.T) {
	c := NewJSON(DefaultOptions())
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, tc := range typeCases() {
				for _, r := range typeRecords(tc) {
					k, v, err := c.Encode(&r)
					if err != nil {
						errs <- err.Error()
						return
					}
					got, err := c.Decode(k, v)
					if err != nil {
						errs <- err.Error()
						return
					}
					if d := recordDiff(&r, &got); d != "" {
						errs <- d
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestCacheBounded fills the caches past their bound: they start over
// instead of growing, and encoding stays correct.
func TestCacheBounded(t *testing.T) {
	c := NewJSON(DefaultOptions())
	tc := typeCases()[0]
	for i := 0; i < maxCached+10; i++ {
		r := typeRecords(tc)[0]
		vs := *r.ValueSchema // a new pointer each time
		r.ValueSchema = &vs
		if _, err := c.EncodeValue(&r); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.RLock()
	n := len(c.encValue) + len(c.encKey) + len(c.decValue) + len(c.decKey)
	c.mu.RUnlock()
	if n > maxCached {
		t.Fatalf("%d cached schemas, bound %d", n, maxCached)
	}
}
