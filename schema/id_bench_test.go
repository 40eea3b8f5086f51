package schema

import "testing"

func BenchmarkIDString(b *testing.B) {
	id := ID{Epoch: 0x187abcdef0123456, File: 42, Pos: 123456789, Phase: PhaseStream, Index: 7}
	for b.Loop() {
		_ = id.String()
	}
}

func BenchmarkParseID(b *testing.B) {
	s := ID{Epoch: 0x187abcdef0123456, File: 42, Pos: 123456789, Phase: PhaseStream, Index: 7}.String()
	for b.Loop() {
		if _, err := ParseID(s); err != nil {
			b.Fatal(err)
		}
	}
}
