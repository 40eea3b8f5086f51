package rocketmq

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"reflect"
	"testing"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/sluicecdc/sluice/runtime"
)

// clientCredentials reads the credentials a client of rocketmq-client-go
// was built with (unexported: options.ClientOptions.Credentials).
func clientCredentials(t *testing.T, client any, path ...string) (string, string) {
	t.Helper()
	c := clientField(t, client, append(path, "Credentials")...)
	return c.FieldByName("AccessKey").String(), c.FieldByName("SecretKey").String()
}

// clientField reads the field at path (unexported ones too) of a client of
// rocketmq-client-go, through pointers and interfaces.
func clientField(t *testing.T, client any, path ...string) reflect.Value {
	t.Helper()
	v := reflect.ValueOf(client)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	for _, f := range path {
		v = v.FieldByName(f)
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if !v.IsValid() {
			t.Fatalf("%T has no field %s: the client's layout changed", client, f)
		}
	}
	return v
}

// TestCredentialsReachTheClients: access_key and secret_key are set on the
// producer, the push consumer and the admin client, and a half-set pair is
// refused.
func TestCredentialsReachTheClients(t *testing.T) {
	cfg, err := Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "acl", AccessKey: "ak-sluice", SecretKey: "sk-sluice-secret"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	prod, err := rmq.NewProducer(producerOptions(cfg, "source", "pub")...)
	if err != nil {
		t.Fatal(err)
	}
	if ak, sk := clientCredentials(t, prod, "options"); ak != "ak-sluice" || sk != "sk-sluice-secret" {
		t.Errorf("producer credentials %q/%q", ak, sk)
	}
	pc, err := rmq.NewPushConsumer(consumerOptions(cfg)...)
	if err != nil {
		t.Fatal(err)
	}
	if ak, sk := clientCredentials(t, pc, "defaultConsumer", "option"); ak != "ak-sluice" || sk != "sk-sluice-secret" {
		t.Errorf("consumer credentials %q/%q", ak, sk)
	}
	adm, err := newAdmin(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sa, ok := adm.(signedAdmin)
	if !ok {
		t.Fatalf("admin with credentials is a %T, want signedAdmin (the client's own admin sends CreateTopic unsigned)", adm)
	}
	if ak, sk := clientCredentials(t, sa.Admin, "opts"); ak != "ak-sluice" || sk != "sk-sluice-secret" {
		t.Errorf("admin credentials %q/%q", ak, sk)
	}
	if sa.cred.AccessKey != "ak-sluice" || sa.cred.SecretKey != "sk-sluice-secret" {
		t.Errorf("signed admin credentials %+v", sa.cred)
	}
	var _ admin.Admin = adm

	// Without credentials nothing is set (brokers without ACL).
	plain, _ := Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "acl"}.withDefaults()
	prod2, _ := rmq.NewProducer(producerOptions(plain, "source", "pub2")...)
	if ak, _ := clientCredentials(t, prod2, "options"); ak != "" {
		t.Errorf("credentials without configuration: %q", ak)
	}
	for _, c := range []Config{{AccessKey: "ak"}, {SecretKey: "sk"}} {
		c.NameServers, c.Pipeline = []string{"127.0.0.1:1"}, "acl"
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("half a credential pair %+v: %v", c, err)
		}
	}
}

// TestSignRequest: the signature is the base64 HMAC-SHA1, keyed with the
// secret key, of the values sorted by field name (AccessKey included) and
// the body, as the broker recomputes it; no access key leaves the request
// unsigned; the caller's fields are not changed.
func TestSignRequest(t *testing.T) {
	ext := map[string]string{"topic": "t1", "queueId": "3"}
	got := signRequest(primitive.Credentials{AccessKey: "ak", SecretKey: "sk"}, ext, []byte("body"))
	// Sorted names: AccessKey, queueId, topic.
	mac := hmac.New(sha1.New, []byte("sk"))
	mac.Write([]byte("ak" + "3" + "t1" + "body"))
	if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); got["Signature"] != want || got["AccessKey"] != "ak" {
		t.Errorf("signed fields %v, want Signature %s", got, want)
	}
	if len(ext) != 2 {
		t.Errorf("the caller's fields were changed: %v", ext)
	}
	if plain := signRequest(primitive.Credentials{}, ext, nil); len(plain) != 2 {
		t.Errorf("without an access key the request is signed: %v", plain)
	}
	if err := authError("ak", "b:1", remotingHeader{Code: resNoPermission, Remark: "check signature failed."}); !errors.Is(err, ErrAuth) || !runtime.IsFatal(err) {
		t.Errorf("NO_PERMISSION: %v, want a fatal ErrAuth", err)
	}
	if err := authError("ak", "b:1", remotingHeader{Code: resSuccess}); err != nil {
		t.Errorf("success: %v", err)
	}
}

// TestProducerCompressesOnlyTooBigBodies: whatever the format, the
// producer has the client compress no body under DefaultMaxMessageBytes
// (the client's default, 4 KiB, compressed the json format's records,
// about 4.4 KB, whenever one was sent alone) and still compresses a larger
// one, which only a broker with a raised maxMessageSize takes uncompressed.
func TestProducerCompressesOnlyTooBigBodies(t *testing.T) {
	for _, format := range []string{FormatJSON, FormatCompact, FormatPacked} {
		cfg, err := Config{NameServers: []string{"127.0.0.1:1"}, Pipeline: "zip", Format: format}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		prod, err := rmq.NewProducer(producerOptions(cfg, "source", "pub")...)
		if err != nil {
			t.Fatal(err)
		}
		// The client compresses a body of at least this many bytes.
		if from := clientField(t, prod, "options", "CompressMsgBodyOverHowmuch").Int(); from != DefaultMaxMessageBytes {
			t.Errorf("format %s: the client compresses bodies from %d bytes, want %d", format, from, DefaultMaxMessageBytes)
		}
	}
}
