package binlog

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"

	"github.com/sluicecdc/sluice/schema"
)

// plainServer is an in-process MySQL protocol server that offers no TLS.
func plainServer(t *testing.T) (string, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewServer("8.0.30", mysql.DEFAULT_COLLATION_ID, mysql.AUTH_NATIVE_PASSWORD, key, nil)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				conn, err := srv.NewConn(c, "u", "p", server.EmptyHandler{})
				if err != nil {
					return
				}
				for conn.HandleCommand() == nil {
				}
			}()
		}
	}()
	a := ln.Addr().(*net.TCPAddr)
	return a.IP.String(), a.Port
}

// TestTLSModesAgainstPlainServer: preferred falls back to plain text (and
// remembers it for the stream and the snapshot); required and the verify
// modes refuse a server without TLS with a fatal error that says so.
func TestTLSModesAgainstPlainServer(t *testing.T) {
	host, port := plainServer(t)
	cfg := Config{Host: host, Port: port, User: "u", Password: "p", ServerID: 9, Flavor: FlavorMySQL, ServerName: "t", TLSMode: "PREFERRED"}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	s := &Source{cfg: cfg, log: slog.Default()}
	if s.tlsConfig() == nil {
		t.Fatal("preferred: no TLS config before the first connection")
	}
	c, err := s.dial(context.Background())
	if err != nil {
		t.Fatalf("preferred against a plain server: %v", err)
	}
	c.Close()
	if s.tlsConfig() != nil {
		t.Fatal("preferred: after the fallback the stream would still ask for TLS")
	}
	for _, mode := range []string{TLSRequired, TLSVerifyIdentity} {
		cfg.TLSMode = mode
		if err := cfg.validate(); err != nil {
			t.Fatal(err)
		}
		s := &Source{cfg: cfg}
		_, err := s.dial(context.Background())
		if err == nil || schema.ClassOf(err) != schema.ClassFatal || !strings.Contains(err.Error(), "offers no TLS") {
			t.Fatalf("%s against a plain server: want a fatal 'offers no TLS', got %v", mode, err)
		}
	}
	cfg.TLSMode = TLSDisabled
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	if c, err := (&Source{cfg: cfg}).dial(context.Background()); err != nil {
		t.Fatalf("disabled: %v", err)
	} else {
		c.Close()
	}
	cfg.TLSMode = "verify_full"
	if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "verify_identity") {
		t.Fatalf("unknown mode: %v", err)
	}
	cfg.TLSMode = TLSVerifyCA
	if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "needs the CA") {
		t.Fatalf("verify_ca without CA: %v", err)
	}
}
