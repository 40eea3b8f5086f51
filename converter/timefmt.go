package converter

import "fmt"

const (
	usPerDay = 86400_000_000
	// zoned values are bounded to years -999999999..999999999 by the parser;
	// int64 microseconds span about ±292,000 years, so every int64 formats.
)

// civil converts days since 1970-01-01 to a proleptic Gregorian date
// (Howard Hinnant's days_from_civil inverse).
func civil(days int64) (y int64, m, d int) {
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// daysFromCivil is the inverse of civil.
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mm := int64(m)
	if mm > 2 {
		mm -= 3
	} else {
		mm += 9
	}
	doy := (153*mm+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func appendDigits(b []byte, v int64, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for v > 0 || width > 0 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		width--
	}
	return append(b, buf[i:]...)
}

// appendZoned writes µs since the epoch as ISO-8601 UTC the way Java's
// ISO_OFFSET_DATE_TIME does: seconds always, fraction digits as needed,
// "Z"; years beyond 9999 get a "+" sign, years before 0 a "-".
func appendZoned(b []byte, us int64) []byte { return appendZonedFsp(b, us, -1) }

// appendZonedFsp is appendZoned with exactly fsp fraction digits (Debezium
// writes a TIMESTAMP(n) column's n digits); fsp < 0 writes as many as needed.
func appendZonedFsp(b []byte, us int64, fsp int) []byte {
	days := us / usPerDay
	rem := us % usPerDay
	if rem < 0 {
		rem += usPerDay
		days--
	}
	y, m, d := civil(days)
	switch {
	case y < 0:
		b = append(b, '-')
		b = appendDigits(b, -y, 4)
	case y > 9999:
		b = append(b, '+')
		b = appendDigits(b, y, 4)
	default:
		b = appendDigits(b, y, 4)
	}
	b = append(b, '-')
	b = appendDigits(b, int64(m), 2)
	b = append(b, '-')
	b = appendDigits(b, int64(d), 2)
	b = append(b, 'T')
	secs := rem / 1_000_000
	frac := rem % 1_000_000
	b = appendDigits(b, secs/3600, 2)
	b = append(b, ':')
	b = appendDigits(b, secs/60%60, 2)
	b = append(b, ':')
	b = appendDigits(b, secs%60, 2)
	switch {
	case fsp > 0 && fsp <= 6 && frac%pow10[6-fsp] == 0:
		b = append(b, '.')
		b = appendDigits(b, frac/pow10[6-fsp], fsp)
	case fsp == 0 && frac == 0:
	case frac != 0:
		width := 6
		for frac%10 == 0 {
			frac /= 10
			width--
		}
		b = append(b, '.')
		b = appendDigits(b, frac, width)
	}
	return append(b, 'Z')
}

var pow10 = [...]int64{1, 10, 100, 1000, 10000, 100000, 1000000}

// parseZoned reads an ISO-8601 date-time with a zone offset ("Z" or
// ±HH:MM[:SS]) into µs since the epoch. Fractions beyond µs are truncated.
func parseZoned(s []byte) (int64, error) {
	bad := func() (int64, error) { return 0, fmt.Errorf("%w: zoned timestamp %q", ErrSyntax, truncate(s)) }
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	num := func(min, max int) (int64, bool) {
		j := i
		var v int64
		for j < len(s) && j-i < max && s[j] >= '0' && s[j] <= '9' {
			v = v*10 + int64(s[j]-'0')
			j++
		}
		if j-i < min {
			return 0, false
		}
		i = j
		return v, true
	}
	lit := func(c byte) bool {
		if i < len(s) && s[i] == c {
			i++
			return true
		}
		return false
	}
	y, ok := num(4, 9)
	if !ok || !lit('-') {
		return bad()
	}
	if neg {
		y = -y
	}
	mo, ok1 := num(2, 2)
	ok2 := lit('-')
	d, ok3 := num(2, 2)
	if !ok1 || !ok2 || !ok3 || !(lit('T') || lit(' ')) || mo < 1 || mo > 12 || d < 1 || d > 31 {
		return bad()
	}
	h, ok1 := num(2, 2)
	ok2 = lit(':')
	mi, ok3 := num(2, 2)
	if !ok1 || !ok2 || !ok3 || h > 23 || mi > 59 {
		return bad()
	}
	var sec, frac int64
	if lit(':') {
		if sec, ok = num(2, 2); !ok || sec > 59 {
			return bad()
		}
		if lit('.') {
			start := i
			digits := 0
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				if digits < 6 {
					frac = frac*10 + int64(s[i]-'0')
				}
				digits++
				i++
			}
			if i == start || digits > 9 {
				return bad()
			}
			for ; digits < 6; digits++ {
				frac *= 10
			}
		}
	}
	var off int64
	switch {
	case lit('Z'):
	case i < len(s) && (s[i] == '+' || s[i] == '-'):
		sign := int64(1)
		if s[i] == '-' {
			sign = -1
		}
		i++
		oh, ok1 := num(2, 2)
		ok2 := lit(':')
		om, ok3 := num(2, 2)
		if !ok1 || !ok2 || !ok3 || oh > 18 || om > 59 {
			return bad()
		}
		var os int64
		if lit(':') {
			if os, ok = num(2, 2); !ok || os > 59 {
				return bad()
			}
		}
		off = sign * (oh*3600 + om*60 + os)
	default:
		return bad()
	}
	if i != len(s) {
		return bad()
	}
	days := daysFromCivil(y, int(mo), int(d))
	if days > 106_751_992 || days < -106_751_992 {
		return bad()
	}
	secs := days*86400 + h*3600 + mi*60 + sec - off
	// secs*1e6+frac must fit in int64 (wrapping arithmetic is exact then).
	const maxSecs, maxFrac = 9223372036854, 775807  // MaxInt64 = maxSecs*1e6 + maxFrac
	const minSecs, minFrac = -9223372036855, 224192 // MinInt64 = minSecs*1e6 + minFrac
	if secs > maxSecs || (secs == maxSecs && frac > maxFrac) || secs < minSecs || (secs == minSecs && frac < minFrac) {
		return bad()
	}
	return secs*1_000_000 + frac, nil
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}
