package charset

import (
	"testing"
	"unicode/utf8"
)

// FuzzDecodeText decodes arbitrary bytes in every supported charset: the
// result is valid UTF-8, never a panic, pure ASCII comes out as is, and
// DecodeString of the same bytes gives the same text.
func FuzzDecodeText(f *testing.F) {
	names := append([]string{Binary, UTF8MB4, UTF8MB3, ASCII, UCS2, UTF16, UTF16LE, UTF32}, Tabled()...)
	for _, seed := range [][]byte{{}, []byte("plain"), {0x8F, 0xA1, 0xA1}, {0x81, 0x30, 0x81, 0x30}, {0xA4, 0x40, 0xFF}, {0xD8, 0x00}, {0xE9, 0x80, 0x9F}} {
		f.Add(uint8(0), seed)
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		cs := names[int(which)%len(names)]
		s := Decode(b, cs)
		if s2 := DecodeString(string(b), cs); s2 != s {
			t.Fatalf("%s %x: DecodeString %q, Decode %q", cs, b, s2, s)
		}
		if !utf8.ValidString(s) {
			t.Fatalf("%s %x: invalid UTF-8 %q", cs, b, s)
		}
		if isASCII(b) && cs != UCS2 && cs != UTF16 && cs != UTF16LE && cs != UTF32 && s != string(b) {
			t.Fatalf("%s: ASCII %q decoded as %q", cs, b, s)
		}
	})
}
