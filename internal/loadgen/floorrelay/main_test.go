package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/antler-mcp/antler/internal/testmcp"
)

// start runs the relay with args until the test ends and returns its URL.
func start(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, io.Discard, func(a string) { addr <- a }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay: %v", err)
		}
	})
	select {
	case a := <-addr:
		return "http://" + a
	case err := <-done:
		t.Fatalf("relay did not start: %v", err)
		return ""
	}
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/api/mcp/tools/demo_echo/call", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRelayCallsTheServer(t *testing.T) {
	url := start(t, "-tool", "echo", "--", testmcp.Build(t))
	for _, msg := range []string{"one", "two"} {
		code, body := post(t, url, `{"arguments": {"message": "`+msg+`"}}`)
		want := `{"content":[{"type":"text","text":"Echo: ` + msg + `"}]}`
		if code != http.StatusOK || body != want {
			t.Errorf("%s: got %d %s, want 200 %s", msg, code, body, want)
		}
	}
	if code, _ := post(t, url, `{}`); code != http.StatusBadRequest {
		t.Errorf("no arguments: got %d, want 400", code)
	}
}

func TestConstAnswersWithoutAServer(t *testing.T) {
	url := start(t, "-const")
	if code, body := post(t, url, `{"arguments":{}}`); code != http.StatusOK || body != constResult {
		t.Errorf("got %d %s, want 200 %s", code, body, constResult)
	}
}

func TestRelayNeedsACommand(t *testing.T) {
	if err := run(context.Background(), nil, io.Discard, nil); err == nil {
		t.Fatal("no command: want an error")
	}
}
