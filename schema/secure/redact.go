package secure

import (
	"net/url"
	"strings"
)

// RedactDSN removes dsn and the password it holds from msg: for error
// texts of drivers and DSN parsers that quote what they parsed (Go's URL
// parser quotes the whole URL). Every connector that reports an error
// involving a DSN passes its text through it.
func RedactDSN(msg, dsn string) string {
	if dsn == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, dsn, "<dsn>")
	for _, pw := range dsnPassword(dsn) {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}

// dsnPassword returns the password a DSN holds, as written and decoded:
// URL (postgres://user:pass@host/db), key=value (password=pass) or
// go-sql-driver (user:pass@tcp(host)/db) forms.
func dsnPassword(dsn string) []string {
	var out []string
	add := func(p string) {
		if p != "" {
			out = append(out, p)
			if d, err := url.PathUnescape(p); err == nil && d != p {
				out = append(out, d)
			}
		}
	}
	if i := strings.Index(dsn, "password="); i >= 0 && !strings.Contains(dsn[:i], "?") {
		v := dsn[i+len("password="):]
		if strings.HasPrefix(v, "'") {
			v = v[1:]
			if j := strings.Index(v, "'"); j >= 0 {
				v = v[:j]
			}
		} else if j := strings.IndexAny(v, " \t"); j >= 0 {
			v = v[:j]
		}
		add(v)
	}
	rest := dsn
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if slash := strings.LastIndex(rest, "/"); slash >= 0 && strings.Contains(rest[:slash], "@") {
		rest = rest[:slash]
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			add(pw)
		}
	}
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			add(pw)
		}
	}
	if i := strings.Index(dsn, "password="); i >= 0 {
		v := dsn[i+len("password="):]
		if j := strings.IndexAny(v, "& \t"); j >= 0 {
			v = v[:j]
		}
		add(v)
	}
	return out
}

// RedactDSNError returns err with RedactDSN applied to its text; errors.Is
// and errors.As still see err. It returns err itself when nothing changes.
func RedactDSNError(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := RedactDSN(err.Error(), dsn)
	if msg == err.Error() {
		return err
	}
	return &redacted{msg, err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
