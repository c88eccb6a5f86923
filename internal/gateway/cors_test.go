package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/settings"
)

// A browser MCP client on an allowed page can use /mcp: the preflight of
// its POST allows every header it sends, and the answer to initialize
// exposes the session id and protocol version for the page to read.
func TestBrowserMCPClientsPassCORS(t *testing.T) {
	t.Parallel()
	addr := serveKeyed(t, []settings.Key{{Key: "k-alice", User: "alice", Role: settings.RoleAgent}}, gateway.HTTPOptions{
		AllowedOrigins: []string{"https://app.example.com"}})
	const origin = "https://app.example.com"
	sent := []string{"authorization", "content-type", "mcp-protocol-version", "mcp-session-id", "mcp-method", "mcp-name", "last-event-id", "x-antler-thread-id"}
	for _, method := range []string{"POST", "GET", "DELETE"} {
		t.Run("preflight "+method, func(t *testing.T) {
			resp, body := sendEdge(t, addr, edgeRequest{method: "OPTIONS", path: "/mcp", origin: origin,
				header: map[string]string{"Access-Control-Request-Method": method, "Access-Control-Request-Headers": strings.Join(sent, ",")}})
			if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != origin {
				t.Fatalf("%d %s, allow-origin %q", resp.StatusCode, body, resp.Header.Get("Access-Control-Allow-Origin"))
			}
			allowed := headerSet(resp.Header.Values("Access-Control-Allow-Headers"))
			for _, h := range sent {
				if !allowed[h] {
					t.Errorf("%s not in Access-Control-Allow-Headers %q", h, resp.Header.Values("Access-Control-Allow-Headers"))
				}
			}
		})
	}
	t.Run("initialize exposes the session", func(t *testing.T) {
		resp, body := sendEdge(t, addr, edgeRequest{method: "POST", path: "/mcp", origin: origin, key: "k-alice", contentType: "application/json",
			header: map[string]string{"Accept": "application/json, text/event-stream"},
			body:   `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`})
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize: %d %s", resp.StatusCode, body)
		}
		exposed := headerSet(resp.Header.Values("Access-Control-Expose-Headers"))
		for _, h := range []string{"mcp-session-id", "mcp-protocol-version"} {
			if !exposed[h] {
				t.Errorf("%s not in Access-Control-Expose-Headers %q", h, resp.Header.Values("Access-Control-Expose-Headers"))
			}
		}
	})
}

// headerSet is a comma-separated header list as lower-case names.
func headerSet(values []string) map[string]bool {
	set := map[string]bool{}
	for _, v := range values {
		for h := range strings.SplitSeq(v, ",") {
			set[strings.ToLower(strings.TrimSpace(h))] = true
		}
	}
	return set
}
