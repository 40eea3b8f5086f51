package admin

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedactConfig(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"source": {"host": "127.0.0.1", "user": "u", "password": "pw1"}}`, `{"source":{"host":"127.0.0.1","password":"xxxxx","user":"u"}}`},
		{`{"transport": {"access_key": "ak", "secret_key": "pw1"}}`, `{"transport":{"access_key":"ak","secret_key":"xxxxx"}}`},
		{`{"transport": {"type": "kafka", "sasl_username": "u", "sasl_password": "pw1"}}`, `{"transport":{"sasl_password":"xxxxx","sasl_username":"u","type":"kafka"}}`},
		{`{"sink": {"dsn": "postgres://sluice:pw1@127.0.0.1:15432/db?sslmode=disable"}}`, `{"sink":{"dsn":"postgres://sluice:xxxxx@127.0.0.1:15432/db?sslmode=disable"}}`},
		{`{"sink": {"dsn": "postgres://sluice@127.0.0.1/db?password=pw1&sslmode=disable"}}`, `{"sink":{"dsn":"postgres://sluice@127.0.0.1/db?password=xxxxx\u0026sslmode=disable"}}`},
		{`{"sink": {"dsn": "host=127.0.0.1 password='p w1' user=u"}}`, `{"sink":{"dsn":"host=127.0.0.1 password=xxxxx user=u"}}`},
		{`{"sink": {"dsn": "u:p@w1@tcp(127.0.0.1:3306)/db"}}`, `{"sink":{"dsn":"u:xxxxx@tcp(127.0.0.1:3306)/db"}}`},
		{`{"positions": {"dsn": "postgres://u:p%2Fw1@h/db"}}`, `{"positions":{"dsn":"postgres://u:xxxxx@h/db"}}`},
		{`{"sink": {"dsn": "postgres://u:pw1@[bad/db"}}`, `{"sink":{"dsn":"\u003cdsn\u003e"}}`},
		{`{"source": {"password": "${SRC_PASSWORD}", "tokens": [1, 2.50000000000000001]}}`, `{"source":{"password":"${SRC_PASSWORD}","tokens":[1,2.50000000000000001]}}`},
		{`{"list": [{"password": "pw1"}], "token": "pw1", "api_token": "pw1"}`, `{"api_token":"xxxxx","list":[{"password":"xxxxx"}],"token":"xxxxx"}`},
		{`not json pw1`, `{}`},
	} {
		got := string(RedactConfig(json.RawMessage(c.in)))
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
	if RedactConfig(nil) != nil {
		t.Error("nil config changed")
	}
}

// TestAPIMasksSecrets: no answer carrying a config carries its passwords.
func TestAPIMasksSecrets(t *testing.T) {
	h := NewHandler(newFake(), "")
	cfg := `{"source": {"password": "pw1SECRET"}, "sink": {"dsn": "postgres://u:pw2SECRET@127.0.0.1/db"}, "transport": {"type": "kafka", "sasl_password": "pw3SECRET"}}`
	for _, c := range [][3]string{
		{"POST", "/connectors", `{"name": "a", "config": ` + cfg + `}`},
		{"PUT", "/connectors/a/config", cfg},
		{"GET", "/connectors/a", ""},
		{"GET", "/connectors/a/config", ""},
		{"GET", "/connectors/a/tasks", ""},
		{"GET", "/connectors?expand=info", ""},
		{"PUT", "/connector-plugins/mysql/config/validate", cfg},
	} {
		code, body := do(t, h, c[0], c[1], c[2])
		if code >= 300 || strings.Contains(body, "SECRET") {
			t.Errorf("%s %s: %d %s", c[0], c[1], code, body)
		}
	}
}

// TestUnmaskRoundTrip: a config read through the API and put back with
// an edit keeps the stored secrets; a new secret replaces the old one.
func TestUnmaskRoundTrip(t *testing.T) {
	f := newFake()
	h := NewHandler(f, "")
	cfg := `{"source": {"password": "pw1", "host": "a"}, "sink": {"dsn": "postgres://u:pw2@127.0.0.1/db"}, "transport": {"secret_key": "pw3"}}`
	if code, body := do(t, h, "POST", "/connectors", `{"name": "a", "config": `+cfg+`}`); code != 201 {
		t.Fatal(code, body)
	}
	_, got := do(t, h, "GET", "/connectors/a/config", "")
	edited := strings.Replace(got, `"host":"a"`, `"host":"b"`, 1)
	if code, body := do(t, h, "PUT", "/connectors/a/config", edited); code != 200 {
		t.Fatal(code, body)
	}
	stored := string(f.configs["a"])
	for _, want := range []string{`"password":"pw1"`, `"host":"b"`, `postgres://u:pw2@127.0.0.1/db`, `"secret_key":"pw3"`} {
		if !strings.Contains(stored, want) {
			t.Errorf("stored %s lacks %s", stored, want)
		}
	}
	if code, body := do(t, h, "PUT", "/connectors/a/config", `{"source": {"password": "new"}, "transport": {"secret_key": "xxxxx"}}`); code != 200 {
		t.Fatal(code, body)
	}
	if stored := string(f.configs["a"]); !strings.Contains(stored, `"password":"new"`) || !strings.Contains(stored, `"secret_key":"pw3"`) {
		t.Errorf("stored %s", stored)
	}
	// Nothing masked: the bytes go through unchanged.
	if got := string(Unmask(json.RawMessage(`{"b": 1, "a": 2}`), json.RawMessage(`{"a": 1}`))); got != `{"b": 1, "a": 2}` {
		t.Errorf("unmasked config rewritten: %s", got)
	}
}
