package admin

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
)

// masked replaces a secret in a config the API answers with.
const masked = "xxxxx"

// RedactConfig returns a config document with its secrets masked: the
// values of keys naming a password, secret or token, and the password in
// a DSN (URL, key=value and user:pass@tcp(...) forms) under a key naming
// a dsn. A value that is a whole ${ENV} placeholder is no secret and is
// kept. The API passes every config it answers with through it; a
// document that is not JSON answers as {}.
func RedactConfig(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return raw
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return json.RawMessage("{}")
	}
	b, err := json.Marshal(redactValue("", v))
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

func redactValue(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = redactValue(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = redactValue(key, e)
		}
		return x
	case string:
		return redactString(key, x)
	}
	return v
}

// redactString masks s when key says it is a secret or a DSN.
func redactString(key, s string) string {
	k := strings.ToLower(key)
	if i := strings.LastIndex(k, "."); i >= 0 {
		k = k[i+1:] // a dotted path (validation results)
	}
	switch {
	case s == "" || placeholder.MatchString(s):
		return s
	case strings.Contains(k, "password") || strings.Contains(k, "secret") || k == "token" || strings.HasSuffix(k, "_token"):
		return masked
	case strings.Contains(k, "dsn"):
		return maskDSN(s)
	}
	return s
}

var (
	placeholder = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}$`)
	kvPassword  = regexp.MustCompile(`(?i)(\bpassword=)('[^']*'|[^\s&]*)`)
)

// maskDSN masks the password of a DSN, keeping the rest readable.
func maskDSN(s string) string {
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), masked)
			}
			s = u.String()
		} else if err != nil {
			return "<dsn>" // unparsable: keep nothing of it
		}
	} else {
		// user:pass@tcp(host)/db: the password runs to the last @ before
		// the database's /.
		head := s
		if slash := strings.LastIndex(head, "/"); slash >= 0 && strings.Contains(head[:slash], "@") {
			head = head[:slash]
		}
		if at := strings.LastIndex(head, "@"); at >= 0 {
			if user, _, ok := strings.Cut(head[:at], ":"); ok {
				s = user + ":" + masked + s[at:]
			}
		}
	}
	return kvPassword.ReplaceAllString(s, "${1}"+masked)
}

func redactInfo(in ConnectorInfo) ConnectorInfo {
	in.Config = RedactConfig(in.Config)
	return in
}

func redactTasks(ts []TaskInfo) []TaskInfo {
	out := make([]TaskInfo, len(ts))
	for i, t := range ts {
		t.Config = RedactConfig(t.Config)
		out[i] = t
	}
	return out
}

func redactValidation(v Validation) Validation {
	cs := make([]ConfigInfo, len(v.Configs))
	for i, c := range v.Configs {
		if s, ok := c.Value.Value.(string); ok {
			c.Value.Value = redactString(c.Value.Name, s)
		} else if c.Value.Value != nil {
			c.Value.Value = redactValue(c.Value.Name, c.Value.Value)
		}
		cs[i] = c
	}
	v.Configs = cs
	return v
}

// Unmask undoes RedactConfig's masks in a config sent back: where cfg has
// a masked value (or a DSN equal to the masked form of the stored one) and
// stored has a value at the same place, the stored value is kept, so a
// config read, edited and put back keeps its secrets. cfg is returned as
// is when it holds no mask.
func Unmask(cfg, stored json.RawMessage) json.RawMessage {
	if !bytes.Contains(cfg, []byte(masked)) && !bytes.Contains(cfg, []byte("<dsn>")) || len(stored) == 0 {
		return cfg
	}
	var nv, ov any
	dec := json.NewDecoder(bytes.NewReader(cfg))
	dec.UseNumber()
	if dec.Decode(&nv) != nil {
		return cfg
	}
	dec = json.NewDecoder(bytes.NewReader(stored))
	dec.UseNumber()
	if dec.Decode(&ov) != nil {
		return cfg
	}
	changed := false
	nv = unmaskValue("", nv, ov, &changed)
	if !changed {
		return cfg
	}
	b, err := json.Marshal(nv)
	if err != nil {
		return cfg
	}
	return b
}

func unmaskValue(key string, nv, ov any, changed *bool) any {
	switch n := nv.(type) {
	case map[string]any:
		if o, ok := ov.(map[string]any); ok {
			for k, e := range n {
				if oe, ok := o[k]; ok {
					n[k] = unmaskValue(k, e, oe, changed)
				}
			}
		}
	case []any:
		if o, ok := ov.([]any); ok {
			for i := range n {
				if i < len(o) {
					n[i] = unmaskValue(key, n[i], o[i], changed)
				}
			}
		}
	case string:
		if o, ok := ov.(string); ok && n != o && redactString(key, o) == n {
			*changed = true
			return o
		}
	}
	return nv
}
