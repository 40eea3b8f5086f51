package cluster

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// A coordinator address that accepts connections and never answers (a
// hung server, a black-holing proxy) fails Open after the connect timeout,
// on both drivers, instead of hanging the worker's start silently.
func TestOpenGivesUpOnASilentCoordinator(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn // accepted, never answered
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	old := connectTimeout
	connectTimeout = time.Second
	defer func() { connectTimeout = old }()
	addr := ln.Addr().String()
	for driver, dsn := range map[string]string{
		"postgres": "postgres://u:secret@" + addr + "/db?sslmode=disable",
		"mysql":    "u:secret@tcp(" + addr + ")/db",
	} {
		t.Run(driver, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := Open(context.Background(), driver, dsn, "sluice_")
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("Open of a silent coordinator succeeded")
				}
				if !strings.Contains(err.Error(), "no answer within 1s") {
					t.Errorf("the error does not say the coordinator did not answer: %v", err)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("the password is in the error: %v", err)
				}
				t.Logf("refused: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("Open still waits for a coordinator that never answers, 30 s after a 1 s connect timeout")
			}
		})
	}
}

func TestPQWithParam(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@h:1/db?sslmode=disable":   "postgres://u@h:1/db?connect_timeout=10&sslmode=disable",
		"postgres://u@h:1/db?connect_timeout=3": "postgres://u@h:1/db?connect_timeout=3",
		"host=h port=1 dbname=db":               "host=h port=1 dbname=db connect_timeout=10",
		"host=h connect_timeout=2":              "host=h connect_timeout=2",
		"postgresql://u:p%40ss@h/db":            "postgresql://u:p%40ss@h/db?connect_timeout=10",
	} {
		if got := pqWithParam(in, "connect_timeout", "10"); got != want {
			t.Errorf("pqWithParam(%q) = %q, want %q", in, got, want)
		}
	}
}
