// Package charset decodes the text of MySQL's and MariaDB's character sets
// into UTF-8 exactly as the server's own CONVERT(... USING utf8mb4) does:
// x/text's code pages and multi-byte tables, corrected by the differences
// measured against the servers (fixes.go, fixes_gb18030.go).
//
// It imports nothing of sluice's; the binlog source uses it for row values,
// snapshot values and DDL defaults.
package charset

import (
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// Names of the character sets with decoding rules of their own.
const (
	Binary  = "binary"
	Latin1  = "latin1"
	UTF8MB4 = "utf8mb4"
	UTF8MB3 = "utf8mb3"
	ASCII   = "ascii"
	UCS2    = "ucs2"
	UTF16   = "utf16"
	UTF16LE = "utf16le"
	UTF32   = "utf32"
)

// builtin maps the collation ids of the common character sets to
// their charset, for a source that has not read the server's own table
// (information_schema.COLLATIONS, which also covers MariaDB's uca1400 ids).
var builtin = func() map[uint64]string {
	m := map[uint64]string{63: Binary, 11: ASCII, 65: ASCII}
	for _, id := range []uint64{5, 8, 15, 31, 47, 48, 49, 94} {
		m[id] = Latin1
	}
	for _, id := range []uint64{33, 76, 83, 213, 223} {
		m[id] = UTF8MB3
	}
	for id := uint64(192); id <= 211; id++ {
		m[id] = UTF8MB3
	}
	for _, id := range []uint64{45, 46, 255, 305, 306} {
		m[id] = UTF8MB4
	}
	for id := uint64(224); id <= 247; id++ {
		m[id] = UTF8MB4
	}
	for id := uint64(255); id <= 323; id++ {
		m[id] = UTF8MB4 // MySQL 8 utf8mb4_0900_* collations
	}
	return m
}()

// OfCollation returns the character set of a common collation id, known
// without asking the server.
func OfCollation(id uint64) (string, bool) {
	cs, ok := builtin[id]
	return cs, ok
}

// BuiltinCollations returns a copy of the collation ids OfCollation knows,
// with their character sets.
func BuiltinCollations() map[uint64]string {
	m := make(map[uint64]string, len(builtin))
	for id, cs := range builtin {
		m[id] = cs
	}
	return m
}

// MaxBytesPerChar returns the longest encoding of one character in cs.
func MaxBytesPerChar(cs string) int {
	switch cs {
	case UTF8MB4, UTF16, UTF16LE, UTF32, "gb18030":
		return 4
	case UTF8MB3, "ujis", "eucjpms":
		return 3
	case UCS2, "big5", "gbk", "gb2312", "sjis", "cp932", "euckr":
		return 2
	case Binary, Latin1, ASCII, "":
		return 1
	}
	if strings.HasPrefix(cs, "utf8") {
		return 3
	}
	return 1
}

// singleByte holds the 256 runes of each single-byte charset: x/text's
// code page, bytes it leaves undefined as the C1 control of the same
// number (the server's own tables do so), then the server's differences
// (charsetFixes).
var singleByte = map[string]*[256]rune{}

// multiByte holds the x/text encodings the multi-byte charsets' tables are
// built from.
var multiByte = map[string]encoding.Encoding{
	"big5":    traditionalchinese.Big5,
	"gbk":     simplifiedchinese.GBK,
	"gb2312":  simplifiedchinese.GBK, // EUC-CN; GBK is its superset
	"gb18030": simplifiedchinese.GB18030,
	"sjis":    japanese.ShiftJIS,
	"cp932":   japanese.ShiftJIS, // x/text's Shift_JIS is the Windows-31J table
	"ujis":    japanese.EUCJP,
	"eucjpms": japanese.EUCJP,
	"euckr":   korean.EUCKR,
}

func init() {
	for cs, cm := range map[string]*charmap.Charmap{
		Latin1:   charmap.Windows1252, // MySQL's latin1 is Windows-1252
		"latin2": charmap.ISO8859_2, "latin5": charmap.ISO8859_9, "latin7": charmap.ISO8859_13,
		"greek": charmap.ISO8859_7, "hebrew": charmap.ISO8859_8,
		"cp1250": charmap.Windows1250, "cp1251": charmap.Windows1251, "cp1256": charmap.Windows1256, "cp1257": charmap.Windows1257,
		"cp850": charmap.CodePage850, "cp852": charmap.CodePage852, "cp866": charmap.CodePage866,
		"koi8r": charmap.KOI8R, "koi8u": charmap.KOI8U, "macroman": charmap.Macintosh,
		"tis620": charmap.Windows874,
	} {
		var t [256]rune
		for i := range t {
			r := cm.DecodeByte(byte(i))
			if r == utf8.RuneError {
				r = rune(i)
			}
			t[i] = r
		}
		for _, f := range charsetFixes[cs] {
			t[f[0]&0xFF] = rune(f[1])
		}
		singleByte[cs] = &t
	}
}

// mbTable is the decoding table of a multi-byte charset: the rune of each
// one-byte character, of each two-byte sequence (lead<<8|trail) and, for
// EUC-JP, of each three-byte 0x8F sequence (by its last two bytes); 0
// where the sequence is not a character.
type mbTable struct {
	single [256]rune
	pair   [65536]rune
	triple *[65536]rune
	quad   map[uint32]rune // gb18030's four-byte sequences that differ from x/text's
}

var (
	mbMu     sync.Mutex
	mbTables = map[string]*mbTable{}
)

// multiByteTable builds cs's table on first use (a few ms, 256 KiB or
// 512 KiB for EUC-JP) from x/text's decoder and the server's differences.
func multiByteTable(cs string) *mbTable {
	mbMu.Lock()
	defer mbMu.Unlock()
	if t := mbTables[cs]; t != nil {
		return t
	}
	dec := multiByte[cs].NewDecoder()
	one := func(seq []byte) rune {
		out, err := dec.Bytes(seq)
		if err != nil {
			return 0
		}
		r, n := utf8.DecodeRune(out)
		if r == utf8.RuneError || n != len(out) {
			return 0
		}
		return r
	}
	t := &mbTable{}
	for b := 0; b < 256; b++ {
		if b < 0x80 {
			t.single[b] = rune(b)
		} else {
			t.single[b] = one([]byte{byte(b)})
		}
	}
	for lead := 0x80; lead < 256; lead++ {
		for trail := 0x21; trail < 256; trail++ {
			t.pair[lead<<8|trail] = one([]byte{byte(lead), byte(trail)})
		}
	}
	if cs == "ujis" || cs == "eucjpms" {
		t.triple = new([65536]rune)
		for a := 0xA1; a < 0xFF; a++ {
			for b := 0xA1; b < 0xFF; b++ {
				t.triple[a<<8|b] = one([]byte{0x8F, byte(a), byte(b)})
			}
		}
	}
	fixes := charsetFixes[cs]
	if cs == "gb18030" {
		fixes = gb18030Fixes
	}
	for _, f := range fixes {
		switch seq := f[0]; {
		case seq >= 0x1000000:
			if t.quad == nil {
				t.quad = map[uint32]rune{}
			}
			t.quad[seq] = rune(f[1])
		case seq < 0x100:
			t.single[seq] = rune(f[1])
		case seq < 0x10000:
			t.pair[seq] = rune(f[1])
		case seq>>16 == 0x8F && t.triple != nil:
			t.triple[seq&0xFFFF] = rune(f[1])
		}
	}
	mbTables[cs] = t
	return t
}

// decodeMultiByte decodes b with cs's table: a valid sequence is its
// character, a byte that starts none becomes U+FFFD and decoding goes on
// at the next byte (where the server's CONVERT gives '?'). gb18030's
// four-byte sequences go through x/text's decoder.
func decodeMultiByte(b []byte, cs string) string {
	t := multiByteTable(cs)
	buf := make([]byte, 0, 3*len(b)) // no sequence takes more bytes in UTF-8 than 3 per byte
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			buf = append(buf, c)
			i++
			continue
		}
		if t.triple != nil && c == 0x8F && i+2 < len(b) {
			if r := t.triple[int(b[i+1])<<8|int(b[i+2])]; r != 0 {
				buf = utf8.AppendRune(buf, r)
				i += 3
				continue
			}
		}
		if cs == "gb18030" && i+3 < len(b) && b[i+1] >= 0x30 && b[i+1] <= 0x39 {
			if r, ok := t.quad[uint32(c)<<24|uint32(b[i+1])<<16|uint32(b[i+2])<<8|uint32(b[i+3])]; ok {
				buf = utf8.AppendRune(buf, r)
				i += 4
				continue
			}
			if out, err := multiByte[cs].NewDecoder().Bytes(b[i : i+4]); err == nil {
				if r, n := utf8.DecodeRune(out); r != utf8.RuneError && n == len(out) {
					buf = utf8.AppendRune(buf, r)
					i += 4
					continue
				}
			}
		}
		if i+1 < len(b) {
			if r := t.pair[int(c)<<8|int(b[i+1])]; r != 0 {
				buf = utf8.AppendRune(buf, r)
				i += 2
				continue
			}
		}
		if r := t.single[c]; r != 0 {
			buf = utf8.AppendRune(buf, r)
		} else {
			buf = utf8.AppendRune(buf, utf8.RuneError)
		}
		i++
	}
	return string(buf)
}

// Supported reports whether sluice can decode text of charset cs.
func Supported(cs string) bool {
	switch cs {
	case Binary, UTF8MB4, UTF8MB3, "utf8", ASCII, UCS2, UTF16, UTF16LE, UTF32:
		return true
	}
	return singleByte[cs] != nil || multiByte[cs] != nil
}

// List lists the charsets Supported accepts, for messages.
func List() string {
	names := []string{UTF8MB4, UTF8MB3, ASCII, UCS2, UTF16, UTF16LE, UTF32}
	for cs := range singleByte {
		names = append(names, cs)
	}
	for cs := range multiByte {
		names = append(names, cs)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Decode converts b from charset cs to a UTF-8 string. UTF-8 charsets
// are taken as they are, latin1 is decoded as Windows-1252, ucs2/utf16/
// utf32 as big-endian code units, utf16le as little-endian ones, the other
// single- and multi-byte charsets by their tables. Bytes that are not
// valid in cs (which a server stores only from a non-strict sql_mode or a
// client that lied about its charset) become U+FFFD, as Java's decoder
// behind Debezium makes them; text is never passed through undecoded.
// Callers check Supported first; an unsupported cs is decoded as UTF-8.
func Decode(b []byte, cs string) string {
	if t := singleByte[cs]; t != nil {
		if isASCII(b) {
			return string(b)
		}
		buf := make([]byte, 0, 3*len(b)) // a rune of a code page takes at most 3 bytes
		for _, c := range b {
			if c < 0x80 {
				buf = append(buf, c)
			} else {
				buf = utf8.AppendRune(buf, t[c])
			}
		}
		return string(buf)
	}
	if multiByte[cs] != nil {
		if isASCII(b) {
			return string(b)
		}
		return decodeMultiByte(b, cs)
	}
	switch cs {
	case UCS2, UTF16, UTF16LE:
		le := cs == UTF16LE
		unit := func(i int) rune {
			if le {
				return rune(b[i+1])<<8 | rune(b[i])
			}
			return rune(b[i])<<8 | rune(b[i+1])
		}
		var sb strings.Builder
		for i := 0; i+1 < len(b); i += 2 {
			u := unit(i)
			if u >= 0xD800 && u < 0xDC00 && i+3 < len(b) {
				lo := unit(i + 2)
				if lo >= 0xDC00 && lo < 0xE000 {
					sb.WriteRune(0x10000 + (u-0xD800)<<10 + (lo - 0xDC00))
					i += 2
					continue
				}
			}
			sb.WriteRune(u) // lone surrogates become U+FFFD
		}
		if len(b)%2 != 0 {
			sb.WriteRune(utf8.RuneError)
		}
		return sb.String()
	case UTF32:
		var sb strings.Builder
		for i := 0; i+3 < len(b); i += 4 {
			sb.WriteRune(rune(b[i])<<24 | rune(b[i+1])<<16 | rune(b[i+2])<<8 | rune(b[i+3]))
		}
		if len(b)%4 != 0 {
			sb.WriteRune(utf8.RuneError)
		}
		return sb.String()
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// DecodeString is Decode of a string that may alias a buffer
// (go-mysql's row values): text that needs no decoding is copied once,
// not converted to bytes and back.
func DecodeString(s string, cs string) string {
	switch cs {
	case UCS2, UTF16, UTF16LE, UTF32: // ASCII bytes are not ASCII text there
	default:
		if singleByte[cs] == nil && multiByte[cs] == nil {
			if utf8.ValidString(s) {
				return strings.Clone(s)
			}
		} else if isASCIIString(s) {
			return strings.Clone(s)
		}
	}
	return Decode([]byte(s), cs)
}

func isASCIIString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// Tabled lists the character sets decoded by a table (single-byte code
// pages and multi-byte sets), sorted: the ones a test compares with the
// server's CONVERT byte by byte.
func Tabled() []string {
	names := make([]string, 0, len(singleByte)+len(multiByte))
	for cs := range singleByte {
		names = append(names, cs)
	}
	for cs := range multiByte {
		names = append(names, cs)
	}
	sort.Strings(names)
	return names
}

// IsSingleByte reports whether cs is decoded by a 256-entry code page.
func IsSingleByte(cs string) bool { return singleByte[cs] != nil }

// IsMultiByte reports whether cs is decoded by a multi-byte table.
func IsMultiByte(cs string) bool { return multiByte[cs] != nil }

// IsASCII reports whether b holds only 7-bit bytes.
func IsASCII(b []byte) bool { return isASCII(b) }
