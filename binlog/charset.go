package binlog

import (
	"strings"
	"unicode/utf8"
)

// Character sets the mapper knows how to turn into UTF-8.
const (
	csBinary  = "binary"
	csLatin1  = "latin1"
	csUTF8MB4 = "utf8mb4"
	csUTF8MB3 = "utf8mb3"
	csASCII   = "ascii"
	csUCS2    = "ucs2"
	csUTF16   = "utf16"
	csUTF32   = "utf32"
)

// builtinCollations maps the collation ids of the common character sets to
// their charset. Open replaces it with the server's own table
// (information_schema.COLLATIONS), which also covers MariaDB's uca1400 ids.
var builtinCollations = func() map[uint64]string {
	m := map[uint64]string{63: csBinary, 11: csASCII, 65: csASCII}
	for _, id := range []uint64{5, 8, 15, 31, 47, 48, 49, 94} {
		m[id] = csLatin1
	}
	for _, id := range []uint64{33, 76, 83, 213, 223} {
		m[id] = csUTF8MB3
	}
	for id := uint64(192); id <= 211; id++ {
		m[id] = csUTF8MB3
	}
	for _, id := range []uint64{45, 46, 255, 305, 306} {
		m[id] = csUTF8MB4
	}
	for id := uint64(224); id <= 247; id++ {
		m[id] = csUTF8MB4
	}
	for id := uint64(255); id <= 323; id++ {
		m[id] = csUTF8MB4 // MySQL 8 utf8mb4_0900_* collations
	}
	return m
}()

// maxBytesPerChar returns the longest encoding of one character in cs.
func maxBytesPerChar(cs string) int {
	switch cs {
	case csUTF8MB4, csUTF16, csUTF32:
		return 4
	case csUTF8MB3:
		return 3
	case csUCS2:
		return 2
	case csBinary, csLatin1, csASCII, "":
		return 1
	}
	if strings.HasPrefix(cs, "utf8") {
		return 3
	}
	return 1
}

// cp1252High maps bytes 0x80-0x9F of MySQL's latin1 (which is Windows-1252,
// with the five undefined bytes mapped to the C1 controls) to runes.
var cp1252High = [32]rune{
	0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
	0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
	0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
	0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
}

// decodeText converts b from charset cs to a UTF-8 string. UTF-8 charsets
// are taken as they are (invalid sequences replaced by U+FFFD), latin1 is
// decoded as Windows-1252, ucs2/utf16/utf32 as big-endian code units.
// Unknown single-byte charsets are passed through like UTF-8.
func decodeText(b []byte, cs string) string {
	switch cs {
	case csLatin1:
		ascii := true
		for _, c := range b {
			if c >= 0x80 {
				ascii = false
				break
			}
		}
		if ascii {
			return string(b)
		}
		var sb strings.Builder
		sb.Grow(len(b) + len(b)/2)
		for _, c := range b {
			switch {
			case c < 0x80:
				sb.WriteByte(c)
			case c < 0xA0:
				sb.WriteRune(cp1252High[c-0x80])
			default:
				sb.WriteRune(rune(c))
			}
		}
		return sb.String()
	case csUCS2, csUTF16:
		var sb strings.Builder
		for i := 0; i+1 < len(b); i += 2 {
			u := rune(b[i])<<8 | rune(b[i+1])
			if u >= 0xD800 && u < 0xDC00 && i+3 < len(b) {
				lo := rune(b[i+2])<<8 | rune(b[i+3])
				if lo >= 0xDC00 && lo < 0xE000 {
					sb.WriteRune(0x10000 + (u-0xD800)<<10 + (lo - 0xDC00))
					i += 2
					continue
				}
			}
			sb.WriteRune(u) // lone surrogates become U+FFFD
		}
		return sb.String()
	case csUTF32:
		var sb strings.Builder
		for i := 0; i+3 < len(b); i += 4 {
			sb.WriteRune(rune(b[i])<<24 | rune(b[i+1])<<16 | rune(b[i+2])<<8 | rune(b[i+3]))
		}
		return sb.String()
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
