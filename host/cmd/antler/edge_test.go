package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/slowclient"
	"github.com/antler-mcp/antler/internal/testmcp"
)

// The real binary, key-less on loopback with its settings' http: section:
// what a web page can send is refused before it calls a tool or edits the
// config file, the same requests from a client work, and a slowloris
// client is cut off after the configured header timeout.
func TestServeRefusesCrossSiteRequests(t *testing.T) {
	dir := t.TempDir()
	antler := buildInto(t, dir, "./host/cmd/antler", "antler")
	cfg := writeFile(t, "extensions_config.json", fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}}}`, testmcp.Build(t)))
	st := writeFile(t, "antler.yaml", "http:\n  allowed_origins: [https://ui.example]\n  read_header_timeout: 500ms\n")
	host := startServe(t, antler, "--config", cfg, "--settings", st, "--data", filepath.Join(dir, "data"))
	before, _ := os.ReadFile(cfg)
	canary := filepath.Join(dir, "canary")
	write := fmt.Sprintf(`{"arguments": {"path": %q, "content": "x"}}`, canary)

	send := func(method, path, body string, header map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, host.base+path, strings.NewReader(body))
		for k, v := range header {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const call = "/api/mcp/tools/demo_write_file/call"
	addServer := `{"mcp_servers": {"evil": {"command": "npx", "args": ["-y", "evil-package"]}}}`
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		code                     int
	}{
		{"text/plain tool call", "POST", call, write, map[string]string{"Content-Type": "text/plain"}, 415},
		{"text/plain add server", "POST", "/api/mcp/config/servers", addServer, map[string]string{"Content-Type": "text/plain"}, 415},
		{"DNS rebinding Host", "POST", call, write, map[string]string{"Content-Type": "application/json", "Host": "evil.example"}, 403},
		{"foreign Origin", "POST", "/api/mcp/config/servers", addServer, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403},
		{"allowed Origin", "GET", "/api/mcp/tools", "", map[string]string{"Origin": "https://ui.example"}, 200},
	} {
		if code, body := send(tc.method, tc.path, tc.body, tc.header); code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.code)
		}
	}
	if _, err := os.Stat(canary); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused request ran the tool: %v", err)
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Errorf("a refused request changed the config file")
	}
	if code, body := send("POST", call, write, map[string]string{"Content-Type": "application/json"}); code != 200 {
		t.Errorf("a client's call: %d %s", code, body)
	}
	if _, err := os.Stat(canary); err != nil {
		t.Errorf("a client's call did not write: %v", err)
	}

	// Slowloris: headers a byte at a time until the host closes.
	if got, err := slowclient.Run(strings.TrimPrefix(host.base, "http://"), "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", 'a', 30*time.Second); err != nil {
		t.Errorf("%v (read %q)", err, got)
	}
}
