package mcpserver_test

import (
	"strings"
	"testing"
)

// TestPlainCallIsAnsweredAsJSON: a session's tools/call, made before the
// gateway's watcher has synced the tool set, sends no notification and is
// answered as one application/json body, not upgraded to SSE by the
// list_changed of the first sync (calls that notify stream: the relay
// tests).
func TestPlainCallIsAnsweredAsJSON(t *testing.T) {
	h := newHost(t)
	resp, _ := h.rawPost(nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("initialize: no session id")
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
	h.rawPost(hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i := range 2 {
		resp, body := h.rawPost(hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stdio_echo","arguments":{"message":"hi"}}}`)
		if !strings.Contains(string(body), "Echo: hi") {
			t.Fatalf("call %d: no result: %s", i, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("call %d: Content-Type %q, want application/json (body %s)", i, ct, body)
		}
	}
}
