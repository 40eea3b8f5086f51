package rocketmq

import (
	"errors"
	"testing"
)

// FuzzDecodeMessages feeds broker pull answers of any shape to the decoder
// Tail uses: it must return messages or an error, never panic.
func FuzzDecodeMessages(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 8, 0xda, 0xa3, 0x20, 0xa7})
	f.Add(make([]byte, 200))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeMessages(b)
	})
}

func TestTailRejectsUnknownFrom(t *testing.T) {
	err := Tail(t.Context(), Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "p", Topics: []string{"x"}}, TailOptions{From: "yesterday"}, nil)
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("want a config error, got %v", err)
	}
}
